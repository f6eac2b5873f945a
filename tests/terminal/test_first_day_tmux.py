"""Issue 27 in a real terminal (tmux) against a real tron-server and the scripted LLM:
nothing typed is lost or silently re-sent, approvals say and do what they offer, and
what happened is written in the transcript. Each test failed on the code before it.

Skipped with the reason when tmux is missing; ``TRON_REQUIRE_TMUX=1`` (CI) makes that
a failure.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.scripted_llm import Response, Text, ToolUse
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


def open_tron(tmux: Tmux, env: TronEnv, cwd: Path, *args: str, **kw: Any) -> Terminal:
    term = tmux.terminal(
        ["--home", str(env.server.home), "--server", env.server.ws_url, *args],
        cwd=cwd,
        env={"ANTHROPIC_API_KEY": "test-key"},
        **kw,
    )
    term.ready()
    return term


def send(term: Terminal, text: str) -> None:
    term.type(text)
    term.wait(text.splitlines()[-1][:40])
    term.send("Enter")


def idle(term: Terminal) -> str:
    return term.wait(lambda s: "· ready" in s and "working" not in s)


def session_of(env: TronEnv, project: Path) -> Any:
    found = [s for s in env.store("list_sessions") if s.working_directory == str(project)]
    assert len(found) == 1, found
    return found[0]


def input_box(screen: str) -> str:
    """The text in the input box (between its rounded borders)."""
    lines = screen.splitlines()
    top = max(i for i, line in enumerate(lines) if line.lstrip().startswith("╭"))
    inside = []
    for line in lines[top + 1 :]:
        if line.lstrip().startswith("╰"):
            break
        inside.append(line.strip().strip("│").strip())
    return "\n".join(x for x in inside if x)


# -- 1. "Allow always" allows what it says, and after a restart ----------------------------


def test_allow_always_on_a_write_covers_later_writes_across_a_restart(
    tmux: Tmux, env: TronEnv
) -> None:
    project = env.project("allow-always")
    (project / "a.txt").write_text("old\n")
    env.llm.add(
        Response([Text("Writing a."), ToolUse("Write", {"file_path": "a.txt", "content": "A\n"})]),
        Response([Text("first done")]),
    )
    term = open_tron(tmux, env, project, "--permission-mode", "default")
    send(term, "write a")
    screen = term.wait("Allow Write?")
    assert "Allow always (this session): Edit" in screen
    term.send("Down")
    term.send("Enter")
    term.wait("first done")
    idle(term)
    # The rule is "Edit": it must cover this Write (it covered Edit calls only).
    env.llm.add(
        Response([ToolUse("Write", {"file_path": "b.txt", "content": "B\n"})]),
        Response([Text("second done")]),
    )
    send(term, "write b")
    screen = term.wait(lambda s: "second done" in s or "Allow Write?" in s)
    assert "Allow Write?" not in screen, screen
    idle(term)
    # ... and after the server restarts (the rule is recorded in the session).
    env.server.restart()
    term.wait("Reconnected")
    env.llm.add(
        Response([ToolUse("Write", {"file_path": "c.txt", "content": "C\n"})]),
        Response([Text("third done")]),
    )
    send(term, "write c")
    screen = term.wait(lambda s: "third done" in s or "Allow Write?" in s)
    assert "Allow Write?" not in screen, screen
    assert [(project / n).read_text() for n in ("a.txt", "b.txt", "c.txt")] == ["A\n", "B\n", "C\n"]
    rules = env.store("get_events", session_of(env, project).id, types=["config.permission_rule"])
    assert [e.payload["rule"] for e in rules] == ["Edit"]
    term.kill()


def left(screen: str, text: str) -> bool:
    """Whether a line of ``screen`` starts with ``text`` at the transcript's left edge
    (a toast is drawn at the right: this tells the transcript from a toast)."""
    return any(re.match(r"^ {0,4}" + re.escape(text), line) for line in screen.splitlines())


# -- 2. a message queued during a turn: shown as pending, and back in the input on Esc ----


def test_a_queued_message_is_pending_and_esc_puts_it_back(tmux: Tmux, env: TronEnv) -> None:
    project = env.project("queued-esc")
    env.llm.add(Response([Text("thinking for a long time")], hang=True))
    term = open_tron(tmux, env, project)
    send(term, "first task")
    term.wait("thinking for a long time")
    term.wait("working")
    send(term, "second thought")
    screen = term.wait("(queued")
    assert re.search(r"› second thought +\(queued", screen), screen
    term.send("Escape")
    screen = term.wait("back in the input")
    screen = idle(term)
    assert input_box(screen) == "second thought", screen
    assert left(screen, "Aborted. Your queued message is back in the input.")
    assert "(queued" not in screen
    # The server dropped its queue: the model never saw the queued text.
    assert all("second thought" not in str(r["messages"]) for r in env.llm.requests)
    term.kill()


def test_a_queued_message_is_sent_when_the_turn_ends(tmux: Tmux, env: TronEnv) -> None:
    project = env.project("queued-sent")
    env.llm.add(
        Response([ToolUse("Bash", {"command": "sleep 3; echo slept"})]),
        Response([Text("first done")]),
        Response([Text("second done")]),
    )
    term = open_tron(tmux, env, project)
    send(term, "first task")
    term.wait("sleep 3")
    send(term, "then this")
    screen = term.wait("(queued")
    assert "second done" not in screen
    term.wait("second done")
    idle(term)
    # Sent: a message of the transcript now, no longer pending.
    term.wait(lambda s: "› then this" in s and "(queued" not in s and "second done" in s)
    assert "then this" in str(env.llm.requests[-1]["messages"])
    term.kill()


# -- 6. written into the transcript; Tab and the list; the mode at 60 columns ----------------


def test_command_output_and_errors_are_written_into_the_transcript(
    tmux: Tmux, env: TronEnv
) -> None:
    project = env.project("notes")
    env.llm.add(Response([Text("first answer")]), Response([Text("second answer")]))
    term = open_tron(tmux, env, project)
    send(term, "question one")
    term.wait("first answer")
    idle(term)
    send(term, "question two")
    term.wait("second answer")
    idle(term)
    send(term, "/cost")
    screen = term.wait(lambda s: left(s, "Cost $"))
    send(term, "/nope")
    screen = term.wait(lambda s: left(s, "✗ Unknown command /nope"))
    # Rewind (conversation only) from the tree: "Rewound" is written too.
    term.send("C-t")
    term.wait("◆ second answer  ·  evt_")
    term.send("Up")
    term.send("Up")
    term.wait("◆ first answer  ·  evt_")
    term.send("r")
    term.wait("Conversation only")
    term.send("Enter")
    screen = term.wait(lambda s: left(s, "Rewound"))
    assert "second answer" not in screen and "first answer" in screen
    term.kill()


def test_tab_completes_the_common_prefix_and_the_list_has_a_selection(
    tmux: Tmux, env: TronEnv
) -> None:
    term = open_tron(tmux, env, env.project("tab"))
    term.type("/mod")
    # The first entry is selected, with a marker (seen without colours too) ...
    screen = term.wait("Switch the model")
    assert re.search(r"▸ /mode \[", screen), screen
    # ... which the arrows move.
    term.send("Down")
    screen = term.wait(lambda s: "▸ /model" in s)
    assert "▸ /mode " not in screen
    term.send("Up")
    term.wait(lambda s: "▸ /mode " in s)
    term.send("BSpace")
    term.type("d")  # typing again: Tab completes what is common, not the selection
    term.wait(lambda s: input_box(s) == "/mod")
    term.send("Tab")  # /mode and /model: their common prefix
    screen = term.wait(lambda s: input_box(s) == "/mode")
    assert "Switch the model" in screen  # the list is still open
    term.send("Tab")  # nothing longer in common: the selected one
    term.wait(lambda s: input_box(s).startswith("/mode") and "Switch the model" not in s)
    term.kill()


def test_at_sixty_columns_the_status_line_keeps_the_mode(tmux: Tmux, env: TronEnv) -> None:
    project = env.project("narrow-mode")
    env.llm.add(Response([Text("short reply")]))
    term = open_tron(tmux, env, project, "--permission-mode", "default", width=60, height=24)
    send(term, "hello")
    term.wait("short reply")
    idle(term)
    term.wait(lambda s: "$0." in s.rstrip().splitlines()[-1])
    status = term.screen().rstrip().splitlines()[-1]
    assert "mode default" in status and "ready" in status, status
    term.kill()


# -- 9. /web prints a login URL that works --------------------------------------------------


def test_web_prints_a_one_time_login_url(tmux: Tmux, env: TronEnv) -> None:
    import urllib.request

    term = open_tron(tmux, env, env.project("web"))
    send(term, "/web")
    screen = term.wait("Web chat: http")
    joined = "".join(line.strip() for line in screen.splitlines())
    match = re.search(r"Web chat: (http://127\.0\.0\.1:\d+/login\?token=[\w-]+)", joined)
    assert match, screen
    with urllib.request.urlopen(match.group(1), timeout=10) as response:
        assert response.status == 200
    term.kill()


# -- 3. rewinding to a message of yours: to before it, its text back in the input ----------


def _user_texts(request: dict[str, Any]) -> list[str]:
    """Every text block of the user messages a request to the model holds."""
    out = []
    for message in request["messages"]:
        if message["role"] != "user":
            continue
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        out += [b["text"] for b in blocks if b.get("type") == "text"]
    return out


def test_rewind_to_a_message_goes_before_it_and_puts_it_in_the_input(
    tmux: Tmux, env: TronEnv
) -> None:
    project = env.project("rewind-edit")
    env.llm.add(
        Response([Text("answer one")]),
        Response([Text("answer two")]),
        Response([Text("answer to the edit")]),
    )
    term = open_tron(tmux, env, project)
    send(term, "BASHME now")
    term.wait("answer one")
    idle(term)
    send(term, "LONGME narrow")
    term.wait("answer two")
    idle(term)
    term.send("C-t")
    term.wait("◆ answer two  ·  evt_")  # the cursor starts on the head
    term.send("Up")
    term.wait("› LONGME narrow  ·  evt_")
    term.send("r")
    term.wait("Conversation only")
    term.send("Enter")
    screen = term.wait(
        lambda s: input_box(s) == "LONGME narrow" and left(s, "Rewound to before your message")
    )
    assert "answer two" not in screen and "answer one" in screen
    assert "› LONGME narrow" not in screen  # not on the path any more: it is in the input
    term.type(" please")
    term.send("Enter")
    term.wait("answer to the edit")
    # The model got the edited prompt alone, not merged with the one rewound past.
    assert _user_texts(env.llm.requests[-1]) == ["BASHME now", "LONGME narrow please"]
    term.kill()


# -- 4. a failed turn offers /retry and /edit; a new prompt does not carry the failed one ---


def test_a_failed_prompt_is_retried_edited_or_left_out_not_merged(tmux: Tmux, env: TronEnv) -> None:
    from tests.support.scripted_llm import error_response

    project = env.project("failed-turns")
    env.llm.add(
        error_response(400, "invalid_request_error", "first failure"),
        Response([Text("retried fine")]),
        error_response(400, "invalid_request_error", "second failure"),
        Response([Text("third answered")]),
        error_response(400, "invalid_request_error", "fourth failure"),
    )
    term = open_tron(tmux, env, project)
    send(term, "first try")
    screen = term.wait("/retry sends your message again")
    assert "first failure" in screen
    idle(term)
    send(term, "/retry")
    term.wait("retried fine")
    idle(term)
    assert _user_texts(env.llm.requests[-1]) == ["first try"]
    # A failure, then a new prompt: the failed one is left out (and the transcript says so).
    send(term, "second try")
    term.wait("second failure")
    idle(term)
    send(term, "third")
    screen = term.wait("third answered")
    assert "it is left out" in screen
    assert _user_texts(env.llm.requests[-1]) == ["first try", "third"]
    idle(term)
    # /edit puts the failed prompt back in the input.
    send(term, "fourth")
    term.wait("fourth failure")
    idle(term)
    send(term, "/edit")
    screen = term.wait(lambda s: input_box(s) == "fourth")
    assert left(screen, "Back to before the message that failed")
    session = session_of(env, project)
    # Every failed attempt stays in the session's tree.
    users = env.store("get_events", session.id, types=["message.user"])
    texts = [e.payload["content"] for e in users]
    assert texts.count("first try") == 2 and "second try" in texts and "fourth" in texts
    term.kill()


# -- 5. the approval shows the diff the call will make, and the text before it -------------


def test_the_approval_shows_the_diff_against_the_file_and_the_text_before(
    tmux: Tmux, env: TronEnv
) -> None:
    project = env.project("approval-diff")
    (project / "notes.txt").write_text("keep this\nold line\n")
    env.llm.add(
        Response(
            [
                Text("I WILL OVERWRITE THE NOTES FILE"),
                ToolUse("Write", {"file_path": "notes.txt", "content": "keep this\nnew line\n"}),
            ]
        ),
        Response([Text("written")]),
    )
    term = open_tron(tmux, env, project, "--permission-mode", "default")
    send(term, "overwrite it")
    # The model's text before the call stays in view, above the card.
    screen = term.wait(lambda s: "+new line" in s and "I WILL OVERWRITE THE NOTES FILE" in s)
    assert screen.index("I WILL OVERWRITE") < screen.index("Allow Write?")
    assert "-old line" in screen and "+new line" in screen
    assert re.search(r"modified notes\.txt\s+\+1 -1", screen), screen  # against the disk
    assert '"file_path"' not in screen and "{" not in screen  # never raw JSON
    assert "Allow always (this session): Edit · every file edit" in screen
    term.send("Enter")
    term.wait("written")
    assert (project / "notes.txt").read_text() == "keep this\nnew line\n"
    term.kill()
