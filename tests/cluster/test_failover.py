"""kill -9 of the server running a session: another server takes the session over within
the lease time, records the interrupted turn, answers its pending approval; no tool call
runs twice (issue 34.3)."""

from __future__ import annotations

import time

import anyio
import pytest

from tests.cluster.conftest import LEASE_SECONDS, Servers
from tests.cluster.test_routing import wait_for
from tests.support.scripted_llm import Response, Text, ToolUse
from tron_server.client import RpcCallError
from tron_server.cluster import TAKEOVER_RESULT

pytestmark = pytest.mark.anyio

#: Lease time + a sweep + the slack of a loaded machine (docs/deploy.md: the bound with
#: the default 6 s lease is 10 s).
TAKEOVER_BOUND = LEASE_SECONDS + 8.0


async def test_kill_mid_tool_another_server_takes_over_and_the_session_goes_on(
    servers: Servers,
) -> None:
    a, b, _c = servers.procs
    marker = servers.workdir / "started.txt"
    command = f"echo start-$CLUSTER_TEST_SERVER >> {marker}; sleep 20"
    servers.llm.add(Response([ToolUse("Bash", {"command": command}, id="toolu_killed")]))
    async with servers.client(b) as cb:
        session = await cb.call("session.create", {"workingDirectory": str(servers.workdir)})
        sid = session["id"]
        await cb.subscribe(sid)
        on_b = cb.notifications(session_id=sid)
        async with servers.client(a) as ca:
            await ca.call("agent.message", {"sessionId": sid, "prompt": "work"})
            await wait_for(on_b, "agent.tool_start")
            with anyio.fail_after(30):
                while not marker.exists():
                    await anyio.sleep(0.05)
            assert (await cb.call("session.get", {"sessionId": sid}))["busy"] is True
            a.kill()
            killed = time.monotonic()
        done = await wait_for(on_b, "agent.complete", timeout=TAKEOVER_BOUND + 10)
        took = time.monotonic() - killed
        assert done.data["stopReason"] == "aborted" and done.data["interrupted"] is True
        assert took <= TAKEOVER_BOUND, took
        assert (await cb.call("agent.getState", {"sessionId": sid}))["busy"] is False
        events = await cb.sync(sid)
        [result] = [e["payload"] for e in events if e["type"] == "tool.result"]
        assert result == {"toolCallId": "toolu_killed", "content": TAKEOVER_RESULT,
                          "isError": True, "interrupted": True}  # fmt: skip
        assert [e["type"] for e in events][-2:] == ["notification.interrupted", "stream.turn_end"]
        # the session goes on, on a live server; the interrupted call is not run again
        servers.llm.add(Response([Text("continuing")]))
        await cb.call("agent.message", {"sessionId": sid, "prompt": "go on"})
        assert (await wait_for(on_b, "agent.complete")).data["stopReason"] == "end_turn"
        history = servers.llm.requests[-1]["messages"]
    assert marker.read_text() == "start-a\n"
    assert "interrupted" in str(history)


async def test_a_pending_approval_of_a_killed_server_is_answered_on_another_once(
    servers: Servers,
) -> None:
    a, b, c = servers.procs
    marker = servers.workdir / "approved-after-kill.txt"
    command = f"echo ran-on-$CLUSTER_TEST_SERVER >> {marker}"
    servers.llm.add(Response([ToolUse("Bash", {"command": command})]), Response([Text("ok")]))
    async with servers.client(c) as cc, servers.client(b) as cb:
        session = await cc.call("session.create", {"workingDirectory": str(servers.workdir)})
        sid = session["id"]
        await cc.call("session.setMode", {"sessionId": sid, "mode": "default"})
        await cc.subscribe(sid)
        on_c = cc.notifications(session_id=sid)
        async with servers.client(a) as ca:
            await ca.call("agent.message", {"sessionId": sid, "prompt": "run it"})
            approval = await wait_for(on_c, "agent.approval")
            a.kill()
        request_id = approval.data["requestId"]
        # Until the lease lapses the request belongs to the dead server: a retryable
        # error, never a second runtime; then it is answerable on C (and B) as after a
        # restart, and only the first answer runs the tool.
        answer = {"sessionId": sid, "requestId": request_id, "answer": {"decision": "allow"}}
        with anyio.fail_after(TAKEOVER_BOUND + 20):
            while True:
                try:
                    result = await cc.call("agent.respond", answer)
                    break
                except RpcCallError as exc:
                    assert exc.code in (-32002, -32003), exc
                    await anyio.sleep(0.3)
        assert result["resumed"] is True
        with pytest.raises(RpcCallError):
            await cb.call("agent.respond", answer)
        await wait_for(on_c, "agent.complete")
        events = await cc.sync(sid)
    assert marker.read_text() in ("ran-on-b\n", "ran-on-c\n")
    assert [e["type"] for e in events].count("interaction.resolved") == 1
