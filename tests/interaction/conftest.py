"""A real tron-server in the default permission mode, the scripted LLM, and helpers to
wait for notifications."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.server.conftest import RunningServer, ServerFactory, llm, server_factory  # noqa: F401
from tests.server.scripted_llm import ScriptedLLM
from tron_server.client import Notification, NotificationStream, TronClient

__all__ = ["server_factory"]  # the fixture, for this folder's tests

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def make_server(
    server_factory: ServerFactory,
    llm: ScriptedLLM,  # noqa: F811 (tests/server's fixture, imported above)
    monkeypatch: pytest.MonkeyPatch,
) -> Callable[..., RunningServer]:
    """``make_server(**settings)``: a server on the scripted LLM, in the default mode (it
    asks before anything that is not read-only) unless told otherwise."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")

    def make(**overrides: Any) -> RunningServer:
        options: dict[str, Any] = {
            "anthropic_base_url": llm.base_url,
            "default_model": "claude-sonnet-4-5",
            "default_permission_mode": "default",
            "allow_bypass_permissions": False,
        }
        options.update(overrides)
        return server_factory(**options)

    return make


@pytest.fixture
def server(make_server: Callable[..., RunningServer]) -> RunningServer:
    return make_server()


async def new_session(client: TronClient, workdir: Path) -> str:
    session = await client.call(
        "session.create", {"workingDirectory": str(workdir), "provider": "anthropic"}
    )
    return str(session["id"])


async def respond(client: TronClient, sid: str, request_id: str, answer: Any) -> Any:
    params = {"sessionId": sid, "requestId": request_id, "answer": answer}
    return await client.call("agent.respond", params)


async def wait_for(
    stream: NotificationStream, method: str, timeout: float = 20, **match: Any
) -> Notification:
    """The next notification ``method`` whose data has ``match``'s items."""
    with anyio.fail_after(timeout):
        while True:
            n = await stream.next()
            if n.method == method and all(n.data.get(k) == v for k, v in match.items()):
                return n


async def complete(stream: NotificationStream, timeout: float = 20) -> Notification:
    return await wait_for(stream, "agent.complete", timeout)


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e["payload"] for e in events if e["type"] == kind]
