"""MCP tools through a real tron-server, against real servers (server-everything over stdio
and Streamable HTTP, mcp-server-time over stdio): what the model is offered, approvals,
results of every kind, and what is recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mcp.conftest import approve_all, offered, run, trust
from tests.mcp.servers import HttpServer, stdio, write_mcp_json
from tests.support.rpc import new_session, of_type
from tests.support.scripted_llm import Response, ScriptedLLM, Text, ToolUse
from tests.support.server import RunningServer

pytestmark = pytest.mark.anyio


async def test_stdio_and_time_tools_answer_through_the_server(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path, everything: Path, time_program: Path
) -> None:
    write_mcp_json(tmp_path, {"everything": stdio(everything, "stdio"),
                              "time": {"command": str(time_program)}})  # fmt: skip
    approve_all(server.home)
    trust(server.home, tmp_path)
    llm.add(
        Response([ToolUse("mcp__everything__get-sum", {"a": 2, "b": 3}, id="t_sum"),
                  ToolUse("mcp__everything__get-tiny-image", {}, id="t_img"),
                  ToolUse("mcp__everything__get-structured-content", {"location": "Chicago"},
                          id="t_struct"),
                  ToolUse("mcp__time__get_current_time", {"timezone": "Europe/Paris"},
                          id="t_time")]),
        Response([Text("Done.")]),
    )  # fmt: skip
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        events = await run(client, sid, "use the tools")

    tools = offered(llm)
    assert {"mcp__everything__get-sum", "mcp__time__get_current_time", "Read"} <= set(tools)
    # The schema as the server gave it (Anthropic takes it unchanged).
    assert tools["mcp__everything__get-sum"]["input_schema"]["required"] == ["a", "b"]
    calls = {c["toolCallId"]: c for c in of_type(events, "tool.call")}
    assert calls["t_sum"]["server"] == "everything" and calls["t_sum"]["mcpTool"] == "get-sum"
    assert calls["t_time"]["server"] == "time"
    results = {r["toolCallId"]: r for r in of_type(events, "tool.result")}
    assert results["t_sum"]["content"] == "The sum of 2 and 3 is 5."
    assert results["t_sum"]["isError"] is False
    image = [p for p in results["t_img"]["content"] if p["type"] == "image"]
    assert image and image[0]["source"]["media_type"] == "image/png"
    assert results["t_struct"]["details"]["structuredContent"]["temperature"] is not None
    assert "Europe/Paris" in results["t_time"]["content"]
    # Each call was approved by the user (MCP tools ask, as any tool that is not read-only).
    asked = [r["toolName"] for r in of_type(events, "interaction.requested")]
    assert sorted(asked) == sorted(["mcp__everything__get-sum", "mcp__everything__get-tiny-image",
                                    "mcp__everything__get-structured-content",
                                    "mcp__time__get_current_time"])  # fmt: skip
    # The history the model got back holds the results (and validates).
    assert llm.violations(1) == []


async def test_streamable_http_server(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path, everything_http: HttpServer
) -> None:
    home_settings = server.home / "settings.json"
    home_settings.write_text(
        '{"mcpServers": {"web": {"type": "http", "url": "${EV_BASE:-'
        + everything_http.base
        + '}/mcp"}}}'
    )
    llm.add(Response([ToolUse("mcp__web__echo", {"message": "over http"}, id="t1")]),
            Response([Text("ok")]))  # fmt: skip
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        events = await run(client, sid, "echo")
        listing = await client.call("mcp.list", {"sessionId": sid})
    [result] = of_type(events, "tool.result")
    assert result["content"] == "Echo: over http"
    [web] = listing["servers"]
    assert web["scope"] == "user" and web["transport"] == "http" and web["status"] == "connected"
