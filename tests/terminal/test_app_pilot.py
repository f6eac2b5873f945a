"""Widget-level behaviour through Textual's own pilot: the real app, headless,
connected to the module's real tron-server (scripted LLM)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from textual.app import App
from textual.widgets import Tree

from tests.support.scripted_llm import Response, Text, ToolUse
from tests.terminal.conftest import TronEnv
from tron_server.terminal.app import TronApp
from tron_server.terminal.attach import ServerAddress, connect_once
from tron_server.terminal.capabilities import Capabilities, load
from tron_server.terminal.request_panel import Request, RequestPanel
from tron_server.terminal.screens import PickScreen, TreeScreen
from tron_server.terminal.widgets import NoticeItem, TextItem, ToolCard, UserItem

Body = Callable[[TronApp, Any], Awaitable[None]]


async def until(check: Callable[[], bool], pilot: Any, timeout: float = 20) -> None:
    for _ in range(int(timeout / 0.05)):
        if check():
            return
        await pilot.pause(0.05)
    raise AssertionError("condition not reached")


def run_app(
    env: TronEnv, cwd: Path, body: Body, *, caps: dict[str, Any] | None = None, **kwargs: Any
) -> None:
    async def main() -> None:
        address = ServerAddress(env.server.home, env.server.ws_url)
        connection = await connect_once(address)
        capabilities = await load(connection.client)
        if caps:
            capabilities = Capabilities({**capabilities.info, **caps})
        app = TronApp(
            address=address, connection=connection, capabilities=capabilities, cwd=cwd, **kwargs
        )
        try:
            async with app.run_test(size=(100, 34)) as pilot:
                await until(lambda: app.link.online and app.is_running, pilot)
                await body(app, pilot)
        finally:
            await app.close_link()

    asyncio.run(main())


def cursor_label(app: TronApp) -> str:
    node = app.screen.query_one(Tree).cursor_node
    return str(node.label) if node is not None else ""


def user_texts(app: TronApp) -> list[str]:
    return [str(w.render()) for w in app.chat.transcript.query(UserItem)]


def test_input_keys_newlines_history_and_send(env: TronEnv) -> None:
    project = env.project("pilot-input")
    env.llm.add(Response([Text("one")]), Response([Text("two")]))

    async def body(app: TronApp, pilot: Any) -> None:
        await pilot.press("a", "ctrl+j", "b", "\\", "enter", "c")
        assert app.chat.input.text == "a\nb\nc"  # Ctrl+J and \ then Enter: new lines, not sent
        await pilot.press("enter")
        assert app.chat.input.text == ""
        await until(lambda: "one" in [w.shown for w in app.chat.transcript.query(TextItem)], pilot)
        await until(lambda: app.chat.model is not None and not app.chat.model.busy, pilot)
        await pilot.press("s", "e", "c", "o", "n", "d", "enter")
        await until(lambda: "two" in [w.shown for w in app.chat.transcript.query(TextItem)], pilot)
        await pilot.press("up")
        assert app.chat.input.text == "second"
        await pilot.press("up")
        assert app.chat.input.text == "a\nb\nc"
        await pilot.press("down", "down", "down")
        assert app.chat.input.text == ""

    run_app(env, project, body)
    sent = [r["messages"][-1]["content"][0]["text"] for r in env.llm.requests[-2:]]
    assert sent == ["a\nb\nc", "second"]


def test_completion_lists_what_the_server_offers(env: TronEnv) -> None:
    project = env.project("pilot-complete")

    async def body(app: TronApp, pilot: Any) -> None:
        await pilot.press("/")
        await until(lambda: bool(app.chat.completer.shown), pilot)
        names = [c.name for c in app.chat.completer.shown]
        # Every command the server's methods allow, and none it does not.
        assert {"model", "compact", "context", "tree", "help", "quit"} <= set(names)
        assert "answer" in names  # the server has agent.respond
        await pilot.press("c", "o", "down", "enter")  # /co → compact, context, cost: 2nd
        assert app.chat.input.text == "" and app.chat.completer.shown == []
        # Written into the transcript (issue 27.6), not only a toast.
        await until(
            lambda: any("needs a session" in str(w.render()) for w in app.chat.query(NoticeItem)),
            pilot,
        )

    run_app(env, project, body)


def test_tree_rewind_and_the_transcript_follows(env: TronEnv) -> None:
    project = env.project("pilot-tree")
    env.llm.add(Response([Text("first answer")]), Response([Text("second answer")]))

    async def body(app: TronApp, pilot: Any) -> None:
        for text in ("first", "second"):
            app.chat.input.load_text(text)
            await pilot.press("enter")
            await until(
                lambda t=text: (
                    app.chat.model is not None
                    and not app.chat.model.busy
                    and f"{t} answer" in [w.shown for w in app.chat.transcript.query(TextItem)]
                ),
                pilot,
            )
        await pilot.press("ctrl+t")
        await until(lambda: isinstance(app.screen, TreeScreen), pilot)
        await until(lambda: "second answer" in cursor_label(app), pilot)  # starts on the head
        await pilot.press("up", "up")  # "second" (user), then "first answer"
        assert "first answer" in cursor_label(app)
        await pilot.press("r")
        # The server restores files too: conversation only is the first choice.
        await until(lambda: isinstance(app.screen, PickScreen), pilot)
        await pilot.press("enter")
        await until(lambda: user_texts(app) == ["› first"], pilot)
        shown = [w.shown for w in app.chat.transcript.query(TextItem)]
        assert shown == ["first answer"]
        assert app.chat.model is not None
        session = env.store("get_session", app.chat.model.id)
        head = env.store("get_event", session.head_event_id)
        assert head.type == "message.assistant"

    run_app(env, project, body)


def test_session_picker_opens_the_chosen_session(env: TronEnv) -> None:
    project = env.project("pilot-pick")
    env.llm.add(Response([Text("picked reply")]))
    created = env.server.run_sync(lambda: _create(env, project, "picked one"))

    async def body(app: TronApp, pilot: Any) -> None:
        await until(lambda: isinstance(app.screen, PickScreen), pilot)
        await pilot.press("enter")
        await until(lambda: app.session_id == created["id"], pilot)
        app.chat.input.load_text("hi")
        await pilot.press("enter")
        await until(
            lambda: "picked reply" in [w.shown for w in app.chat.transcript.query(TextItem)], pilot
        )

    run_app(env, project, body, pick_from=[created])


async def _create(env: TronEnv, project: Path, title: str) -> dict[str, Any]:
    async with env.server.connect() as client:
        session: dict[str, Any] = await client.call(
            "session.create", {"workingDirectory": str(project), "title": title}
        )
        return session


def test_a_question_is_asked_inline_and_answered_with_agent_respond(env: TronEnv) -> None:
    """The agent's AskUser opens the prompt over the input; the choice goes back with
    agent.respond and becomes the tool's result."""
    project = env.project("pilot-ask")
    created = env.server.run_sync(lambda: _create(env, project, "ask"))
    env.llm.add(
        Response([ToolUse("AskUser", {"question": "Which file?", "options": ["a.py", "b.py"]})]),
        Response([Text("b.py it is.")]),
    )

    async def body(app: TronApp, pilot: Any) -> None:
        await until(lambda: app.chat.model is not None and app.chat.model.loaded, pilot)
        app.chat.input.load_text("pick one")
        await pilot.press("enter")
        await until(lambda: app.chat.panel.request is not None, pilot)
        await pilot.press("down", "enter")
        shown = lambda: [w.shown for w in app.chat.transcript.query(TextItem)]  # noqa: E731
        await until(lambda: "b.py it is." in shown(), pilot)
        results = env.store("get_events", created["id"], types=["tool.result"])
        assert results[0].payload["content"] == "The user chose: b.py"

    run_app(env, project, body, session=created)


