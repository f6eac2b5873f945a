"""``tron -p``'s early start (:func:`tron_server.terminal.launch.prestart`): with no server
answering, the server is started before the client is loaded, and the client then waits
for that one; in every other case nothing is started there, and the client decides as
before (a refused command line, ``--no-start``, ``--server``, a prompt on stdin, a
server already answering, another ``tron`` starting one)."""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import time
from pathlib import Path

import pytest

from tron_server.server_record import process_exists, read_server_record
from tron_server.terminal.launch import START_LOCK, Prestarted, open_start_lock, prestart


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def port(monkeypatch: pytest.MonkeyPatch) -> int:
    free = _free_port()
    monkeypatch.setenv("TRON_PORT", str(free))
    monkeypatch.delenv("TRON_HOME", raising=False)
    return free


def _stop(started: Prestarted) -> None:
    started.release()
    process = started.launched.process
    if process.poll() is None:
        os.kill(process.pid, signal.SIGTERM)
        process.wait(60)


@pytest.mark.parametrize(
    "argv",
    [
        ["-p"],  # no prompt argument: it may come on stdin, or be missing
        ["-p", "   "],
        ["hello"],  # interactive: it checks its terminal first
        ["--no-start", "-p", "hello"],
        ["--server", "ws://127.0.0.1:1/rpc", "-p", "hello"],
        ["-p", "hello", "--max-turns", "0"],  # refused by the parser's checks
        ["-p", "hello", "--no-such-option"],
        ["-p", "hello", "--help"],
        ["server", "status"],
        ["mcp", "list"],
    ],
)
def test_nothing_is_started_when_the_client_may_not_start_one(
    argv: list[str], tmp_path: Path, port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    assert (
        prestart(["--home", str(home), *argv] if argv[0] not in ("server", "mcp") else argv) is None
    )
    assert not (home / "servers").exists() and read_server_record(home) is None
    assert capsys.readouterr() == ("", "")  # the client, not this, reports a mistake


def test_nothing_is_started_when_something_answers(tmp_path: Path, port: int) -> None:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", port))
        listening.listen()
        assert prestart(["--home", str(tmp_path / "home"), "-p", "hello"]) is None
    assert read_server_record(tmp_path / "home") is None


def test_nothing_is_started_while_another_tron_starts_one(tmp_path: Path, port: int) -> None:
    home = tmp_path / "home"
    fd = open_start_lock(home)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert prestart(["--home", str(home), "-p", "hello"]) is None
    finally:
        os.close(fd)
    assert read_server_record(home) is None


def test_a_server_is_started_and_the_start_lock_held_until_released(
    tmp_path: Path, port: int
) -> None:
    home = tmp_path / "home"
    started = prestart(["--home", str(home), "-p", "hello"])
    assert started is not None
    try:
        assert started.launched.url == f"ws://127.0.0.1:{port}/rpc"
        record = read_server_record(home)
        assert record is not None and record.pid == started.launched.process.pid
        # Another tron meanwhile: the lock is held, so it starts nothing either.
        assert prestart(["--home", str(home), "-p", "again"]) is None
        fd = os.open(home / START_LOCK, os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            started.release()
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
        # The server it started is a real one: it records itself once it serves.
        deadline = time.monotonic() + 120
        while not (home / "servers" / f"{started.launched.process.pid}.json").exists():
            assert started.launched.process.poll() is None, "the server exited"
            assert time.monotonic() < deadline, "the server did not record itself"
            time.sleep(0.05)
        assert process_exists(started.launched.process.pid)
    finally:
        _stop(started)


def test_the_record_is_looked_for_under_the_server_records_name() -> None:
    # prestart looks for server.json without importing server_record (it is loaded once
    # the server is spawned): the two names must stay one.
    from tron_server import server_record
    from tron_server.terminal import launch

    assert launch.RECORD_NAME == server_record.RECORD_NAME


def test_the_start_loads_no_record_module_before_it_spawns_the_server() -> None:
    # What tron -p imports before it spawns tron-server is on the path to the first
    # request: the record's module (orjson, dataclasses, datetime) comes after the spawn.
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import tron_server.commandline, tron_server.terminal.launch as launch\n"
        "from tron_server.terminal.options import build_parser\n"
        "from pathlib import Path\n"
        "launch._answers(Path(sys.argv[1]))\n"
        "print(sorted(m for m in ('tron_server.server_record', 'dataclasses', 'orjson') "
        "if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, "/nonexistent-tron-home"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert out.strip() == "[]"


def test_the_client_loads_no_mcp_package_but_for_tron_mcp() -> None:
    # tron -p loads its client while the server starts, on the same two cores: the MCP
    # package (the tron mcp commands' listing) is left to those commands.
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import tron_server.commandline, tron_server.terminal.cli\n"
        "import tron_server.terminal.printmode\n"
        "print('tron_server.mcp' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout  # fmt: skip
    assert out.strip() == "False"


def test_the_version_is_read_only_when_asked(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    from tron_server.terminal.options import build_parser

    with pytest.raises(SystemExit) as done:
        build_parser().parse_args(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"tron {version('tron-server')}\n"


@pytest.mark.anyio
async def test_a_started_server_is_connected_to_while_it_starts(tmp_path: Path, port: int) -> None:
    """The token in place (a home used before), tron connects to the server it started
    while that one starts, its first call (system.info) held until it serves: the answer
    comes with the connection."""
    from tron_server.security import load_or_create_token
    from tron_server.terminal.attach import ServerAddress, _wait_for
    from tron_server.terminal.launch import start_server

    home = tmp_path / "home"
    load_or_create_token(home / "server-token")
    launched = start_server(home)
    try:
        connection = await _wait_for(ServerAddress(home), launched)
        try:
            assert connection.info is not None and connection.info["home"] == str(home)
            assert (await connection.client.call("system.ping"))["pong"] is True
        finally:
            await connection.close()
    finally:
        if launched.process.poll() is None:
            os.kill(launched.process.pid, signal.SIGTERM)
            launched.process.wait(60)
