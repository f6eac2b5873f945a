"""Shutdown: SIGTERM/SIGINT stop the server cleanly; connections close, the store
closes, nothing stored is lost, and the runtime is asked to stop its turns."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.support.scripted_llm import Response, ScriptedLLM, ToolUse, scripted_llm
from tests.support.server import RunningServer, ServerFactory
from tron_server.agent.turn import SHUTDOWN_RESULT
from tron_server.client import ConnectionLost, TronClient

pytestmark = pytest.mark.anyio


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_healthy(base_url: str, proc: subprocess.Popen[str], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited early: {proc.communicate()}")
        try:
            if httpx.get(f"{base_url}/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError("server did not become healthy")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_signal_stops_the_command_cleanly(tmp_path: Path, sig: signal.Signals) -> None:
    port = free_port()
    home = tmp_path / "home"
    cmd = [sys.executable, "-m", "tron_server", "--port", str(port), "--home", str(home)]
    proc = subprocess.Popen(
        [*cmd, "--log-level", "warning"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc)
        url = f"ws://127.0.0.1:{port}/rpc"
        async with TronClient.from_home(home, url=url) as client:
            session = await client.call("session.create", {"workingDirectory": str(tmp_path)})
            live = client.notifications()
            proc.send_signal(sig)
            # uvicorn re-raises the signal after its graceful shutdown.
            assert proc.wait(timeout=30) in (0, -sig, 130)
            with pytest.raises(ConnectionLost) as closed:
                await live.next(timeout=10)
            assert closed.value.code in (1001, 1012)  # going away / service restart
        out, err = proc.communicate()
        assert f"http://127.0.0.1:{port}/login?token=" in out
        assert str(home / "server-token") in out
        assert "Traceback" not in err and '"level": "error"' not in err.replace('":"', '": "')
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # The next launch finds the session (the database was closed cleanly).
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc)
        async with TronClient.from_home(home, url=f"ws://127.0.0.1:{port}/rpc") as client:
            again = await client.call("session.get", {"sessionId": session["id"]})
            assert again["id"] == session["id"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


async def test_stop_asks_the_runtime_to_stop_and_keeps_every_event(
    running_server: RunningServer, tmp_path: Path
) -> None:
    orchestrator = running_server.services.orchestrator
    calls: list[Any] = []
    if orchestrator is not None:
        original = orchestrator.shutdown

        async def shutdown(*args: Any, **kwargs: Any) -> None:
            calls.append(args)
            await original(*args, **kwargs)

        orchestrator.shutdown = shutdown
    store = running_server.services.store
    assert store is not None
    async with running_server.connect() as client:
        session = await client.call("session.create", {"workingDirectory": str(tmp_path)})
        sid = session["id"]

        async def append_many() -> None:
            for i in range(50):
                await store.append(sid, "message.user", {"content": f"m{i}", "turn": i})

        await running_server.run(append_many)
        running_server.stop()
        with pytest.raises(ConnectionLost):
            await client.call("system.ping", timeout=10)
    if orchestrator is not None:
        assert len(calls) == 1
    running_server.start()
    async with running_server.connect() as client:
        events = await client.sync(sid)
    assert [e["sequence"] for e in events] == list(range(51))
    assert os.stat(running_server.home / "server-token").st_mode & 0o077 == 0


@pytest.fixture
async def served_llm() -> AsyncIterator[ScriptedLLM]:
    async with scripted_llm() as served:
        yield served


async def test_a_tool_cut_by_the_shutdown_says_the_server_shut_down(
    server_factory: ServerFactory,
    served_llm: ScriptedLLM,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    server = server_factory(
        anthropic_base_url=served_llm.base_url, default_model="claude-sonnet-4-5"
    )
    command = "echo 'half of the work'; sleep 60"
    served_llm.add(Response([ToolUse("Bash", {"command": command}, id="toolu_sleep")]))
    async with server.connect() as client:
        session = await client.call("session.create", {"workingDirectory": str(tmp_path)})
        sid = session["id"]
        stream = client.notifications(session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "prompt": "work"})
        printed = ""
        with anyio.fail_after(20):
            while "half of the work" not in printed:
                note = await stream.next()
                if note.method == "agent.tool_output":
                    printed += note.data["chunk"]
        server.stop()  # what SIGTERM does: the lifespan stops the running turns
    server.start()
    async with server.connect() as client:
        events = await client.sync(sid)
    [result] = [e["payload"] for e in events if e["type"] == "tool.result"]
    # What the command printed is kept, marked interrupted, and says why: not the user.
    assert result["content"] == f"half of the work\n\n[{SHUTDOWN_RESULT}]"
    assert result["interrupted"] is True and result["isError"] is True
    assert "user" not in result["content"]
    [note] = [e["payload"] for e in events if e["type"] == "notification.interrupted"]
    assert note["reason"] == "the server shut down"
    assert [e["payload"]["stopReason"] for e in events if e["type"] == "stream.turn_end"] == [
        "aborted"
    ]
