"""Prompts as slash commands, ``@server:uri`` resources, ``mcp.list`` and ``/mcp``, the
approval of project servers, resource list changes, and the legacy SSE transport — over a
real tron-server and server-everything."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.mcp.conftest import approve_all, offered, run, trust
from tests.mcp.servers import HttpServer, stdio, write_mcp_json
from tests.support.rpc import new_session, of_type
from tests.support.scripted_llm import Response, ScriptedLLM, Text, ToolUse
from tests.support.server import RunningServer
from tron_server.client import RpcCallError, TronClient

pytestmark = pytest.mark.anyio


async def commands(client: TronClient, sid: str, want: str) -> dict[str, Any]:
    """command.list until ``want`` is in it (the first listing starts the servers)."""
    with anyio.fail_after(60):
        while True:
            listed = (await client.call("command.list", {"sessionId": sid}))["commands"]
            found = {c["name"]: c for c in listed}
            if want in found:
                return found
            await anyio.sleep(0.2)


async def test_a_prompt_is_a_slash_command(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path, everything: Path
) -> None:
    write_mcp_json(tmp_path, {"ev": stdio(everything, "stdio")})
    approve_all(server.home)
    trust(server.home, tmp_path)
    llm.add(Response([Text("Sunny.")]))
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        found = await commands(client, sid, "mcp__ev__args-prompt")
        entry = found["mcp__ev__args-prompt"]
        assert entry["source"] == "mcp" and entry["argumentHint"] == "<city> [state]"
        assert "mcp__ev__simple-prompt" in found
        with pytest.raises(RpcCallError) as missing:
            await client.call("agent.message", {"sessionId": sid,
                                                "content": "/mcp__ev__args-prompt"})  # fmt: skip
        assert missing.value.code == -32602 and "needs city" in missing.value.message
        events = await run(client, sid, "/mcp__ev__args-prompt Paris France")
    [invoked] = of_type(events, "command.invoked")
    assert invoked["source"] == "mcp" and invoked["server"] == "ev"
    assert invoked["promptArguments"] == {"city": "Paris", "state": "France"}
    [message] = of_type(events, "message.user")
    assert "What's weather in Paris, France?" in json.dumps(message["content"])
    assert "What's weather in Paris, France?" in json.dumps(llm.requests[0]["messages"])


async def test_a_resource_mention_is_included_and_recorded(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path, everything: Path
) -> None:
    write_mcp_json(tmp_path, {"ev": stdio(everything, "stdio")})
    approve_all(server.home)
    trust(server.home, tmp_path)
    llm.add(Response([Text("Read it.")]))
    uri = "demo://resource/static/document/architecture.md"
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        listing = await client.call("mcp.list", {"sessionId": sid})
        mentions = [r["mention"] for r in listing["servers"][0]["resources"]]
        assert f"@ev:{uri}" in mentions  # what a client's completion offers
        events = await run(client, sid, f"Summarize @ev:{uri}, please.")
        with pytest.raises(RpcCallError) as unreadable:
            bad = {"sessionId": sid, "content": "see @ev:demo://no/such/thing"}
            await client.call("agent.message", bad)
        assert "was not included" in unreadable.value.message
    [message] = of_type(events, "message.user")
    first, *rest = message["content"]
    assert first == {"type": "text", "text": f"Summarize @ev:{uri}, please."}
    assert rest and rest[0]["text"].startswith(f'<resource uri="{uri}" mimeType="text/markdown">')
    sent = llm.requests[0]["messages"][0]["content"]
    assert sent[1]["text"] == rest[0]["text"]  # the model got exactly what was recorded


async def test_project_servers_wait_for_the_users_approval_which_is_remembered(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path, everything: Path
) -> None:
    write_mcp_json(tmp_path, {"ev": stdio(everything, "stdio"),
                              "other": stdio(everything, "stdio")})  # fmt: skip
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.local.json").write_text(
        json.dumps({"disabledMcpjsonServers": ["other"]}))  # fmt: skip
    trust(server.home, tmp_path)
    llm.add(Response([Text("no tools")]), Response([Text("tools")]), Response([Text("still")]))
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        await run(client, sid, "one")
        assert not [n for n in offered(llm, 0) if n.startswith("mcp__")]
        listing = await client.call("mcp.list", {"sessionId": sid})
        status = {s["name"]: s["status"] for s in listing["servers"]}
        assert status == {"ev": "needs-approval", "other": "disabled"}
        shown = await client.call("agent.message", {"sessionId": sid, "content": "/mcp"})
        assert "ev  needs-approval" in shown["output"] and "/mcp approve" in shown["output"]
        approved = await client.call("agent.message",
                                     {"sessionId": sid, "content": "/mcp approve ev"})  # fmt: skip
        assert "approved" in approved["output"]
        await run(client, sid, "two")
        assert "mcp__ev__echo" in offered(llm, 1)
        assert not [n for n in offered(llm, 1) if n.startswith("mcp__other__")]
    server.restart()  # remembered in the home, not in the session
    async with server.connect() as client:
        await run(client, sid, "three")
    assert "mcp__ev__echo" in offered(llm, 2)
    remembered = json.loads((server.home / "mcp-approvals.json").read_text())
    assert remembered["folders"][str(tmp_path.resolve())]["approved"] == ["ev"]
    assert (server.home / "mcp-approvals.json").stat().st_mode & 0o077 == 0


async def test_resource_list_changes_are_followed(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path, everything: Path
) -> None:
    write_mcp_json(tmp_path, {"ev": stdio(everything, "stdio")})
    approve_all(server.home)
    trust(server.home, tmp_path)
    data = "data:text/plain;base64,aGVsbG8gd29ybGQ="
    llm.add(Response([ToolUse("mcp__ev__gzip-file-as-resource",
                              {"name": "hello.gz", "data": data}, id="t1")]),
            Response([Text("zipped")]))  # fmt: skip
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        before = await client.call("mcp.list", {"sessionId": sid})
        uris = [r["uri"] for r in before["servers"][0]["resources"]]
        assert "demo://resource/session/hello.gz" not in uris
        await run(client, sid, "zip it")
        with anyio.fail_after(30):  # notifications/resources/list_changed → a new listing
            while True:
                after = await client.call("mcp.list", {"sessionId": sid, "connect": False})
                uris = [r["uri"] for r in after["servers"][0]["resources"]]
                if "demo://resource/session/hello.gz" in uris:
                    break
                await anyio.sleep(0.1)


async def test_the_legacy_sse_transport(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path, everything_sse: HttpServer
) -> None:
    (server.home / "settings.json").write_text(json.dumps(
        {"mcpServers": {"old": {"type": "sse", "url": f"{everything_sse.base}/sse"}}}))  # fmt: skip
    llm.add(Response([ToolUse("mcp__old__get-sum", {"a": 20, "b": 22}, id="t1")]),
            Response([Text("ok")]))  # fmt: skip
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        events = await run(client, sid, "add")
    [result] = of_type(events, "tool.result")
    assert result["content"] == "The sum of 20 and 22 is 42."


async def test_a_session_of_an_editor_brings_its_own_servers(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path, everything: Path
) -> None:
    llm.add(Response([ToolUse("mcp__mine__echo", {"message": "from the editor"}, id="t1")]),
            Response([Text("ok")]))  # fmt: skip
    async with server.connect() as client:
        with pytest.raises(RpcCallError) as bad:
            await client.call("session.create", {"workingDirectory": str(tmp_path),
                              "mcpServers": {"x": {"type": "ws", "url": "ws://h"}}})  # fmt: skip
        assert bad.value.code == -32602 and "unknown type 'ws'" in bad.value.message
        session = await client.call("session.create", {
            "workingDirectory": str(tmp_path), "provider": "anthropic",
            "mcpServers": {"mine": stdio(everything, "stdio")}})  # fmt: skip
        sid = session["id"]
        events = await run(client, sid, "echo")
        other = await new_session(client, tmp_path)
        theirs = await client.call("mcp.list", {"sessionId": other, "connect": False})
        mine = await client.call("mcp.list", {"sessionId": sid, "connect": False})
        assert [(s["name"], s["scope"], s["status"]) for s in mine["servers"]] == [
            ("mine", "session", "connected")]  # fmt: skip
        await client.call("session.end", {"sessionId": sid})
        ended = await client.call("mcp.list", {"sessionId": sid, "connect": False})
    [result] = of_type(events, "tool.result")
    assert result["content"] == "Echo: from the editor"
    assert theirs["servers"] == []  # the session's own servers are its own
    assert ended["servers"] == []  # and end with it
