"""Driving a session over RPC in tests: create one, answer a request, wait for a
notification, and read the events a sync returns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from tron_server.client import Notification, NotificationStream, TronClient


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
