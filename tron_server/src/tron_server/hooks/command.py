"""User hooks: executables configured in settings.json, run like Claude Code's command hooks.

Protocol
--------
The command runs through ``/bin/sh -c`` in the session's working directory, in its own
process group, with these environment variables added: ``TRON_PROJECT_DIR`` (the working
directory; also as ``CLAUDE_PROJECT_DIR``, which Claude Code's hook commands use),
``TRON_SESSION_ID``, ``TRON_HOOK_EVENT``. It receives one JSON object on stdin::

    {"hook_event_name": "PreToolUse", "session_id": "sess_…", "cwd": "/path/to/project",
     "tool_name": "Bash", "tool_input": {"command": "git push"}, "tool_use_id": "toolu_…",
     "tool_response": {...},   # PostToolUse
     "prompt": "…"}            # UserPromptSubmit

(keys that do not apply to the event are left out; ``HookContext.data`` entries are added
under their own names when they do not collide). Its answer:

- exit code 0 and empty stdout (or stdout that is not JSON): allow;
- exit code 0 and a JSON object on stdout:
  ``{"decision": "block", "reason": "…"}`` blocks (``"deny"`` is accepted too);
  ``{"decision": "ask", "reason": "…"}`` (PreToolUse) makes the user approve the call first;
  ``{"decision": "allow"}`` (or ``"approve"``) allows, and spares the call the approval
  prompt its permission mode would ask for (deny and ask rules still apply);
  ``"tool_input": {...}`` (PreToolUse) or ``"prompt": "…"`` (UserPromptSubmit) modifies the
  input; Claude Code's ``{"hookSpecificOutput": {"permissionDecision":
  "deny"|"ask"|"allow", "permissionDecisionReason", "updatedInput"}}`` and
  ``{"continue": false, "stopReason": "…"}`` are understood as well;
- exit code 2: block, with stderr as the reason (as in Claude Code);
- any other exit code, or a JSON value that is not an object: the hook failed.

A failure or a timeout (the process group is killed) follows the hook's ``onError`` setting:
``"allow"`` by default (fail open, logged and recorded in ``hook.completed.error``), or
``"block"``. Output beyond 1 MiB per stream is discarded.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, Process

from .base import HookContext, HookDecision, HookEngine, HookFn
from .settings import CommandHookSpec, HookSettingsError

__all__ = [
    "CommandHookError",
    "command_hook_name",
    "hook_input",
    "make_command_hook",
    "parse_hook_output",
    "register_command_hooks",
    "run_command",
]

logger = logging.getLogger("tron_server.hooks")

MAX_OUTPUT_BYTES = 1024 * 1024


class CommandHookError(Exception):
    """A command hook exited with an unexpected code or printed an unusable answer."""


def hook_input(ctx: HookContext) -> dict[str, Any]:
    """The JSON object a command hook receives on stdin."""
    data: dict[str, Any] = {
        "hook_event_name": ctx.event,
        "session_id": ctx.session_id,
        "cwd": str(ctx.working_directory),
    }
    if ctx.tool_name is not None:
        data["tool_name"] = ctx.tool_name
    if ctx.tool_input is not None:
        data["tool_input"] = ctx.tool_input
    if ctx.tool_result is not None:
        data["tool_response"] = ctx.tool_result
    if ctx.prompt is not None:
        data["prompt"] = ctx.prompt
    tool_call_id = ctx.data.get("toolCallId")
    if isinstance(tool_call_id, str):
        data["tool_use_id"] = tool_call_id
    for key, value in ctx.data.items():
        data.setdefault(key, value)
    return data


def parse_hook_output(ctx: HookContext, code: int, stdout: str, stderr: str) -> HookDecision:
    """Turn a finished command's exit code and output into a decision (see module doc)."""
    if code == 2:
        reason = stderr.strip() or "blocked by a hook (exit code 2)"
        return HookDecision(action="block", reason=reason)
    if code != 0:
        tail = stderr.strip()[-500:]
        raise CommandHookError(f"exit code {code}" + (f": {tail}" if tail else ""))
    text = stdout.strip()
    if not text:
        return HookDecision(action="allow")
    try:
        answer = json.loads(text)
    except json.JSONDecodeError:
        # Plain text output is informational (Claude Code shows it); it is not a decision.
        return HookDecision(action="allow")
    if not isinstance(answer, dict):
        raise CommandHookError(
            f"stdout must be a JSON object, got {type(answer).__name__}: {text[:200]}"
        )
    return _decision_from(answer)


