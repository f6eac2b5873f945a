"""How MCP calls behave in the runtime, over a real tron-server and server-everything:
permission rules, hooks, progress and abort (``notifications/cancelled`` on the wire), a
crashing server, elicitation through the question flow, sampling refused, a session
resumed after the server's tools changed, and sub-agents."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.mcp.conftest import approve_all, offered, run, trust
from tests.mcp.servers import stdio, write_mcp_json
from tests.support.rpc import new_session, of_type
from tests.support.scripted_llm import Response, ScriptedLLM, Text, ToolUse
from tests.support.server import RunningServer
from tron_server.client import Notification

pytestmark = pytest.mark.anyio

TEE = Path(__file__).with_name("tee.py")


def results(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["toolCallId"]: r for r in of_type(events, "tool.result")}


def settings(folder: Path, data: dict[str, Any]) -> None:
    path = folder / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


async def test_deny_and_allow_rules_name_mcp_tools_as_claude_code_does(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path, everything: Path
) -> None:
    write_mcp_json(tmp_path, {"ev": stdio(everything, "stdio")})
    approve_all(server.home)
    trust(server.home, tmp_path)
    settings(tmp_path, {"permissions": {"deny": ["mcp__ev__get-env"],
                                        "allow": ["mcp__ev__echo"]}})  # fmt: skip
    llm.add(
        Response([ToolUse("mcp__ev__echo", {"message": "hi"}, id="t_allowed"),
                  ToolUse("mcp__ev__get-env", {}, id="t_denied"),
                  ToolUse("mcp__ev__get-sum", {"a": 1, "b": 1}, id="t_asked")]),
        Response([Text("done")]),
    )  # fmt: skip
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        events = await run(client, sid, "go", approve=False)
    got = results(events)
    assert got["t_allowed"]["content"] == "Echo: hi" and not got["t_allowed"]["isError"]
    assert got["t_denied"]["isError"] and "mcp__ev__get-env" in got["t_denied"]["content"]
    assert got["t_asked"]["isError"] and "denied permission" in got["t_asked"]["content"]
    asked = [r["toolName"] for r in of_type(events, "interaction.requested")]
    assert asked == ["mcp__ev__get-sum"]  # the allowed one and the denied one never asked


async def test_a_server_wide_deny_rule(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path, everything: Path
) -> None:
    write_mcp_json(tmp_path, {"ev": stdio(everything, "stdio")})
    approve_all(server.home)
    trust(server.home, tmp_path)
    settings(tmp_path, {"permissions": {"deny": ["mcp__ev"]}})
    llm.add(Response([ToolUse("mcp__ev__echo", {"message": "hi"}, id="t1")]),
            Response([Text("done")]))  # fmt: skip
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        events = await run(client, sid, "go")
    [result] = of_type(events, "tool.result")
    assert result["isError"] and "denied by the rule mcp__ev" in result["content"]


async def test_hooks_match_mcp_tools_by_pattern(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path, everything: Path
) -> None:
    write_mcp_json(tmp_path, {"ev": stdio(everything, "stdio")})
    approve_all(server.home)
    trust(server.home, tmp_path)
    log = tmp_path / "hook.jsonl"
    hook = (f"{sys.executable} -c \"import json,sys; d=json.load(sys.stdin); "
            f"open({str(log)!r},'a').write(json.dumps(d)+chr(10)); "
            "blocked = d['tool_input'].get('message') == 'secret'; "
            "print('no secrets to MCP', file=sys.stderr) if blocked else None; "
            "sys.exit(2 if blocked else 0)\"")  # fmt: skip
    settings(tmp_path, {
        "permissions": {"allow": ["mcp__ev"]},
        "hooks": {"PreToolUse": [{"matcher": "mcp__.*",
                                  "hooks": [{"type": "command", "command": hook}]}],
                  "PostToolUse": [{"matcher": "mcp__ev__echo",
                                   "hooks": [{"type": "command", "command": hook}]}]},
    })  # fmt: skip
    llm.add(
        Response([ToolUse("mcp__ev__echo", {"message": "fine"}, id="t_ok"),
                  ToolUse("mcp__ev__echo", {"message": "secret"}, id="t_blocked")]),
        Response([Text("done")]),
    )  # fmt: skip
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        events = await run(client, sid, "go")
    got = results(events)
    assert got["t_ok"]["content"] == "Echo: fine"
    assert got["t_blocked"]["isError"] and "no secrets to MCP" in got["t_blocked"]["content"]
    seen = [json.loads(line) for line in log.read_text().splitlines()]
    pre = [s for s in seen if s["hook_event_name"] == "PreToolUse"]
    post = [s for s in seen if s["hook_event_name"] == "PostToolUse"]
    assert [s["tool_name"] for s in pre] == ["mcp__ev__echo", "mcp__ev__echo"]
    assert [s["tool_input"] for s in post] == [{"message": "fine"}]


async def test_progress_streams_and_abort_cancels_the_request_on_the_wire(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path, everything: Path
) -> None:
    wire = tmp_path / "wire.log"
    write_mcp_json(tmp_path, {"slow": {"command": sys.executable, "args": [
        str(TEE), str(wire), "--", "node", str(everything), "stdio"]}})  # fmt: skip
    approve_all(server.home)
    trust(server.home, tmp_path)
    settings(tmp_path, {"permissions": {"allow": ["mcp__slow"]}})
    llm.add(Response([ToolUse("mcp__slow__trigger-long-running-operation",
                              {"duration": 60, "steps": 60}, id="t_long")]))  # fmt: skip
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        outputs: list[str] = []

        async def abort_after_progress(note: Notification) -> None:
            if note.method == "agent.tool_output":
                outputs.append(note.data["chunk"])
                if len(outputs) == 2:
                    await client.call("agent.abort", {"sessionId": sid})

        events = await run(client, sid, "go", on_note=abort_after_progress)
    assert outputs[:2] == ["[progress 1/60]\n", "[progress 2/60]\n"]
    [result] = of_type(events, "tool.result")
    assert result["isError"] and result.get("interrupted") is True
    assert "[progress 1/60]" in result["content"]  # what it printed before the abort
    sent = [json.loads(line[2:]) for line in wire.read_text().splitlines() if line[0] == ">"]
    [call] = [m for m in sent if m.get("method") == "tools/call"]

    async def cancelled() -> list[dict[str, Any]]:
        while True:
            lines = wire.read_text().splitlines()
            found = [json.loads(x[2:]) for x in lines if x[0] == ">" and "cancelled" in x]
            if found:
                return found
            await anyio.sleep(0.05)

    with anyio.fail_after(20):
        [note] = await cancelled()
    assert note["method"] == "notifications/cancelled"
    assert note["params"]["requestId"] == call["id"]


def _pids(marker: str) -> list[int]:
    done = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    return [int(p) for p in done.stdout.split()]


async def test_a_crashing_server_is_reported_and_restarted_on_the_next_use(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path, everything: Path
) -> None:
    marker = f"crash-{os.getpid()}-{tmp_path.name}"
    write_mcp_json(tmp_path, {"ev": stdio(everything, "stdio", marker)})
    approve_all(server.home)
    trust(server.home, tmp_path)
    settings(tmp_path, {"permissions": {"allow": ["mcp__ev"]}})
    llm.add(
        Response([ToolUse("mcp__ev__trigger-long-running-operation",
                          {"duration": 60, "steps": 60}, id="t_long")]),
        Response([Text("It crashed.")]),
        Response([ToolUse("mcp__ev__echo", {"message": "back"}, id="t_again")]),
        Response([Text("It is back.")]),
    )  # fmt: skip
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        killed: list[int] = []

        async def kill_on_progress(note: Notification) -> None:
            if note.method == "agent.tool_output" and not killed:
                killed.extend(_pids(marker))
                for pid in killed:
                    os.kill(pid, signal.SIGKILL)

        events = await run(client, sid, "go", on_note=kill_on_progress)
        assert killed
        crashed = results(events)["t_long"]
        assert crashed["isError"] and "crashed" in crashed["content"]
        assert "[stderr of ev]" in crashed["content"]
        assert "Starting default (STDIO) server" in crashed["content"]  # its stderr tail
        listing = await client.call("mcp.list", {"sessionId": sid, "connect": False})
        [ev] = listing["servers"]
        assert ev["status"] == "failed" and "Starting default" in ev["stderrTail"]
        with anyio.fail_after(30):  # the backoff after a first failure is a second
            while (await client.call("mcp.list", {"sessionId": sid, "connect": False}))[
                "servers"][0].get("retryIn"):  # fmt: skip
                await anyio.sleep(0.2)
        events = await run(client, sid, "again")
    assert results(events)["t_again"]["content"] == "Echo: back"
    assert _pids(marker)  # started again


async def test_elicitation_goes_through_the_question_flow(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path, everything: Path
) -> None:
    write_mcp_json(tmp_path, {"ev": stdio(everything, "stdio")})
    approve_all(server.home)
    trust(server.home, tmp_path)
    settings(tmp_path, {"permissions": {"allow": ["mcp__ev"]}})
    llm.add(Response([ToolUse("mcp__ev__trigger-elicitation-request", {}, id="t_form")]),
            Response([Text("thanks")]))  # fmt: skip
    questions: list[dict[str, Any]] = []

    async def answer(note: Notification) -> Any:
        data = note.data
        questions.append(data)
        text = data["question"]
        if data.get("options"):
            return [data["options"][1]] if data.get("multiSelect") else data["options"][1]
        for key, value in (("Integer", "7"), ("Number", "2.5"), ("email", "ada@example.com"),
                           ("uri", "https://example.com"), ("date", "1815-12-10"),
                           ("String with default", "-")):  # fmt: skip
            if key in text:
                return value
        return "Ada"

    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        events = await run(client, sid, "go", answer=answer)
    assert "The MCP server ev asks: Please provide inputs" in questions[0]["question"]
    assert all(q["toolCallId"] == "t_form" for q in questions)
    [result] = of_type(events, "tool.result")
    assert not result["isError"]
    for line in ("- Name: Ada", "- Agreed to terms: false", "- Favorite Integer: 7",
                 "- Favorite Number: 2.5", "- Email: ada@example.com"):  # fmt: skip
        assert line in result["content"]


async def test_sampling_is_refused_with_a_clear_error(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path, everything: Path
) -> None:
    write_mcp_json(tmp_path, {"ev": stdio(everything, "stdio")})
    approve_all(server.home)
    trust(server.home, tmp_path)
    settings(tmp_path, {"permissions": {"allow": ["mcp__ev"]}})
    llm.add(Response([ToolUse("mcp__ev__trigger-sampling-request", {"prompt": "hi"},
                              id="t_sample")]), Response([Text("ok")]))  # fmt: skip
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        events = await run(client, sid, "go")
    [result] = of_type(events, "tool.result")
    assert result["isError"] and "sampling is disabled in Tron" in result["content"]
    assert len(llm.requests) == 2  # the server's request never reached the model


async def test_a_resumed_session_reconstructs_after_the_servers_tools_changed(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path, everything: Path
) -> None:
    write_mcp_json(tmp_path, {"ev": stdio(everything, "stdio")})
    approve_all(server.home)
    trust(server.home, tmp_path)
    settings(tmp_path, {"permissions": {"allow": ["mcp__ev", "mcp__renamed"]}})
    llm.add(Response([ToolUse("mcp__ev__echo", {"message": "before"}, id="t_old")]),
            Response([Text("first")]), Response([Text("second")]))  # fmt: skip
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        await run(client, sid, "one")
    # The server goes away under another name (its tools are others now); the server
    # restarts and the session goes on.
    write_mcp_json(tmp_path, {"renamed": stdio(everything, "stdio")})
    server.restart()
    async with server.connect() as client:
        events = await run(client, sid, "two")
    last = llm.requests[-1]
    assert "mcp__renamed__echo" in offered(llm, -1) and "mcp__ev__echo" not in offered(llm, -1)
    uses = [b for m in last["messages"] for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_use"]  # fmt: skip
    assert [(u["name"], u["input"]) for u in uses] == [("mcp__ev__echo", {"message": "before"})]
    assert llm.violations(-1) == []
    [call] = of_type(events, "tool.call")
    assert call["server"] == "ev"  # the recorded call stands as it was


async def test_sampling_when_the_user_allows_it(
    make_server: Any, llm: ScriptedLLM, tmp_path: Path, everything: Path
) -> None:
    server = make_server(mcp_sampling=True)
    write_mcp_json(tmp_path, {"ev": stdio(everything, "stdio")})
    approve_all(server.home)
    trust(server.home, tmp_path)
    settings(tmp_path, {"permissions": {"allow": ["mcp__ev"]}})
    llm.add(Response([ToolUse("mcp__ev__trigger-sampling-request",
                              {"prompt": "Say marmalade"}, id="t_sample")]),
            Response([Text("marmalade")]),  # the server's question, answered by the model
            Response([Text("done")]))  # fmt: skip
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        events = await run(client, sid, "go")
    [result] = of_type(events, "tool.result")
    assert not result["isError"] and "marmalade" in result["content"]
    asked = llm.requests[1]
    assert "Say marmalade" in json.dumps(asked["messages"]) and not asked.get("tools")
