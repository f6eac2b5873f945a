"""``tron`` in a real terminal (tmux) against a real tron-server and the scripted
LLM: what a user sees and does, read back with ``capture-pane``.

Skipped with the reason when tmux is missing; ``TRON_REQUIRE_TMUX=1`` (CI)
makes that a failure.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.scripted_llm import Response, Text, Thinking, ToolUse
from tests.terminal.conftest import TronEnv
from tests.terminal.tmux import Terminal, Tmux, require_tmux


@pytest.fixture(scope="module")
def tmux(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tmux]:
    require_tmux()
    server = Tmux(tmp_path_factory.mktemp("tmux") / "socket")
    try:
        yield server
    finally:
        server.kill()


def open_tron(tmux: Tmux, env: TronEnv, cwd: Path, *args: str, **kw: int) -> Terminal:
    term = tmux.terminal(
        ["--home", str(env.server.home), "--server", env.server.ws_url, *args],
        cwd=cwd,
        env={"ANTHROPIC_API_KEY": "test-key"},
        **kw,
    )
    term.ready()
    return term


def sessions_of(env: TronEnv, project: Path) -> list[Any]:
    return [s for s in env.store("list_sessions") if s.working_directory == str(project)]


def send(term: Terminal, text: str) -> None:
    term.type(text)
    term.wait(text.splitlines()[-1][:40])
    term.send("Enter")


def idle(term: Terminal) -> str:
    return term.wait(lambda s: "· ready" in s and "working" not in s)


def test_streamed_reply_tool_card_and_edit_diff(tmux: Tmux, env: TronEnv) -> None:
    project = env.project("stream")
    (project / "app.py").write_text("x = 1\n")
    slow = " ".join(f"word{i}" for i in range(40)) + " THE-END"
    env.llm.add(
        Response(
            [
                Thinking("secret plan: list then edit"),
                Text("Let me **look**."),
                ToolUse("Bash", {"command": "echo card-output-$((40+2))"}),
            ]
        ),
        Response(
            [
                Text("Now the edit."),
                ToolUse(
                    "Edit",
                    {"file_path": "app.py", "old_string": "x = 1", "new_string": "x = 2\ny = 3"},
                ),
            ]
        ),
        Response([Text(slow)], delay=0.08),
    )
    term = open_tron(tmux, env, project)
    send(term, "look and edit")
    # Streaming: part of the reply is on screen before the rest has arrived.
    partial = term.wait("word5")
    assert "THE-END" not in partial
    screen = term.wait("THE-END")
    idle(term)
    screen = term.wait(lambda s: "✓ Edit" in s and "THE-END" in s)
    assert "THE-END" in screen and "Now the edit." in screen and "Let me look." in screen
    assert "› look and edit" in screen
    assert re.search(r"✓ Bash +echo card-output", screen)
    assert "card-output-42" in screen  # the tool's output, on its card
    assert re.search(r"✓ Edit +app.py", screen)
    assert "-x = 1" in screen and "+x = 2" in screen and "+y = 3" in screen
    # Thinking is there, collapsed: its title, not its text.
    assert "Thinking (" in screen and "secret plan" not in screen
    assert (project / "app.py").read_text() == "x = 2\ny = 3\n"
    assert "claude-sonnet-4-5" in screen and "$0." in screen  # the status line
    term.kill()


def test_escape_aborts_the_running_turn(tmux: Tmux, env: TronEnv) -> None:
    project = env.project("abort")
    env.llm.add(Response([Text("Thinking about it forever")], hang=True))
    before = env.llm.disconnects
    term = open_tron(tmux, env, project)
    send(term, "take your time")
    term.wait("forever")
    term.wait("working")
    term.send("Escape")
    idle(term)
    # The stored (interrupted) message may come just after the run's end.
    screen = term.wait("(interrupted)")
    assert "Thinking about it forever" in screen
    assert env.llm.disconnects > before  # the stream to the LLM was really cut
    term.kill()


def test_slash_commands_complete_and_run(tmux: Tmux, env: TronEnv) -> None:
    project = env.project("slash")
    env.llm.add(Response([Text("first reply")]))
    term = open_tron(tmux, env, project)
    send(term, "hello")
    idle(term)
    term.type("/mod")
    screen = term.wait("/model")
    assert "Switch the model" in screen  # completion shows the description
    assert "/mode " in screen  # the server's commands: /mode first, then /model
    term.send("Down")
    term.send("Tab")
    term.wait(lambda s: "/model " in s and "Switch the model" not in s)
    term.type("claude-haiku-4-5")
    term.send("Enter")
    term.wait(lambda s: s.strip().splitlines()[-1].lstrip().startswith("claude-haiku-4-5"))
    assert env.store("get_state_at_head", sessions_of(env, project)[0].id).model == (
        "claude-haiku-4-5"
    )
    term.type("/nope")
    term.send("Enter")
    screen = term.wait("Unknown command /nope")
    term.type("/co")
    screen = term.wait("/cost")
    assert "/compact" in screen and "/context" in screen
    term.type("st")
    term.send("Enter")
    screen = term.wait("Cost $")  # the server's /cost, shown as a notice
    assert "1 turns" in screen
    term.kill()


def test_fork_from_the_tree_view(tmux: Tmux, env: TronEnv) -> None:
    project = env.project("tree")
    env.llm.add(
        Response([Text("answer one")]),
        Response([Text("answer two")]),
        Response([Text("answer on the fork")]),
    )
    term = open_tron(tmux, env, project)
    send(term, "question one")
    term.wait("answer one")
    idle(term)
    send(term, "question two")
    term.wait("answer two")
    idle(term)
    term.send("C-t")
    screen = term.wait("Session tree")
    assert "HEAD" in screen and "› question one" in screen
    # The cursor starts on the head (answer two): up to "question two", fork there.
    term.wait("◆ answer two  ·  evt_")
    term.send("Up")
    term.wait("› question two  ·  evt_")
    term.send("f")
    term.wait("Forked: now in")
    screen = term.wait(lambda s: "answer one" in s and "› question two" in s)
    sessions = [s for s in env.store("list_sessions") if s.working_directory == str(project)]
    assert len(sessions) == 2
    fork = next(s for s in sessions if s.fork_from_event_id)
    source = next(s for s in sessions if s is not fork)
    point = env.store("get_event", fork.fork_from_event_id)
    assert point.session_id == source.id and point.type == "message.user"
    assert point.payload["content"] == "question two"
    # The fork shows history up to the fork point, and continues from there.
    assert "answer one" in screen and "answer two" not in screen
    send(term, "on the fork")
    term.wait("answer on the fork")
    sent = str(env.llm.requests[-1]["messages"])
    assert "answer one" in sent and "answer two" not in sent
    term.kill()


def test_quit_with_ctrl_c_twice_then_continue_with_c(tmux: Tmux, env: TronEnv) -> None:
    project = env.project("resume")
    env.llm.add(Response([Text("remember the number 31337")]), Response([Text("yes, 31337")]))
    term = open_tron(tmux, env, project)
    send(term, "remember")
    term.wait("31337")
    idle(term)
    term.send("C-c")
    term.wait("Press Ctrl+C again to quit")
    term.send("C-c")
    screen = term.wait("TRON-EXIT=0")
    match = re.search(r"Session (sess_\S+) · continue it with `tron -c`", screen)
    assert match, screen
    term.kill()
    again = open_tron(tmux, env, project, "-c")
    screen = again.wait("remember the number 31337")
    assert "› remember" in screen
    send(again, "still there?")
    again.wait("yes, 31337")
    sent = str(env.llm.requests[-1]["messages"])
    assert "remember the number 31337" in sent
    assert [s.id for s in env.store("list_sessions") if s.working_directory == str(project)] == [
        match.group(1)
    ]
    again.kill()


async def _send_elsewhere(env: TronEnv, session_id: str, text: str) -> None:
    async with env.server.connect() as client:
        await client.send_message_and_wait(session_id, text, timeout=60)


def test_dropped_connection_resumes_without_loss_or_duplicates(tmux: Tmux, env: TronEnv) -> None:
    project = env.project("drop")
    env.llm.add(Response([Text("before the drop")]), Response([Text("said while you were away")]))
    term = open_tron(tmux, env, project)
    send(term, "first")
    term.wait("before the drop")
    idle(term)
    session = next(s for s in env.store("list_sessions") if s.working_directory == str(project))
    token_file = env.server.home / "server-token"
    env.server.restart()
    # Keep this client out (a token it cannot use) while another client talks to
    # the session: when it gets back in, it must catch up on all of it.
    real = token_file.read_text()
    token_file.write_text("not-the-token")
    screen = term.wait("Connection to tron-server lost")
    assert "offline" in screen
    asyncio.run(_send_elsewhere(env, session.id, "a message from another client"))
    token_file.write_text(real)
    screen = term.wait("Reconnected")
    screen = term.wait("said while you were away")
    for text in (
        "› first",
        "before the drop",
        "› a message from another client",
        "said while you were away",
    ):
        assert screen.count(text) == 1, (text, screen)
    env.llm.add(Response([Text("after the return")]))
    send(term, "and now")
    screen = term.wait("after the return")
    assert screen.count("said while you were away") == 1
    assert screen.count("after the return") == 1
    term.kill()


_GREYS = {0, 7, 8, 15, 16, *range(232, 256)}


def hues(raw: str) -> set[str]:
    """The coloured (not grey) SGR colours in a ``capture-pane -e`` screen."""
    found: set[str] = set()
    for params in re.findall(r"\x1b\[([0-9;]*)m", raw):
        parts = params.split(";")
        i = 0
        while i < len(parts):
            p, rest = parts[i], parts[i + 1 : i + 5]
            if p in ("38", "48") and rest[:1] == ["5"]:
                if int(rest[1]) not in _GREYS:
                    found.add(params)
                i += 3
            elif p in ("38", "48") and rest[:1] == ["2"]:
                if len(set(rest[1:4])) > 1:
                    found.add(params)
                i += 5
            else:
                if p.isdigit() and (30 < int(p) < 38 or 40 < int(p) < 48 or 90 < int(p) < 97):
                    found.add(params)
                i += 1
    return found


def test_colours_by_default(tmux: Tmux, env: TronEnv) -> None:
    """Without NO_COLOR the same screen has colours (so the NO_COLOR check can fail)."""
    term = open_tron(tmux, env, env.project("colours"))
    assert hues(term.tmux.run("capture-pane", "-e", "-p", "-t", term.name))
    term.kill()


def test_narrow_terminal_and_no_color(tmux: Tmux, env: TronEnv) -> None:
    """60 columns, NO_COLOR: the reply, the card and the status line still fit."""
    project = env.project("narrow")
    env.llm.add(
        Response([ToolUse("Bash", {"command": "echo narrow-ok"})]),
        Response([Text("A reply that is long enough to wrap on a sixty column screen.")]),
    )
    term = tmux.terminal(
        ["--home", str(env.server.home), "--server", env.server.ws_url],
        cwd=project,
        env={"NO_COLOR": "1"},
        width=60,
        height=24,
    )
    term.ready()
    send(term, "narrow")
    screen = term.wait("sixty column")
    screen = idle(term)
    assert "narrow-ok" in screen and "✓ Bash" in screen
    # The reply (wider than the screen) wraps rather than being cut at the edge.
    assert re.search(r"sixty\s*\n?\s*column\s*\n?\s*screen\.", screen), screen
    status = screen.rstrip().splitlines()[-1]
    assert "ready" in status and "claude-sonnet-4-5" in status
    raw = term.tmux.run("capture-pane", "-e", "-p", "-t", term.name)
    # NO_COLOR: Textual draws in shades of grey only (no hue anywhere on screen).
    assert hues(raw) == set(), hues(raw)
    term.kill()
