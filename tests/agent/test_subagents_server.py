"""Sub-agents over a real server and real WebSocket clients: a client watching the parent
sees its children work, the parent/child link in session.get / session.list, search over a
session and its descendants, and a server stopped mid-child leaving both histories valid."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.agent.test_subagents import Routes, result_text, task, tool_results
from tests.support.scripted_llm import Response, ScriptedLLM, Text, ToolUse
from tests.support.server import RunningServer
from tron_server.client import TronClient

pytestmark = pytest.mark.anyio


async def new_session(client: TronClient, workdir: Path) -> str:
    session = await client.call("session.create", {"workingDirectory": str(workdir)})
    session_id: str = session["id"]
    return session_id


async def test_a_client_watching_the_parent_sees_both_children_work(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    (tmp_path / "one.txt").write_text("first file: marmalade\n")
    (tmp_path / "two.txt").write_text("second file: quince\n")
    routes = Routes(llm)
    routes.add(
        "PARENT",
        Response([task("read one", "KID-1: read one.txt", "toolu_1"),
                  task("read two", "KID-2: read two.txt", "toolu_2")]),
        Response([Text("Marmalade and quince.")]),
    )  # fmt: skip
    routes.add(
        "KID-1",
        Response([ToolUse("Read", {"file_path": "one.txt"})]),
        Response([Text("One says marmalade.")]),
    )
    routes.add(
        "KID-2",
        Response([ToolUse("Read", {"file_path": "two.txt"})], delay=0.01),
        Response([Text("Two says quince.")]),
    )
    async with server.connect() as client, server.connect() as watcher:
        parent = await new_session(client, tmp_path)
        await watcher.subscribe(parent)  # only the parent
        everything = watcher.notifications()
        done = await client.send_message_and_wait(parent, "PARENT: read both")
        assert done["stopReason"] == "end_turn"

        seen: list[Any] = []
        with anyio.fail_after(10):
            while not any(n.method == "agent.complete" and n.session_id == parent for n in seen):
                seen.append(await everything.next())
        details = await client.call("session.get", {"sessionId": parent})
        children = details["childSessionIds"]
        assert len(children) == 2
        # The children's progress reached a client that only follows the parent.
        for child in children:
            mine = [n for n in seen if n.session_id == child and n.method.startswith("agent.")]
            methods = [n.method for n in mine]
            assert "agent.tool_start" in methods and methods[-1] == "agent.complete"
            assert all(n.data["parentSessionId"] == parent for n in mine)
            assert {n.data["parentToolCallId"] for n in mine} <= {"toolu_1", "toolu_2"}
        # The parent's Task cards streamed the children's activity as tool output.
        outputs = "".join(n.data["chunk"] for n in seen if n.method == "agent.tool_output")
        assert "→ Read one.txt" in outputs and "→ Read two.txt" in outputs

        # The link both ways, and the totals.
        for child in children:
            got = await client.call("session.get", {"sessionId": child})
            assert got["kind"] == "subagent" and got["parentSessionId"] == parent
            assert got["forkFromEventId"] is None and got["childSessionIds"] == []
            assert got["spawn"]["parentToolCallId"] in {"toolu_1", "toolu_2"}
            assert got["spawn"]["subagentType"] == "general-purpose"
            assert got["inputTokens"] == 20
        assert details["kind"] == "session" and details["inputTokens"] == 20
        total = details["totalWithChildren"]
        assert total["sessions"] == 3 and total["inputTokens"] == 60
        assert total["outputTokens"] == 30
        listed = {s["id"]: s for s in (await client.call("session.list", {}))["sessions"]}
        assert {listed[c]["parentSessionId"] for c in children} == {parent}
        assert {listed[c]["kind"] for c in children} == {"subagent"}

        # Search the parent alone, or with its descendants.
        alone = await client.call("events.search", {"query": "quince", "sessionId": parent})
        assert {h["sessionId"] for h in alone["hits"]} == {parent}
        tree = await client.call(
            "events.search", {"query": "quince", "sessionId": parent, "includeDescendants": True}
        )
        assert {h["sessionId"] for h in tree["hits"]} > {parent}

        # A fork of the parent is not one of its children.
        first = (await client.sync(parent))[1]
        fork = await client.call("session.fork", {"eventId": first["id"]})
        assert fork["session"]["kind"] == "fork"
        again = await client.call("session.get", {"sessionId": parent})
        assert again["childSessionIds"] == children
    # The server's defaults: up to 4 children at once, and children without Task (depth 1).
    task_spec = next(t for t in routes.last("PARENT")["tools"] if t["name"] == "Task")
    assert "up to 4 at once" in task_spec["description"]
    assert all(t["name"] != "Task" for t in routes.last("KID-1")["tools"])
    for i in range(len(llm.requests)):
        assert llm.violations(i) == [], i


async def test_a_server_stopped_mid_child_leaves_both_histories_valid(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    routes = Routes(llm)
    routes.add("PARENT", Response([Text("Delegating."), task("slow", "KID: think", "toolu_s")]))
    routes.add("KID", Response([Text("Thinking very slowly about")], hang=True))
    async with server.connect() as client:
        parent = await new_session(client, tmp_path)
        deltas = client.notifications(["agent.tool_output"], session_id=parent)
        await client.call("agent.message", {"sessionId": parent, "prompt": "PARENT: go"})
        await deltas.next(timeout=10)  # the child started
        with anyio.fail_after(10):
            while "KID" not in routes.requests:
                await anyio.sleep(0.02)
        [child] = (await client.call("session.get", {"sessionId": parent}))["childSessionIds"]

    server.restart()  # shutdown aborts both runs and records it

    async with server.connect() as client:
        parent_events = await client.sync(parent)
        [result] = [e["payload"] for e in parent_events if e["type"] == "tool.result"]
        assert result["toolCallId"] == "toolu_s"
        assert result["isError"] is True and result["interrupted"] is True
        types = [e["type"] for e in parent_events]
        assert "subagent.failed" in types and types[-1] == "stream.turn_end"
        child_events = await client.sync(child)
        [partial] = [e["payload"] for e in child_events if e["type"] == "message.assistant"]
        assert partial["interrupted"] is True
        assert partial["content"] == [{"type": "text", "text": "Thinking very slowly about"}]

        # Both go on: the parent continues the child through Task, then answers.
        routes.add(
            "PARENT",
            Response([task("again", "Finish your thought.", "toolu_t", session_id=child)]),
            Response([Text("It finished.")]),
        )
        routes.add("KID", Response([Text("...about nothing in particular.")]))
        done = await client.send_message_and_wait(parent, "carry on")
        assert done["stopReason"] == "end_turn"
        [continued] = tool_results(routes.last("PARENT"))
        assert "nothing in particular" in result_text(continued)
        assert not continued.get("is_error")
    for i in range(len(llm.requests)):
        assert llm.violations(i) == [], i
    kid = routes.last("KID")["messages"]
    assert [m["role"] for m in kid] == ["user", "assistant", "user"]
