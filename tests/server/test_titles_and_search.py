"""What the session list and search show (issue 17.11), over the real server: sessions
titled from their first prompt, forks titled apart from their source, one search hit
per tool call instead of one per copy of its arguments."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.support.scripted_llm import Response, ScriptedLLM, Text, ToolUse
from tests.support.server import RunningServer
from tron_server.client import TronClient
from tron_server.methods.session import title_from_prompt

pytestmark = pytest.mark.anyio


async def turn(client: TronClient, sid: str, text: str) -> None:
    async with client.notifications(["agent.complete"], session_id=sid) as stream:
        await client.call("agent.message", {"sessionId": sid, "content": text})
        with anyio.fail_after(20):
            await stream.next()


def test_title_from_prompt() -> None:
    assert title_from_prompt("\n  Fix   the\tbug  \nin parser.py") == "Fix the bug"
    assert title_from_prompt([{"type": "image"}, {"type": "text", "text": "Look at this"}]) == (
        "Look at this"
    )
    long = "word " * 30
    title = title_from_prompt(long)
    assert title is not None and len(title) == 60 and title.endswith("…")
    assert title_from_prompt("   \n ") is None and title_from_prompt(None) is None


async def test_titles_from_the_first_prompt_and_forks_apart(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    llm.add(Response([Text("Sure.")]), Response([Text("Again.")]))
    async with server.connect() as client:
        sid = (await client.call("session.create", {"workingDirectory": str(tmp_path)}))["id"]
        assert (await client.call("session.get", {"sessionId": sid}))["title"] is None
        await turn(client, sid, "Refactor the payment module\nKeep the API as it is.")
        await turn(client, sid, "A second prompt does not retitle it")
        got = await client.call("session.get", {"sessionId": sid})
        assert got["title"] == "Refactor the payment module"
        listed = {s["id"]: s for s in (await client.call("session.list"))["sessions"]}
        assert listed[sid]["title"] == "Refactor the payment module"

        events = (await client.call("events.list", {"sessionId": sid}))["events"]
        reply = next(e for e in events if e["type"] == "message.assistant")
        one = (await client.call("session.fork", {"eventId": reply["id"]}))["session"]
        two = (await client.call("session.fork", {"eventId": reply["id"]}))["session"]
        assert one["title"] == "Refactor the payment module (fork #1)"
        assert two["title"] == "Refactor the payment module (fork #2)"
        nested = (await client.call("session.fork", {"eventId": one["rootEventId"]}))["session"]
        assert nested["title"] == "Refactor the payment module (fork #1.1)"
        named = await client.call("session.fork", {"eventId": reply["id"], "name": "Try B"})
        assert named["session"]["title"] == "Try B"
        # A session given a title keeps it.
        titled = await client.call(
            "session.create", {"workingDirectory": str(tmp_path), "title": "Mine"}
        )
        listed = {s["id"]: s for s in (await client.call("session.list"))["sessions"]}
        assert listed[titled["id"]]["title"] == "Mine"
        assert listed[one["id"]]["title"] == one["title"]


async def test_search_gives_one_hit_per_tool_call(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    llm.add(
        Response([Text("Let me look."), ToolUse("Bash", {"command": "echo heliotrope"})]),
        Response([Text("It printed heliotrope.")]),
        Response([ToolUse("Bash", {"command": "echo heliotrope again"})]),
        Response([Text("Done.")]),
    )
    async with server.connect() as client:
        sid = (await client.call("session.create", {"workingDirectory": str(tmp_path)}))["id"]
        await turn(client, sid, "Please echo heliotrope")
        await turn(client, sid, "Once more")
        hits = (await client.call("events.search", {"query": "heliotrope"}))["hits"]
        events = {
            e["id"]: e for e in (await client.call("events.list", {"sessionId": sid}))["events"]
        }
    ids = [h["eventId"] for h in hits]
    assert len(ids) == len(set(ids))
    # Both tool calls are found once each: through the assistant message holding them.
    assert [h["type"] for h in hits].count("tool.call") == 0
    carriers = [h for h in hits if h["alsoIn"]]
    assert len(carriers) == 2
    for h in carriers:
        assert h["type"] == "message.assistant"
        [call] = h["alsoIn"]
        assert call["type"] == "tool.call"
        use_ids = {b["id"] for b in events[h["eventId"]]["payload"]["content"]
                   if b["type"] == "tool_use"}  # fmt: skip
        assert events[call["eventId"]]["payload"]["toolCallId"] in use_ids
    types = sorted(h["type"] for h in hits)
    assert types.count("tool.result") == 2 and "message.user" in types
    # The limit still holds after collapsing.
    async with server.connect() as client:
        limited = (await client.call("events.search", {"query": "heliotrope", "limit": 2}))["hits"]
    assert len(limited) == 2
