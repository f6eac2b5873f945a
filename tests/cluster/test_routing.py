"""Three tron-servers on one PostgreSQL database: a session's run has one owner, and every
server routes to it and shows it (issue 34)."""

from __future__ import annotations

import contextlib
from typing import Any

import anyio
import pytest

from tests.cluster.conftest import Servers
from tests.support.scripted_llm import Response, Text, ToolUse
from tron_server.client import RpcCallError

pytestmark = pytest.mark.anyio


async def wait_for(stream: Any, method: str, timeout: float = 20) -> Any:
    seen: list[str] = []  # what came instead, for the failure's message
    with anyio.move_on_after(timeout):
        while True:
            note = await stream.next()
            if note.method == method:
                return note
            seen.append(note.method)
    raise AssertionError(f"no {method} within {timeout} s; the notifications were {seen}")


async def test_busy_everywhere_queue_through_b_runs_once_on_a_notes_reach_all_in_order(
    servers: Servers,
) -> None:
    a, b, c = servers.procs
    asked = len(servers.llm.requests)
    marker = servers.workdir / "ran.txt"
    slow = f"sleep 1.5; echo run >> {marker}"
    servers.llm.add(
        Response([Text("first reply, working"), ToolUse("Bash", {"command": slow})]),
        Response([Text("first done")]),
        Response([Text("second reply")]),
    )
    async with contextlib.AsyncExitStack() as stack:
        ca, cb, cc = [await stack.enter_async_context(servers.client(s)) for s in (a, b, c)]
        session = await ca.call("session.create", {"workingDirectory": str(servers.workdir)})
        sid = session["id"]
        for client in (cb, cc):
            await client.subscribe(sid)
        streams = [cl.notifications(session_id=sid) for cl in (ca, cb, cc)]
        watch = cb.notifications(session_id=sid)
        await ca.call("agent.message", {"sessionId": sid, "prompt": "go"})
        await wait_for(watch, "agent.tool_start")  # B's client sees A's run
        # busy from every server, in agent.getState, session.get and session.list
        for client in (ca, cb, cc):
            assert (await client.call("agent.getState", {"sessionId": sid}))["busy"] is True
            assert (await client.call("session.get", {"sessionId": sid}))["busy"] is True
            listed = (await client.call("session.list", {}))["sessions"]
            assert [s["busy"] for s in listed if s["id"] == sid] == [True]
        # a message through B while A runs: refused as on one server, or queued on A
        with pytest.raises(RpcCallError) as busy:
            await cb.call("agent.message", {"sessionId": sid, "prompt": "again"})
        assert busy.value.code == -32003
        queued = await cb.call("agent.message", {"sessionId": sid, "prompt": "again",
                                                 "queue": True})  # fmt: skip
        assert queued["queued"] is True
        completes = 0
        with anyio.fail_after(30):
            while completes < 2:
                note = await watch.next()
                completes += note.method == "agent.complete"
        for client in (ca, cb, cc):
            state = await client.call("agent.getState", {"sessionId": sid})
            assert state["busy"] is False
        # every client got the same notifications, in the same order, once
        seen = []
        for stream in streams:
            notes = []
            with contextlib.suppress(TimeoutError):
                while True:
                    notes.append(await stream.next(timeout=1.0))
            seen.append(notes)
        # agent.*: relayed, the same sequence everywhere; events.new: each server reads the
        # events itself (interleaved with the relayed ones as they come), each once, in order
        # (session.created of this session may reach B and C before or after their
        # streams start: it is relayed, the others got it through the session.create)
        got = [
            [(n.method, n.timestamp, str(n.data)) for n in notes if n.method.startswith("agent.")]
            for notes in seen
        ]
        assert [m for m, *_ in got[0]].count("agent.complete") == 2
        assert [m for m, *_ in got[0]].count("agent.text_delta") >= 3
        assert got[0] == got[1] == got[2]
        sequences = [[n.data["sequence"] for n in notes if n.method == "events.new"]
                     for notes in seen]  # fmt: skip
        assert sequences[0] == sequences[1] == sequences[2]
        assert sequences[0] == sorted(set(sequences[0])) and sequences[0]
        events = await ca.sync(sid)
    users = [e["payload"]["content"] for e in events if e["type"] == "message.user"]
    assert users == ["go", "again"]  # the queued message ran once, after the first
    assert marker.read_text() == "run\n"  # the tool ran once
    assert len(servers.llm.requests) - asked == 3


async def test_an_approval_asked_on_a_is_answered_on_b_and_the_tool_runs_once_on_a(
    servers: Servers,
) -> None:
    a, b, c = servers.procs
    marker = servers.workdir / "approved.txt"
    command = f"echo ran-on-$CLUSTER_TEST_SERVER >> {marker}"
    servers.llm.add(Response([ToolUse("Bash", {"command": command})]), Response([Text("done")]))
    async with servers.client(a) as ca, servers.client(b) as cb, servers.client(c) as cc:
        session = await ca.call("session.create", {"workingDirectory": str(servers.workdir)})
        sid = session["id"]
        await ca.call("session.setMode", {"sessionId": sid, "mode": "default"})
        await cc.subscribe(sid)
        on_b = cb.notifications(session_id=sid)
        await cb.subscribe(sid)
        on_c = cc.notifications(session_id=sid)
        await ca.call("agent.message", {"sessionId": sid, "prompt": "run it"})
        approval = await wait_for(on_b, "agent.approval")  # asked on A, seen on B
        pending = (await cc.call("agent.getState", {"sessionId": sid}))["pendingRequests"]
        assert [p["requestId"] for p in pending] == [approval.data["requestId"]]
        answer = {"decision": "allow"}
        result = await cb.call(
            "agent.respond",
            {"sessionId": sid, "answer": answer, "requestId": approval.data["requestId"]},
        )
        assert result["accepted"] is True and result["resumed"] is False  # A's live run
        with pytest.raises(RpcCallError):  # the first answer wins, wherever the second goes
            await cc.call(
                "agent.respond",
                {"sessionId": sid, "answer": answer, "requestId": approval.data["requestId"]},
            )
        await wait_for(on_c, "agent.complete")
        events = await cc.sync(sid)
    assert marker.read_text() == "ran-on-a\n"  # once, on the server that asked
    assert [e["type"] for e in events].count("interaction.resolved") == 1


async def test_abort_through_c_stops_the_run_on_a(servers: Servers) -> None:
    a, _b, c = servers.procs
    servers.llm.add(Response([Text("thinking about it at length")], hang=True))
    async with servers.client(a) as ca, servers.client(c) as cc:
        session = await ca.call("session.create", {"workingDirectory": str(servers.workdir)})
        sid = session["id"]
        on_a = ca.notifications(session_id=sid)
        await ca.call("agent.message", {"sessionId": sid, "prompt": "think"})
        await wait_for(on_a, "agent.text_delta")
        assert (await cc.call("agent.abort", {"sessionId": sid}))["aborted"] is True
        done = await wait_for(on_a, "agent.complete")
        assert done.data["stopReason"] == "aborted"
        state = await cc.call("agent.getState", {"sessionId": sid})
        assert state["busy"] is False
        # idle again: the next message may run on any server (here C)
        servers.llm.add(Response([Text("fine")]))
        on_c = cc.notifications(session_id=sid)
        sent = await cc.call("agent.message", {"sessionId": sid, "prompt": "again"})
        assert sent["queued"] is False
        assert (await wait_for(on_c, "agent.complete")).data["stopReason"] == "end_turn"