def test_a_sub_agents_approval_opens_over_the_parent(env: TronEnv) -> None:
    project = env.project("pilot-approve")
    created = env.server.run_sync(lambda: _create(env, project, "approve"))
    env.llm.add(
        Response([ToolUse("Task", {"description": "make it", "prompt": "touch made.txt"})]),
        Response([ToolUse("Bash", {"command": "touch made.txt"})]),  # the child
        Response([Text("Made.")]),  # the child
        Response([Text("The sub-agent made it.")]),
    )

    async def body(app: TronApp, pilot: Any) -> None:
        await until(lambda: app.chat.model is not None and app.chat.model.loaded, pilot)
        app.chat.input.load_text("delegate")
        await pilot.press("enter")
        await until(lambda: app.chat.panel.request is not None, pilot)
        request = app.chat.panel.request
        assert request is not None
        assert request.tool_name == "Bash" and request.suggestion == "Bash(touch:*)"
        await pilot.press("enter")  # Allow once
        await until(lambda: (project / "made.txt").exists(), pilot)
        await until(lambda: app.chat.model is not None and not app.chat.model.busy, pilot)

    run_app(env, project, body, session=created, permission_mode="default")


def test_shift_tab_cycles_the_permission_mode(env: TronEnv) -> None:
    project = env.project("pilot-mode")
    created = env.server.run_sync(lambda: _create(env, project, "mode"))

    def status(app: TronApp) -> str:
        return str(app.chat.query_one("#status").render())

    async def body(app: TronApp, pilot: Any) -> None:
        await until(lambda: app.chat.model is not None and app.chat.model.loaded, pilot)
        await until(lambda: "mode default" in status(app), pilot)
        for expected in ("acceptEdits", "plan"):
            await pilot.press("shift+tab")
            await until(lambda e=expected: f"mode {e} " in status(app) + " ", pilot)
        assert app.chat.model is not None
        events = env.store("get_events", app.chat.model.id, types=["config.permission_mode"])
        assert [e.payload["newMode"] for e in events][-2:] == ["acceptEdits", "plan"]

    run_app(env, project, body, session=created, permission_mode="default")


