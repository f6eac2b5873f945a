"""The tron-server command: help and version, settings, refusing a non-loopback host, a
busy port, a database it cannot use, and when it says "listening".

The command runs as a subprocess, as a user runs it: each start costs an interpreter
and the imports, so the database cases start together."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tron_server.cli import build_parser, login_url, main, settings_from_args

#: What must never reach a user of the command.
RAW_INTERNALS = ("Traceback", "sqlalchemy", "[SQL:", "sqlalche.me", "alembic", "psycopg.")


def run_cli(
    *args: str, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tron_server", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class ServerProcess:
    """``python -m tron_server`` with its stdout read line by line as it comes."""

    def __init__(self, home: Path, port: int, *args: str, env: dict[str, str] | None = None):
        self.home, self.port = home, port
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tron_server", "--home", str(home), "--port", str(port),
             "--log-level", "warning", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.out: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def wait_for_line(self, needle: str, timeout: float = 60) -> str:
        while True:
            line = self.lines.get(timeout=timeout)
            if line is None:
                err = self.proc.stderr.read() if self.proc.stderr else ""
                raise AssertionError(f"exited ({self.proc.wait()}) before {needle!r}: {err}")
            self.out.append(line)
            if needle in line:
                return line

    def stop(self) -> str:
        """SIGINT, wait; the stderr it wrote."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.proc.stderr.read() if self.proc.stderr else ""


@contextlib.contextmanager
def running(home: Path, port: int, *args: str) -> Iterator[ServerProcess]:
    server = ServerProcess(home, port, *args)
    try:
        server.wait_for_line("open in a browser")
        yield server
    finally:
        server.stop()


def assert_one_clean_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "listening" not in result.stdout
    for raw in RAW_INTERNALS:
        assert raw not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("tron-server: ")
    return lines[0]


def test_help_names_every_option_and_the_provider_variables() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    for option in (
        "--host", "--port", "--database-url", "--home", "--log-level", "--log-format",
        "--allow-remote", "--rotate-token", "--version",
        "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
        "TRON_ANTHROPIC_BASE_URL", "TRON_OPENAI_BASE_URL", "TRON_GOOGLE_BASE_URL",
        "TRON_OPENAI_COMPATIBLE_BASE_URL", "TRON_OPENAI_COMPATIBLE_API_KEY", "logs/tron-server.log",
    ):  # fmt: skip
        assert option in result.stdout, option


def test_version() -> None:
    from tron_server.services import server_version

    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"tron-server {server_version()}"


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "example.com", "::"])
def test_non_loopback_host_refused_without_allow_remote(host: str, tmp_path: Path) -> None:
    assert main(["--host", host, "--home", str(tmp_path)]) == 2
    # Nothing was started or written.
    assert not (tmp_path / "server-token").exists()


def test_refusal_through_the_command(tmp_path: Path) -> None:
    result = run_cli("--host", "0.0.0.0", "--home", str(tmp_path))
    assert "--allow-remote" in assert_one_clean_line(result)


