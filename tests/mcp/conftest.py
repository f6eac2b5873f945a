"""The MCP tests' fixtures: the real servers (installed into the user's cache), a real
tron-server on the scripted LLM in the default permission mode, and helpers."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.mcp.servers import HttpServer, time_server
from tests.support.scripted_llm import ScriptedLLM
from tests.support.server import RunningServer
from tron_server.client import Notification, TronClient
from tron_server.trust import TrustStore

#: How long a run (and ``mcp.list``) waits for a server's first listing in these tests. The
#: server's default, 10 s, is ample on an idle machine; under ``pytest -n 3`` on two loaded
#: cores starting a server (node, or Python importing the SDK) has taken longer, and the run
#: then goes on without its tools, as designed. A run waits only as long as the listing
#: takes, so this costs nothing when the machine is idle.
LIST_WAIT = 60.0


@pytest.fixture
def server(make_server: Callable[..., RunningServer]) -> RunningServer:
    """A server on the scripted LLM in the default mode, patient with first listings."""
    return make_server(mcp_list_wait=LIST_WAIT)


@pytest.fixture(scope="session")
def time_program() -> Path:
    """The ``mcp-server-time`` program."""
    return time_server()


@pytest.fixture
def everything_http(everything: Path) -> Iterator[HttpServer]:
    http = HttpServer(everything, "streamableHttp")
    try:
        yield http
    finally:
        http.stop()


@pytest.fixture
def everything_sse(everything: Path) -> Iterator[HttpServer]:
    http = HttpServer(everything, "sse")
    try:
        yield http
    finally:
        http.stop()


def approve_all(home: Path) -> None:
    """``enableAllProjectMcpServers`` in the server's own settings (its home)."""
    path = home / "settings.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    data["enableAllProjectMcpServers"] = True
    path.write_text(json.dumps(data))


def trust(home: Path, folder: Path) -> None:
    """Trust ``folder`` in the server's real trust store, as its user does with
    ``trust.set`` or ``tron --trust``: a folder's own MCP servers (and its rules, hooks and
    agents) act only then."""
    TrustStore(home).trust(folder)


def offered(model: ScriptedLLM, index: int = 0) -> dict[str, dict[str, Any]]:
    """The tools of request ``index``, by name."""
    return {t["name"]: t for t in model.requests[index].get("tools", [])}


Answerer = Callable[[Notification], Awaitable[Any]]


async def run(
    client: TronClient,
    sid: str,
    text: str,
    *,
    approve: bool = True,
    on_note: Callable[[Notification], Awaitable[None]] | None = None,
    answer: Answerer | None = None,
    timeout: float = 90,
) -> list[dict[str, Any]]:
    """Send ``text``; allow (or deny) every approval, answer every question with
    ``answer(note)``, show every notification to ``on_note``; wait for agent.complete of
    this session. The session's events."""
    stream = client.notifications(session_id=sid)
    await client.call("agent.message", {"sessionId": sid, "content": text})
    with anyio.fail_after(timeout):
        while True:
            note = await stream.next()
            if on_note is not None:
                await on_note(note)
            if note.method == "agent.approval":
                decision = {"decision": "allow" if approve else "deny"}
                await client.call("agent.respond", {"sessionId": sid, "requestId":
                                  note.data["requestId"], "answer": decision})  # fmt: skip
            elif note.method == "agent.question" and answer is not None:
                reply = await answer(note)
                await client.call("agent.respond", {"sessionId": sid, "requestId":
                                  note.data["requestId"], "answer": reply})  # fmt: skip
            elif note.method == "agent.complete" and note.session_id == sid:
                break
    return await client.sync(sid)
