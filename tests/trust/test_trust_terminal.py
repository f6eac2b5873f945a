"""Folder trust in the terminal client, as real processes: ``tron -p`` never trusts a
folder by itself (one line on stderr says so, and nothing of the folder acts),
``tron --trust`` trusts it first, and ``tron`` in tmux asks on opening an untrusted
folder that defines configuration (issue 26 item 1)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from tests.support.scripted_llm import Response, Text, ToolUse, scripted_llm_thread
from tests.support.server import RunningServer
from tests.terminal.conftest import TronEnv
from tests.terminal.tmux import Tmux, require_tmux
from tests.trust.hostile import Hostile, make_hostile


@pytest.fixture(scope="module")
def tron_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TronEnv]:
    """A server in the default mode that would let a folder's bypassPermissions act (the
    worst case): a call that runs without asking was let through by the folder."""
    root = tmp_path_factory.mktemp("trust-terminal")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ANTHROPIC_API_KEY", "test-key")
        with scripted_llm_thread() as llm:
            server = RunningServer(
                root / "tron-home",
                anthropic_base_url=llm.base_url,
                default_provider="anthropic",
                default_model="claude-sonnet-4-5",
                default_permission_mode="default",
                allow_bypass_permissions=True,
            ).start()
            try:
                yield TronEnv(server=server, llm=llm, root=root)
            finally:
                server.stop()


@pytest.fixture
def env(tron_env: TronEnv) -> TronEnv:
    llm = tron_env.llm
    with llm._lock:
        llm._position = len(llm.script)
        llm._served_of_current = 0
    return tron_env


@pytest.fixture
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Hostile:
    return make_hostile(tmp_path_factory.mktemp("t"))  # a short path: it fits a line


def settle(server: RunningServer) -> None:
    """Wait for every hook still running in the background (SessionStart, Notification)."""
    orchestrator = server.services.orchestrator
    assert orchestrator is not None

    async def drain() -> None:
        await orchestrator.lifecycle.drain(30)

    server.run_sync(drain, timeout=60)


def bash_marker(hostile: Hostile) -> ToolUse:
    return ToolUse("Bash", {"command": f"echo x >> '{hostile.markers / 'bash'}'"})


def test_print_mode_leaves_an_untrusted_folder_inert_and_says_so(
    env: TronEnv, hostile: Hostile
) -> None:
    env.llm.add(Response([bash_marker(hostile)]), Response([Text("Nothing ran.")]))
    proc = env.tron("-p", "set up the project", cwd=hostile.root)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Nothing ran.\n"
    [line] = proc.stderr.splitlines()
    assert line.startswith(f"tron: {hostile.root} is not trusted")
    assert "18 hooks" in line and "defaultMode bypassPermissions" in line
    assert "`tron --trust`" in line
    settle(env.server)
    assert hostile.marked() == {}
    # The approval nobody could give was refused: the folder's rules and mode did not act.
    assert "without a person to ask" in json.dumps(env.llm.requests[-1]["messages"])
    assert (
        not (env.server.home / "trust.json").exists()
        or str(hostile.root) not in (env.server.home / "trust.json").read_text()
    )


def test_trust_flag_trusts_the_folder_first(env: TronEnv, hostile: Hostile) -> None:
    env.llm.add(Response([bash_marker(hostile)]), Response([Text("All set.")]))
    proc = env.tron("--trust", "-p", "set up the project", cwd=hostile.root)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "All set.\n" and proc.stderr == ""
    env.llm.add(Response([Text("Installed.")]))
    command = env.tron("-p", "/pwn", cwd=hostile.root)  # trusted now: no --trust needed
    assert command.returncode == 0 and command.stderr == "", command.stderr
    settle(env.server)
    marked = hostile.marked()
    for event in ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"):
        assert marked.get(event, 0) >= 2, (event, marked)
    assert marked["bash"] == 1 and marked["command"] == 1
    record = json.loads((env.server.home / "trust.json").read_text())
    assert record["folders"][str(hostile.root)]["trusted"] is True


def test_a_subfolder_of_a_trusted_folder_needs_no_flag(env: TronEnv, hostile: Hostile) -> None:
    parent = hostile.root.parent
    env.llm.add(Response([Text("ok")]))
    assert env.tron("--trust", "-p", "hello", cwd=parent).returncode == 0
    env.llm.add(Response([Text("ok")]))
    proc = env.tron("-p", "hello", cwd=hostile.root)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    settle(env.server)
    assert hostile.marked().get("UserPromptSubmit") == 2


# -- tron in a real terminal --------------------------------------------------------------


@pytest.fixture(scope="module")
def tmux(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tmux]:
    require_tmux()
    server = Tmux(tmp_path_factory.mktemp("tmux") / "socket")
    try:
        yield server
    finally:
        server.kill()


def test_tron_asks_on_first_open_and_acts_on_the_answer(
    tmux: Tmux, env: TronEnv, hostile: Hostile
) -> None:
    args = ["--home", str(env.server.home), "--server", env.server.ws_url]
    keys = {"ANTHROPIC_API_KEY": "test-key"}
    term = tmux.terminal(args, cwd=hostile.root, env=keys)
    screen = term.wait("Do you trust this folder?")
    for shown in (str(hostile.root), "18 hooks", "3 allow rules", "defaultMode bypassPermissions",
                  "1 command that runs shell", "2 agent definitions", "1 MCP server",
                  "Trust this folder", "Continue without its settings"):  # fmt: skip
        assert shown in screen, (shown, screen)
    term.send("Enter")  # the highlighted answer is the safe one
    term.ready()
    env.llm.add(Response([Text("Plain answer.")]))
    term.type("hello")
    term.wait("hello")
    term.send("Enter")
    term.wait("Plain answer.")
    settle(env.server)
    assert hostile.marked() == {}
    term.send("C-c")
    term.send("C-c")
    term.wait("TRON-EXIT=")

    # Opened again: still untrusted, so it asks again; this time the answer is "trust".
    again = tmux.terminal(args, cwd=hostile.root, env=keys)
    again.wait("Do you trust this folder?")
    again.send("Up")
    again.send("Enter")
    again.ready()
    env.llm.add(Response([bash_marker(hostile)]), Response([Text("Done with it.")]))
    again.type("set it up")
    again.wait("set it up")
    again.send("Enter")
    again.wait("Done with it.")
    settle(env.server)
    deadline = time.monotonic() + 30
    while "Stop" not in hostile.marked() and time.monotonic() < deadline:
        time.sleep(0.1)
    marked = hostile.marked()
    for event in ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"):
        assert marked.get(event) == 2, (event, marked)
    assert marked["bash"] == 1  # the folder's allow rule and mode let it run unasked
    record = json.loads((env.server.home / "trust.json").read_text())
    assert record["folders"][str(hostile.root)]["trusted"] is True
    again.send("C-c")
    again.send("C-c")
    again.wait("TRON-EXIT=")

    # Trusted now: no question on the next open.
    third = tmux.terminal(args, cwd=hostile.root, env=keys)
    screen = third.ready()
    assert "Do you trust this folder?" not in screen
    third.send("C-c")
    third.send("C-c")
    third.wait("TRON-EXIT=")
