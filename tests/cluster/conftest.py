"""Several real tron-server processes on one fresh PostgreSQL database, one scripted model.

    def test_x(servers: Servers) -> None:
        a, b, c = servers.procs
        async with servers.client(b) as client: ...

Each server has its own home (its own log, its own record) and the same token; they
share the database and the scripted model (``servers.llm``; responses are served in
the order the requests come, whichever server asks). Leases last
:data:`LEASE_SECONDS` so that a failover fits in a test.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.support import pg
from tests.support.scripted_llm import ScriptedLLM, scripted_llm_thread
from tron_server.client import TronClient

LEASE_SECONDS = 2.0
TOKEN = "tron-cluster-test-token-0123456789abcdef"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Server:
    name: str
    home: Path
    port: int
    env: dict[str, str]
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/rpc"

    def start(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        token = self.home / "server-token"
        token.write_text(TOKEN + "\n")
        token.chmod(0o600)
        log = open(self.home / "stderr.log", "ab")  # noqa: SIM115 - the child holds it
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tron_server", "--home", str(self.home),
             "--port", str(self.port), "--log-level", "warning"],
            stdout=subprocess.DEVNULL, stderr=log, env=self.env,
        )  # fmt: skip

    def wait_ready(self, timeout: float = 180) -> None:
        """Until /health answers (a start takes seconds; on a loaded machine, a minute)."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.name} exited: {self.stderr()}")
            try:
                health = httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=1)
                if health.is_success and health.json().get("ready") is not False:
                    return  # serving (while it starts, /health answers "ready": false)
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"{self.name} did not start: {self.stderr()}")

    def kill(self) -> None:
        """kill -9: no shutdown, no lease given back."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()

    def stderr(self) -> str:
        path = self.home / "stderr.log"
        return path.read_text(errors="replace") if path.exists() else ""


@dataclass
class Servers:
    procs: list[Server]
    llm: ScriptedLLM
    database_url: str
    workdir: Path

    @contextlib.asynccontextmanager
    async def client(self, server: Server) -> AsyncIterator[TronClient]:
        async with TronClient.connect(server.url, token=TOKEN) as client:
            yield client


def start_servers(
    tmp: Path, database_url: str, llm_url: str, count: int = 3, **env_extra: str
) -> list[Server]:
    env = {
        **os.environ,
        "TRON_DATABASE_URL": database_url,
        "TRON_ANTHROPIC_BASE_URL": llm_url,
        "ANTHROPIC_API_KEY": "test-key",
        "TRON_DEFAULT_MODEL": "claude-sonnet-4-5",
        "TRON_CLUSTER_LEASE_SECONDS": str(LEASE_SECONDS),
        "TRON_ALLOW_BYPASS_PERMISSIONS": "1",
        "TRON_DEFAULT_PERMISSION_MODE": "bypassPermissions",
        "TRON_WORKSPACE_RECORD_COMMANDS": "0",
        "TRON_CLAUDE_JSON": str(tmp / "claude.json"),
        "HOME": str(tmp / "user-home"),
        **env_extra,
    }
    servers = [
        Server(name, tmp / f"home-{name}", _free_port(), {**env, "CLUSTER_TEST_SERVER": name})
        for name in "abcdefgh"[:count]
    ]
    for server in servers:
        server.start()
    for server in servers:
        server.wait_ready()
    return servers


@pytest.fixture(scope="session")
def _cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    """Started once per test process: starting a server costs seconds on a loaded
    machine. One fresh database for the whole run; each test uses its own sessions."""
    reason = pg.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    from tron_events import migrate

    tmp_path = tmp_path_factory.mktemp("cluster")
    workdir = tmp_path / "work"
    workdir.mkdir()
    with pg.fresh_database() as url, scripted_llm_thread() as llm:
        migrate.upgrade(url)
        procs = start_servers(tmp_path, url, llm.base_url)
        try:
            yield Servers(procs, llm, url, workdir)
        finally:
            for server in procs:
                server.stop()
            for server in procs:
                assert "Traceback" not in server.stderr(), server.stderr()


async def _busy_sessions(server: Server) -> list[str]:
    async with TronClient.connect(server.url, token=TOKEN) as client:
        listed = (await client.call("session.list", {"limit": 1000}))["sessions"]
    return [s["id"] for s in listed if s["busy"]]


def settle(cluster: Servers, timeout: float = 90) -> None:
    """Until no session runs anywhere (a run an earlier test left going, or a killed
    server's until it is taken over), then drop the scripted replies nobody took: the
    scripted model serves whichever server asks first, so a late request of an earlier
    test would take this test's replies."""
    deadline = time.monotonic() + timeout
    busy: list[str] = []
    while time.monotonic() < deadline:
        # Each server's own view: one just started may not know the others' runs yet.
        busy = [sid for server in cluster.procs for sid in asyncio.run(_busy_sessions(server))]
        if not busy:
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"sessions of an earlier test still run after {timeout} s: {busy}")
    cluster.llm.drop_remaining()


@pytest.fixture
def servers(_cluster: Servers) -> Iterator[Servers]:
    """The three servers, all running (one a test killed is started again first) and
    idle. The scripted model serves responses in order: a test adds the ones its turns
    use (those an earlier test left are dropped)."""
    for server in _cluster.procs:
        if server.proc is None or server.proc.poll() is not None:
            server.start()
    for server in _cluster.procs:
        server.wait_ready()
    settle(_cluster)
    yield _cluster
    for server in _cluster.procs:
        assert "Traceback" not in server.stderr(), server.stderr()
