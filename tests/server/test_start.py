"""The command's start: ``/health`` answers before the runtime is built, and nothing a
client does meanwhile is refused or lost (issue 29 goal 2).

``tron-server`` builds its runtime (the modules, the method table, the store, the tools)
behind ``/health`` (``app.DeferredStart``): a client that polls ``/health`` and connects
at its first answer has its requests wait, then served by the same methods, commands and
tools as a server that was built before it answered. No timing is asserted here: a
gate the test holds keeps the start unfinished for as long as the test needs."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import uvicorn

from tests.support.rpc import complete
from tests.support.scripted_llm import Response, ScriptedLLM, Text
from tests.support.server import RunningServer, ServerFactory
from tron_server.app import DeferredStart, create_app, uvicorn_options
from tron_server.client import ConnectionLost, TronClient
from tron_server.hub import Hub
from tron_server.services import Services, open_services
from tron_server.settings import Settings

pytestmark = pytest.mark.anyio


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def first_health(base_url: str, proc: subprocess.Popen[bytes] | None = None) -> Any:
    """The body of the first answer of ``/health`` (polled until one comes)."""
    async with httpx.AsyncClient() as http:
        with anyio.fail_after(120):
            while True:
                if proc is not None and proc.poll() is not None:
                    raise AssertionError(f"the server exited ({proc.returncode})")
                try:
                    r = await http.get(f"{base_url}/health", timeout=5)
                except httpx.HTTPError:
                    await anyio.sleep(0.005)
                    continue
                assert r.status_code == 200, r.text
                return r.json()


async def one_turn(client: TronClient, llm: ScriptedLLM, workdir: Path) -> dict[str, Any]:
    """session.create then agent.message, answered by ``llm``: the methods, commands and
    tools the client and the model saw (the turn must complete)."""
    workdir.mkdir(parents=True, exist_ok=True)
    llm.add(Response([Text("hello back")]))
    session = await client.call(
        "session.create", {"workingDirectory": str(workdir), "provider": "anthropic"}
    )
    stream = client.notifications(session_id=session["id"])
    await client.call("agent.message", {"sessionId": session["id"], "prompt": "hello"})
    done = await complete(stream, timeout=60)
    info = await client.call("system.info")
    commands = await client.call("command.list", {"sessionId": session["id"]})
    assert done.data["stopReason"] == "end_turn", done.data
    return {
        "methods": sorted(info["methods"]),
        "commands": sorted(c["name"] for c in commands["commands"]),
        "tools": sorted(t["name"] for t in llm.requests[-1]["tools"]),
    }


async def reference(server_factory: ServerFactory, llm: ScriptedLLM, tmp_path: Path) -> Any:
    """The same turn on a server built before it answered (the tests' in-process app)."""
    server = server_factory(anthropic_base_url=llm.base_url, default_model="claude-sonnet-4-5")
    async with server.connect() as client:
        return await one_turn(client, llm, tmp_path)


@dataclass
class Deferred:
    app: Any
    server: uvicorn.Server
    url: str
    failures: list[BaseException]

    def connect(self) -> contextlib.AbstractAsyncContextManager[TronClient]:
        ws_url = f"{self.url.replace('http', 'ws')}/rpc"
        return TronClient.connect(ws_url, token=self.app.state.token)


@contextlib.asynccontextmanager
async def deferred_server(
    home: Path, llm: ScriptedLLM, open_: Callable[[Settings], Awaitable[Services]]
) -> AsyncIterator[Deferred]:
    """An app started the command's way (``open_`` builds the services), served in this
    event loop. Its shutdown does not give up on a connection before 10 minutes: a test
    that ends is one that did not wait for a client."""
    port = free_port()
    settings = Settings(
        home=home, port=port, log_level="warning", anthropic_base_url=llm.base_url,
        default_model="claude-sonnet-4-5", claude_json=home / "claude.json",
        allow_bypass_permissions=True, default_permission_mode="bypassPermissions",
    )  # fmt: skip
    failures: list[BaseException] = []
    ready: list[Services] = []

    async def open_backend() -> Services:
        return await open_(settings)

    app = create_app(settings, deferred=DeferredStart(open_backend, ready.append, failures.append))
    options = uvicorn_options(settings)
    options.update(log_level="warning", access_log=False, timeout_graceful_shutdown=600)
    server = uvicorn.Server(uvicorn.Config(app, **options))
    task = asyncio.create_task(server.serve())
    try:
        with anyio.fail_after(60):
            while not server.started:
                await anyio.sleep(0.01)
        yield Deferred(app, server, f"http://127.0.0.1:{port}", failures)
    finally:
        server.should_exit = True
        with anyio.fail_after(60):
            await task


async def test_a_client_that_connects_at_the_first_health_answer_waits_and_is_served(
    server_factory: ServerFactory,
    llm: ScriptedLLM,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    gate = asyncio.Event()

    async def held_open(settings: Settings) -> Services:
        await gate.wait()
        return await open_services(settings, Hub)

    home = tmp_path / "home"
    async with deferred_server(home, llm, held_open) as started:
        base_url = started.url
        health = await first_health(base_url)
        assert health["status"] == "ok" and health["ready"] is False
        async with started.connect() as client:
            turn = asyncio.create_task(one_turn(client, llm, tmp_path))
            ping = asyncio.create_task(client.call("system.ping"))
            # Nothing is answered while the start is held, and nothing is refused.
            await anyio.sleep(0.3)
            assert not turn.done() and not ping.done()
            assert (await first_health(base_url))["ready"] is False
            gate.set()
            served = await turn
            assert (await ping)["pong"] is True
        assert (await first_health(base_url))["ready"] is True
        assert started.failures == []
    assert served == await reference(server_factory, llm, tmp_path / "ref")


async def test_a_start_that_fails_after_health_closes_the_waiting_clients(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    gate = asyncio.Event()

    async def failing_open(settings: Settings) -> Services:
        await gate.wait()
        raise OSError("the database is gone")

    async with deferred_server(tmp_path / "home", llm, failing_open) as started:
        url = started.url
        assert (await first_health(url))["ready"] is False
        async with started.connect() as client:
            call = asyncio.create_task(client.call("system.ping"))
            await anyio.sleep(0.1)
            gate.set()
            with pytest.raises(ConnectionLost) as closed:
                await call
        assert closed.value.code == 1011
        [failure] = started.failures
        assert isinstance(failure, OSError) and "gone" in str(failure)
        async with httpx.AsyncClient() as http:
            r = await http.get(f"{url}/health")
        assert r.status_code == 503 and r.json()["status"] == "failed"


async def test_a_server_stopped_while_it_starts_closes_the_waiting_clients(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    never = asyncio.Event()

    async def hanging_open(settings: Settings) -> Services:
        await never.wait()
        raise AssertionError("unreachable")

    server = deferred_server(tmp_path / "home", llm, hanging_open)
    async with server as started, started.connect() as client:
        call = asyncio.create_task(client.call("system.ping"))
        await anyio.sleep(0.1)
        # As on SIGTERM; the block's end then waits for the server to finish.
        started.server.should_exit = True
        with pytest.raises(ConnectionLost) as lost:
            await call
    assert lost.value.code in (1001, 1012)  # going away / service restart
    assert started.failures == []


async def test_the_command_serves_a_turn_at_the_first_health_answer(
    server_factory: ServerFactory,
    llm: ScriptedLLM,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """``python -m tron_server`` as a user starts it: a client polls /health, connects at
    the first answer and runs a turn, with every method, command and tool."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    home, port = tmp_path / "home", free_port()
    env = {**os.environ, "TRON_ANTHROPIC_BASE_URL": llm.base_url,
           "TRON_CLAUDE_JSON": str(home / "claude.json"),
           "TRON_DEFAULT_MODEL": "claude-sonnet-4-5"}  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "tron_server", "--home", str(home), "--port", str(port),
         "--log-level", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    try:
        health = await first_health(f"http://127.0.0.1:{port}", proc)
        assert health["status"] == "ok" and isinstance(health["ready"], bool)
        async with TronClient.from_home(home, url=f"ws://127.0.0.1:{port}/rpc") as client:
            served = await one_turn(client, llm, tmp_path)
        assert (await first_health(f"http://127.0.0.1:{port}"))["ready"] is True
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert b"Traceback" not in err
    assert served == await reference(server_factory, llm, tmp_path / "ref")


def test_health_says_ready_once_the_app_serves(running_server: RunningServer) -> None:
    """An app given (or opening) its services before it answers is ready at once."""
    body = httpx.get(f"{running_server.base_url}/health", timeout=30).json()
    assert body["ready"] is True and body["status"] == "ok"


async def test_a_start_that_fails_unexpectedly_names_the_log_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not the database (that is said as before): the one line says where to look."""
    from tron_server import cli

    settings = Settings(home=tmp_path / "home", port=free_port(), log_level="warning")
    sock = cli.listening_socket(settings)

    async def broken(settings: Settings) -> Services:
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli, "open_for_serving", broken)
    try:
        with pytest.raises(cli.CannotStart) as info:
            await cli.serve(settings, sock)
    finally:
        sock.close()
    message = str(info.value)
    assert "RuntimeError" in message and str(settings.log_path) in message
    assert "a bug" not in message and "\n" not in message
    assert not (settings.home / "server.json").exists()


def test_the_command_collects_garbage_again_once_it_serves(tmp_path: Path) -> None:
    """``tron-server`` loads with the cyclic garbage collector paused (the start makes
    only objects that stay) and, as ``/health`` says ready, runs with it on again and
    the start's objects frozen out of its collections: a server left paused would keep
    every reference cycle its turns make."""
    watcher = """
import gc, json, os, signal, sys, threading, time, urllib.request
port, home = sys.argv[1], sys.argv[2]
paused_at_start = []

def watch():
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
                body = json.load(r)
            paused_at_start.append(not gc.isenabled())
            if body.get("ready"):
                break
        except OSError:
            pass
        time.sleep(0.005)
    # The held connections are answered first (a few event-loop rounds), then the rest
    # of the start's end: the collector is on again within moments, not at some later use.
    deadline = time.monotonic() + 2
    while not gc.isenabled() and time.monotonic() < deadline:
        time.sleep(0.001)
    print(json.dumps({"enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}), flush=True)
    os.kill(os.getpid(), signal.SIGTERM)

threading.Thread(target=watch, daemon=True).start()
sys.argv = ["tron-server", "--home", home, "--port", port, "--log-level", "warning"]
from tron_server.__main__ import main
sys.exit(main())
"""
    home = tmp_path / "home"
    done = subprocess.run(
        [sys.executable, "-c", watcher, str(free_port()), str(home)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    state = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert state, (done.stdout, done.stderr)
    seen = __import__("json").loads(state[-1])
    assert seen["enabled"] is True
    assert seen["frozen"] > 10_000  # the modules' objects, at least