def load_methods(env: TronEnv) -> list[str]:
    async def info() -> list[str]:
        async with env.server.connect() as client:
            return list((await client.call("system.info"))["methods"])

    return asyncio.run(info())


class _Host(App[Any]):
    def __init__(self, request: Request) -> None:
        super().__init__()
        self.request = request
        self.answer: Any = "unset"

    def compose(self) -> Any:
        yield RequestPanel()

    async def on_mount(self) -> None:
        await self.query_one(RequestPanel).ask(self.request)

    def on_request_panel_answered(self, event: RequestPanel.Answered) -> None:
        self.answer = event.answer


def _answer(request: Request, keys: list[str]) -> Any:
    async def main() -> Any:
        host = _Host(request)
        async with host.run_test() as pilot:
            await pilot.pause(0.1)
            await pilot.press(*keys)
            await pilot.pause(0.1)
        return host.answer

    return asyncio.run(main())


def test_request_panel_answers() -> None:
    question = Request("r1", "question", "Pick", ("red", "green", "blue"))
    assert _answer(question, ["down", "enter"]) == "green"
    free = Request("r2", "question", "Name?")
    assert _answer(free, ["a", "b", "enter"]) == "ab"
    multi = Request("r3", "question", "Which?", ("x", "y", "z"), multi_select=True)
    assert _answer(multi, ["enter", "down", "down", "enter", "ctrl+s"]) == ["x", "z"]
    approval = Request(
        "r4", "approval", "Allow Bash?", tool_name="Bash", tool_input={"command": "rm -rf build"}
    )
    assert _answer(approval, ["enter"]) == {"decision": "allow"}
    assert _answer(approval, ["down", "enter"]) == {"decision": "allow_always"}
    assert _answer(approval, ["down", "down", "enter", "n", "o", "enter"]) == {
        "decision": "deny",
        "reason": "no",
    }
    assert _answer(question, ["escape"]) is None  # answered later: nothing sent


