"""Issue 27 item 10 over RPC, on a server whose settings set no endpoint: the Anthropic
SDK's ``ANTHROPIC_BASE_URL`` is where its requests go, ``model.list`` shows it, and a
key with a character that is not ASCII is an ``agent.error`` naming its variable."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tests.support.scripted_llm import Response, ScriptedLLM, Text
from tests.support.server import ServerFactory
from tron_server.client import TronClient

pytestmark = pytest.mark.anyio


async def run(client: TronClient, session_id: str) -> list[tuple[str, Any]]:
    """Send a message; the notifications until the run completes."""
    stream = client.notifications(session_id=session_id)
    await client.call("agent.message", {"sessionId": session_id, "content": "hi"})
    seen: list[tuple[str, Any]] = []
    with anyio.fail_after(30):
        while not seen or seen[-1][0] != "agent.complete":
            note = await stream.next()
            seen.append((note.method, note.data))
    stream.close()
    return seen


async def test_the_sdk_variable_and_a_key_that_is_not_ascii(
    server_factory: ServerFactory, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", llm.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    server = server_factory(default_model="claude-sonnet-4-5")
    assert server.services.settings.anthropic_base_url is None  # no TRON_ endpoint
    llm.add(Response([Text("via ANTHROPIC_BASE_URL")]))
    async with server.connect() as client:
        listed = await client.call("model.list")
        (anthropic,) = [p for p in listed["providers"] if p["id"] == "anthropic"]
        assert anthropic["baseUrl"] == llm.base_url
        sid = (await client.call("session.create", {"workingDirectory": str(server.home)}))["id"]
        notes = await run(client, sid)
        deltas = "".join(d["delta"] for m, d in notes if m == "agent.text_delta")
        assert deltas == "via ANTHROPIC_BASE_URL" and len(llm.requests) == 1

    # The key as a user pasted it: a server started with it (adapters read the key once).
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-\u2026")
    restarted = server_factory(default_model="claude-sonnet-4-5")
    async with restarted.connect() as client:
        sid = (await client.call("session.create", {"workingDirectory": str(server.home)}))["id"]
        notes = await run(client, sid)
    errors = [d for m, d in notes if m == "agent.error"]
    assert [e["message"] for e in errors] == [
        "the API key in ANTHROPIC_API_KEY has a character that is not ASCII ('\u2026', "
        "U+2026, at position 8 of 8): an API key is plain ASCII; copy the key again"
    ]
    assert errors[0]["category"] == "authentication"
    assert len(llm.requests) == 1  # nothing was sent
