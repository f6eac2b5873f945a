"""``agent.message`` with ``events: false`` (what ``tron -p`` sends): the caller follows
the run through its ``agent.*`` notifications and gets no ``events.new``, while another
client subscribed with events gets every event; a later ``events.subscribe`` adds them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.scripted_llm import Response, ScriptedLLM, Text, ToolUse
from tests.support.server import RunningServer
from tron_server.client import Notification, NotificationStream

pytestmark = pytest.mark.anyio


async def _until_complete(stream: NotificationStream, sid: str) -> list[Notification]:
    seen: list[Notification] = []
    while True:
        n = await stream.next(timeout=20)
        seen.append(n)
        if n.method == "agent.complete" and n.session_id == sid:
            return seen


async def test_a_run_without_events_new_for_the_caller_only(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    llm.add(Response([ToolUse("Read", {"file_path": "a.txt"})]), Response([Text("Done.")]))
    async with server.connect() as quiet, server.connect() as watcher:
        sid = (await quiet.call("session.create", {"workingDirectory": str(tmp_path)}))["id"]
        await watcher.subscribe(sid)
        async with (
            quiet.notifications(session_id=sid) as mine,
            watcher.notifications(session_id=sid) as theirs,
        ):
            await quiet.call("agent.message", {"sessionId": sid, "content": "go", "events": False})
            got = await _until_complete(mine, sid)
            watched = await _until_complete(theirs, sid)
            stored = (await quiet.call("events.list", {"sessionId": sid}))["events"]
            seen = [n.data["sequence"] for n in watched if n.method == "events.new"]
            # events.new and agent.* are separate streams: the last events may come after.
            while not seen or seen[-1] < stored[-1]["sequence"]:
                n = await theirs.next(timeout=20)
                if n.method == "events.new":
                    seen.append(n.data["sequence"])
        methods = {n.method for n in got}
        assert "events.new" not in methods
        assert {"agent.turn_start", "agent.tool_end", "agent.text_delta"} <= methods
        # The watcher saw every event the run committed, once, in order.
        assert seen == [e["sequence"] for e in stored if e["sequence"] >= seen[0]]
        assert len(seen) >= 5

        # Subscribing with events later adds them for the quiet caller.
        llm.add(Response([Text("Again.")]))
        await quiet.subscribe(sid)
        async with quiet.notifications(session_id=sid) as mine:
            await quiet.call("agent.message", {"sessionId": sid, "content": "more"})
            again = await _until_complete(mine, sid)
        assert any(n.method == "events.new" for n in again)


async def test_an_older_client_param_is_refused_by_name(
    server: RunningServer, tmp_path: Path
) -> None:
    from tron_server.client import RpcCallError

    async with server.connect() as client:
        sid = (await client.call("session.create", {"workingDirectory": str(tmp_path)}))["id"]
        with pytest.raises(RpcCallError) as info:
            await client.call("agent.message", {"sessionId": sid, "content": "x", "events": 3})
        assert info.value.code == -32602
