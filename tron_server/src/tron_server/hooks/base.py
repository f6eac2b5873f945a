"""The hook engine: a priority-ordered registry, blocking runs and tracked background runs.

Events
------
Blocking events (``BLOCKING_EVENTS``: PreToolUse, UserPromptSubmit, PreCompact) run their
hooks one after another, highest ``priority`` first (registration order breaks ties):

- ``allow`` (or ``None``) — go on to the next hook;
- ``block`` — stop at once; the returned decision carries the reason (for PreToolUse the
  runtime hands that reason to the model as the tool result);
- ``modify`` — the next hook sees the modified ``tool_input`` (PreToolUse) or ``prompt``
  (UserPromptSubmit); the final decision is ``modify`` with the last values;
- ``ask`` (PreToolUse) — the user must approve the call (the permission gate of
  :mod:`tron_server.interaction` asks); later hooks still run and may block; the final
  decision is ``ask`` (with the modified input, if any). A decision with ``approved`` set
  (an explicit allow: Claude Code's ``permissionDecision: "allow"``) lets the call skip the
  approval prompt its mode would ask for; an ``ask`` from any hook wins over it.

Background events (PostToolUse, SessionStart, SessionEnd, Stop, SubagentStop) are fired and
forgotten: :meth:`HookEngine.fire_background` schedules one task per call (its hooks run in
priority order inside it), the engine keeps a reference to every pending task, and
:meth:`HookEngine.drain` awaits them at shutdown. Background hooks always fail open: an
exception or a timeout is logged and recorded, and nothing else happens.

Matchers
--------
``matcher`` selects hooks by tool name, like Claude Code's settings: ``None``, ``""`` or
``"*"`` match every tool; a string made only of name characters and ``|`` is a list of exact
names (``"Write|Edit"``); anything else is a regular expression that must match the whole
tool name (``"mcp__.*"``). As in Claude Code, SessionStart's matcher selects its
``source`` (``"startup"``, ``"resume"``) and PreCompact's its ``trigger`` (``"manual"``,
``"auto"``); the other events without a tool name (UserPromptSubmit, Stop, ...) ignore the
matcher.

Failures
--------
A blocking hook that raises or exceeds its ``timeout`` is handled by its ``on_error`` policy:
``"block"`` (the default for hooks registered in code, guardrails included: a broken guardrail
must not silently allow) turns the failure into a block whose reason names the hook and the
error; ``"allow"`` (the default for user command hooks from settings.json, as in Claude Code)
logs a warning, records the error in ``hook.completed`` and carries on. Cancellation of the
calling task (an abort) is never swallowed.

Recording
---------
Every hook run is reported through the ``record`` callback as ``(session_id, event_type,
payload)``: ``hook.triggered`` ``{hookName, hookEvent, toolName?, toolCallId?}`` before the
hook runs and ``hook.completed`` ``{hookName, hookEvent, action, reason?, durationMs, error?,
toolName?, toolCallId?}`` after it (``action`` is allow/block/modify, or the action a failure
turned into). Both have typed payload models in ``tron_events.payloads`` (``HookTriggered``,
``HookCompleted``).
``toolCallId`` comes from ``HookContext.data["toolCallId"]`` when the caller sets it. A failing
``record`` is logged and does not affect the hook's outcome (a SessionEnd hook may run after the
session stopped taking appends).
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import anyio

__all__ = [
    "BACKGROUND_EVENTS",
    "BLOCKING_EVENTS",
    "HOOK_EVENTS",
    "HookContext",
    "HookDecision",
    "HookEngine",
    "HookEvent",
    "HookFn",
    "OnError",
    "RecordFn",
    "compile_matcher",
]

logger = logging.getLogger("tron_server.hooks")

HookEvent = Literal[
    "PreToolUse",
    "PostToolUse",
    "UserPromptSubmit",
    "PreCompact",
    "SessionStart",
    "SessionEnd",
    "Stop",
    "SubagentStop",
]
HOOK_EVENTS: frozenset[str] = frozenset(
    {
        "PreToolUse",
        "PostToolUse",
        "UserPromptSubmit",
        "PreCompact",
        "SessionStart",
        "SessionEnd",
        "Stop",
        "SubagentStop",
    }
)
BLOCKING_EVENTS: frozenset[str] = frozenset({"PreToolUse", "UserPromptSubmit", "PreCompact"})
BACKGROUND_EVENTS: frozenset[str] = HOOK_EVENTS - BLOCKING_EVENTS

OnError = Literal["block", "allow"]


@dataclass(frozen=True)
class HookContext:
    """What a hook sees. ``data`` carries extras (e.g. ``toolCallId``, ``trigger``)."""

    event: HookEvent
    session_id: str
    working_directory: Path
    tool_name: str | None = None
    tool_input: dict[str, Any] | None = None
    tool_result: dict[str, Any] | None = None
    prompt: str | None = None
    data: dict[str, Any] = field(default_factory=dict)


#: What a matcher selects for events without a tool: the key of ``HookContext.data``.
_MATCHED_KEY = {"SessionStart": "source", "PreCompact": "trigger"}


def _subject(ctx: HookContext) -> str | None:
    """What the hooks' matchers test for ``ctx``: the tool name, SessionStart's source,
    PreCompact's trigger; None (every hook) for the other events."""
    if ctx.tool_name is not None:
        return ctx.tool_name
    key = _MATCHED_KEY.get(ctx.event)
    value = ctx.data.get(key) if key is not None else None
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class HookDecision:
    """A hook's answer. ``None`` from a hook means allow."""

    action: Literal["allow", "block", "modify", "ask"] = "allow"
    reason: str | None = None
    tool_input: dict[str, Any] | None = None  # for modify and ask (PreToolUse)
    prompt: str | None = None  # for modify (UserPromptSubmit)
    approved: bool = False  # an explicit allow: no approval prompt (PreToolUse)


