"""Issue 27 in a real terminal (tmux) against a real tron-server and the scripted LLM:
nothing typed is lost or silently re-sent, approvals say and do what they offer, and
what happened is written in the transcript. Each test failed on the code before it.

Skipped with the reason when tmux is missing; ``TRON_REQUIRE_TMUX=1`` (CI) makes that
a failure.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.server.scripted_llm import Response, Text, ToolUse
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
