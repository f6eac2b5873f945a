"""User hooks: executables configured in settings.json, run like Claude Code's command hooks.

Protocol
--------
The command runs through ``/bin/sh -c`` in the session's working directory, in its own
process group, with these environment variables added: ``TRON_PROJECT_DIR`` (the working
directory; also as ``CLAUDE_PROJECT_DIR``, which Claude Code's hook commands use),
``TRON_SESSION_ID``, ``TRON_HOOK_EVENT``. It receives one JSON object on stdin, with Claude
Code's field names::

    {"hook_event_name": "PreToolUse", "session_id": "sess_…", "cwd": "/path/to/project",
     "permission_mode": "default", "transcript_path": "~/.tron/transcripts/sess_….jsonl",
     "tool_name": "Bash", "tool_input": {"command": "git push"}, "tool_use_id": "toolu_…",
     "tool_response": {...},   # PostToolUse
     "prompt": "…"}            # UserPromptSubmit

(keys that do not apply to the event are left out; ``HookContext.data`` entries are added
under their own names when they do not collide: ``source``, ``reason``, ``trigger``,
``custom_instructions``, ``stop_hook_active``, ``agent_id``, ...). Its answer:

- exit code 0 and empty stdout: allow;
- exit code 0 and plain text (anything but a JSON object): allow; for SessionStart and
  UserPromptSubmit the text is context for the model, as in Claude Code;
- exit code 0 and a JSON object on stdout:
  ``{"decision": "block", "reason": "…"}`` blocks (``"deny"`` is accepted too; for Stop and
  SubagentStop it means "do not stop yet", the reason being what to do next; for
  PostToolUse it is feedback next to the result);
  ``{"decision": "ask", "reason": "…"}`` (PreToolUse) makes the user approve the call first;
  ``{"decision": "allow"}`` (or ``"approve"``) allows, and spares the call the approval
  prompt its permission mode would ask for (deny and ask rules still apply);
  ``"tool_input": {...}`` (PreToolUse) or ``"prompt": "…"`` (UserPromptSubmit) modifies the
  input; Claude Code's ``{"hookSpecificOutput": {"permissionDecision":
  "deny"|"ask"|"allow", "permissionDecisionReason", "updatedInput", "additionalContext"}}``
  as well; ``{"continue": false, "stopReason": "…"}`` stops the agent (it wins over every
  other answer); ``"systemMessage"`` is shown to the user; ``"suppressOutput"`` is accepted
  (a hook's stdout is never shown here anyway);
- exit code 2: block, with stderr as the reason (as in Claude Code); for SessionStart and
  SessionEnd, which cannot block, stderr is shown to the user;
- any other exit code, or stdout that starts like a JSON object but is not one: the hook
  failed.

A context longer than :data:`MAX_CONTEXT_CHARS` (10,000, Claude Code's cap) is cut, with a
note saying how much was left out. A failure or a timeout (the process group is killed)
follows the hook's ``onError`` setting: ``"allow"`` by default (fail open, logged and
recorded in ``hook.completed.error``), or ``"block"``. Output beyond 1 MiB per stream is
discarded.
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
    "MAX_CONTEXT_CHARS",
    "CommandHookError",
    "capped_context",
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


#: Claude Code's cap on one hook's context (``additionalContext`` or plain stdout).
MAX_CONTEXT_CHARS = 10_000
#: Events whose hooks' plain stdout (exit 0) is context for the model, as in Claude Code.
PLAIN_TEXT_CONTEXT = frozenset({"SessionStart", "UserPromptSubmit"})
#: Events whose hooks cannot block: exit code 2 shows stderr to the user instead.
CANNOT_BLOCK = frozenset({"SessionStart", "SessionEnd"})


def capped_context(text: str) -> str:
    """``text`` cut to :data:`MAX_CONTEXT_CHARS`, with a note saying what was left out."""
    if len(text) <= MAX_CONTEXT_CHARS:
        return text
    left = len(text) - MAX_CONTEXT_CHARS
    return f"{text[:MAX_CONTEXT_CHARS]}\n[... {left} more characters of hook output cut]"


def parse_hook_output(ctx: HookContext, code: int, stdout: str, stderr: str) -> HookDecision:
    """Turn a finished command's exit code and output into a decision (see module doc)."""
    if code == 2:
        reason = stderr.strip() or "blocked by a hook (exit code 2)"
        if ctx.event in CANNOT_BLOCK:
            return HookDecision(system_message=reason)
        return HookDecision(action="block", reason=reason)
    if code != 0:
        tail = stderr.strip()[-500:]
        raise CommandHookError(f"exit code {code}" + (f": {tail}" if tail else ""))
    text = stdout.strip()
    if not text:
        return HookDecision(action="allow")
    if not (text.startswith("{") and text.endswith("}")):
        # Plain text (a JSON array or string included, as in Claude Code): context for the
        # model on the events where Claude Code adds it, else informational.
        if ctx.event in PLAIN_TEXT_CONTEXT:
            return HookDecision(context=capped_context(text))
        return HookDecision(action="allow")
    try:
        answer = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CommandHookError(
            f"stdout starts like a JSON object but is not valid JSON ({exc.msg}): {text[:200]}"
        ) from None
    if not isinstance(answer, dict):  # pragma: no cover - "{…}" that parses is an object
        raise CommandHookError(f"stdout must be a JSON object: {text[:200]}")
    return _decision_from(answer)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _decision_from(answer: dict[str, Any]) -> HookDecision:
    specific = answer.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    reason = _text(answer.get("reason"))
    message = _text(answer.get("systemMessage"))
    extra = _text(specific.get("additionalContext"))
    context = capped_context(extra) if extra is not None else None
    if answer.get("continue") is False:
        why = _text(answer.get("stopReason")) or reason
        return HookDecision(
            action="block", reason=why, stop=True, stop_reason=why, system_message=message
        )
    decision = answer.get("decision")
    permission = specific.get("permissionDecision")
    if decision in ("block", "deny") or permission == "deny":
        why = reason or _text(specific.get("permissionDecisionReason"))
        return HookDecision(action="block", reason=why, context=context, system_message=message)
    tool_input = answer.get("tool_input", specific.get("updatedInput"))
    prompt = answer.get("prompt")
    if tool_input is not None and not isinstance(tool_input, dict):
        raise CommandHookError("'tool_input' must be a JSON object")
    if prompt is not None and not isinstance(prompt, str):
        raise CommandHookError("'prompt' must be a string")
    why = reason or _text(specific.get("permissionDecisionReason"))
    if decision == "ask" or permission == "ask":
        return HookDecision(
            action="ask", reason=why, tool_input=tool_input, context=context,
            system_message=message,
        )  # fmt: skip
    approved = decision in ("allow", "approve") or permission == "allow"
    if tool_input is not None or prompt is not None:
        return HookDecision(
            action="modify", reason=reason, tool_input=tool_input, prompt=prompt,
            approved=approved, context=context, system_message=message,
        )  # fmt: skip
    return HookDecision(
        action="allow", reason=why if approved else reason, approved=approved, context=context,
        system_message=message,
    )  # fmt: skip


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


def is_project_hook(name: str) -> bool:
    """Whether the hook registered as ``name`` comes from the working directory's own
    settings (not the home's)."""
    return name.startswith("project:")


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
                session_info=True,
            )
        except ValueError as exc:
            raise HookSettingsError(f"{spec.source}: hooks.{spec.event}: {exc}") from None