def test_options_override_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TRON_PORT", "9999")
    monkeypatch.setenv("TRON_LOG_LEVEL", "debug")
    args = build_parser().parse_args(["--port", "9001", "--home", str(tmp_path)])
    settings = settings_from_args(args)
    assert settings.port == 9001 and settings.log_level == "debug" and settings.home == tmp_path
    assert settings.resolved_database_url() == f"sqlite:///{tmp_path}/database/prod.db"
    assert settings.allow_remote is False


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("TRON_PORT", "abc", "TRON_PORT='abc': Input should be a valid integer"),
        ("TRON_ALLOW_REMOTE", "maybe", "TRON_ALLOW_REMOTE='maybe': Input should be a valid"),
        ("TRON_LOG_LEVEL", "verbose", "TRON_LOG_LEVEL='verbose': Input should be 'critical'"),
        ("TRON_LOG_FORMAT", "xml", "TRON_LOG_FORMAT='xml': Input should be 'json' or 'text'"),
        ("TRON_SUBAGENT_MAX_DEPTH", "-1", "TRON_SUBAGENT_MAX_DEPTH='-1': Input should be greater"),
        (
            "TRON_DEFAULT_PROVIDER",
            "antropic",
            "TRON_DEFAULT_PROVIDER='antropic': unknown provider "
            "'antropic'; the known providers are anthropic, google, openai, openai-compatible",
        ),
    ],
)
def test_a_bad_environment_variable_is_named_in_one_line(
    variable: str,
    value: str,
    expected: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(variable, value)
    # A host that is no address of this machine: were the value accepted, the start
    # would still stop (at the host check or the bind) instead of serving.
    assert main(["--home", str(tmp_path / "h"), "--host", "192.0.2.1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tron-server: {expected}") and err.count("\n") == 1, err
    assert "pydantic" not in err and "Traceback" not in err
    assert not (tmp_path / "h").exists()  # refused before anything was written


def test_a_bad_option_value_is_named_as_the_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The parser checks the type; the range is the settings' check, which must not blame
    # a TRON_* variable the user never set.
    monkeypatch.delenv("TRON_ASK_TIMEOUT", raising=False)
    assert main(["--home", str(tmp_path / "h"), "--ask-timeout", "-5"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tron-server: --ask-timeout=-5.0: ") and err.count("\n") == 1, err
    assert "TRON_ASK_TIMEOUT" not in err and not (tmp_path / "h").exists()


def test_a_home_that_is_a_file_is_said_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "notes.txt"
    home.write_text("mine")
    assert main(["--home", str(home), "--port", str(free_port())]) == 2
    err = capsys.readouterr().err
    assert err == f"tron-server: cannot use {home}: it is a file, not a folder (--home)\n", err
    assert home.read_text() == "mine" and sorted(tmp_path.iterdir()) == [home]


def test_the_log_level_variable_is_case_insensitive(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRON_LOG_LEVEL", "DEBUG")
    monkeypatch.setenv("TRON_LOG_FORMAT", "Text")
    settings = settings_from_args(build_parser().parse_args([]))
    assert (settings.log_level, settings.log_format) == ("debug", "text")


def test_the_database_is_shown_where_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tron_server.cli import database_shown

    monkeypatch.chdir(tmp_path)
    for url, shown in (
        ("sqlite:///tmp/x.db", str(tmp_path / "tmp" / "x.db")),  # relative: where it went
        ("sqlite:////var/x.db", "/var/x.db"),
        (
            "postgresql+psycopg://tron:s3cret-pw@db/tron",
            "postgresql+psycopg://tron:[redacted]@db/tron",
        ),
    ):
        args = build_parser().parse_args(["--database-url", url])
        assert database_shown(settings_from_args(args)) == shown


def test_login_url() -> None:
    args = build_parser().parse_args(["--port", "8500"])
    assert login_url(settings_from_args(args), "tok") == "http://127.0.0.1:8500/login?token=tok"


def test_listening_is_said_once_it_accepts_and_a_second_server_breaks_nothing(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    port = free_port()
    first = ServerProcess(home, port)
    try:
        first.wait_for_line("listening")
        # Said only once it accepts: no retry needed, and it has recorded itself.
        assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=30).status_code == 200
        record = json.loads((home / "server.json").read_text())
        assert record["pid"] == first.proc.pid and record["url"] == f"ws://127.0.0.1:{port}/rpc"
        url = first.wait_for_line("open in a browser").split()[-1]
        assert f"  database: {home / 'database' / 'prod.db'}\n" in first.out
        token = (home / "server-token").read_text()
        before = {p: p.read_bytes() for p in (home / "server-token", home / "server.json")}

        # Another server on the busy port: one line, status 2, nothing written or broken.
        second = run_cli("--home", str(home), "--port", str(port))
        line = assert_one_clean_line(second)
        assert f"port {port} is in use (is another tron-server running? pid {first.proc.pid})" in (
            line
        )
        other_home = tmp_path / "other-home"
        line = assert_one_clean_line(run_cli("--home", str(other_home), "--port", str(port)))
        assert f"port {port} is in use" in line and not other_home.exists()
        # Rotating the token of a home a running server uses is refused.
        line = assert_one_clean_line(run_cli("--home", str(home), "--port", str(free_port()),
                                             "--rotate-token"))  # fmt: skip
        assert "stop it before rotating" in line
        # A second server on another port of the same home (the same SQLite file) refuses:
        # SQLite serves one server; PostgreSQL several (issue 34).
        line = assert_one_clean_line(run_cli("--home", str(home), "--port", str(free_port())))
        db = home / "database" / "prod.db"
        assert f"{db} is in use by another tron-server (pid {first.proc.pid}" in line
        assert "use PostgreSQL (docs/deploy.md)" in line
        assert json.loads((home / "server.json").read_text())["pid"] == first.proc.pid
        assert {p: p.read_bytes() for p in before} == before
        # The first is untouched: its token works, and its login URL (once).
        headers = {"Authorization": f"Bearer {token.strip()}"}
        with httpx.Client() as http:
            login = http.get(url, follow_redirects=False, timeout=30)
            assert login.status_code == 303 and "tron_session" in login.headers["set-cookie"]
            assert http.get(url, follow_redirects=False, timeout=30).status_code == 403
        from websockets.sync.client import connect

        with connect(f"ws://127.0.0.1:{port}/rpc", additional_headers=headers) as ws:
            ws.send('{"jsonrpc": "2.0", "id": 1, "method": "system.ping"}')
            assert "pong" in str(ws.recv(timeout=30))
    finally:
        err = first.stop()
    assert "Traceback" not in err
    assert not (home / "server.json").exists()  # removed by the server that wrote it


def test_two_servers_on_one_home_clients_find_the_one_that_runs(tmp_path: Path) -> None:
    """Two servers of one home share a PostgreSQL database (on SQLite the second refuses
    to start, see above)."""
    from tests.support import pg
    from tron_server.client import TronClient
    from tron_server.server_record import read_server_record

    async def ping(home: Path) -> int:
        async with TronClient.from_home(home) as client:
            info = await client.call("system.ping")
            assert info["pong"] is True
        record = read_server_record(home)
        assert record is not None
        return record.pid

    reason = pg.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    home = tmp_path / "home"
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(pg.fresh_database())
        _two_servers_on_one_home(home, url, ping)


def _two_servers_on_one_home(home: Path, url: str, ping: Any) -> None:
    first = ServerProcess(home, free_port(), "--database-url", url)
    second: ServerProcess | None = None
    try:
        first.wait_for_line("open in a browser")
        second = ServerProcess(home, free_port(), "--database-url", url)
        second.wait_for_line("open in a browser")
        note = second.wait_for_line("note:")
        assert f"tron-server pid {first.proc.pid}" in note and "uses this home too" in note
        assert asyncio.run(ping(home)) == first.proc.pid
        first.stop()
        # The first has left: the second is recorded now, and clients reach it.
        assert json.loads((home / "server.json").read_text())["pid"] == second.proc.pid
        assert asyncio.run(ping(home)) == second.proc.pid
        assert "Traceback" not in second.stop()
        assert not (home / "server.json").exists()
        assert list((home / "servers").glob("*.json")) == []
        # Both wrote the one log file, each line saying which process wrote it.
        lines = [json.loads(line) for line in (home / "logs" / "tron-server.log").open()]
        assert {line["pid"] for line in lines} <= {first.proc.pid, second.proc.pid}
        assert any(line["pid"] == second.proc.pid and "uses this home" in line["message"]
                   for line in lines)  # fmt: skip
    finally:
        first.stop()
        if second is not None:
            second.stop()


def test_a_port_held_by_another_program(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        line = assert_one_clean_line(run_cli("--home", str(tmp_path / "h"), "--port", str(port)))
    assert f"port {port} is in use (is another tron-server running?)" in line
    assert not (tmp_path / "h").exists()


def _readonly_database(path: Path) -> Path | None:
    """A SQLite database that not even root can write (an immutable file), or None."""
    from tron_events import EventStore

    EventStore.open(f"sqlite:///{path}").close()
    if os.geteuid() != 0:
        path.chmod(0o444)
        path.parent.chmod(0o555)
        return path
    if shutil.which("chattr") is None:
        return None  # e2fsprogs is missing: no immutable file for root
    made = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
    return path if made.returncode == 0 else None


def _writable_again(path: Path) -> None:
    if os.geteuid() == 0 and shutil.which("chattr"):
        subprocess.run(["chattr", "-i", str(path)], capture_output=True)
    else:
        path.parent.chmod(0o755)
        path.chmod(0o644)


def _tron_events_refuses_read_only(path: Path) -> bool:
    from tron_events import EventStore
    from tron_events.errors import DatabaseReadOnly

    try:
        EventStore.open(f"sqlite:///{path}").close()
    except DatabaseReadOnly:
        return True
    except Exception:
        return False
    return False


def cannot_start(tmp_path: Path, url: str) -> str:
    """What the command says about ``url`` (its start-up path, in this process)."""
    from tron_server.cli import CannotStart, open_for_serving
    from tron_server.settings import Settings

    settings = Settings(home=tmp_path / "home", database_url=url)
    with pytest.raises(CannotStart) as info:
        asyncio.run(open_for_serving(settings))
    message = str(info.value)
    assert "\n" not in message
    for raw in RAW_INTERNALS:
        assert raw not in message, message
    return message


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("foo://x/y", r"(unknown|unsupported) database URL"),
        ("mysql://root@127.0.0.1:3306/test", r"MySQL( and MariaDB)? (is|are) not supported"),
        ("mariadb+pymysql://root@127.0.0.1/test", r"MySQL( and MariaDB)? (is|are) not supported"),
        ("{notes}", r"not a (Tron |SQLite )?database"),
        ("postgresql+psycopg://postgres:secret@127.0.0.1:{port}/test", r"reach|connect"),
    ],
)
def test_a_database_it_cannot_use_is_named_in_one_line(
    tmp_path: Path, url: str, expected: str
) -> None:
    notes = tmp_path / "notes.db"
    notes.write_text("these are my notes, not a database\n")
    message = cannot_start(tmp_path, url.format(notes=notes, port=free_port()))
    assert re.search(expected, message, re.I), message
    assert "secret" not in message  # a password in the URL is not repeated
    assert notes.read_text() == "these are my notes, not a database\n"  # untouched


def test_postgres_without_its_driver_through_the_command(tmp_path: Path) -> None:
    """The whole command: one line on stderr, status 2, no "listening", nothing else."""
    no_driver = (
        "import sys; sys.modules['psycopg'] = None; "
        "from tron_server.cli import main; sys.exit(main())"
    )
    result = subprocess.run(
        [sys.executable, "-c", no_driver, "--home", str(tmp_path / "h"), "--port",
         str(free_port()), "--database-url", "postgresql+psycopg://postgres@127.0.0.1/test"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "pip install 'tron-events[postgres]'" in assert_one_clean_line(result)


def test_a_read_only_database_is_refused_at_start(tmp_path: Path) -> None:
    db = (
        _readonly_database(tmp_path / "ro" / "prod.db")
        if (tmp_path / "ro").mkdir() is None
        else None
    )
    if db is None:
        pytest.skip("cannot make a read-only file here (as root: chattr +i missing or failed)")
    try:
        assert _tron_events_refuses_read_only(db)
        message = cannot_start(tmp_path, str(db))
        assert re.search(r"read-only|readonly", message, re.I), message
    finally:
        _writable_again(db)


def test_the_settings_know_the_providers_tron_llm_has() -> None:
    """The settings name the providers themselves (reading them must not import tron_llm:
    the server's first answer would wait for it); they must be tron_llm's."""
    from tron_llm.registry import PROVIDERS
    from tron_server.settings import KNOWN_PROVIDERS

    assert set(KNOWN_PROVIDERS) == set(PROVIDERS)


def test_the_runtime_leaves_what_a_first_turn_does_not_use_for_later() -> None:
    """The start's imports (the runtime and the method table) do not load the slash
    commands' parts nor pathspec, which a first message that is no command does not
    use; import_later (a thread, once the server has served a while) loads them."""
    wanted = ("pathspec", "tron_server.commands.builtins", "tron_server.commands.expand",
              "tron_server.commands.files", "tron_server.commands.mcp")  # fmt: skip
    code = (
        "import sys\n"
        "from tron_server.services import import_runtime\n"
        "from tron_server.app import build_registry, import_later\n"
        "import_runtime(); build_registry()\n"
        f"wanted = {wanted!r}\n"
        "print(sorted(m for m in wanted if m in sys.modules))\n"
        "import_later()\n"
        "print(sorted(m for m in wanted if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, check=True)  # fmt: skip
    assert result.stdout.splitlines() == ["[]", str(sorted(wanted))], result.stdout


def test_reading_the_settings_imports_no_runtime() -> None:
    """What the server needs before its first answer (the command, its settings, the app
    module) loads neither tron_llm, the store, the tools nor the methods: those load
    behind /health (a fresh interpreter, so that nothing else imported them)."""
    code = (
        "import sys, tron_server.app; "
        "from tron_server.cli import build_parser, settings_from_args; "
        "settings_from_args(build_parser().parse_args([])); "
        "print(sorted(m for m in ('tron_llm', 'tron_events', 'tron_server.tools', "
        "'tron_server.methods', 'tron_server.commands', 'tron_server.services') "
        "if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, check=True)  # fmt: skip
    assert result.stdout.strip() == "[]", result.stdout
