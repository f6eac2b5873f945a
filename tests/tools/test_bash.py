"""Bash on real processes: exit codes, streaming, caps, timeouts, killing the whole group."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import pytest

from tests.tools.conftest import Recorder
from tron_server.tools import ToolContext, ToolResult, default_tools

pytestmark = pytest.mark.anyio


async def bash(ctx: ToolContext, command: str, **args: object) -> ToolResult:
    return await default_tools().execute("Bash", {"command": command, **args}, ctx)


def _pids_in_group(pgid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2 :].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                pids.append(int(entry.name))
    return pids


async def test_exit_codes_and_working_directory(ctx: ToolContext, workdir: Path) -> None:
    result = await bash(ctx, "pwd; echo oops >&2; exit 3")
    assert not result.is_error  # a failing command is information, not a tool failure
    assert result.content == f"{workdir}\noops\n\n[exit code: 3]"
    assert result.details is not None and result.details["exitCode"] == 3
    result = await bash(ctx, "true")
    assert result.content == "(no output)\n\n[exit code: 0]"
    result = await bash(ctx, "kill -TERM $$")
    assert "killed by SIGTERM" in str(result.content)
    result = await bash(ctx, "read line; echo got:$line")  # stdin is closed, not a hang
    assert "got:" in str(result.content)


async def test_streaming_order(ctx: ToolContext, recorder: Recorder) -> None:
    result = await bash(ctx, "for i in 1 2 3; do echo out$i; echo err$i >&2; sleep 0.02; done")
    streamed = "".join(recorder.output)
    assert streamed == "out1\nerr1\nout2\nerr2\nout3\nerr3\n"
    assert str(result.content).startswith(streamed.rstrip("\n"))


async def test_output_streams_before_exit(ctx: ToolContext, recorder: Recorder) -> None:
    seen_before_exit: list[str] = []

    async def watch() -> None:
        while not recorder.output:
            await anyio.sleep(0.01)
        seen_before_exit.append("".join(recorder.output))

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        await bash(ctx, "echo first; sleep 0.5; echo second")
    assert seen_before_exit == ["first\n"]


async def test_huge_output_is_capped(ctx: ToolContext) -> None:
    result = await bash(ctx, "seq 1 200000; echo THE-END")
    text = str(result.content)
    assert len(text) < 31_000
    assert text.startswith("1\n2\n3\n")
    assert "THE-END" in text and "[truncated " in text and "characters]" in text
    assert result.details is not None and result.details["truncated"] is True
    assert result.details["outputChars"] > 1_000_000


async def test_timeout_kills_the_group(ctx: ToolContext, recorder: Recorder) -> None:
    result = await bash(ctx, "echo $$; sleep 1000 & sleep 1000", timeout=0.5)
    assert result.is_error
    assert "timed out after 0.5 s" in str(result.content)
    pgid = int("".join(recorder.output).split()[0])
    assert _pids_in_group(pgid) == []


async def test_abort_kills_children_and_grandchildren(ctx: ToolContext, recorder: Recorder) -> None:
    """Cancelling the calling scope kills every process of the group, even a TERM-ignorer."""
    command = (
        "echo $$; "
        "sleep 1000 & "  # a background grandchild
        "bash -c 'trap \"\" TERM; sleep 1000; :' & "  # a nested bash ignoring SIGTERM
        "bash -c 'sleep 1000; :' & "
        "echo ready; wait"
    )
    pgid: int | None = None
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:

            async def abort_when_ready() -> None:
                nonlocal pgid
                while "ready" not in "".join(recorder.output):
                    await anyio.sleep(0.01)
                pgid = int("".join(recorder.output).split()[0])
                while len(_pids_in_group(pgid)) < 5:  # bash, sleep, 2 nested bash, sleeps
                    await anyio.sleep(0.01)
                scope.cancel()

            tg.start_soon(abort_when_ready)
            await bash(ctx, command)
    assert scope.cancel_called
    assert pgid is not None
    assert _pids_in_group(pgid) == []  # nothing alive the moment the tool returns


async def test_background_process_does_not_block_completion(
    ctx: ToolContext, recorder: Recorder
) -> None:
    with anyio.fail_after(10):
        result = await bash(ctx, "sleep 30 & echo $!; echo started")
    assert "started" in str(result.content) and "[exit code: 0]" in str(result.content)
    # The background job was left running (as in a terminal); clean it up ourselves.
    pid = int(str(result.content).split()[0])
    os.kill(pid, signal.SIGKILL)


async def test_bad_working_directory(workdir: Path, recorder: Recorder) -> None:
    ctx = ToolContext("s", workdir / "missing", "t", record=recorder.record)
    result = await bash(ctx, "echo hi")
    assert result.is_error and "Cannot run the command" in str(result.content)


async def test_a_nul_byte_in_the_command_is_refused_clearly(ctx: ToolContext) -> None:
    result = await bash(ctx, "echo a\x00b")
    assert result.is_error and "NUL byte" in str(result.content)
    assert "failed:" not in str(result.content)
