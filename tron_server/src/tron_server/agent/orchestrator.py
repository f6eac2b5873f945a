"""The orchestrator: at most one running agent loop per session.

``send_message`` checks the session and returns at once; the loop runs as an
asyncio task owned by the orchestrator, not by the client connection that asked
for it, so a client that disconnects mid-turn does not stop the turn (it
reconnects and catches up with ``events.sync`` + ``agent.getState``).

A message for a busy session is refused with :class:`AgentBusyError` (-32003)
unless it asks to be queued; queued messages run in order after the current one.
``abort`` stops the running loop within a second and drops the queue.

Events of a running session (the loop's own, the tools' and the hooks') are all
appended through one :class:`SessionWriter`, so they never race each other; give
the hook engine :meth:`Orchestrator.record_event` as its recorder.
A :class:`tron_events.ConcurrencyConflict` means something else moved the
session's head during the run (a rewind, a model switch from another client):
the run stops with an ``agent.error`` (category ``conflict``) and records nothing
more, because its view of the history is stale.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, get_args

import anyio

from tron_events import (
    AsyncEventStore,
    ConcurrencyConflict,
    SessionNotActive,
    SessionNotFound,
)
from tron_llm import Provider, ReasoningLevel

from ..errors import (
    AgentBusyError,
    InvalidParams,
    ManagerUnavailableError,
    SessionNotActiveError,
    SessionNotFoundError,
)
from ..hooks.base import HookEngine
from ..hooks.settings import HookSettingsError
from ..tools.base import ToolRegistry
from .rules import SessionRules
from .turn import AgentRun, RunRequest, RunResult, TurnDeps
from .writer import SessionWriter

__all__ = ["Emit", "HooksFactory", "Orchestrator", "ProviderFactory"]

log = logging.getLogger("tron_server.agent")

Emit = Callable[[str, str, dict[str, Any]], None]
"""(notification method e.g. ``agent.text_delta``, session id, data); never blocks."""

ProviderFactory = Callable[[str, str], Provider]
"""(provider name, model) → a provider."""

RecordFn = Callable[[str, str, dict[str, Any]], Awaitable[None]]

HooksFactory = Callable[[Path, RecordFn], HookEngine]
"""``factory(working_directory, record)`` → the hook engine for sessions in that
directory (the app wraps ``tron_server.hooks.build_hook_engine`` with its home)."""

ABORT_WAIT = 5.0
"""How long ``abort`` waits for the run to record its interruption."""

_run_ids = itertools.count(1)
_LEVELS = frozenset(get_args(ReasoningLevel))


@dataclass
class _SessionRun:
    """The running loop of one session and its queue."""

    session_id: str
    writer: SessionWriter
    queue: deque[RunRequest] = field(default_factory=deque)
    current: AgentRun | None = None
    task: asyncio.Task[None] | None = None
    finished: anyio.Event = field(default_factory=anyio.Event)


def _has_content(content: str | list[dict[str, Any]]) -> bool:
    if isinstance(content, str):
        return bool(content.strip())
    return any(
        isinstance(b, dict) and (b.get("type") != "text" or str(b.get("text", "")).strip())
        for b in content
    )


def _add_skill_tool(tools: ToolRegistry, home: Path) -> None:
    """Offer the Skill tool (from the context layer) when the registry lacks it."""
    if "Skill" in tools.names():
        return
    try:
        from ..tools.skill import SkillTool
    except ImportError:
        return
    tools.register(SkillTool(home))


class Orchestrator:
    """Runs agent loops: one per session at a time, detached from connections."""

    def __init__(
        self,
        store: AsyncEventStore,
        providers: ProviderFactory,
        tools: ToolRegistry,
        hooks: HookEngine | None,
        emit: Emit,
        *,
        home: Path,
        max_turns_per_message: int = 50,
        hooks_factory: HooksFactory | None = None,
        max_tokens: int | None = None,
        auto_compact_threshold: float | None = None,
    ) -> None:
        """``hooks`` serves every session; ``hooks_factory`` (if given) builds one engine
        per working directory instead (guardrails depend on it). A ``hooks`` engine
        created without a recorder gets :meth:`record_event`. ``auto_compact_threshold``
        (a share of the context window, e.g. 0.8) turns on compaction before a turn."""
        self.store = store
        self.providers = providers
        self.tools = tools
        self.hooks = hooks
        self.emit = emit
        self.home = home
        self.max_turns_per_message = max_turns_per_message
        self.auto_compact_threshold = auto_compact_threshold
        self._hooks_factory = hooks_factory
        self._engines: dict[Path, HookEngine] = {}
        self._runs: dict[str, _SessionRun] = {}
        self._rules: dict[str, SessionRules] = {}
        _add_skill_tool(tools, home)
        self._closing = False
        if hooks is not None and not hooks.has_recorder:
            # The engine records hook.triggered/completed; during a run they must go
            # through the session's writer or they would move the head under the turn.
            hooks.set_recorder(self.record_event)
        self._deps = TurnDeps(
            store=store,
            providers=providers,
            tools=tools,
            hooks_for=self.hooks_for,
            home=home,
            max_turns=max_turns_per_message,
            max_tokens=max_tokens,
            before_turn=self._before_turn,
            rules_for=self._rules_for,
        )

    # -- public API -------------------------------------------------------------------

    async def send_message(
        self,
        session_id: str,
        content: str | list[dict[str, Any]],
        *,
        queue: bool = False,
        reasoning_level: str | None = None,
    ) -> dict[str, Any]:
        """Start (or queue) the agent loop for ``content``; returns at once.

        Result: ``{"accepted": True, "turn": <first turn number, None when queued>,
        "queued": bool, "runId": str}``. Raises :class:`SessionNotFoundError`,
        :class:`SessionNotActiveError`, :class:`AgentBusyError` (busy and not
        ``queue``), :class:`InvalidParams` (empty content, unknown reasoning level),
        :class:`ManagerUnavailableError` (shutting down).
        """
        if not _has_content(content):
            raise InvalidParams("the message is empty: send text or content blocks")
        if reasoning_level is not None and reasoning_level not in _LEVELS:
            raise InvalidParams(
                f"unknown reasoning level {reasoning_level!r}; use one of {sorted(_LEVELS)}"
            )
        if self._closing:
            raise ManagerUnavailableError("the agent runtime is shutting down")
        try:
            session = await self.store.get_session(session_id)
        except SessionNotFound:
            raise SessionNotFoundError(
                f"session {session_id!r} does not exist", {"sessionId": session_id}
            ) from None
        if session.status != "active":
            raise SessionNotActiveError(
                f"session {session_id!r} has ended; fork it to continue",
                {"sessionId": session_id},
            )
        level: ReasoningLevel | None = reasoning_level  # type: ignore[assignment]
        request = RunRequest(session_id, content, level, f"run_{next(_run_ids)}")
        # No await between the busy check and registering the run: no race.
        run = self._runs.get(session_id)
        if run is not None:
            if not queue:
                raise AgentBusyError(
                    f"session {session_id!r} is already running; wait for agent.complete, "
                    "call agent.abort, or send the message with queue: true",
                    {"sessionId": session_id},
                )
            run.queue.append(request)
            return {"accepted": True, "turn": None, "queued": True, "runId": request.run_id}
        run = _SessionRun(session_id, SessionWriter(self.store, session_id))
        self._runs[session_id] = run
        run.task = asyncio.create_task(self._drive(run, request), name=f"agent:{session_id}")
        return {
            "accepted": True,
            "turn": session.turn_count + 1,
            "queued": False,
            "runId": request.run_id,
        }

    async def abort(self, session_id: str) -> bool:
        """Stop the session's running loop and drop its queue; False when idle.

        Returns once the interruption is recorded (at most a few seconds)."""
        run = self._runs.get(session_id)
        if run is None:
            return False
        run.queue.clear()
        if run.current is not None:
            run.current.abort()
        with anyio.move_on_after(ABORT_WAIT, shield=True):
            await run.finished.wait()
        return True

    def is_running(self, session_id: str) -> bool:
        """Whether the session has a loop running (or about to run)."""
        return session_id in self._runs

    def get_state(self, session_id: str) -> dict[str, Any]:
        """The running turn so far (for a late client): ``{busy, isRunning, turn, text,
        thinking, toolCalls: [{toolCallId, name, arguments, status, output}], queued}``."""
        run = self._runs.get(session_id)
        if run is None or run.current is None:
            return {
                "busy": run is not None, "isRunning": run is not None, "turn": None,
                "text": "", "thinking": "", "toolCalls": [],
                "queued": len(run.queue) if run else 0,
            }  # fmt: skip
        return {
            "busy": True,
            "isRunning": True,
            **run.current.progress.to_json(),
            "queued": len(run.queue),
            "runId": run.current.request.run_id,
        }

    async def record_event(self, session_id: str, event_type: str, payload: dict[str, Any]) -> None:
        """Append an event to a session, through its writer while a loop runs.

        The recorder for hook engines and anything else that writes to sessions the
        agent may be running (signature of ``HookEngine``'s ``record``)."""
        run = self._runs.get(session_id)
        if run is not None:
            await run.writer.append(event_type, payload)
        else:
            await self.store.append(session_id, event_type, payload)

    async def shutdown(self, timeout: float = 10.0) -> None:
        """Abort every running loop, wait for them to record it, drain the hooks."""
        self._closing = True
        runs = list(self._runs.values())
        for run in runs:
            run.queue.clear()
            if run.current is not None:
                run.current.abort()
        with anyio.move_on_after(timeout, shield=True):
            for run in runs:
                await run.finished.wait()
        for run in runs:
            if run.task is not None and not run.task.done():
                log.warning("agent loop of %s did not stop in time; cancelling", run.session_id)
                run.task.cancel()
        engines = {id(e): e for e in [self.hooks, *self._engines.values()] if e is not None}
        for engine in engines.values():
            try:
                await engine.drain(timeout)
            except Exception:
                log.exception("draining hooks failed")

    # -- internals --------------------------------------------------------------------

    def _notify(self, session_id: str, method: str, data: dict[str, Any]) -> None:
        try:
            self.emit(method, session_id, data)
        except Exception:
            log.exception("emit %s for %s failed", method, session_id)

    def hooks_for(self, working_directory: Path) -> HookEngine | None:
        """The hook engine for sessions in ``working_directory`` (None: no hooks)."""
        if self._hooks_factory is None:
            return self.hooks
        engine = self._engines.get(working_directory)
        if engine is None:
            engine = self._engines[working_directory] = self._hooks_factory(
                working_directory, self.record_event
            )
        return engine

    def _rules_for(self, session_id: str, working_directory: Path) -> SessionRules:
        rules = self._rules.get(session_id)
        if rules is None:
            rules = self._rules[session_id] = SessionRules(self.home, working_directory)
        return rules

    async def _before_turn(self, run: AgentRun) -> None:
        if self.auto_compact_threshold is None:
            return
        from .compaction import maybe_auto_compact

        await maybe_auto_compact(self, run)

    async def _drive(self, run: _SessionRun, first: RunRequest) -> None:
        request: RunRequest | None = first
        try:
            while request is not None:
                agent = AgentRun(
                    self._deps, request, run.writer, partial(self._notify, run.session_id)
                )
                run.current = agent
                result = await self._execute(agent)
                self._notify(
                    run.session_id,
                    "agent.complete",
                    {"turns": result.turns, "stopReason": result.stop_reason,
                     "runId": request.run_id},
                )  # fmt: skip
                request = run.queue.popleft() if run.queue else None
        finally:
            run.current = None
            if self._runs.get(run.session_id) is run:
                del self._runs[run.session_id]
            run.finished.set()

    async def _execute(self, agent: AgentRun) -> RunResult:
        """Run one message; turn store failures into a clear ``agent.error``."""
        sid = agent.session_id
        try:
            return await agent.execute()
        except ConcurrencyConflict as exc:
            log.warning("agent loop of %s stopped: %s", sid, exc)
            message = (
                "the session changed while the agent was running (another client rewound, "
                "switched the model or wrote to it); the turn stopped. Send the message again."
            )
            self._notify(sid, "agent.error", {"message": message, "category": "conflict",
                                              "retryable": True})  # fmt: skip
            return RunResult(agent.progress.turn and 1, "error", str(exc))
        except SessionNotActive as exc:
            self._notify(sid, "agent.error", {"message": str(exc), "category": "conflict",
                                              "retryable": False})  # fmt: skip
            return RunResult(0, "error", str(exc))
        except HookSettingsError as exc:
            # The user's safety hooks cannot be loaded: refuse to run without them.
            self._notify(
                sid,
                "agent.error",
                {"message": f"hooks are misconfigured, nothing was run: {exc}",
                 "category": "configuration", "retryable": False},
            )  # fmt: skip
            return RunResult(0, "error", str(exc))
        except Exception as exc:
            log.exception("agent loop of %s failed", sid)
            self._notify(
                sid,
                "agent.error",
                {"message": f"internal error in the agent loop: {type(exc).__name__}: {exc}",
                 "category": "internal", "retryable": False},
            )  # fmt: skip
            return RunResult(0, "error", str(exc))