def _decision_from(answer: dict[str, Any]) -> HookDecision:
    specific = answer.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    reason = answer.get("reason")
    reason = reason if isinstance(reason, str) and reason else None
    decision = answer.get("decision")
    permission = specific.get("permissionDecision")
    if decision in ("block", "deny") or permission == "deny":
        why = reason or specific.get("permissionDecisionReason")
        return HookDecision(action="block", reason=why if isinstance(why, str) and why else None)
    if answer.get("continue") is False:
        why = answer.get("stopReason") or reason
        return HookDecision(action="block", reason=why if isinstance(why, str) and why else None)
    tool_input = answer.get("tool_input", specific.get("updatedInput"))
    prompt = answer.get("prompt")
    if tool_input is not None and not isinstance(tool_input, dict):
        raise CommandHookError("'tool_input' must be a JSON object")
    if prompt is not None and not isinstance(prompt, str):
        raise CommandHookError("'prompt' must be a string")
    why = reason or specific.get("permissionDecisionReason")
    why = why if isinstance(why, str) and why else None
    if decision == "ask" or permission == "ask":
        return HookDecision(action="ask", reason=why, tool_input=tool_input)
    approved = decision in ("allow", "approve") or permission == "allow"
    if tool_input is not None or prompt is not None:
        return HookDecision(
            action="modify", reason=reason, tool_input=tool_input, prompt=prompt, approved=approved
        )
    return HookDecision(action="allow", reason=why if approved else reason, approved=approved)


async def _read_capped(stream: ByteReceiveStream | None, sink: bytearray) -> None:
    if stream is None:
        return
    try:
        async for chunk in stream:
            room = MAX_OUTPUT_BYTES - len(sink)
            if room > 0:
                sink.extend(chunk[:room])
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        return


def _kill_group(process: Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def run_command(
    command: str, stdin: bytes, *, cwd: os.PathLike[str] | str, env: dict[str, str]
) -> tuple[int, str, str]:
    """Run ``command`` in a new process group; return (exit code, stdout, stderr).

    Cancellation (a hook timeout or an abort) kills the whole process group before
    propagating, so no child survives the hook.
    """
    process = await anyio.open_process(
        ["/bin/sh", "-c", command],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env,
        start_new_session=True,
    )
    out = bytearray()
    err = bytearray()
    finished = False
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_read_capped, process.stdout, out)
            tg.start_soon(_read_capped, process.stderr, err)
            if process.stdin is not None:
                try:
                    await process.stdin.send(stdin)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    pass  # the hook did not read its input; that is its right
                finally:
                    await process.stdin.aclose()
        code = await process.wait()
        finished = True
    finally:
        if not finished:
            _kill_group(process)
        with anyio.CancelScope(shield=True):
            await process.aclose()
    return code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def make_command_hook(spec: CommandHookSpec) -> HookFn:
    """The hook function running ``spec`` (a coroutine function taking a HookContext)."""

    async def command_hook(ctx: HookContext) -> HookDecision:
        env = dict(os.environ)
        env["TRON_PROJECT_DIR"] = env["CLAUDE_PROJECT_DIR"] = str(ctx.working_directory)
        env["TRON_SESSION_ID"] = ctx.session_id
        env["TRON_HOOK_EVENT"] = ctx.event
        payload = json.dumps(hook_input(ctx), default=str).encode()
        code, stdout, stderr = await run_command(
            spec.command, payload, cwd=ctx.working_directory, env=env
        )
        return parse_hook_output(ctx, code, stdout, stderr)

    return command_hook


def command_hook_name(spec: CommandHookSpec) -> str:
    """The name recorded for a command hook: ``<scope>:<command>`` (command cut at 120)."""
    command = spec.command if len(spec.command) <= 120 else spec.command[:117] + "..."
    return f"{spec.scope}:{command}"


def register_command_hooks(engine: HookEngine, specs: tuple[CommandHookSpec, ...]) -> None:
    """Register every command hook, in file order (home first, then project)."""
    for spec in specs:
        try:
            engine.register(
                command_hook_name(spec),
                spec.event,
                make_command_hook(spec),
                matcher=spec.matcher,
                timeout=spec.timeout,
                on_error=spec.on_error,
            )
        except ValueError as exc:
            raise HookSettingsError(f"{spec.source}: hooks.{spec.event}: {exc}") from None
