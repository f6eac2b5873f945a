"""``tron acp`` driven by the official TypeScript SDK's client (``@agentclientprotocol/sdk``
from npm, installed into the tests' cache; skipped with the reason when npm is absent):
new session, a prompt whose Write needs permission, allowed, the diff, end_turn, list;
and a client advertising ``terminal``: Bash output in its terminal."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.acp.conftest import AcpEnv, zed_command
from tests.acp.schema import ts_sdk
from tests.support.scripted_llm import Response, Text, ToolUse


def run_client(env: AcpEnv, script: str, project: Path) -> dict[str, Any]:
    """Run one of the TypeScript SDK client scripts against ``tron acp`` (started as Zed
    starts it) in ``project``; what it saw (skipped when the SDK cannot be installed)."""
    package, why = ts_sdk()
    if package is None:
        pytest.skip(why)
    node = shutil.which("node")
    assert node is not None
    command, args, extra = zed_command()
    environment = {**os.environ, **extra, "TRON_HOME": str(env.server.home),
                   "ACP_SDK": str(package)}  # fmt: skip
    done = subprocess.run(
        [node, os.path.join(os.path.dirname(__file__), script), str(project), command, *args],
        capture_output=True, text=True, timeout=180, env=environment,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    seen: dict[str, Any] = json.loads(done.stdout)
    return seen


def test_typescript_sdk_client(env: AcpEnv) -> None:
    project = env.project("typescript")
    env.llm.add(
        Response([Text("Writing."), ToolUse("Write", {"file_path": "out.txt", "content": "hi\n"})]),
        Response([Text("Written.")]),
    )
    seen = run_client(env, "ts_client.mjs", project)
    assert seen["init"]["agentCapabilities"]["loadSession"] is True
    assert seen["answer"] == {"stopReason": "end_turn"}
    assert (project / "out.txt").read_text() == "hi\n"
    [asked] = seen["permissions"]
    assert asked["toolCall"]["kind"] == "edit"
    kinds = [u["sessionUpdate"] for u in seen["updates"]]
    assert "agent_message_chunk" in kinds and "tool_call" in kinds
    final = [u for u in seen["updates"] if u["sessionUpdate"] == "tool_call_update"][-1]
    assert final["status"] == "completed"
    # A new file: no old text.
    assert final["content"] == [{"type": "diff", "path": str(project / "out.txt"),
                                 "newText": "hi\n"}]  # fmt: skip
    assert [s["sessionId"] for s in seen["listed"]["sessions"]] == [seen["session"]["sessionId"]]
    assert seen["exitCode"] == 0


def test_typescript_sdk_client_with_a_terminal(env: AcpEnv) -> None:
    """Bash output in the terminal of a client on the TypeScript SDK."""
    project = env.project("typescript-terminal")
    marker = project / "ran.txt"
    env.llm.add(
        Response([ToolUse("Bash", {"command": f"echo from-tron; echo x >> '{marker}'; exit 2"})]),
        Response([Text("Ran.")]),
    )
    seen = run_client(env, "ts_terminal_client.mjs", project)
    assert seen["answer"] == {"stopReason": "end_turn"}
    [(terminal_id, terminal)] = seen["terminals"].items()
    assert terminal["output"] == "from-tron\n" and terminal["exitCode"] == 2
    assert seen["released"] == [terminal_id]
    assert marker.read_text() == "x\n"  # once, in Tron
    final = [u for u in seen["updates"] if u["sessionUpdate"] == "tool_call_update"][-1]
    assert final["status"] == "completed"
    assert final["content"] == [{"type": "terminal", "terminalId": terminal_id}]
    assert seen["exitCode"] == 0
