"""The hook engine: a priority-ordered registry, gate runs, notice runs and tracked
background runs.

Events
------
Gate events (``BLOCKING_EVENTS``: PreToolUse, UserPromptSubmit, PreCompact) run their
hooks one after another with :meth:`HookEngine.run_blocking`, highest ``priority`` first
(registration order breaks ties):

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

Notice events (``BACKGROUND_EVENTS``: PostToolUse, SessionStart, SessionEnd, Stop,
SubagentStop, Notification) cannot refuse what already happened: every matching hook runs,
failures fail open, and the answers are merged (:meth:`HookEngine.run_now`): ``block`` from any hook
gives a ``block`` with every such hook's reason (for Stop / SubagentStop: the agent goes
on, with the reasons as its next input; for PostToolUse: feedback next to the result).
The runtime awaits them where their answer matters (Claude Code runs them synchronously
too); :meth:`HookEngine.fire_background` schedules them instead (one task per call, an
optional callback gets the merged answer), the engine keeps a reference to every pending
task, and :meth:`HookEngine.drain` awaits them at shutdown.

Whatever the event, a decision may also carry ``context`` (text for the model: Claude
Code's ``additionalContext``, or the plain stdout of a SessionStart / UserPromptSubmit
hook; the contexts of several hooks are joined in run order), ``stop`` (``{"continue":
false}``: the agent's run ends after this hook; it wins over every other answer) and
``system_message`` (shown to the user). The engine hands ``system_message`` and the
``stop_reason`` of a stop to its notifier (:meth:`HookEngine.set_notifier`); the caller acts
on ``context`` and ``stop``.

Matchers
--------
``matcher`` selects hooks like Claude Code's settings: ``None``, ``""`` or ``"*"`` match
everything; a string made only of letters, digits, ``_``, ``-``, spaces, ``,`` and ``|`` is a
list of exact names (``"Write|Edit"``, ``"Write, Edit"``); anything else is a regular
expression searched in the name, unanchored as Claude Code's (``"mcp__.*"``,
``"Notebook.*"``; write ``"^Edit$"`` for a whole-name match). What is matched: the tool name
for PreToolUse and PostToolUse (Claude Code's ``Agent`` and ``AskUserQuestion`` name our
``Task`` and ``AskUser`` and the other way round: :data:`TOOL_ALIASES`), the ``source`` for
SessionStart (``startup``, ``resume``), the ``trigger`` for PreCompact (``manual``, ``auto``),
the ``reason`` for SessionEnd, the ``agent_type`` for SubagentStop and the
``notification_type`` for Notification (``permission_prompt``: an approval waits for the
user; ``elicitation_dialog``: a question does; ``notify``: the agent's Notify tool).
UserPromptSubmit and Stop have no matcher: theirs is ignored, as in Claude Code.

Failures
--------
A gate hook that raises or exceeds its ``timeout`` is handled by its ``on_error`` policy:
``"block"`` (the default for hooks registered in code, guardrails included: a broken guardrail
must not silently allow) turns the failure into a block whose reason names the hook and the
error; ``"allow"`` (the default for user command hooks from settings.json, as in Claude Code)
logs a warning, records the error in ``hook.completed`` and carries on. Notice hooks always
fail open. Cancellation of the calling task (an abort) is never swallowed.

Session information
-------------------
Hooks registered with ``session_info=True`` (the user's command hooks) get the fields Claude
Code gives every hook: the engine asks its session-info provider
(:meth:`HookEngine.set_session_info`; the runtime's gives ``permission_mode``,
``transcript_path``, and in a sub-agent ``agent_id`` / ``agent_type``) once per run of an
event and adds them to ``HookContext.data``. Hooks in code (the guardrails) do not need them,
so nothing is computed for them.

Recording
---------
Every hook run is reported through the ``record`` callback as ``(session_id, event_type,
payload)``: ``hook.triggered`` ``{hookName, hookEvent, toolName?, toolCallId?}`` before the
hook runs and ``hook.completed`` ``{hookName, hookEvent, action, reason?, durationMs, error?,
toolName?, toolCallId?, stop?, stopReason?, systemMessage?, contextChars?}`` after it
(``action`` is allow/block/modify/ask, or the action a failure turned into). Both have typed
payload models in ``tron_events.payloads`` (``HookTriggered``, ``HookCompleted``).
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
    "TOOL_ALIASES",
    "HookContext",
    "HookDecision",
    "HookEngine",
    "HookEvent",
    "HookFn",
    "NotifyFn",
    "OnError",
    "RecordFn",
    "SessionInfoFn",
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
    "Notification",
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
        "Notification",
    }
)
#: Gate events: run with :meth:`HookEngine.run_blocking` (the first block wins).
BLOCKING_EVENTS: frozenset[str] = frozenset({"PreToolUse", "UserPromptSubmit", "PreCompact"})
#: Notice events: every hook runs, fail open, answers merged (:meth:`HookEngine.run_now`).
BACKGROUND_EVENTS: frozenset[str] = HOOK_EVENTS - BLOCKING_EVENTS

#: Tool names that are one tool under two names: Claude Code's ``Agent`` (formerly ``Task``)
#: and ``AskUserQuestion`` are our ``Task`` and ``AskUser``; a matcher naming either matches.
TOOL_ALIASES: dict[str, tuple[str, ...]] = {
    "Task": ("Agent",),
    "Agent": ("Task",),
    "AskUser": ("AskUserQuestion",),
    "AskUserQuestion": ("AskUser",),
}

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
_MATCHED_KEY = {
    "SessionStart": "source",
    "PreCompact": "trigger",
    "SessionEnd": "reason",
    "SubagentStop": "agent_type",
    "Notification": "notification_type",
}


def _subject(ctx: HookContext) -> str | None:
    """What the hooks' matchers test for ``ctx``: the tool name, SessionStart's source,
    PreCompact's trigger, SessionEnd's reason, SubagentStop's agent type; None (every hook)
    for the other events."""
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
    #: Text for the model (``additionalContext``; plain stdout where Claude Code adds it).
    context: str | None = None
    #: ``{"continue": false}``: the agent's run ends after this hook.
    stop: bool = False
    stop_reason: str | None = None
    #: Shown to the user (a notification), never to the model.
    system_message: str | None = None


HookFn = Callable[[HookContext], Awaitable[HookDecision | None]]
RecordFn = Callable[[str, str, dict[str, Any]], Awaitable[None]]
DeferFn = Callable[[str, str, dict[str, Any]], bool]
"""``(session_id, event_type, payload)``: record with the session's next commit; False when
that cannot be done (no run owns the session), and it is recorded now instead."""
SessionInfoFn = Callable[[HookContext], Awaitable[dict[str, Any]]]
"""The fields every command hook gets for a session (``permission_mode``, ...)."""
NotifyFn = Callable[[str, str, str, str], Awaitable[None]]
"""``(session_id, hook name, hook event, message)``: tell the user (``systemMessage``)."""

_NAME_LIST = re.compile(r"^[A-Za-z0-9_\- ,|]+$")


def compile_matcher(matcher: str | None) -> Callable[[str], bool]:
    """Turn a matcher string into a predicate on names (see the module docstring).

    Raises ``ValueError`` for an invalid regular expression, so a bad settings file is
    reported when the hook is registered rather than silently never matching.
    """
    if matcher is None or matcher.strip() in ("", "*"):
        return lambda _name: True
    text = matcher.strip()
    if _NAME_LIST.match(text):
        names = frozenset(p.strip() for p in re.split(r"[|,]", text) if p.strip())
        return lambda name: name in names
    try:
        pattern = re.compile(text)
    except re.error as exc:
        raise ValueError(f"invalid hook matcher {matcher!r}: {exc}") from None
    # Unanchored, as Claude Code's RegExp.test: "rit." matches Write.
    return lambda name: pattern.search(name) is not None


def _joined(parts: list[str]) -> str | None:
    return "\n\n".join(parts) if parts else None


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
    session_info: bool

    def selects(self, subject: str) -> bool:
        return self.matches(subject) or any(self.matches(a) for a in TOOL_ALIASES.get(subject, ()))


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
        self._session_info: SessionInfoFn | None = None
        self._notify: NotifyFn | None = None
        self._defer: DeferFn | None = None

    @property
    def has_recorder(self) -> bool:
        """Whether hook runs are recorded."""
        return self._record is not None

    def set_recorder(self, record: RecordFn | None) -> None:
        """Record hook runs through ``record`` (the runtime passes its session writer, so
        hook events never move a session's head under a running turn)."""
        self._record = record

    def set_deferral(self, defer: DeferFn | None) -> None:
        """Let the records of hooks in code (in-process, quick: no process to watch) wait
        for the session's next commit instead of making two of their own."""
        self._defer = defer

    def set_session_info(self, info: SessionInfoFn | None) -> None:
        """Where hooks registered with ``session_info=True`` get their session's fields."""
        self._session_info = info

    def set_notifier(self, notify: NotifyFn | None) -> None:
        """Where a hook's ``systemMessage`` (and a stop's ``stopReason``) go: the user."""
        self._notify = notify

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
        session_info: bool = False,
    ) -> None:
        """Add a hook. Higher ``priority`` runs first; ties run in registration order.

        ``on_error`` only matters for gate events: ``"block"`` (fail closed) or
        ``"allow"`` (fail open with a logged warning). Notice hooks always fail open.
        ``session_info``: the hook's context gets the session's fields (see the module
        docstring).
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
                session_info=session_info,
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

    def _select(self, event: HookEvent, subject: str | None) -> list[_Hook]:
        chosen = [
            h for h in self._hooks if h.event == event and (subject is None or h.selects(subject))
        ]
        chosen.sort(key=lambda h: (-h.priority, h.order))
        return chosen

    async def _with_session_info(self, ctx: HookContext, hooks: list[_Hook]) -> HookContext:
        """``ctx`` with the session's fields added (once per run of an event), when a hook
        that wants them is about to run."""
        if self._session_info is None or not any(h.session_info for h in hooks):
            return ctx
        try:
            info = await self._session_info(ctx)
        except Exception as exc:  # the hooks still run, without the fields
            logger.warning("session fields for %s hooks unavailable: %s", ctx.event, exc)
            return ctx
        data = {**info, **ctx.data}  # what the caller set explicitly wins
        return replace(ctx, data=data)

    # -- gates ------------------------------------------------------------------------

    async def run_blocking(self, ctx: HookContext) -> HookDecision:
        """Run the hooks of a gate event; first block wins, modifications chain."""
        if ctx.event not in BLOCKING_EVENTS:
            raise ValueError(f"{ctx.event} is not a blocking event; use run_now")
        hooks = self._select(ctx.event, _subject(ctx))
        current = await self._with_session_info(ctx, hooks)
        modified = False
        reasons: list[str] = []
        contexts: list[str] = []
        ask_reason: str | None = None
        asked = approved = False
        for hook in hooks:
            decision = await self._run_one(hook, current, fail_closed=hook.on_error == "block")
            if decision.stop:
                why = decision.stop_reason or decision.reason or f"stopped by hook {hook.name}"
                return HookDecision(
                    action="block", reason=decision.reason or why, stop=True, stop_reason=why
                )
            if decision.action == "block":
                return HookDecision(
                    action="block", reason=decision.reason or f"blocked by hook {hook.name}"
                )
            if decision.context:
                contexts.append(decision.context)
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
        context = _joined(contexts)
        if asked:
            return HookDecision(
                action="ask",
                reason=ask_reason,
                tool_input=current.tool_input if modified else None,
                context=context,
            )
        if not modified:
            return HookDecision(action="allow", approved=approved, context=context)
        return HookDecision(
            approved=approved,
            action="modify",
            reason="; ".join(reasons) or None,
            tool_input=current.tool_input,
            prompt=current.prompt,
            context=context,
        )

    # -- notices ----------------------------------------------------------------------

    async def run_now(
        self, ctx: HookContext, *, only: Callable[[str], bool] | None = None
    ) -> HookDecision:
        """Run every hook of a notice event (in run order, fail open) and merge their
        answers: ``block`` if any blocked (the reasons joined), the contexts joined,
        ``stop`` if any asked to stop. ``only``: run just the hooks whose name it accepts."""
        if ctx.event not in BACKGROUND_EVENTS:
            raise ValueError(f"{ctx.event} is a blocking event; use run_blocking")
        hooks = [h for h in self._select(ctx.event, _subject(ctx)) if only is None or only(h.name)]
        if not hooks:
            return HookDecision()
        ctx = await self._with_session_info(ctx, hooks)
        decisions = [await self._run_one(hook, ctx, fail_closed=False) for hook in hooks]
        blocked = [d.reason or "a hook asked to go on" for d in decisions if d.action == "block"]
        stops = [d for d in decisions if d.stop]
        return HookDecision(
            action="block" if blocked else "allow",
            reason=_joined(blocked),
            context=_joined([d.context for d in decisions if d.context]),
            stop=bool(stops),
            stop_reason=next((d.stop_reason for d in stops if d.stop_reason), None),
        )

    async def run_background_now(self, ctx: HookContext) -> HookDecision:
        """The same as :meth:`run_now` (its former name)."""
        return await self.run_now(ctx)

    def fire_background(
        self,
        ctx: HookContext,
        on_done: Callable[[HookDecision], Awaitable[None]] | None = None,
    ) -> None:
        """Schedule :meth:`run_now` for a notice event; returns at once (needs a running
        loop). ``on_done`` gets the merged answer (its failure is logged)."""
        if ctx.event not in BACKGROUND_EVENTS:
            raise ValueError(f"{ctx.event} is a blocking event; use run_blocking")
        if not self._select(ctx.event, _subject(ctx)):
            return
        task = asyncio.get_running_loop().create_task(
            self._run_background(ctx, on_done), name=f"hooks:{ctx.event}:{ctx.session_id}"
        )
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    def pending_for(self, session_id: str) -> int:
        """How many background runs of one session have not finished yet (what
        :meth:`settle` waits for)."""
        suffix = f":{session_id}"
        return sum(1 for t in self._pending if t.get_name().endswith(suffix) and not t.done())

    async def settle(self, session_id: str, timeout: float | None = 10.0) -> None:
        """Wait (at most ``timeout``; None: until done) for the background runs of one
        session to finish, e.g. before the session stops taking appends; nothing is
        cancelled."""
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

    async def _run_background(
        self, ctx: HookContext, on_done: Callable[[HookDecision], Awaitable[None]] | None
    ) -> None:
        try:
            decision = await self.run_now(ctx)
            if on_done is not None:
                await on_done(decision)
        except Exception:  # run_now fails open; this is the callback (or a bug)
            logger.exception("background %s hooks of %s failed", ctx.event, ctx.session_id)

    # -- one hook ---------------------------------------------------------------------

    async def _run_one(self, hook: _Hook, ctx: HookContext, *, fail_closed: bool) -> HookDecision:
        base: dict[str, Any] = {"hookName": hook.name, "hookEvent": ctx.event}
        if ctx.tool_name is not None:
            base["toolName"] = ctx.tool_name
        tool_call_id = ctx.data.get("toolCallId")
        if isinstance(tool_call_id, str):
            base["toolCallId"] = tool_call_id
        # A hook in code records with the session's next commit (a command hook's
        # hook.triggered must be visible while its process runs).
        quick = not hook.session_info
        await self._emit(ctx.session_id, "hook.triggered", dict(base), quick=quick)
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
        if decision.stop:
            completed["stop"] = True
            if decision.stop_reason:
                completed["stopReason"] = decision.stop_reason
        if decision.system_message:
            completed["systemMessage"] = decision.system_message
        if decision.context:
            completed["contextChars"] = len(decision.context)
        await self._emit(ctx.session_id, "hook.completed", completed, quick=quick)
        for message in (decision.system_message, decision.stop_reason if decision.stop else None):
            if message:
                await self._tell_user(ctx, hook.name, message)
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

    async def _emit(
        self, session_id: str, event_type: str, payload: dict[str, Any], *, quick: bool = False
    ) -> None:
        if self._record is None:
            return
        if quick and self._defer is not None and self._defer(session_id, event_type, payload):
            return
        try:
            await self._record(session_id, event_type, payload)
        except Exception as exc:
            logger.warning("could not record %s for session %s: %s", event_type, session_id, exc)

    async def _tell_user(self, ctx: HookContext, hook_name: str, message: str) -> None:
        if self._notify is None:
            logger.info("hook %s (%s) says: %s", hook_name, ctx.event, message)
            return
        try:
            await self._notify(ctx.session_id, hook_name, ctx.event, message)
        except Exception as exc:
            logger.warning("could not show hook %s's message: %s", hook_name, exc)
