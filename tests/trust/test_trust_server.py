"""Folder trust over a real tron-server socket: a hostile folder's configuration does
nothing before its user trusts it, all of it acts after ``trust.set``, and deny rules act
either way (issue 26 item 1)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.support.scripted_llm import Response, ScriptedLLM, Text, ToolUse
from tests.support.server import RunningServer
from tests.trust.hostile import DEFINES, EVENTS, Hostile, make_hostile
from tron_server.client import RpcCallError, TronClient

pytestmark = pytest.mark.anyio


@pytest.fixture
def hostile(tmp_path: Path) -> Hostile:
    return make_hostile(tmp_path)


async def create(client: TronClient, folder: Path) -> dict[str, Any]:
    result: dict[str, Any] = await client.call(
        "session.create", {"workingDirectory": str(folder), "provider": "anthropic"}
    )
    return result


async def send(client: TronClient, sid: str, text: str) -> dict[str, Any]:
    """Send ``text`` (a prompt or a /command) and wait for the run to complete."""
    stream = client.notifications(["agent.complete"], session_id=sid)
    await client.call("agent.message", {"sessionId": sid, "content": text})
    data: dict[str, Any] = (await stream.next(timeout=60)).data
    return data


async def results(client: TronClient, sid: str) -> dict[str, str]:
    """Tool call id → its result's text."""
    out: dict[str, str] = {}
    for e in await client.sync(sid):
        if e["type"] == "tool.result":
            content = e["payload"].get("content")
            out[e["payload"]["toolCallId"]] = (
                json.dumps(content) if not isinstance(content, str) else content
            )
    return out


def task(call_id: str) -> Response:
    """A Task call starting the folder's agent ``evil``."""
    arguments = {"description": "x", "prompt": "go", "subagent_type": "evil"}
    return Response([ToolUse("Task", arguments, id=call_id)])


def tool_calls(hostile: Hostile, suffix: str) -> list[ToolUse]:
    return [
        ToolUse(
            "Bash", {"command": f"echo x >> '{hostile.markers / 'bash'}'"}, id=f"t_bash{suffix}"
        ),
        ToolUse("Bash", {"command": "rm -f README.md"}, id=f"t_rm{suffix}"),
        ToolUse("Write", {"file_path": "planted.txt", "content": "x"}, id=f"t_write{suffix}"),
        ToolUse("Notify", {"title": "hello", "body": "from the agent"}, id=f"t_notify{suffix}"),
    ]


async def settle(server: RunningServer) -> None:
    """Wait for the hooks still running in the background (Notification, SessionStart)."""
    orchestrator = server.services.orchestrator
    assert orchestrator is not None

    async def drain() -> None:
        await orchestrator.lifecycle.drain(30)

    await server.run(drain)


async def test_a_hostile_folder_acts_only_once_trusted(
    server: RunningServer, llm: ScriptedLLM, hostile: Hostile
) -> None:
    async with server.connect() as client:
        # -- untrusted: nothing the folder says acts -----------------------------------
        created = await create(client, hostile.root)
        sid = created["id"]
        llm.add(
            Response(tool_calls(hostile, "1")),
            task("t_task1"),
            Response([Text("Done.")]),
        )
        done = await send(client, sid, "set things up")
        assert done["stopReason"] == "end_turn"
        seen = await results(client, sid)
        assert "dontAsk" in seen["t_bash1"]  # refused: no folder rule or mode let it run
        assert "Bash(rm:*)" in seen["t_rm1"]  # the untrusted folder's deny rule acted
        assert "dontAsk" in seen["t_write1"] and not (hostile.root / "planted.txt").exists()
        assert "evil" in seen["t_task1"] and "EVIL-AGENT-PROMPT" not in json.dumps(llm.requests)
        with pytest.raises(RpcCallError) as refused:
            await client.call("agent.message", {"sessionId": sid, "content": "/pwn"})
        assert refused.value.code == -32602 and "not trusted" in refused.value.message
        llm.add(Response([Text("SUMMARY: set up.")]))
        await client.call("agent.message", {"sessionId": sid, "content": "/compact"})
        await settle(server)
        assert hostile.marked() == {}
        assert (hostile.root / "README.md").exists()
        # What the protocol says about it.
        asked = await client.call("trust.get", {"path": str(hostile.root)})
        assert asked == {"path": str(hostile.root), "trusted": False, "trustedBy": None,
                         "defines": DEFINES}  # fmt: skip
        assert created["trusted"] is False and created["defines"] == DEFINES
        permissions = await client.call("permissions.get", {"sessionId": sid})
        assert permissions["trusted"] is False and permissions["mode"] == "dontAsk"
        assert permissions["additionalDirectories"] == []
        behaviors = {(r["rule"], r["behavior"]) for r in permissions["rules"]}
        assert behaviors == {("Bash(rm:*)", "deny")}  # deny rules act, allow rules do not
        shown = await client.call("agent.message", {"sessionId": sid, "content": "/permissions"})
        assert "This folder is not trusted" in shown["output"]
        commands = (await client.call("command.list", {"sessionId": sid}))["commands"]
        pwn = next(c for c in commands if c["name"] == "pwn")
        assert "not trusted" in pwn["refused"]
        assert "refused" not in next(c for c in commands if c["name"] == "readme")

        # -- trusted: everything acts, from the session's next turn -----------------------
        answer = await client.call("trust.set", {"path": str(hostile.root), "trusted": True})
        assert answer == {"path": str(hostile.root), "trusted": True,
                          "trustedBy": str(hostile.root), "defines": DEFINES}  # fmt: skip
        permissions = await client.call("permissions.get", {"sessionId": sid})
        assert permissions["trusted"] is True and permissions["mode"] == "bypassPermissions"
        assert permissions["additionalDirectories"] == [str(hostile.extra)]
        llm.add(
            Response(tool_calls(hostile, "2")),
            task("t_task2"),
            Response([Text("child done")]),  # the sub-agent's turn
            Response([Text("Done again.")]),
        )
        done = await send(client, sid, "again")
        assert done["stopReason"] == "end_turn"
        seen = await results(client, sid)
        assert "Bash(rm:*)" in seen["t_rm2"] and (hostile.root / "README.md").exists()
        assert (hostile.root / "planted.txt").exists()
        assert "EVIL-AGENT-PROMPT" in json.dumps(llm.requests[-2])  # the folder's agent ran
        llm.add(Response([Text("Installed.")]))
        await send(client, sid, "/pwn")
        llm.add(Response([Text("SUMMARY: all of it.")]))
        await client.call("agent.message", {"sessionId": sid, "content": "/compact"})
        await client.call("session.end", {"sessionId": sid})
        second = await create(client, hostile.root)
        assert second["trusted"] is True
        await settle(server)
        marked = hostile.marked()
        assert set(marked) == {*EVENTS, "bash", "command", "mcp"}, marked
        # Each event has a hook in each of the folder's two files. SessionStart ran three
        # times: for the session made before trust at its next turn, after its /compact,
        # and for the new session at its start.
        assert marked["SessionStart"] == 6 and marked["SessionEnd"] == 2
        assert marked["bash"] == 1 and marked["command"] == 1
        assert marked["mcp"] == 1  # its MCP server started once, shared by both sessions

        # -- revoked: nothing acts any more --------------------------------------------
        hostile.clear()
        revoked = await client.call("trust.set", {"path": str(hostile.root), "trusted": False})
        assert revoked["trusted"] is False and revoked["trustedBy"] is None
        third = await create(client, hostile.root)
        assert third["trusted"] is False
        llm.add(Response(tool_calls(hostile, "3")), Response([Text("Nothing.")]))
        await send(client, third["id"], "once more")
        await settle(server)
        assert hostile.marked() == {}
        assert "dontAsk" in (await results(client, third["id"]))["t_bash3"]


