"""``session.resume`` over the real server: a session whose folder is not on this machine
(an imported one) says so (``workingDirectoryExists``), and continues in another folder
with ``workingDirectory``: its tools act there from then on (the agent's Bash runs there)."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest

from tests.support.scripted_llm import Response, ScriptedLLM, Text, ToolUse
from tests.support.server import RunningServer
from tron_server.client import RpcCallError

pytestmark = pytest.mark.anyio


async def test_resume_in_another_folder(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    gone, here = tmp_path / "elsewhere", tmp_path / "here"
    gone.mkdir()
    here.mkdir()
    async with server.connect() as client:
        sid = (await client.call("session.create", {"workingDirectory": str(gone)}))["id"]
        shutil.rmtree(gone)  # as an imported session's folder: not on this machine
        opened = await client.call("session.resume", {"sessionId": sid})
        assert opened["workingDirectory"] == str(gone)
        assert opened["workingDirectoryExists"] is False
        listed = (await client.call("session.list"))["sessions"]
        assert [s["workingDirectoryExists"] for s in listed] == [False]

        # The folder must exist; nothing is recorded otherwise.
        with pytest.raises(RpcCallError) as refused:
            await client.call(
                "session.resume", {"sessionId": sid, "workingDirectory": str(tmp_path / "no")}
            )
        assert refused.value.code == -32602
        assert "must be an existing directory" in refused.value.message

        moved = await client.call(
            "session.resume", {"sessionId": sid, "workingDirectory": str(here)}
        )
        assert moved["workingDirectory"] == str(here) and moved["workingDirectoryExists"]
        events = (await client.call("events.list", {"sessionId": sid}))["events"]
        assert events[-1]["type"] == "config.working_directory"
        assert events[-1]["payload"] == {
            "workingDirectory": str(here),
            "previousWorkingDirectory": str(gone),
        }
        # Again with the same folder: nothing more is recorded.
        await client.call("session.resume", {"sessionId": sid, "workingDirectory": str(here)})
        again = (await client.call("events.list", {"sessionId": sid}))["events"]
        assert len(again) == len(events)

        # The agent's tools act in the new folder.
        llm.add(Response([ToolUse("Bash", {"command": "pwd"})]), Response([Text("Done.")]))
        async with client.notifications(["agent.complete"], session_id=sid) as stream:
            await client.call("agent.message", {"sessionId": sid, "content": "where?"})
            with anyio.fail_after(20):
                await stream.next()
        events = (await client.call("events.list", {"sessionId": sid}))["events"]
        result = next(e for e in events if e["type"] == "tool.result")
        assert str(here) in str(result["payload"]["content"])
