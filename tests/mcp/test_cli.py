"""``tron mcp list`` / ``approve`` / ``deny`` against a real tron-server and a real MCP
server: what a script reads (``--json``, the exit status) and what a person reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from tests.mcp.conftest import trust
from tests.mcp.servers import stdio, write_mcp_json
from tests.support.server import RunningServer

pytestmark = pytest.mark.anyio


def tron(server: RunningServer, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "tron_server.terminal", "mcp", *args, "--home",
               str(server.home), "--server", server.ws_url]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "TRON_DEBUG"}
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env,
                          stdin=subprocess.DEVNULL)  # fmt: skip


async def test_tron_mcp_list_and_approve(
    server: RunningServer, tmp_path: Path, everything: Path
) -> None:
    write_mcp_json(tmp_path, {"ev": stdio(everything, "stdio"),
                              "dead": {"command": "/nonexistent/server"}})  # fmt: skip
    folder = str(tmp_path)
    waiting = await anyio.to_thread.run_sync(tron, server, "list", "--json", "--cwd", folder)
    assert waiting.returncode == 1, waiting.stderr  # servers wait for approval
    listing = json.loads(waiting.stdout)
    assert {s["name"]: s["status"] for s in listing["servers"]} == {
        "ev": "needs-approval", "dead": "needs-approval"}  # fmt: skip
    assert all("not trusted" in s["error"] for s in listing["servers"])
    approved = await anyio.to_thread.run_sync(tron, server, "approve", "ev", "--cwd", folder)
    assert approved.returncode == 0 and approved.stdout.startswith("ev: "), approved.stderr
    assert approved.stdout.strip() == "ev: needs-approval"  # remembered; the folder comes first
    untrusted = await anyio.to_thread.run_sync(tron, server, "list", "--cwd", folder)
    assert "the folder is not trusted" in untrusted.stdout
    trust(server.home, tmp_path)  # as `tron --trust` records it
    await anyio.to_thread.run_sync(tron, server, "approve", "dead", "--cwd", folder)
    shown = await anyio.to_thread.run_sync(tron, server, "list", "--cwd", folder)
    assert shown.returncode == 1  # dead failed
    assert "ev  connected  (project, stdio:" in shown.stdout
    assert "mcp__ev__get-sum" in shown.stdout and "/mcp__ev__args-prompt" in shown.stdout
    assert "dead  failed" in shown.stdout and "No such file or directory" in shown.stdout
    denied = await anyio.to_thread.run_sync(tron, server, "deny", "dead", "--cwd", folder)
    assert denied.stdout.strip() == "dead: disabled"
    clean = await anyio.to_thread.run_sync(tron, server, "list", "--cwd", folder, "--json")
    assert clean.returncode == 0, clean.stdout
    unknown = await anyio.to_thread.run_sync(tron, server, "approve", "nope", "--cwd", folder)
    assert unknown.returncode == 2 and "no MCP server 'nope'" in unknown.stderr
    assert "Traceback" not in unknown.stderr
