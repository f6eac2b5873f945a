"""Servers that fail: one that never answers is failed after the startup timeout with its
stderr tail (and killed), a run is not held up by it beyond its wait, and tron-server's
shutdown kills every stdio child with its process group."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from tests.mcp.conftest import approve_all, offered, run, trust
from tests.mcp.servers import stdio, write_mcp_json
from tests.support.rpc import new_session, of_type
from tests.support.scripted_llm import Response, ScriptedLLM, Text
from tests.support.server import ServerFactory
from tron_server.mcp import McpOptions, parse_server
from tron_server.mcp.connection import Connection

pytestmark = pytest.mark.anyio


def pids(marker: str) -> list[int]:
    done = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    return [int(p) for p in done.stdout.split()]


async def gone(marker: str, timeout: float = 20) -> bool:
    with anyio.move_on_after(timeout):
        while pids(marker):
            await anyio.sleep(0.05)
    return not pids(marker)


def hanging(marker: str) -> dict[str, object]:
    """A "server" that says something on stderr and never answers the handshake."""
    code = f"import sys, time; print('waking up slowly', file=sys.stderr, flush=True); " \
           f"time.sleep(600)  # {marker}"  # fmt: skip
    return {"command": sys.executable, "args": ["-c", code]}


async def test_a_server_that_never_answers_fails_with_its_stderr_and_is_killed(
    tmp_path: Path,
) -> None:
    marker = f"hang-{os.getpid()}-{tmp_path.name}"
    config = parse_server("slow", hanging(marker), "user", "test")
    async with anyio.create_task_group() as tg:
        connection = Connection(config, root=tmp_path, options=McpOptions(startup_timeout=1.5))
        connection.bind(tg)
        assert not await connection.ensure()
        assert connection.status == "failed"
        assert connection.error == "did not start in time (no answer to the handshake)"
        assert connection.stderr_tail == "waking up slowly"
        assert connection.retry_in() > 0  # not started again before its backoff
        assert not await connection.ensure(wait=0)
        assert await gone(marker)
        await connection.close()


async def test_a_hanging_server_does_not_hold_up_the_run_past_its_wait(
    server_factory: ServerFactory, llm: ScriptedLLM, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("MCP_TIMEOUT", "60000")  # the hanging server would hold a run a minute
    marker = f"hang-{os.getpid()}-{tmp_path.name}"
    server = server_factory(anthropic_base_url=llm.base_url, mcp_list_wait=1.0)
    write_mcp_json(tmp_path, {"slow": hanging(marker)})
    approve_all(server.home)
    trust(server.home, tmp_path)
    llm.add(Response([Text("answered")]))
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        with anyio.fail_after(45):  # far below the hanging server's 60 s startup timeout
            events = await run(client, sid, "hello")
        listing = await client.call("mcp.list", {"sessionId": sid, "connect": False})
    assert of_type(events, "message.assistant")
    tools = offered(llm)
    assert "Read" in tools and not [n for n in tools if n.startswith("mcp__slow")]
    assert [(s["name"], s["status"]) for s in listing["servers"]] == [("slow", "connecting")]
    server.stop()
    assert await gone(marker)


async def test_shutdown_kills_the_stdio_children(
    server_factory: ServerFactory, llm: ScriptedLLM, tmp_path: Path, everything: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    marker = f"alive-{os.getpid()}-{tmp_path.name}"
    server = server_factory(anthropic_base_url=llm.base_url)
    write_mcp_json(tmp_path, {"ev": stdio(everything, "stdio", marker),
                              "ev2": stdio(everything, "stdio", marker)})  # fmt: skip
    approve_all(server.home)
    trust(server.home, tmp_path)
    async with server.connect() as client:
        listing = await client.call("mcp.list", {"workingDirectory": str(tmp_path)})
    assert [s["status"] for s in listing["servers"]] == ["connected", "connected"]
    assert len(pids(marker)) >= 2
    server.stop()
    assert await gone(marker)


async def test_a_server_in_its_backoff_never_reads_as_ready_to_retry(tmp_path: Path) -> None:
    """``mcp.list``'s ``retryIn`` and the error a use gets round the backoff's rest up: a
    server that may not start yet for a few milliseconds says 0.1 s and "in 1 s", not
    0 (a client that waited for ``retryIn`` to go away then met the failure again)."""
    import time

    from tron_server.mcp.connection import ServerError
    from tron_server.mcp.manager import ServerView, server_json

    config = parse_server("gone", {"command": str(tmp_path / "no-such-server")}, "user", "test")
    async with anyio.create_task_group() as tg:
        connection = Connection(config, root=tmp_path, options=McpOptions(startup_timeout=5))
        connection.bind(tg)
        assert not await connection.ensure()
        assert connection.status == "failed"
        connection._retry_at = time.monotonic() + 0.01  # the end of its backoff, nearly
        assert server_json(ServerView(config, "failed", connection=connection))["retryIn"] == 0.1
        with pytest.raises(ServerError, match=r"started again on the next use in 1 s"):
            await connection._client(wait=0)
        await connection.close()