async def test_trust_of_a_parent_covers_a_child_and_a_symlink_is_judged_by_its_target(
    server: RunningServer, hostile: Hostile, tmp_path: Path
) -> None:
    trusted = tmp_path / "mine"
    trusted.mkdir()
    link = trusted / "looks-like-mine"
    link.symlink_to(hostile.root)
    async with server.connect() as client:
        await client.call("trust.set", {"path": str(trusted), "trusted": True})
        # A symlink inside a trusted folder that leads to an untrusted one: untrusted.
        through = await client.call("trust.get", {"path": str(link)})
        assert through["path"] == str(hostile.root) and through["trusted"] is False
        created = await create(client, link)
        assert created["workingDirectory"] == str(hostile.root)
        assert created["trusted"] is False
        # Trusting the parent of the hostile folder covers it.
        parent = hostile.root.parent
        await client.call("trust.set", {"path": str(parent), "trusted": True})
        child = await client.call("trust.get", {"path": str(hostile.root)})
        assert child["trusted"] is True and child["trustedBy"] == str(parent)
        assert (await create(client, link))["trusted"] is True
        # Revoking the child alone leaves the parent trusted.
        await client.call("trust.set", {"path": str(hostile.root), "trusted": False})
        assert (await client.call("trust.get", {"path": str(hostile.root)}))["trusted"] is False
        assert (await client.call("trust.get", {"path": str(parent)}))["trusted"] is True
    record = server.home / "trust.json"
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    data = json.loads(record.read_text())
    assert data["folders"][str(hostile.root)]["trusted"] is False
    assert data["folders"][str(trusted)]["trusted"] is True


async def test_bad_trust_requests_are_clear_errors(server: RunningServer, tmp_path: Path) -> None:
    async with server.connect() as client:
        with pytest.raises(RpcCallError) as relative:
            await client.call("trust.get", {"path": "relative/path"})
        assert relative.value.code == -32602 and "absolute" in relative.value.message
        with pytest.raises(RpcCallError) as missing:
            await client.call("trust.set", {"path": str(tmp_path / "nope"), "trusted": True})
        assert missing.value.code == -32004 and "not an existing folder" in missing.value.message
        with pytest.raises(RpcCallError) as typed:
            await client.call("trust.set", {"path": str(tmp_path), "trusted": "yes"})
        assert typed.value.code == -32602
        # A trust file that is not one: refused, and left as it was.
        (server.home / "trust.json").write_text("{broken")
        os.chmod(server.home / "trust.json", 0o600)
        with pytest.raises(RpcCallError) as broken:
            await client.call("trust.set", {"path": str(tmp_path), "trusted": True})
        assert broken.value.code == -32004 and "trust.json" in broken.value.message
        assert (server.home / "trust.json").read_text() == "{broken"
        assert (await client.call("trust.get", {"path": str(tmp_path)}))["trusted"] is False
