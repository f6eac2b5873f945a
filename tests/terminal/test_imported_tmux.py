"""A session whose folder is not on this machine (an imported one), opened with
``tron -r``/``-c`` in a real terminal (tmux): ``tron`` says so and asks which folder to
continue in (this one proposed); Enter moves the session there (``session.resume``),
Esc opens it as it is with the warning written in the transcript. ``tron -p -r`` warns.

Skipped with the reason when tmux is missing; ``TRON_REQUIRE_TMUX=1`` (CI) makes that
a failure.
"""

from __future__ import annotations

from typing import Any

from tests.support.scripted_llm import Response, Text
from tests.terminal.conftest import TronEnv
from tests.terminal.tmux import Tmux

ELSEWHERE = "/nonexistent/laptop/home/dev/parser"
ASKED = "This session's folder is not here"


def imported(env: TronEnv) -> Any:
    """A session as an import leaves it: its folder is another machine's."""
    session = env.store(
        "create_session",
        working_directory=ELSEWHERE,
        model="claude-sonnet-4-5",
        provider="anthropic",
        title="Parser drops the last line",
    )
    env.store("append", session.id, "message.user", {"content": "Fix the parser", "turn": 1})
    return session


def open_tron(tmux: Tmux, env: TronEnv, cwd: Any, *args: str) -> Any:
    return tmux.terminal(
        ["--home", str(env.server.home), "--server", env.server.ws_url, *args],
        cwd=cwd,
        env={"ANTHROPIC_API_KEY": "test-key"},
    )


def test_resume_asks_for_the_folder_and_continues_there(tmux: Tmux, env: TronEnv) -> None:
    here = env.project("continue-here")
    session = imported(env)
    term = open_tron(tmux, env, here, "-r", session.id[:-4])  # ids share their time prefix
    screen = term.wait(ASKED)
    assert ELSEWHERE in screen and str(here) in screen  # this folder is proposed
    term.send("Enter")
    term.ready()
    moved = env.store("get_session", session.id)
    assert moved.working_directory == str(here)
    last = env.store("get_events", session.id)[-1]
    assert last.type == "config.working_directory"
    assert last.payload["previousWorkingDirectory"] == ELSEWHERE
    # The conversation goes on there: the agent's next turn runs in this folder.
    env.llm.add(Response([Text("Looking at it here.")]))
    term.type("go on")
    term.send("Enter")
    term.wait("Looking at it here.")
    term.kill()


def test_a_typed_folder_must_exist_and_esc_opens_it_as_it_is(tmux: Tmux, env: TronEnv) -> None:
    here = env.project("as-it-is")
    session = imported(env)
    term = open_tron(tmux, env, here, "-c", session.id)
    term.wait(ASKED)
    for _ in range(3):  # keys sent before the input takes focus are not its to keep
        term.send("C-u")
        term.type("/no/such/folder")
        try:
            term.wait("/no/such/folder", timeout=10)
            break
        except AssertionError:
            continue
    term.send("Enter")
    term.wait("/no/such/folder: no such folder")
    term.send("Escape")
    term.ready()
    term.wait("not a folder on this machine")  # the note, in the transcript
    assert env.store("get_session", session.id).working_directory == ELSEWHERE
    term.kill()


def test_print_mode_warns(env: TronEnv) -> None:
    here = env.project("print-mode")
    session = imported(env)
    env.llm.add(Response([Text("Answered.")]))
    result = env.tron("-p", "-r", session.id, "hello", cwd=here)
    assert result.returncode == 0, result.stderr
    assert "not a folder on this machine" in result.stderr
    assert f"`tron -r {session.id}` offers to continue it in another folder" in result.stderr
