"""The background server (issue 27.7–9) as a user meets it, in subprocesses on fresh
homes: ``tron server status|stop|restart``, the port kept across a stop, one server
for two ``tron`` started at once, a provider environment the server lacks, and a
first start that logs no refusals of its own making. Each test failed before."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.ports import port_for_later
from tests.support.scripted_llm import Response, Text
from tests.terminal.conftest import TRON, TronEnv
from tron_server.server_record import is_tron_server, read_server_record, running_servers


class Home:
    """A fresh home and the background servers started on it (stopped at the end)."""

    def __init__(self, env: TronEnv, path: Path) -> None:
        self.env = env
        self.path = path
        self.port = port_for_later()
        self.seen: set[int] = set()
        self.extra: dict[str, str] = {}

    def environ(self) -> dict[str, str]:
        environ = self.env.env(
            TRON_PORT=str(self.port),
            TRON_ANTHROPIC_BASE_URL=self.env.llm.base_url,
            TRON_LOG_LEVEL="info",  # refusals are warnings: they would be logged
            **self.extra,
        )
        for name in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "TRON_HOME"):
            environ.pop(name, None)
        environ.update(self.extra)
        return environ

    def tron(self, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [*TRON, *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=120,
            env=self.environ(),
            stdin=subprocess.DEVNULL,
        )
        self.note_servers()
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc

    def note_servers(self) -> None:
        self.seen.update(r.pid for r in running_servers(self.path))

    def logs(self) -> str:
        return "".join(p.read_text() for p in (self.path / "logs").glob("*") if p.is_file())

    def stop_all(self) -> None:
        self.note_servers()
        for pid in self.seen:
            if is_tron_server(pid):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while any(is_tron_server(p) for p in self.seen) and time.monotonic() < deadline:
            time.sleep(0.1)


@pytest.fixture
def home(env: TronEnv, tmp_path: Path) -> Iterator[Home]:
    h = Home(env, tmp_path / "home")
    try:
        yield h
    finally:
        h.stop_all()


def _port(url: str) -> int:
    match = re.search(r":(\d+)/", url)
    assert match, url
    return int(match.group(1))


def test_status_stop_restart_and_the_port_is_kept(env: TronEnv, home: Home) -> None:
    project = env.project("server-commands")
    env.llm.add(*(Response([Text(f"reply {i}")]) for i in range(3)))
    first = home.tron("--home", str(home.path), "-p", "hello", cwd=project)
    assert first.returncode == 0, first.stderr
    assert "Started tron-server in the background" in first.stderr
    record = read_server_record(home.path)
    assert record is not None and _port(record.url) == home.port
    # 9: the first start logs no refusal of its own making (tron connected too early).
    assert "websocket refused" not in home.logs()

    status = home.tron("server", "status", "--home", str(home.path), cwd=project)
    assert status.returncode == 0, status.stderr
    out = status.stdout
    for expected in (
        f"pid {record.pid}",
        f"ws://127.0.0.1:{home.port}/rpc",
        str(home.path),
        str(home.path / "database" / "prod.db"),
        "version:",
        "uptime:",
        "`tron server stop`",
    ):
        assert expected in out, (expected, out)
    # The login URL logs a browser in, once.
    login = re.search(r"login:\s+(http://\S+/login\?token=\S+)", out)
    assert login, out
    with urllib.request.urlopen(login.group(1), timeout=10) as response:
        assert response.status == 200  # redirected to the web chat, logged in
    with pytest.raises(urllib.error.HTTPError) as again:
        urllib.request.urlopen(login.group(1), timeout=10)
    assert again.value.code == 403

    stop = home.tron("server", "stop", "--home", str(home.path), cwd=project)
    assert stop.returncode == 0, stop.stderr
    assert f"Stopped tron-server (pid {record.pid}" in stop.stdout
    assert not is_tron_server(record.pid)
    gone = home.tron("server", "status", "--home", str(home.path), cwd=project)
    assert gone.returncode == 3 and "No tron-server is running" in gone.stderr

    # 8: right after the stop, the next auto-start keeps the port (it moved before:
    # the stopped server's connections in TIME_WAIT made the probe think it busy).
    again_run = home.tron("--home", str(home.path), "-p", "again", cwd=project)
    assert again_run.returncode == 0, again_run.stderr
    second = read_server_record(home.path)
    assert second is not None and second.pid != record.pid
    assert _port(second.url) == home.port, second.url

    restart = home.tron("server", "restart", "--home", str(home.path), cwd=project)
    assert restart.returncode == 0, restart.stderr
    third = read_server_record(home.path)
    assert third is not None and third.pid not in (record.pid, second.pid)
    assert not is_tron_server(second.pid)
    assert _port(third.url) == home.port
    assert f"pid {third.pid}" in restart.stdout
    assert "websocket refused" not in home.logs()
    # Nothing runs twice, and stop on a stopped home is not an error.
    assert [r.pid for r in running_servers(home.path)] == [third.pid]
    home.tron("server", "stop", "--home", str(home.path), cwd=project)
    idle = home.tron("server", "stop", "--home", str(home.path), cwd=project)
    assert idle.returncode == 0 and "No tron-server was running" in idle.stdout


def test_two_trons_started_at_once_start_one_server(env: TronEnv, home: Home) -> None:
    project = env.project("two-at-once")
    env.llm.add(Response([Text("same reply")]), Response([Text("same reply")]))
    procs = [
        subprocess.Popen(
            [*TRON, "--home", str(home.path), "-p", "hi"],
            cwd=project,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=home.environ(),
            stdin=subprocess.DEVNULL,
        )
        for _ in range(2)
    ]
    results = [p.communicate(timeout=120) for p in procs]
    home.note_servers()
    for proc, (out, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err
        assert out == "same reply\n"
    started = [err for _, err in results if "Started tron-server" in err]
    assert len(started) == 1, results
    assert len(running_servers(home.path)) == 1
    assert len(home.seen) == 1


def test_a_provider_variable_the_server_lacks_is_named(env: TronEnv, home: Home) -> None:
    project = env.project("env-differs")
    env.llm.add(*(Response([Text(f"r{i}")]) for i in range(3)))
    first = home.tron("--home", str(home.path), "-p", "one", cwd=project)
    assert first.returncode == 0, first.stderr
    assert "provider environment" not in first.stderr
    # A key set in this shell that the background server was not started with.
    home.extra = {"OPENAI_API_KEY": "sk-set-later"}
    second = home.tron("--home", str(home.path), "-p", "two", cwd=project)
    assert second.returncode == 0, second.stderr
    assert "another provider environment" in second.stderr
    assert "OPENAI_API_KEY is set here but not in the server" in second.stderr
    assert "`tron server restart`" in second.stderr
    assert "sk-set-later" not in second.stderr
    assert "sk-set-later" not in (home.path / "server.json").read_text()
    restart = home.tron("server", "restart", "--home", str(home.path), cwd=project)
    assert restart.returncode == 0, restart.stderr
    third = home.tron("--home", str(home.path), "-p", "three", cwd=project)
    assert third.returncode == 0 and "provider environment" not in third.stderr
