"""The agent over the real server: WebSocket clients, the scripted LLM on another
port, the real Anthropic adapter and tools in between."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.scripted_llm import Response, ScriptedLLM, Text, ToolUse
from tests.support.server import RunningServer
from tron_server.client import RpcCallError, TronClient

pytestmark = pytest.mark.anyio


async def new_session(client: TronClient, workdir: Path) -> dict[str, Any]:
    session: dict[str, Any] = await client.call(
        "session.create", {"workingDirectory": str(workdir), "provider": "anthropic"}
    )
    return session


async def collect_until_complete(stream: Any, timeout: float = 20) -> list[Any]:
    out = []
    with anyio.fail_after(timeout):
        while True:
            n = await stream.next()
            out.append(n)
            if n.method == "agent.complete":
                return out


async def test_a_turn_with_a_real_tool_over_websocket(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("the secret word is heliotrope\n")
    llm.add(
        Response(
            [Text("Reading it."), ToolUse("Read", {"file_path": str(tmp_path / "notes.txt")})]
        ),
        Response([Text("The word is heliotrope.")]),
    )
    async with server.connect() as client:
        session = await new_session(client, tmp_path)
        sid = session["id"]
        stream = client.notifications(session_id=sid)
        accepted = await client.call("agent.message", {"sessionId": sid, "prompt": "read notes"})
        assert accepted["accepted"] is True and accepted["queued"] is False
        notes = await collect_until_complete(stream)
        methods = [n.method for n in notes if n.method.startswith("agent.")]
        assert methods[0] == "agent.turn_start"
        assert methods[-1] == "agent.complete"
        assert notes[-1].data["stopReason"] == "end_turn" and notes[-1].data["turns"] == 2
        [tool_end] = [n.data for n in notes if n.method == "agent.tool_end"]
        assert tool_end["name"] == "Read" and tool_end["isError"] is False
        assert "heliotrope" in str(tool_end["content"])
        text = "".join(n.data["delta"] for n in notes if n.method == "agent.text_delta")
        assert text == "Reading it.The word is heliotrope."

        events = await client.sync(sid)
        types = [e["type"] for e in events]
        assert types[:2] == ["session.start", "message.user"]
        assert "tool.call" in types and "tool.result" in types and "file.read" in types
        assert types[-1] == "stream.turn_end"
        assert llm.violations(1) == []
        assert "heliotrope" in str(llm.requests[1]["messages"][-1])

        state = await client.call("agent.getState", {"sessionId": sid})
        assert state["busy"] is False
        context = await client.call("context.get", {"sessionId": sid})
        assert context["model"] == "claude-sonnet-4-5" and context["usedTokens"] > 0
        assert 0 <= context["percent"] < 100 and context["contextWindow"] >= 200_000


async def test_two_clients_see_the_same_stream_and_busy_is_refused(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    words = " ".join(f"word{i}" for i in range(40))
    llm.add(Response([Text(words)], delay=0.01))
    async with server.connect() as a, server.connect() as b:
        sid = (await new_session(a, tmp_path))["id"]
        await b.subscribe(sid)
        stream_a = a.notifications(session_id=sid)
        stream_b = b.notifications(session_id=sid)
        await a.call("agent.message", {"sessionId": sid, "content": "talk"})
        with pytest.raises(RpcCallError) as info:
            await b.call("agent.message", {"sessionId": sid, "content": "me too"})
        assert info.value.code == -32003 and info.value.retryable
        got_a = await collect_until_complete(stream_a)
        got_b = await collect_until_complete(stream_b)

        def agent_view(notes: list[Any]) -> list[tuple[str, Any]]:
            return [(n.method, n.data) for n in notes if n.method.startswith("agent.")]

        assert agent_view(got_a) == agent_view(got_b)
        text = "".join(d["delta"] for m, d in agent_view(got_a) if m == "agent.text_delta")
        assert text == words


async def test_a_turn_survives_its_client_disconnecting(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    words = " ".join(f"w{i}" for i in range(60))
    llm.add(Response([Text(words)], delay=0.02))
    async with server.connect() as a:
        sid = (await new_session(a, tmp_path))["id"]
        stream = a.notifications(["agent.text_delta"], session_id=sid)
        await a.call("agent.message", {"sessionId": sid, "content": "long answer"})
        await stream.next(timeout=10)
        seen = await a.sync(sid)
    # The first client is gone; a new one catches up with getState, then the events.
    async with server.connect() as b:
        await b.subscribe(sid)
        done = b.notifications(["agent.complete"], session_id=sid)
        state = await b.call("agent.getState", {"sessionId": sid})
        if state["busy"]:
            assert words.startswith(state["text"]) and state["turn"] == 1
            await done.next(timeout=20)
        last = seen[-1]["sequence"]
        rest = await b.sync(sid, after_sequence=last)
        everything = seen + rest
        sequences = [e["sequence"] for e in everything]
        assert sequences == list(range(len(everything)))  # nothing lost or repeated
        assistant = [e for e in everything if e["type"] == "message.assistant"]
        assert assistant[0]["payload"]["content"] == [{"type": "text", "text": words}]


async def test_abort_over_rpc_then_compaction(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    llm.add(Response([Text("this will never finish")], hang=True))
    async with server.connect() as client:
        sid = (await new_session(client, tmp_path))["id"]
        deltas = client.notifications(["agent.text_delta"], session_id=sid)
        done = client.notifications(["agent.complete"], session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "start"})
        await deltas.next(timeout=10)
        assert (await client.call("agent.abort", {"sessionId": sid})) == {"aborted": True}
        assert (await done.next(timeout=5)).data["stopReason"] == "aborted"
        with anyio.fail_after(5):
            await llm.disconnected.wait()
        types = [e["type"] for e in await client.sync(sid)]
        assert types[-3:] == ["message.assistant", "notification.interrupted", "stream.turn_end"]

        llm.add(Response([Text("A summary of the aborted start.")]))
        preview = await client.call("context.previewCompaction", {"sessionId": sid})
        assert preview["summary"] == "A summary of the aborted start."
        assert [e["type"] for e in await client.sync(sid)] == types
        llm.add(Response([Text("The summary, recorded.")]))
        compacted = await client.call("context.compact", {"sessionId": sid})
        assert (
            compacted["tokensAfter"] < compacted["tokensBefore"] or compacted["tokensBefore"] < 50
        )
        types = [e["type"] for e in await client.sync(sid)]
        assert types[-2:] == ["compact.boundary", "compact.summary"]
        state = await client.call("session.getState", {"sessionId": sid})
        assert state["messages"][0]["content"][0]["text"].endswith("The summary, recorded.")


async def test_max_turns_limits_one_message(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    """``maxTurns`` caps the LLM calls of its own message: a queued message behind it
    runs with the server's limit, and the history stays valid after the cut."""
    (tmp_path / "a.txt").write_text("alpha\n")
    read = ToolUse("Read", {"file_path": "a.txt"})
    llm.add(
        Response([read], delay=0.02),
        Response([read]),
        Response([Text("Read it twice.")]),
    )
    async with server.connect() as client:
        sid = (await new_session(client, tmp_path))["id"]
        with pytest.raises(RpcCallError) as info:
            await client.call("agent.message", {"sessionId": sid, "prompt": "x", "maxTurns": 0})
        assert info.value.code == -32602 and info.value.data["errors"][0]["field"] == "maxTurns"
        stream = client.notifications(["agent.complete"], session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "prompt": "once", "maxTurns": 1})
        queued = await client.call(
            "agent.message", {"sessionId": sid, "prompt": "twice", "queue": True}
        )
        assert queued["queued"] is True
        first = await stream.next(timeout=20)
        second = await stream.next(timeout=20)
    assert (first.data["stopReason"], first.data["turns"]) == ("max_turns", 1)
    assert (second.data["stopReason"], second.data["turns"]) == ("end_turn", 2)
    assert len(llm.requests) == 3 and llm.violations(2) == []
