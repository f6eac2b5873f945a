"""model.switch over the real server: the session record, the session list and the
requests sent to the provider agree, also after a restart and a rewind (issue 17.5);
model.list says which providers are configured (17.11)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.scripted_llm import Response, ScriptedLLM, Text
from tests.support.server import RunningServer
from tron_server.client import TronClient

pytestmark = pytest.mark.anyio


async def turn(client: TronClient, sid: str, text: str) -> None:
    async with client.notifications(["agent.complete"], session_id=sid) as stream:
        await client.call("agent.message", {"sessionId": sid, "content": text})
        with anyio.fail_after(20):
            await stream.next()


async def record(client: TronClient, sid: str) -> tuple[Any, Any, Any]:
    got = await client.call("session.get", {"sessionId": sid})
    listed = {s["id"]: s for s in (await client.call("session.list"))["sessions"]}[sid]
    state = await client.call("session.getState", {"sessionId": sid})
    return (
        (got["model"], got["provider"]),
        (listed["model"], listed["provider"]),
        (state["model"], state["provider"]),
    )


async def test_the_session_shows_the_model_the_next_turn_uses(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    llm.add(Response([Text("one")]), Response([Text("two")]), Response([Text("three")]))
    async with server.connect() as client:
        s = await client.call("session.create", {"workingDirectory": str(tmp_path)})
        sid = s["id"]
        await turn(client, sid, "first")
        assert llm.requests[-1]["model"] == "claude-sonnet-4-5"
        before_switch = (await client.call("session.get", {"sessionId": sid}))["headEventId"]

        await client.call("model.switch", {"sessionId": sid, "model": "claude-haiku-4-5"})
        haiku = ("claude-haiku-4-5", "anthropic")
        assert await record(client, sid) == (haiku, haiku, haiku)
        await turn(client, sid, "second")
        assert llm.requests[-1]["model"] == "claude-haiku-4-5"

    # A reload (here: a restart, new connections) shows the same.
    server.restart()
    async with server.connect() as client:
        assert await record(client, sid) == (haiku, haiku, haiku)
        # A rewind past the switch: the record shows the model the next turn will use.
        await client.call("session.rewind", {"sessionId": sid, "eventId": before_switch})
        sonnet = ("claude-sonnet-4-5", "anthropic")
        assert await record(client, sid) == (sonnet, sonnet, sonnet)
        await turn(client, sid, "third")
        assert llm.requests[-1]["model"] == "claude-sonnet-4-5"


async def test_model_list_says_which_providers_have_a_key(server: RunningServer) -> None:
    async with server.connect() as client:
        result = await client.call("model.list")
    providers = {p["id"]: p for p in result["providers"]}
    assert providers["anthropic"]["configured"] is True
    assert providers["openai"]["configured"] is False
    assert "OPENAI_API_KEY" in providers["openai"]["hint"]
    assert providers["google"]["configured"] is False
    by_provider = {m["provider"]: m["available"] for m in result["models"]}
    assert by_provider["anthropic"] is True and by_provider["openai"] is False
