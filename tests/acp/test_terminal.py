"""Bash output in the editor's terminal (``terminal/*``): the command runs once, in Tron;
the editor's terminal runs only the viewer that shows its output."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest
from acp import text_block

from tests.acp.conftest import AcpEnv, Editor
from tests.support.scripted_llm import Response, Text, ToolUse

pytestmark = pytest.mark.anyio


def contents(update: Any) -> list[dict[str, Any]]:
    return [
        c.model_dump(by_alias=True, exclude_none=True, mode="json") for c in update.content or []
    ]


async def run_bash(env: AcpEnv, name: str, command: str, **editor: Any) -> tuple[Editor, str]:
    """One prompt whose turn runs ``command`` with Bash (allowed); the editor and session."""
    project = env.project(name)
    env.llm.add(Response([ToolUse("Bash", {"command": command})]), Response([Text("Ran it.")]))
    refuse = editor.pop("refuse", False)
    choice = editor.pop("choice", "allow")
    async with env.editor(**editor) as (conn, client, _process):
        client.refuse_terminals = refuse
        sid = (await conn.new_session(cwd=str(project))).session_id
        client.choices = [choice]
        answer = await conn.prompt(session_id=sid, prompt=[text_block("run it")])
        assert answer.stop_reason == "end_turn"
        if client.terminals:
            await client.wait_for(lambda: len(client.released) == len(client.terminals))
    return client, sid


async def test_bash_output_is_shown_in_the_editors_terminal(env: AcpEnv) -> None:
    marker = env.root / "terminal-ran.txt"
    command = f"echo hello-terminal; echo line two; echo x >> '{marker}'; exit 3"
    editor, sid = await run_bash(env, "terminal", command, terminal=True)
    [start] = editor.of("tool_call", sid)
    [(terminal_id, terminal)] = editor.terminals.items()
    # The tool call shows the terminal, from its start to its end.
    assert contents(start) == [{"type": "terminal", "terminalId": terminal_id}]
    final = editor.of("tool_call_update", sid)[-1]
    assert final.status == "completed"
    assert contents(final) == [{"type": "terminal", "terminalId": terminal_id}]
    assert "[exit code: 3]" in str(final.raw_output)
    # The terminal ran the viewer, not the command, and showed the command's output and
    # exit status; the command ran once, in Tron.
    assert terminal.command == sys.executable
    assert terminal.args[:2] == ["-m", "tron_server.acp.viewer"]
    assert command not in " ".join(terminal.args)
    assert terminal.output == "hello-terminal\nline two\n"
    assert terminal.process.returncode == 3
    assert marker.read_text() == "x\n"
    assert editor.released == [terminal_id]
    # No text copy of the output was streamed beside the terminal.
    assert all(
        c["type"] == "terminal" for u in editor.of("tool_call_update", sid) for c in contents(u)
    )
    # The recorded events are those of any client.
    [result] = env.store("get_events", sid, types=["tool.result"])
    assert "hello-terminal" in str(result.payload)


async def test_without_the_capability_bash_output_is_text(env: AcpEnv) -> None:
    editor, sid = await run_bash(env, "no-terminal", "echo plain-output")
    assert editor.terminals == {}
    final = editor.of("tool_call_update", sid)[-1]
    assert final.status == "completed"
    [block] = contents(final)
    assert block["type"] == "content" and "plain-output" in block["content"]["text"]


async def test_an_editor_that_cannot_make_the_terminal_gets_text(env: AcpEnv) -> None:
    editor, sid = await run_bash(env, "refused", "echo still-shown", terminal=True, refuse=True)
    assert editor.terminals == {}
    [start] = editor.of("tool_call", sid)
    assert start.content is None
    [block] = contents(editor.of("tool_call_update", sid)[-1])
    assert block["type"] == "content" and "still-shown" in block["content"]["text"]


async def test_a_rejected_call_shows_why_in_its_terminal(env: AcpEnv) -> None:
    marker = env.root / "terminal-rejected.txt"
    command = f"echo x >> '{marker}'"
    editor, sid = await run_bash(env, "rejected", command, terminal=True, choice="deny")
    [terminal] = editor.terminals.values()
    assert editor.of("tool_call_update", sid)[-1].status == "failed"
    assert "denied" in terminal.output.lower()
    assert terminal.process.returncode == 1
    assert not marker.exists()


async def test_cancel_mid_command_ends_the_terminal_too(env: AcpEnv) -> None:
    project = env.project("terminal-cancel")
    env.llm.add(Response([ToolUse("Bash", {"command": "echo started; sleep 120"})]))
    async with env.editor(terminal=True) as (conn, editor, _process):
        sid = (await conn.new_session(cwd=str(project))).session_id
        editor.choices = ["allow"]
        prompt = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block("sleep")]))
        await editor.wait_for(lambda: any("started" in t.output for t in editor.terminals.values()))
        await conn.cancel(session_id=sid)
        assert (await asyncio.wait_for(prompt, 60)).stop_reason == "cancelled"
        [(terminal_id, terminal)] = editor.terminals.items()
        await editor.wait_for(lambda: editor.released == [terminal_id])
        assert terminal.process.returncode not in (None, 0)
        assert editor.of("tool_call_update", sid)[-1].status == "failed"
    [result] = env.store("get_events", sid, types=["tool.result"])
    assert result.payload.get("interrupted") is True
