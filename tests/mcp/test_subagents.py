"""Sub-agents get the parent's MCP tools unless their definition's ``tools:`` restricts
them (Claude Code's rule), over a real tron-server and server-everything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agent.test_subagents import Routes, task, tool_names
from tests.mcp.conftest import approve_all, run, trust
from tests.mcp.servers import stdio, write_mcp_json
from tests.support.rpc import new_session, of_type
from tests.support.scripted_llm import Response, ScriptedLLM, Text, ToolUse
from tests.support.server import RunningServer

pytestmark = pytest.mark.anyio

AGENT = """---
name: {name}
description: {name} agent
tools: {tools}
---
You are {name}.
"""


async def test_children_inherit_mcp_tools_unless_tools_restricts_them(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path, everything: Path
) -> None:
    write_mcp_json(tmp_path, {"ev": stdio(everything, "stdio")})
    approve_all(server.home)
    trust(server.home, tmp_path)
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["mcp__ev"]}}))  # fmt: skip
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir()
    (agents / "reader.md").write_text(AGENT.format(name="reader", tools="Read, Grep"))
    (agents / "echoer.md").write_text(AGENT.format(name="echoer", tools="Read, mcp__ev__echo"))
    routes = Routes(llm)
    routes.add("PARENT", Response([task("all", "KID-ALL: echo", "toolu_1"),
                                   task("read", "KID-READ: look", "toolu_2",
                                        subagent_type="reader"),
                                   task("echo", "KID-ECHO: echo", "toolu_3",
                                        subagent_type="echoer")]),
               Response([Text("All done.")]))  # fmt: skip
    routes.add("KID-ALL", Response([ToolUse("mcp__ev__echo", {"message": "child"}, id="c1")]),
               Response([Text("echoed")]))  # fmt: skip
    routes.add("KID-READ", Response([ToolUse("mcp__ev__echo", {"message": "no"}, id="c2")]),
               Response([Text("could not")]))  # fmt: skip
    routes.add("KID-ECHO", Response([Text("fine")]))
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        await run(client, sid, "PARENT: go")
        details = await client.call("session.get", {"sessionId": sid})
        children = {}
        for child in details["childSessionIds"]:
            events = await client.sync(child)
            children[of_type(events, "message.user")[0]["content"][:8]] = events
    everything_child = tool_names(routes.requests["KID-ALL"][0])
    assert "mcp__ev__echo" in everything_child and "mcp__ev__get-sum" in everything_child
    assert not [n for n in tool_names(routes.requests["KID-READ"][0]) if n.startswith("mcp__")]
    only = [n for n in tool_names(routes.requests["KID-ECHO"][0]) if n.startswith("mcp__")]
    assert only == ["mcp__ev__echo"]
    [echoed] = of_type(children["KID-ALL:"], "tool.result")
    assert echoed["content"] == "Echo: child"
    assert of_type(children["KID-ALL:"], "tool.call")[0]["server"] == "ev"
    [refused] = of_type(children["KID-READ"], "tool.result")
    assert refused["isError"] and "Unknown tool 'mcp__ev__echo'" in refused["content"]
