"""``tron acp`` driven by the official TypeScript SDK's client (``@agentclientprotocol/sdk``
from npm, installed into the tests' cache; skipped with the reason when npm is absent):
new session, a prompt whose Write needs permission, allowed, the diff, end_turn, list."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from tests.acp.conftest import AcpEnv, zed_command
from tests.acp.schema import ts_sdk
from tests.support.scripted_llm import Response, Text, ToolUse


def test_typescript_sdk_client(env: AcpEnv) -> None:
    package, why = ts_sdk()
    if package is None:
        pytest.skip(why)
    node = shutil.which("node")
    assert node is not None
    project = env.project("typescript")
    env.llm.add(
        Response([Text("Writing."), ToolUse("Write", {"file_path": "out.txt", "content": "hi\n"})]),
        Response([Text("Written.")]),
    )
    command, args, extra = zed_command()
    script = os.path.join(os.path.dirname(__file__), "ts_client.mjs")
    environment = {**os.environ, **extra, "TRON_HOME": str(env.server.home),
                   "ACP_SDK": str(package)}  # fmt: skip
    done = subprocess.run(
        [node, script, str(project), command, *args],
        capture_output=True, text=True, timeout=180, env=environment,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout)
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