def test_tool_card_expands_on_enter(env: TronEnv) -> None:
    from tests.support.scripted_llm import ToolUse

    project = env.project("pilot-card")
    env.llm.add(Response([ToolUse("Bash", {"command": "seq 1 30"})]), Response([Text("counted")]))

    async def body(app: TronApp, pilot: Any) -> None:
        app.chat.input.load_text("count")
        await pilot.press("enter")
        await until(
            lambda: (
                bool(app.chat.transcript.query(ToolCard))
                and app.chat.model is not None
                and not app.chat.model.busy
            ),
            pilot,
        )
        card = app.chat.transcript.query_one(ToolCard)
        assert "\n30" in card.plain and "\n3\n" not in card.plain
        card.focus()
        await pilot.press("enter")
        assert card.expanded and "\n3\n" in card.plain

    run_app(env, project, body)


def test_a_task_call_is_a_sub_agent_card(env: TronEnv) -> None:
    """Issue 18: the Task card names the child session, shows its activity and result,
    and the status line's cost includes the child's."""
    from tests.support.scripted_llm import ToolUse

    project = env.project("pilot-task")
    env.llm.add(
        Response([ToolUse("Task", {"description": "scan files", "prompt": "list the files"})]),
        Response([ToolUse("Bash", {"command": "echo child-was-here"})]),
        Response([Text("child result: 3 files")]),
        Response([Text("The sub-agent says 3 files.")]),
    )

    async def body(app: TronApp, pilot: Any) -> None:
        app.chat.input.load_text("delegate")
        await pilot.press("enter")
        await until(
            lambda: (
                "The sub-agent says 3 files."
                in [w.shown for w in app.chat.transcript.query(TextItem)]
            ),
            pilot,
        )
        card = app.chat.transcript.query_one(ToolCard)
        assert card.plain.startswith("✓ Task  scan files")
        assert "sub-agent sess_" in card.plain and "child result: 3 files" in card.plain

        def with_child() -> bool:  # an earlier refresh may have counted the parent alone
            total = app.chat.model and app.chat.model.session.get("totalWithChildren")
            return isinstance(total, dict) and total.get("sessions") == 2

        await until(with_child, pilot)
        assert app.chat.model is not None
        total = app.chat.model.session["totalWithChildren"]
        assert total["cost"] > app.chat.model.session["cost"]

    run_app(env, project, body)


def test_rewind_with_files_lists_the_files_and_restores_them(env: TronEnv) -> None:
    from tests.support.scripted_llm import ToolUse
    from tron_server.terminal.diffview import DiffScreen

    project = env.project("pilot-files")
    (project / "notes.txt").write_text("one\n")
    env.llm.add(
        Response([Text("first answer")]),
        Response(
            [ToolUse("Edit", {"file_path": "notes.txt", "old_string": "one", "new_string": "two"})]
        ),
        Response([Text("edited")]),
    )

    async def body(app: TronApp, pilot: Any) -> None:
        for text, answer in (("first", "first answer"), ("edit it", "edited")):
            app.chat.input.load_text(text)
            await pilot.press("enter")
            await until(
                lambda a=answer: (
                    app.chat.model is not None
                    and not app.chat.model.busy
                    and a in [w.shown for w in app.chat.transcript.query(TextItem)]
                ),
                pilot,
            )
        assert (project / "notes.txt").read_text() == "two\n"
        # /diff: the session's changes.
        app.chat.input.load_text("/diff")
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, DiffScreen), pilot)
        shown = str(app.screen.query_one("#diff-body").render())
        assert "-one" in shown and "+two" in shown and "notes.txt" in shown
        await pilot.press("escape")
        # Rewind to the first answer, with files: the dialog lists the file first.
        await pilot.press("ctrl+t")
        await until(lambda: isinstance(app.screen, TreeScreen), pilot)
        await until(lambda: "edited" in cursor_label(app), pilot)
        while "first answer" not in cursor_label(app):
            await pilot.press("up")
        await pilot.press("r")
        await until(lambda: isinstance(app.screen, PickScreen), pilot)
        assert "notes.txt" in app.screen.title_text and "1 file(s)" in app.screen.title_text
        await pilot.press("down", "enter")  # conversation and files
        await until(lambda: (project / "notes.txt").read_text() == "one\n", pilot)
        await until(lambda: user_texts(app) == ["› first"], pilot)

    run_app(env, project, body)


