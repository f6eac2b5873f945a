"""Bash: run a shell command in the working directory, as the root of a process tree.

Output (stdout and stderr interleaved, as a terminal shows them) is streamed to
``ctx.on_output`` as it comes and kept capped (head + tail with a truncation marker).
On timeout or cancellation (an abort) every process the command started -- including
ones that ignore SIGTERM or left the group with ``setsid`` -- gets SIGTERM, then SIGKILL
after :data:`KILL_GRACE` seconds, and the tool returns once none is left
(:meth:`ProcessTree.kill <tron_server.tools._proctree.ProcessTree.kill>`).

A command that exits non-zero is NOT a tool error: its output and exit code are
information for the model (``is_error`` is False, the exit code is in the text and in
``details["exitCode"]``). A timeout, or a command that cannot be started, is an error.
Background processes the command leaves running (``server &``) survive a normal
completion, as in a terminal; reading stops shortly after the shell exits even if they
keep the output pipe open.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import signal
import time
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from ..workspace.recorder import FileRecorder
from ._proctree import KILL_GRACE, ProcessTree
from ._text import MAX_OUTPUT_CHARS, HeadTailBuffer
from .base import Tool, ToolContext, ToolResult

DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 600.0
DRAIN_AFTER_EXIT = 0.5  # seconds to wait for EOF once the shell itself has exited

# Keep tools that page or prompt from waiting for a terminal that is not there.
_ENV_OVERRIDES = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "TERM": "dumb",
}


class BashParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    command: str = Field(min_length=1, description="The bash command to run.")
    timeout: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TIMEOUT,
        description=f"Timeout in seconds (default {DEFAULT_TIMEOUT:g}, at most {MAX_TIMEOUT:g}).",
    )
    description: str | None = Field(
        default=None, description="A few words saying what the command does (for the user)."
    )


class _Output:
    """Decodes streamed bytes, forwards text to the callback, keeps a capped copy."""

    def __init__(self, ctx: ToolContext) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._ctx = ctx
        self.buffer = HeadTailBuffer(MAX_OUTPUT_CHARS)

    def feed(self, data: bytes, final: bool = False) -> None:
        text = self._decoder.decode(data, final)
        if text:
            self.buffer.append(text)
            # A broken listener must not break the command.
            with contextlib.suppress(Exception):
                self._ctx.on_output(text)


async def _pump(stream: asyncio.StreamReader, out: _Output) -> None:
    with contextlib.suppress(OSError):
        while chunk := await stream.read(65536):
            out.feed(chunk)
    out.feed(b"", final=True)


def _exit_text(code: int | None) -> str:
    if code is None:
        return "unknown"
    if code < 0:
        try:
            return f"{code} (killed by {signal.Signals(-code).name})"
        except ValueError:
            return f"{code} (killed by signal {-code})"
    return str(code)


class Bash(Tool[BashParams]):
    """Run a bash command; output streamed and capped; its whole tree killed on abort."""

    name = "Bash"
    description = (
        "Run a bash command in the session's working directory. stdout and stderr are "
        f"combined; output beyond {MAX_OUTPUT_CHARS} characters is cut in the middle. "
        f"Default timeout {DEFAULT_TIMEOUT:g} s (timeout parameter in seconds, at most "
        f"{MAX_TIMEOUT:g}). stdin is closed: do not run interactive commands. "
        "The exit code is reported; a non-zero exit is not an error of the tool."
    )
    Params = BashParams

    def __init__(self, files: FileRecorder | None = None) -> None:
        #: Snapshots the working directory around each command and records what it
        #: changed (``file.changes``); None: changes are not recorded.
        self.files = files

    async def run(self, params: BashParams, ctx: ToolContext) -> ToolResult:
        if "\x00" in params.command:
            return ToolResult(
                "The command contains a NUL byte (\\0), which no shell command can hold.",
                is_error=True,
            )
        if self.files is None:
            return await self._run(params, ctx)
        async with self.files.around_command(
            ctx.working_directory, ctx.record, ctx.tool_call_id
        ) as watch:
            result = await self._run(params, ctx)
        details = dict(result.details or {})
        if watch.error is not None:
            details["filesNotRecorded"] = watch.error
        else:
            details["filesChanged"] = watch.changed
        return ToolResult(result.content, result.is_error, details)

    async def _run(self, params: BashParams, ctx: ToolContext) -> ToolResult:
        timeout = params.timeout or DEFAULT_TIMEOUT
        env = {**os.environ, **_ENV_OVERRIDES}
        started = time.monotonic()
        try:
            tree = await ProcessTree.start(
                ["bash", "-c", params.command], cwd=ctx.working_directory, env=env
            )
        except (FileNotFoundError, NotADirectoryError, PermissionError) as exc:
            return ToolResult(
                f"Cannot run the command: {exc.strerror or exc} ({ctx.working_directory})",
                is_error=True,
            )
        out = _Output(ctx)
        try:
            timed_out = await self._supervise(tree, out, timeout)
        except BaseException:
            # Cancelled (abort): no process the command started may survive the tool call.
            await tree.kill(KILL_GRACE)
            tree.close()
            raise
        if timed_out:
            await tree.kill(KILL_GRACE)
        tree.close()
        duration_ms = int((time.monotonic() - started) * 1000)
        return self._result(tree.returncode, out, timed_out, timeout, duration_ms)

    @staticmethod
    async def _supervise(tree: ProcessTree, out: _Output, timeout: float) -> bool:
        """Stream output until the shell exits (then drain briefly); True on timeout."""
        assert tree.stdout is not None
        stdout = tree.stdout
        pump_done = anyio.Event()
        async with anyio.create_task_group() as tg:

            async def pump() -> None:
                try:
                    await _pump(stdout, out)
                finally:
                    pump_done.set()

            tg.start_soon(pump)
            with anyio.move_on_after(timeout) as deadline:
                await tree.wait()
            if deadline.cancelled_caught:
                tg.cancel_scope.cancel()
                return True
            # The shell is done; a background child may still hold the pipe open:
            # take what is already there, then stop reading.
            with anyio.move_on_after(DRAIN_AFTER_EXIT):
                await pump_done.wait()
            tg.cancel_scope.cancel()
        return False

    @staticmethod
    def _result(
        code: int | None, out: _Output, timed_out: bool, timeout: float, duration_ms: int
    ) -> ToolResult:
        text = out.buffer.text().rstrip("\n") or "(no output)"
        if timed_out:
            text += f"\n\n[timed out after {timeout:g} s; every process it started was killed]"
        else:
            text += f"\n\n[exit code: {_exit_text(code)}]"
        details: dict[str, Any] = {
            "exitCode": code,
            "durationMs": duration_ms,
            "truncated": out.buffer.dropped > 0,
            "outputChars": out.buffer.total,
            "timedOut": timed_out,
        }
        return ToolResult(text, is_error=timed_out, details=details)
