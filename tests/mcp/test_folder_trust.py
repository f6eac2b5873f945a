"""A folder's own MCP servers act only once the folder is trusted (issue 26 item 1, issue
30 item 1), over a real tron-server and a real stdio server that marks its start.

Order of the gates: the folder's trust first (``trust.set``), then the user's approval of
each server; the folder's own approval keys count only once it is trusted. The user's own
servers (``<home>/settings.json``, ``~/.claude.json``) need neither.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.mcp.conftest import offered, run
from tests.mcp.servers import marker_server, started, write_mcp_json
from tests.support.rpc import new_session, of_type
from tests.support.scripted_llm import Response, ScriptedLLM, Text, ToolUse
from tests.support.server import RunningServer
from tron_server.client import TronClient

pytestmark = pytest.mark.anyio


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"  # a zombie has exited


async def gone(pid: int, timeout: float = 20) -> bool:
    with anyio.move_on_after(timeout):
        while alive(pid):
            await anyio.sleep(0.05)
    return not alive(pid)


def mcp_tools(llm: ScriptedLLM, index: int) -> list[str]:
    return sorted(n for n in offered(llm, index) if n.startswith("mcp__"))


async def status(client: TronClient, folder: Path, **params: Any) -> dict[str, Any]:
    listing = await client.call("mcp.list", {"workingDirectory": str(folder), **params})
    return {s["name"]: s for s in listing["servers"]}


def cloned(tmp_path: Path) -> tuple[Path, Path]:
    """A cloned folder whose ``.mcp.json`` names the marker server and whose own settings
    try to approve every project server; the marker file (outside it)."""
    folder = tmp_path / "cloned"
    (folder / ".claude").mkdir(parents=True)
    marker = tmp_path / "started"
    write_mcp_json(folder, {"mark": marker_server(marker)})
    (folder / ".claude" / "settings.json").write_text(
        json.dumps({"enableAllProjectMcpServers": True})
    )
    return folder, marker


async def test_an_untrusted_folders_server_never_starts_and_trust_then_revoke_act(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    folder, marker = cloned(tmp_path)
    real = str(folder.resolve())
    llm.add(Response([Text("no tools")]))
    async with server.connect() as client:
        # -- untrusted: every path that could start it leaves it alone --------------------
        created = await client.call(
            "session.create", {"workingDirectory": str(folder), "provider": "anthropic"}
        )
        sid = created["id"]
        assert created["trusted"] is False and created["defines"]["mcpServers"] == 1
        await run(client, sid, "one")
        assert mcp_tools(llm, 0) == []
        # The user approves the server: remembered, but the folder still is not trusted.
        approved = await client.call(
            "mcp.approve", {"workingDirectory": str(folder), "server": "mark", "approved": True}
        )
        assert approved["server"]["status"] == "needs-approval"
        assert "not trusted" in approved["server"]["error"]
        listed = await status(client, folder)  # connect: start what is usable
        assert listed["mark"]["status"] == "needs-approval"
        assert "not trusted" in listed["mark"]["error"] and "trust" in listed["mark"]["error"]
        shown = await client.call("agent.message", {"sessionId": sid, "content": "/mcp"})
        assert "mark  needs-approval" in shown["output"], shown["output"]
        again = await client.call(
            "agent.message", {"sessionId": sid, "content": "/mcp approve mark"}
        )
        assert "now needs-approval: the folder is not trusted" in again["output"]
        await client.call("command.list", {"sessionId": sid})
        await anyio.sleep(1)  # room for a start that should not happen
        assert started(marker) == []

        # -- trusted (and approved): it starts and its tool works --------------------------
        trusted = await client.call("trust.set", {"path": str(folder), "trusted": True})
        assert trusted["trustedBy"] == real and trusted["defines"]["mcpServers"] == 1
        llm.add(Response([ToolUse("mcp__mark__ping", {}, id="t_ping")]), Response([Text("ok")]))
        events = await run(client, sid, "two")
        assert mcp_tools(llm, 1) == ["mcp__mark__ping"]
        [result] = [r for r in of_type(events, "tool.result") if r["toolCallId"] == "t_ping"]
        assert result["content"] == "pong" and not result["isError"]
        [pid] = started(marker)
        assert alive(pid)

        # -- revoked: not offered any more, and the running server is stopped ----------
        revoked = await client.call("trust.set", {"path": str(folder), "trusted": False})
        assert revoked["trusted"] is False
        llm.add(Response([Text("none again")]))
        await run(client, sid, "three")
        assert mcp_tools(llm, 3) == []
        assert (await status(client, folder))["mark"]["status"] == "needs-approval"
        assert await gone(pid)
        assert started(marker) == [pid]  # never started again


async def test_trust_alone_does_not_approve_a_server(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    marker = tmp_path / "started"
    write_mcp_json(folder, {"mark": marker_server(marker)})
    async with server.connect() as client:
        await client.call("trust.set", {"path": str(folder), "trusted": True})
        listed = await status(client, folder)
        assert listed["mark"]["status"] == "needs-approval"
        assert "/mcp approve mark" in listed["mark"]["error"]
        assert started(marker) == []
        await client.call(
            "mcp.approve", {"workingDirectory": str(folder), "server": "mark", "approved": True}
        )
        assert (await status(client, folder))["mark"]["status"] == "connected"
    assert len(started(marker)) == 1


async def test_the_users_own_servers_run_in_an_untrusted_folder(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    folder = tmp_path / "cloned"
    folder.mkdir()
    mine, claudes = tmp_path / "mine-started", tmp_path / "claude-started"
    settings = server.home / "settings.json"
    data = json.loads(settings.read_text()) if settings.exists() else {}
    settings.write_text(json.dumps({**data, "mcpServers": {"mine": marker_server(mine)}}))
    (server.home / "claude.json").write_text(
        json.dumps({"mcpServers": {"claudes": marker_server(claudes)}})
    )
    llm.add(Response([Text("tools")]))
    async with server.connect() as client:
        sid = await new_session(client, folder)
        await run(client, sid, "one")
        assert mcp_tools(llm, 0) == ["mcp__claudes__ping", "mcp__mine__ping"]
        listed = await status(client, folder, connect=False)
        assert {n: s["scope"] for n, s in listed.items()} == {"mine": "user", "claudes": "user"}
        trust = await client.call("trust.get", {"path": str(folder)})
        assert trust["trusted"] is False and trust["defines"]["mcpServers"] == 0
    assert len(started(mine)) == 1 and len(started(claudes)) == 1


def test_defines_counts_every_server_the_folder_brings(tmp_path: Path) -> None:
    """``.mcp.json`` of the folder and of a parent, and its ``.tron/settings.json``; not
    the user's own, and not a parent's server the nearer file overrides."""
    from tron_server.interaction.folder import folder_defines

    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.json").write_text(json.dumps({"mcpServers": {"user": {"command": "x"}}}))
    parent = tmp_path / "repo"
    folder = parent / "sub"
    (folder / ".tron").mkdir(parents=True)
    write_mcp_json(parent, {"a": {"command": "x"}, "b": {"command": "x"}})
    write_mcp_json(folder, {"b": {"command": "y"}})
    (folder / ".tron" / "settings.json").write_text(
        json.dumps({"mcpServers": {"c": {"url": "http://127.0.0.1:1/mcp"}}})
    )
    assert folder_defines(folder, home).mcp_servers == 3  # a, b, c
    os.remove(folder / ".mcp.json")
    os.mkfifo(folder / ".mcp.json")  # a FIFO would block a reader: it is not read
    assert folder_defines(folder, home).mcp_servers == 3  # a, b (the parent's), c