def test_a_code_block_in_a_reply_is_highlighted(env: TronEnv) -> None:
    """Issue 22.2: code blocks in the streamed Markdown are highlighted, per their
    language: the parts of a Python definition are drawn in several colours (a plain
    block would draw every character alike)."""
    from textual.geometry import Region
    from textual.widgets import Label
    from textual.widgets._markdown import MarkdownFence

    project = env.project("pilot-code")
    reply = "Here:\n\n```python\ndef answer(x):\n    return x + 42\n```\n"
    env.llm.add(Response([Text(reply)]))

    async def body(app: TronApp, pilot: Any) -> None:
        app.chat.input.load_text("show code")
        await pilot.press("enter")
        await until(lambda: bool(app.chat.transcript.query(MarkdownFence)), pilot)
        await until(lambda: app.chat.model is not None and not app.chat.model.busy, pilot)
        await pilot.pause(0.1)
        fence = app.chat.transcript.query_one(MarkdownFence)
        assert "def answer(x):" in fence.code
        label = fence.query_one(Label)  # the fence draws its code through a Label
        width, height = label.size
        colours: dict[str, set[str]] = {}
        for strip in label.render_lines(Region(0, 0, width, height)):
            for segment in strip:
                word = segment.text.strip()
                if word and segment.style is not None and segment.style.color is not None:
                    colours.setdefault(word, set()).add(segment.style.color.name)
        # Keywords, names, operators and numbers: a plain block draws all in one colour.
        assert "def" in colours and len(set().union(*colours.values())) >= 3, colours

    run_app(env, project, body)


def test_a_late_status_update_while_the_app_closes_is_dropped(env: TronEnv) -> None:
    """A worker that waited on the server (the status after a turn: session.get) may
    finish while the app shuts down and its widgets are already gone: it must not fail
    the app (seen once in CI as NoMatches('#status') at exit)."""
    project = env.project("pilot-closing")

    async def body(app: TronApp, pilot: Any) -> None:
        for selector in ("#status", "#notice", "#transcript"):
            await app.chat.query_one(selector).remove()  # what the shutdown does first
        app.chat.render_status()  # each of these raised NoMatches before
        app.chat.notice("back")
        await app.chat.refresh_transcript()

    run_app(env, project, body)


def test_the_browser_bar_shows_the_url_and_the_last_action(env: TronEnv) -> None:
    """browser.status of the session on screen: the bar above the status line shows where
    the agent's browser is and what it did; another session's does not; closed says so."""
    from tron_server.terminal.browserbar import BrowserBar

    project = env.project("pilot-browser")
    created = env.server.run_sync(lambda: _create(env, project, "browse"))
    other = env.server.run_sync(lambda: _create(env, project, "other"))

    async def publish(session_id: str, data: dict[str, Any]) -> None:
        env.server.services.hub.publish(session_id, "browser.status", data)

    async def body(app: TronApp, pilot: Any) -> None:
        await until(lambda: app.chat.model is not None and app.chat.model.loaded, pilot)
        bar = app.chat.query_one(BrowserBar)
        assert not bar.has_class("shown")
        there = {"open": True, "url": "http://x.test/", "title": "X", "action": "navigate"}
        await env.server.run(publish, other["id"], there)
        here = {"open": True, "url": "http://a.test/p", "title": "A", "action": "click e5"}
        await env.server.run(publish, created["id"], here)
        await until(lambda: bar.has_class("shown"), pilot)
        assert str(bar.render()) == "browser · http://a.test/p · click e5"
        closed = {"open": False, "url": None, "title": None, "action": "click e5"}
        await env.server.run(publish, created["id"], closed)
        await until(lambda: str(bar.render()).startswith("browser closed"), pilot)

    run_app(env, project, body, session=created)
