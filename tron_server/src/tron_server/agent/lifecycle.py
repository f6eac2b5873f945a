"""The hook lifecycle of sessions: which engine serves a folder, and when the lifecycle
hooks fire. The orchestrator runs the loops; this module is what it asks about hooks.

``SessionStart`` when a session is created (:meth:`Lifecycle.session_created`, source
``startup``; in the background, and the session's first run waits for it), at the start
of the first run of a session this process did not create (source ``resume``), and
after ``/clear`` or a compaction (:meth:`Lifecycle.context_reset`, ``clear`` /
``compact``); what they print for the model is recorded as ``hook.context``, before the
prompt. ``Stop`` when a run of a top-level session ends (not when it was aborted),
``SubagentStop`` when a run of a child ends (recorded in the parent): both inside the
run, before ``agent.complete``, so that a hook that blocks sends the model on
(:class:`~.turn.AgentRun`). ``SessionEnd`` before ``session.end``
(:meth:`Lifecycle.session_ending`). Children fire no SessionStart.

Every command hook gets the session's ``permission_mode`` and ``transcript_path`` (a
Claude Code-shaped transcript kept in ``<home>/transcripts``:
:mod:`tron_server.hooks.transcript`), and in a child ``agent_id`` / ``agent_type``
(:meth:`Lifecycle.hook_session_info`); a hook's ``systemMessage`` reaches the user as
``notification.user`` / ``session.notification``.

One engine per working directory (``hooks_factory``), built again when one of its
settings files changes (a user adds a hook while the server runs: the next run has it);
the engines it replaced are kept until their background hooks are done.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from tron_events import AsyncEventStore, Session, TronEventsError

from ..hooks.base import HookContext, HookDecision, HookEngine, HookEvent, RecordFn
from ..hooks.command import is_project_hook
from ..hooks.feedback import context_drafts
from ..hooks.settings import HookSettingsError, folder_trusted, settings_stamp
from ..hooks.transcript import Transcripts
from ..protocol import SESSION_NOTIFICATION
from .subagents import ParentLink, SessionProfile
from .subagents.spawner import final_text
from .turn import AgentRun, RunResult

__all__ = ["HooksFactory", "Lifecycle", "LifecycleHost"]

log = logging.getLogger("tron_server.agent")

HooksFactory = Callable[[Path, RecordFn], HookEngine]
"""``factory(working_directory, record)`` → the hook engine for sessions in that
directory (the app wraps ``tron_server.hooks.build_hook_engine`` with its home)."""


class LifecycleHost(Protocol):
    """What the lifecycle uses of the orchestrator (which satisfies it)."""

    @property
    def store(self) -> AsyncEventStore: ...

    async def record_event(
        self, session_id: str, event_type: str, payload: dict[str, Any]
    ) -> None: ...

    def defer_event(self, session_id: str, event_type: str, payload: dict[str, Any]) -> bool: ...

    async def profile(self, session_id: str) -> SessionProfile: ...

    async def permission_mode(self, session_id: str) -> str | None: ...

    def run_link(self, session_id: str) -> ParentLink | None: ...

    def notify_session(self, session_id: str, method: str, data: dict[str, Any]) -> None: ...


class Lifecycle:
    """The hook engines of a runtime and the lifecycle hooks they fire."""

    def __init__(
        self,
        host: LifecycleHost,
        home: Path,
        hooks: HookEngine | None,
        hooks_factory: HooksFactory | None,
    ) -> None:
        """``hooks`` serves every session; ``hooks_factory`` (if given) builds one engine
        per working directory instead. A ``hooks`` engine created without a recorder
        gets the host's ``record_event``."""
        self.host = host
        self.home = home
        self.hooks = hooks
        self._hooks_factory = hooks_factory
        #: working directory → (its settings files' stamp, the engine built from them).
        self._engines: dict[Path, tuple[tuple[Any, ...], HookEngine]] = {}
        #: Engines replaced after a settings change (their background runs are drained).
        self._retired: list[HookEngine] = []
        #: Sessions whose SessionStart fired in this process → whether their folder was
        #: trusted then (its own SessionStart hooks get their turn once it is).
        self._started: dict[str, bool] = {}
        #: Claude Code-shaped transcripts for the hooks' ``transcript_path``.
        self.transcripts = Transcripts(host.store, home / "transcripts")
        if hooks is not None:
            if not hooks.has_recorder:
                # The engine records hook.triggered/completed; during a run they must go
                # through the session's writer or they would move the head under the turn.
                hooks.set_recorder(host.record_event)
            self._configure(hooks)

    # -- engines ----------------------------------------------------------------------

    def hooks_for(self, working_directory: Path) -> HookEngine | None:
        """The hook engine for sessions in ``working_directory`` (None: no hooks), built
        again when one of its settings files changed since."""
        return self._hooks_and_stamp(working_directory)[0]

    def _hooks_and_stamp(
        self, working_directory: Path
    ) -> tuple[HookEngine | None, tuple[Any, ...] | None]:
        """:meth:`hooks_for` and the settings stamp it checked (None: no factory)."""
        if self._hooks_factory is None:
            return self.hooks, None
        stamp = settings_stamp(working_directory, self.home)
        cached = self._engines.get(working_directory)
        if cached is not None and cached[0] == stamp:
            return cached[1], stamp
        engine = self._hooks_factory(working_directory, self.host.record_event)
        self._configure(engine)
        if cached is not None:
            self._retired = [e for e in self._retired if e.pending_count]
            self._retired.append(cached[1])
        self._engines[working_directory] = (stamp, engine)
        return engine, stamp

    async def drain(self, timeout: float) -> None:
        """Wait for every engine's background hooks (at shutdown)."""
        current = [engine for _stamp, engine in self._engines.values()]
        engines = {id(e): e for e in [self.hooks, *current, *self._retired] if e is not None}
        for engine in engines.values():
            try:
                await engine.drain(timeout)
            except Exception:
                log.exception("draining hooks failed")

    def forget_folder(self, working_directory: Path) -> None:
        """Drop the engine of a folder no session in use works in (built again when one
        does); one with hooks still running is kept until they are drained."""
        cached = self._engines.pop(working_directory, None)
        self._retired = [e for e in self._retired if e.pending_count]
        if cached is not None and cached[1].pending_count:
            self._retired.append(cached[1])

    def _engine_or_none(self, working_directory: Path) -> HookEngine | None:
        try:
            return self.hooks_for(working_directory)
        except HookSettingsError as exc:
            log.warning("lifecycle hooks not run: %s", exc)
            return None

    # -- SessionStart, SessionEnd -----------------------------------------------------

    def session_created(self, session: Session) -> None:
        """A client created ``session``: fire SessionStart (source ``startup``) in the
        background; what its hooks say for the model is recorded as ``hook.context``, and
        the session's first run waits for them (:meth:`session_start`)."""
        self._started[session.id] = folder_trusted(Path(session.working_directory), self.home)
        engine = self._engine_or_none(Path(session.working_directory))
        if engine is None or not engine.hooks_for("SessionStart"):
            return

        async def record(decision: HookDecision) -> None:
            await self._record_drafts(
                session.id, context_drafts("SessionStart", decision, source="startup")
            )

        engine.fire_background(_session_start_context(session, "startup"), record)

    async def session_start(self, agent: AgentRun) -> None:
        """First in a run (``TurnDeps.session_start``): wait for the SessionStart hooks a
        ``session.create`` started, or run them (source ``resume``) for a session this
        process has not started; their context lands before the prompt. A session whose
        folder was trusted after its SessionStart ran gets the folder's own SessionStart
        hooks (source ``resume``) at its first run since."""
        sid = agent.session_id
        if (await self.host.profile(sid)).is_child:
            return
        # The row the run started with (read by the orchestrator just before this).
        session = agent.session or await self.host.store.get_session(sid)
        wd = Path(session.working_directory)
        looked_up = True
        try:
            engine, stamp = self._hooks_and_stamp(wd)
        except HookSettingsError as exc:
            log.warning("lifecycle hooks not run: %s", exc)
            engine, stamp, looked_up = None, None, False
        # The stamp's first part is the folder's trust, read just now.
        trusted = stamp[0] is not None if stamp is not None else folder_trusted(wd, self.home)
        started = self._started.get(sid)
        if started is not None:
            waited = engine is not None and engine.pending_for(sid) > 0
            if engine is not None and waited:
                await engine.settle(sid, timeout=None)  # bounded by the hooks' timeouts
            if started or not trusted:
                if looked_up and not waited:
                    # Nothing ran since the lookup: the run's first turn takes this engine
                    # (a settings error is the turn's to report: it looks again).
                    agent.start_hooks = (wd, engine)
                return
        self._started[sid] = trusted  # the first run here of a session made before
        if engine is None or not engine.hooks_for("SessionStart"):
            return
        # Trusted since it started: only the folder's own hooks (the home's ran then).
        only = None if started is None else is_project_hook
        decision = await engine.run_now(_session_start_context(session, "resume"), only=only)
        await self._record_drafts(sid, context_drafts("SessionStart", decision, source="resume"))

    async def context_reset(self, session_id: str, source: str) -> None:
        """After ``/clear`` (``source`` ``"clear"``) or a compaction (``"compact"``): the
        SessionStart hooks run again, as in Claude Code, and their context opens the fresh
        history (what they said before is gone from it). Not for sub-agents."""
        if (await self.host.profile(session_id)).is_child:
            return
        session = await self.host.store.get_session(session_id)
        engine = self._engine_or_none(Path(session.working_directory))
        if engine is None or not engine.hooks_for("SessionStart"):
            return
        decision = await engine.run_now(_session_start_context(session, source))
        await self._record_drafts(
            session_id, context_drafts("SessionStart", decision, source=source)
        )

    async def session_ending(self, session: Session, reason: str) -> None:
        """Run the SessionEnd hooks to their end (before ``session.end`` is appended, so
        their records land in the session). Never raises for a hook's failure."""
        engine = self._engine_or_none(Path(session.working_directory))
        if engine is None:
            return
        for earlier in self._retired:  # from before a settings change
            await earlier.settle(session.id)
        await engine.settle(session.id)  # a SessionStart or Stop still running records first
        if not engine.hooks_for("SessionEnd"):
            return
        ctx = HookContext(
            event="SessionEnd",
            session_id=session.id,
            working_directory=Path(session.working_directory),
            data={"reason": reason},
        )
        await engine.run_background_now(ctx)

    async def _record_drafts(
        self, session_id: str, drafts: list[tuple[str, dict[str, Any]]]
    ) -> None:
        for event_type, payload in drafts:
            await self.host.record_event(session_id, event_type, payload)

    # -- Stop, SubagentStop -----------------------------------------------------------

    async def stop_hooks(
        self, agent: AgentRun, result: RunResult, active: bool
    ) -> tuple[HookEvent, HookDecision] | None:
        """``TurnDeps.on_stop``: Stop (a top-level run) or SubagentStop (a child's run,
        recorded in the parent); the run acts on their answer."""
        profile = await self.host.profile(agent.session_id)
        event: HookEvent = "SubagentStop" if profile.is_child else "Stop"
        engine = self._engine_or_none(agent.working_directory)
        if engine is None or not engine.hooks_for(event):
            return None
        try:
            state = await self.host.store.get_state_at_head(agent.session_id)
            last = final_text(state.messages)
        except TronEventsError:
            last = ""
        data: dict[str, Any] = {
            "stop_hook_active": active,
            "stop_reason": result.stop_reason,
            "turns": result.turns,
            "last_assistant_message": last,
        }
        session_id = agent.session_id
        if profile.parent_session_id is not None:
            link = self.host.run_link(agent.session_id)
            session_id = profile.parent_session_id
            data |= {"agent_id": agent.session_id, "agent_type": profile.subagent_type,
                     "agent_session_id": agent.session_id}  # fmt: skip
            tool_call = link.tool_call_id if link is not None else profile.parent_tool_call_id
            if tool_call is not None:
                data["toolCallId"] = tool_call
        ctx = HookContext(
            event=event,
            session_id=session_id,
            working_directory=agent.working_directory,
            data=data,
        )
        return event, await engine.run_now(ctx)

    # -- what hooks get and say -------------------------------------------------------

    def _configure(self, engine: HookEngine) -> None:
        engine.set_session_info(self.hook_session_info)
        engine.set_notifier(self._hook_message)
        engine.set_deferral(self.host.defer_event)

    async def hook_session_info(self, ctx: HookContext) -> dict[str, Any]:
        """The fields Claude Code gives every hook, for ``ctx``'s session:
        ``permission_mode``, ``transcript_path`` (written up to the head now), in a
        sub-agent ``agent_id`` and ``agent_type``, and for SubagentStop the child's
        ``agent_transcript_path``."""
        sid = ctx.session_id
        info: dict[str, Any] = {"permission_mode": "default"}
        try:
            mode = await self.host.permission_mode(sid)
        except Exception as exc:  # an unreadable settings file: the hook still runs
            log.warning("permission mode of %s unknown for its hooks: %s", sid, exc)
            mode = None
        if mode is not None:
            info["permission_mode"] = mode
        info["transcript_path"] = await self._transcript(sid)
        profile = await self.host.profile(sid)
        if profile.is_child:
            info["agent_id"] = sid
            info["agent_type"] = profile.subagent_type
        child = ctx.data.get("agent_session_id")
        if ctx.event == "SubagentStop" and isinstance(child, str):
            info["agent_transcript_path"] = await self._transcript(child)
        return {k: v for k, v in info.items() if v is not None}

    async def _transcript(self, session_id: str) -> str | None:
        try:
            return str(await self.transcripts.update(session_id))
        except (TronEventsError, OSError) as exc:
            log.warning("transcript of %s not written for its hooks: %s", session_id, exc)
            return None

    async def _hook_message(self, session_id: str, hook: str, event: str, message: str) -> None:
        """A hook's ``systemMessage`` (or a stop's reason): record it and tell the user."""
        payload = {"title": f"{event} hook", "body": message, "urgency": "normal",
                   "hookName": hook, "hookEvent": event}  # fmt: skip
        await self.host.record_event(session_id, "notification.user", payload)
        self.host.notify_session(session_id, SESSION_NOTIFICATION, dict(payload))


def _session_start_context(session: Session, source: str) -> HookContext:
    return HookContext(
        event="SessionStart",
        session_id=session.id,
        working_directory=Path(session.working_directory),
        data={"source": source, "model": session.model, "provider": session.provider},
    )