HookFn = Callable[[HookContext], Awaitable[HookDecision | None]]
RecordFn = Callable[[str, str, dict[str, Any]], Awaitable[None]]

_NAME_LIST = re.compile(r"^[A-Za-z0-9_\-.:]+(\|[A-Za-z0-9_\-.:]+)*$")


def compile_matcher(matcher: str | None) -> Callable[[str], bool]:
    """Turn a matcher string into a predicate on tool names (see the module docstring).

    Raises ``ValueError`` for an invalid regular expression, so a bad settings file is
    reported when the hook is registered rather than silently never matching.
    """
    if matcher is None or matcher.strip() in ("", "*"):
        return lambda _name: True
    text = matcher.strip()
    if _NAME_LIST.match(text) and "." not in text:
        names = frozenset(part for part in text.split("|"))
        return lambda name: name in names
    try:
        pattern = re.compile(text)
    except re.error as exc:
        raise ValueError(f"invalid hook matcher {matcher!r}: {exc}") from None
    return lambda name: pattern.fullmatch(name) is not None


@dataclass(frozen=True)
class _Hook:
    name: str
    event: HookEvent
    fn: HookFn
    priority: int
    matcher: str | None
    matches: Callable[[str], bool]
    timeout: float
    on_error: OnError
    order: int


class _HookFailure(Exception):
    """A hook raised or timed out; ``message`` is what gets recorded."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class HookEngine:
    """Registry + runner for hooks. One engine serves many sessions."""

    def __init__(self, record: RecordFn | None = None) -> None:
        self._record = record
        self._hooks: list[_Hook] = []
        self._counter = 0
        self._pending: set[asyncio.Task[None]] = set()

    @property
    def has_recorder(self) -> bool:
        """Whether hook runs are recorded."""
        return self._record is not None

    def set_recorder(self, record: RecordFn | None) -> None:
        """Record hook runs through ``record`` (the runtime passes its session writer, so
        hook events never move a session's head under a running turn)."""
        self._record = record

    # -- registry ---------------------------------------------------------------------

    def register(
        self,
        name: str,
        event: HookEvent,
        fn: HookFn,
        *,
        priority: int = 0,
        matcher: str | None = None,
        timeout: float = 30.0,
        on_error: OnError = "block",
    ) -> None:
        """Add a hook. Higher ``priority`` runs first; ties run in registration order.

        ``on_error`` only matters for blocking events: ``"block"`` (fail closed) or
        ``"allow"`` (fail open with a logged warning). Background hooks always fail open.
        """
        if event not in HOOK_EVENTS:
            raise ValueError(f"unknown hook event {event!r}; expected one of {sorted(HOOK_EVENTS)}")
        if timeout <= 0:
            raise ValueError(f"hook {name!r}: timeout must be positive, got {timeout}")
        self._counter += 1
        self._hooks.append(
            _Hook(
                name=name,
                event=event,
                fn=fn,
                priority=priority,
                matcher=matcher,
                matches=compile_matcher(matcher),
                timeout=timeout,
                on_error=on_error,
                order=self._counter,
            )
        )

    def unregister(self, name: str) -> bool:
        """Remove every hook called ``name``; return whether any was registered."""
        before = len(self._hooks)
        self._hooks = [h for h in self._hooks if h.name != name]
        return len(self._hooks) != before

    def get(self, name: str) -> HookFn | None:
        """The function of the first hook registered as ``name``, or None."""
        return next((h.fn for h in self._hooks if h.name == name), None)

    def hooks_for(self, event: HookEvent, tool_name: str | None = None) -> list[str]:
        """Names of the hooks that would run for ``event`` (and tool), in run order."""
        return [h.name for h in self._select(event, tool_name)]

    def describe(self) -> list[dict[str, Any]]:
        """Registered hooks as plain dicts (for clients that show them)."""
        return [
            {
                "name": h.name,
                "event": h.event,
                "priority": h.priority,
                "matcher": h.matcher,
                "timeout": h.timeout,
                "onError": h.on_error,
            }
            for h in sorted(self._hooks, key=lambda h: (h.event, -h.priority, h.order))
        ]

    def _select(self, event: HookEvent, tool_name: str | None) -> list[_Hook]:
        chosen = [
            h
            for h in self._hooks
            if h.event == event and (tool_name is None or h.matches(tool_name))
        ]
        chosen.sort(key=lambda h: (-h.priority, h.order))
        return chosen

    # -- blocking ---------------------------------------------------------------------

    async def run_blocking(self, ctx: HookContext) -> HookDecision:
        """Run the hooks of a blocking event; first block wins, modifications chain."""
        if ctx.event not in BLOCKING_EVENTS:
            raise ValueError(f"{ctx.event} is not a blocking event; use fire_background")
        current = ctx
        modified = False
        reasons: list[str] = []
        ask_reason: str | None = None
        asked = approved = False
        for hook in self._select(ctx.event, _subject(ctx)):
            decision = await self._run_one(hook, current, fail_closed=hook.on_error == "block")
            if decision.action == "block":
                return HookDecision(
                    action="block", reason=decision.reason or f"blocked by hook {hook.name}"
                )
            approved = approved or decision.approved
            if decision.action == "ask":
                asked = True
                ask_reason = ask_reason or decision.reason or f"hook {hook.name} asks"
                if decision.tool_input is not None:
                    current = replace(current, tool_input=dict(decision.tool_input))
                    modified = True
            elif decision.action == "modify":
                changed = False
                if decision.tool_input is not None:
                    current = replace(current, tool_input=dict(decision.tool_input))
                    changed = True
                if decision.prompt is not None:
                    current = replace(current, prompt=decision.prompt)
                    changed = True
                if changed:
                    modified = True
                    if decision.reason:
                        reasons.append(decision.reason)
        if asked:
            return HookDecision(
                action="ask",
                reason=ask_reason,
                tool_input=current.tool_input if modified else None,
            )
        if not modified:
            return HookDecision(action="allow", approved=approved)
        return HookDecision(
            approved=approved,
            action="modify",
            reason="; ".join(reasons) or None,
            tool_input=current.tool_input,
            prompt=current.prompt,
        )

    # -- background -------------------------------------------------------------------

    def fire_background(self, ctx: HookContext) -> None:
        """Schedule the hooks of a background event; returns at once (needs a running loop)."""
        if ctx.event not in BACKGROUND_EVENTS:
            raise ValueError(f"{ctx.event} is a blocking event; use run_blocking")
        hooks = self._select(ctx.event, _subject(ctx))
        if not hooks:
            return
        task = asyncio.get_running_loop().create_task(
            self._run_background(hooks, ctx), name=f"hooks:{ctx.event}:{ctx.session_id}"
        )
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def run_background_now(self, ctx: HookContext) -> None:
        """Run the hooks of a background event to their end before returning (still
        fail-open: a failure is logged and recorded, never raised). For events whose
        records must land before something else happens (SessionEnd runs before the
        session stops taking appends)."""
        if ctx.event not in BACKGROUND_EVENTS:
            raise ValueError(f"{ctx.event} is a blocking event; use run_blocking")
        hooks = self._select(ctx.event, _subject(ctx))
        if hooks:
            await self._run_background(hooks, ctx)

    async def settle(self, session_id: str, timeout: float = 10.0) -> None:
        """Wait (at most ``timeout``) for the background runs of one session to finish,
        e.g. before the session stops taking appends; nothing is cancelled."""
        suffix = f":{session_id}"
        pending = {t for t in self._pending if t.get_name().endswith(suffix) and not t.done()}
        if pending:
            await asyncio.wait(pending, timeout=timeout)

    @property
    def pending_count(self) -> int:
        """How many background runs have not finished yet."""
        return sum(1 for t in self._pending if not t.done())

    async def drain(self, timeout: float = 10.0) -> None:
        """Await pending background hooks; cancel what is still running after ``timeout``."""
        deadline = time.monotonic() + timeout
        while self._pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            await asyncio.wait(set(self._pending), timeout=remaining)
        leftovers = [t for t in self._pending if not t.done()]
        for task in leftovers:
            logger.warning("background hook run %s still running at shutdown; cancelling", task)
            task.cancel()
        if leftovers:
            # Let the cancelled runs kill their processes and record what happened.
            await asyncio.wait(leftovers, timeout=2.0)

    async def _run_background(self, hooks: list[_Hook], ctx: HookContext) -> None:
        for hook in hooks:
            try:
                await self._run_one(hook, ctx, fail_closed=False)
            except Exception:  # pragma: no cover - _run_one already turns failures into allow
                logger.exception("background hook %s failed", hook.name)

    # -- one hook ---------------------------------------------------------------------

    async def _run_one(self, hook: _Hook, ctx: HookContext, *, fail_closed: bool) -> HookDecision:
        base: dict[str, Any] = {"hookName": hook.name, "hookEvent": ctx.event}
        if ctx.tool_name is not None:
            base["toolName"] = ctx.tool_name
        tool_call_id = ctx.data.get("toolCallId")
        if isinstance(tool_call_id, str):
            base["toolCallId"] = tool_call_id
        await self._emit(ctx.session_id, "hook.triggered", dict(base))
        started = time.monotonic()
        error: str | None = None
        try:
            decision = await self._invoke(hook, ctx)
        except _HookFailure as failure:
            error = failure.message
            if fail_closed:
                decision = HookDecision(
                    action="block",
                    reason=f"hook {hook.name!r} failed ({error}); the action was blocked "
                    "because this hook fails closed",
                )
            else:
                logger.warning("hook %s (%s) failed open: %s", hook.name, ctx.event, error)
                decision = HookDecision(action="allow")
        finally:
            duration_ms = int((time.monotonic() - started) * 1000)
        completed = dict(base)
        completed["action"] = decision.action
        if decision.reason:
            completed["reason"] = decision.reason
        completed["durationMs"] = duration_ms
        if error is not None:
            completed["error"] = error
        await self._emit(ctx.session_id, "hook.completed", completed)
        return decision

    async def _invoke(self, hook: _Hook, ctx: HookContext) -> HookDecision:
        try:
            with anyio.fail_after(hook.timeout):
                result = await hook.fn(ctx)
        except TimeoutError:
            raise _HookFailure(f"timed out after {hook.timeout:g}s") from None
        except Exception as exc:
            raise _HookFailure(f"{type(exc).__name__}: {exc}") from exc
        if result is None:
            return HookDecision(action="allow")
        if not isinstance(result, HookDecision):
            raise _HookFailure(f"returned {type(result).__name__}, expected HookDecision or None")
        if result.action not in ("allow", "block", "modify", "ask"):
            raise _HookFailure(f"returned an unknown action {result.action!r}")
        return result

    async def _emit(self, session_id: str, event_type: str, payload: dict[str, Any]) -> None:
        if self._record is None:
            return
        try:
            await self._record(session_id, event_type, payload)
        except Exception as exc:
            logger.warning("could not record %s for session %s: %s", event_type, session_id, exc)
