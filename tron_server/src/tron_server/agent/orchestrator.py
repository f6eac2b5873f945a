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

Sub-agents (:mod:`.subagents`): a session a user started gets the Task tool; a
Task call creates a child session and runs it here like any other session
(:meth:`Orchestrator.run_child`), so a child can be watched, aborted and resumed
like one. A child's notifications carry ``parentSessionId`` and
``parentToolCallId``; aborting the parent aborts its running children through
their own runs' abort.

Lifecycle hooks (SessionStart, Stop, SubagentStop, SessionEnd), the hook engine of each
working directory and what every hook gets are :mod:`.lifecycle`'s
(:attr:`Orchestrator.lifecycle`); the orchestrator's methods of the same names delegate.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, get_args

import anyio

from tron_events import (
    AsyncEventStore,
    ConcurrencyConflict,
    Event,
    EventNotFound,
    Session,
    SessionNotActive,
    SessionNotFound,
)
from tron_llm import Provider, ReasoningLevel

from ..browser.urls import UrlVerdict
from ..context.listings import shared
from ..errors import (
    AgentBusyError,
    InvalidOperationError,
    InvalidParams,
    ManagerUnavailableError,
    SessionNotActiveError,
    SessionNotFoundError,
)
from ..hooks.base import HookContext, HookEngine
from ..hooks.settings import HookSettingsError
from ..mcp import McpManager, mcp_allowed
from ..memory import MemorySettings
from ..protocol import AGENT_COMPLETE, AGENT_ERROR, SESSION_NOTIFICATION, session_json
from ..tools.base import ToolRegistry
from ..tools.skill import SkillTool
from ..workspace.editor import EditorFiles
from . import compaction
from .lifecycle import HooksFactory, Lifecycle
from .mcp_tools import AskFn, make_tool
from .rules import SessionRules
from .session_memory import SessionMemory
from .subagents import (
    TASK_TOOL_NAME,
    TOP_LEVEL,
    ParentLink,
    ScopedTools,
    SessionProfile,
    Spawner,
    SubagentSettings,
    TaskTool,
    discover_agents,
    load_profile,
)
from .turn import AgentRun, Resume, RunRequest, RunResult, ToolGate, TurnDeps
from .writer import SessionWriter

if TYPE_CHECKING:
    from tron_events import EventStore
    from tron_events.messages import Message
    from tron_events.reconstruct import SessionState

    from ..workspace.recorder import FileRecorder

__all__ = ["Emit", "HooksFactory", "Orchestrator", "ProviderFactory"]

log = logging.getLogger("tron_server.agent")

Emit = Callable[[str, str, dict[str, Any]], None]
"""(notification method e.g. ``agent.text_delta``, session id, data); never blocks."""

ProviderFactory = Callable[[str, str], Provider]
"""(provider name, model) → a provider."""

ABORT_WAIT = 5.0
"""How long ``abort`` waits for the run to record its interruption."""

#: How many sessions' context use (:meth:`Orchestrator._remember_context`) is kept.
KNOWN_CONTEXTS = 512
_run_ids = itertools.count(1)
_LEVELS = frozenset(get_args(ReasoningLevel))
#: The tool the ``memory.recall`` setting offers or withholds.
RECALL_TOOL = "Recall"


RunFiles = tuple[tuple[str, bool, bool], Any, MemorySettings | None]
"""(folder, Task offered, memory on), the agent definitions, the memory settings."""


class UserInTheLoop(Protocol):
    """What the orchestrator uses of :class:`tron_server.interaction.Interaction`."""

    @property
    def gate(self) -> ToolGate: ...

    def waiting_runs(self) -> list[AgentRun]: ...

    async def mode(self, session_id: str) -> str: ...

    async def check_url(
        self, session_id: str, tool: str, url: str, tool_call_id: str | None = None
    ) -> UrlVerdict: ...


@dataclass(frozen=True)
class StartPoint:
    """The session as a message read it (:meth:`Orchestrator.read_for_message`): its row,
    head event and state, and its writer with the commits it had made before the read."""

    session: Session | None
    head: Event | None
    state: SessionState | None
    writer: SessionWriter
    commits: int
    #: The run's agent definitions and memory settings, read in the same trip: (what
    #: they were read for: folder, Task offered, memory on; agents; settings). None:
    #: not read (the run reads them, as it does when the key no longer matches).
    files: RunFiles | None = None


@dataclass
class _SessionRun:
    """The running loop of one session and its queue."""

    session_id: str
    writer: SessionWriter
    queue: deque[RunRequest] = field(default_factory=deque)
    current: AgentRun | None = None
    task: asyncio.Task[None] | None = None
    finished: anyio.Event = field(default_factory=anyio.Event)
    #: An abort that came before the current request's AgentRun existed.
    abort_pending: bool = False
    #: The parent of a child's run (its notifications carry it).
    link: ParentLink | None = None
    links: dict[str, ParentLink] = field(default_factory=dict)
    #: What ``agent.message`` read just before the run started (its first request goes
    #: on from it when nothing was recorded since).
    start: StartPoint | None = None
    #: Requests someone awaits (run_child): run id → (done, result).
    waiters: dict[str, tuple[anyio.Event, list[RunResult]]] = field(default_factory=dict)
    last_error: str | None = None


def _has_content(content: str | list[dict[str, Any]]) -> bool:
    if isinstance(content, str):
        return bool(content.strip())
    return any(
        isinstance(b, dict) and (b.get("type") != "text" or str(b.get("text", "")).strip())
        for b in content
    )


def _add_skill_tool(tools: ToolRegistry, home: Path) -> None:
    """Offer the Skill tool (from the context layer) when the registry lacks it."""
    if "Skill" not in tools.names():
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
        subagents: SubagentSettings | None = None,
        memory: bool = False,
        files: FileRecorder | None = None,
        mcp: McpManager | None = None,
    ) -> None:
        """``hooks`` serves every session; ``hooks_factory`` (if given) builds one engine
        per working directory instead (guardrails depend on it). A ``hooks`` engine
        created without a recorder gets :meth:`record_event`. ``auto_compact_threshold``
        (a share of the context window, e.g. 0.8) turns on compaction before a turn.
        ``subagents`` sets the Task tool's limits (default: 4 in parallel, depth 1); ``mcp``
        adds the MCP servers' tools of each session's folder to its runs. ``memory`` turns
        on the ledger, handoffs and lessons (:mod:`.session_memory`; each folder's settings
        may turn parts off); ``files`` records the ledger's changes as the tools record
        theirs."""
        self.store = store
        self.providers = providers
        self.tools = tools
        self.hooks = hooks
        self.emit = emit
        self.home = home
        self.max_turns_per_message = max_turns_per_message
        self.auto_compact_threshold = auto_compact_threshold
        self._runs: dict[str, _SessionRun] = {}
        self._rules: dict[str, SessionRules] = {}
        #: Sessions whose last client left during a run: forgotten at its end.
        self._forget_after_run: set[str] = set()
        self.subagents = subagents or SubagentSettings()
        self.mcp = mcp
        #: The question flow an MCP server's elicitation goes through (``Interaction.ask``).
        self.mcp_ask: AskFn | None = None
        self._mcp_made: weakref.WeakKeyDictionary[Any, tuple[int, list[Any]]] = (
            weakref.WeakKeyDictionary()
        )
        # One writer per session while anything uses it (runs, hooks recording late).
        self._writers: weakref.WeakValueDictionary[str, SessionWriter] = (
            weakref.WeakValueDictionary()
        )
        self._profiles: dict[str, SessionProfile] = {}
        #: session → (head, model, tokens): the context use its last run left at its end
        #: (``AgentRun.known_context``), so the next run's compaction check reads nothing.
        self._known_context: dict[str, tuple[str, str, int]] = {}
        _add_skill_tool(tools, home)
        self._closing = False
        #: Told when a session's run starts (True) and when it has ended (False): the
        #: cluster's leases (:mod:`tron_server.cluster`). Never raises into the run.
        self.on_run_change: Callable[[str, bool], None] | None = None
        #: Permissions, approvals and questions (attach_interaction); None: no gate.
        self.interaction: UserInTheLoop | None = None
        #: The hook engines and the lifecycle hooks (SessionStart, Stop, SessionEnd…).
        self.lifecycle = Lifecycle(self, home, hooks, hooks_factory)
        self.transcripts = self.lifecycle.transcripts
        self._deps = TurnDeps(
            store=store,
            providers=providers,
            tools=tools,
            hooks_for=self.lifecycle.hooks_for,
            home=home,
            max_turns=max_turns_per_message,
            max_tokens=max_tokens,
            before_turn=self._before_turn,
            before_turn_idle=self._before_turn_idle,
            rules_for=self._rules_for,
            concurrent_tools=frozenset({TASK_TOOL_NAME}),
            max_parallel_tools=self.subagents.max_parallel,
            session_start=self.lifecycle.session_start,
            on_stop=self.lifecycle.stop_hooks,
        )
        #: Ledger, handoffs and lessons (None: off for this runtime).
        self.memory: SessionMemory | None = None
        if memory:
            self.memory = SessionMemory(self, home, recorder=files)
            self._deps.memory_at_start = self.memory.at_start
            self._deps.memory_started = self.memory.started

    # -- public API -------------------------------------------------------------------

    def attach_interaction(self, interaction: UserInTheLoop) -> None:
        """Check every tool call against the permissions (and ask the user) through
        ``interaction``; runs waiting for the user are suspended, not aborted, at shutdown."""
        self.interaction = interaction
        self._deps.gate = interaction.gate
        self._deps.check_url = interaction.check_url

    def attach_editor_files(self, files: Callable[[str], EditorFiles | None]) -> None:
        """``files(session_id)``: the session's file provider (an editor serving its
        buffers), through which Read, Write and Edit go while it is registered."""
        self._deps.editor_files = files

    def current_run(self, session_id: str) -> AgentRun | None:
        """The session's running AgentRun (None when idle or about to start)."""
        run = self._runs.get(session_id)
        return run.current if run is not None else None

    async def send_message(
        self,
        session_id: str,
        content: str | list[dict[str, Any]],
        *,
        queue: bool = False,
        reasoning_level: str | None = None,
        resume: Resume | None = None,
        allowed_tools: tuple[str, ...] = (),
        model: str | None = None,
        provider: str | None = None,
        before: tuple[tuple[str, dict[str, Any]], ...] = (),
        max_turns: int | None = None,
        session: Session | None = None,
        start: StartPoint | None = None,
    ) -> dict[str, Any]:
        """Start (or queue) the agent loop for ``content``; returns at once.

        ``max_turns`` caps the LLM calls of this message (below the server's own limit
        and a sub-agent's ``maxTurns``); the run then stops with ``max_turns``.

        Result: ``{"accepted": True, "turn": <first turn number, None when queued>,
        "queued": bool, "runId": str}``. Raises :class:`SessionNotFoundError`,
        :class:`SessionNotActiveError`, :class:`AgentBusyError` (busy and not
        ``queue``), :class:`InvalidParams` (empty content, unknown reasoning level),
        :class:`ManagerUnavailableError` (shutting down).
        """
        if resume is None and not _has_content(content):
            raise InvalidParams("the message is empty: send text or content blocks")
        if reasoning_level is not None and reasoning_level not in _LEVELS:
            raise InvalidParams(
                f"unknown reasoning level {reasoning_level!r}; use one of {sorted(_LEVELS)}"
            )
        if max_turns is not None and max_turns < 1:
            raise InvalidParams("maxTurns must be at least 1")
        if self._closing:
            raise ManagerUnavailableError("the agent runtime is shutting down")
        try:
            if session is None or session.id != session_id:  # else just read by the caller
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
        request = RunRequest(
            session_id, content, level, f"run_{next(_run_ids)}", resume=resume,
            allowed_tools=allowed_tools, model=model, provider=provider, before=before,
            max_turns=max_turns,
        )  # fmt: skip
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
        started = self._start_run(session_id, request)
        if start is not None and start.session == session and start.state is not None:
            started.start = start  # read with the row: the run may start from it
        return {
            "accepted": True,
            "turn": session.turn_count + 1,
            "queued": False,
            "runId": request.run_id,
        }

    async def run_child(self, session_id: str, content: str, link: ParentLink) -> RunResult:
        """Run ``content`` in child session ``session_id`` and return how it ended.

        The child runs like any session (its own loop task, writer and queue); its
        notifications carry ``link``. Cancelling the caller (the parent's abort) aborts
        the child through its own run and waits for it to record that, then re-raises.
        Raises :class:`AgentBusyError` when the child is already running."""
        if self._closing:
            raise ManagerUnavailableError("the agent runtime is shutting down")
        if session_id in self._runs:
            raise AgentBusyError(
                f"sub-agent session {session_id!r} is already running; wait for it to finish",
                {"sessionId": session_id},
            )
        request = RunRequest(session_id, content, None, f"run_{next(_run_ids)}")
        done = anyio.Event()
        slot: list[RunResult] = []
        run = self._start_run(session_id, request, link=link, waiter=(done, slot))
        try:
            await done.wait()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._abort_run(run)
            raise
        finally:
            # The sub-agent's task is over: what its tools kept (a browser) goes with it.
            with anyio.CancelScope(shield=True):
                await self.release(session_id)
        return slot[0] if slot else RunResult(0, "aborted", "the sub-agent's run did not finish")

    async def abort(self, session_id: str) -> bool:
        """Stop the session's running loop and drop its queue; False when idle.

        Returns once the interruption is recorded (at most a few seconds). Running
        children of the session are aborted with it (their Task calls are cancelled)."""
        run = self._runs.get(session_id)
        if run is None:
            await self.release(session_id)
            return False
        await self._abort_run(run)
        await self.release(session_id)
        return True

    def forget_history(self, session_id: str) -> None:
        """Drop what the server keeps of the session between its runs (its history
        checker, its rules files' state, its profile) and the hook engine of a folder no
        other session in use works in: called when its last client left, as the store's
        caches are. A run going on keeps them until its end. Everything is built again,
        from the store and the files, by the session's next run (as after a restart)."""
        self._deps.history_checkers.drop(session_id)
        if session_id in self._runs:
            self._forget_after_run.add(session_id)
        else:
            self._forget(session_id)

    def _forget(self, session_id: str) -> None:
        self._forget_after_run.discard(session_id)
        self._profiles.pop(session_id, None)
        rules = self._rules.pop(session_id, None)
        if rules is None:
            return
        folder = rules.working_directory
        if all(r.working_directory != folder for r in self._rules.values()):
            self.lifecycle.forget_folder(folder)

    async def release(self, session_id: str) -> None:
        """Free what the tools keep for the session (its browser): on abort, at its end, when
        a sub-agent's run is over. Never raises."""
        with anyio.CancelScope(shield=True):
            await self.tools.release(session_id)

    async def wait_finished(self, session_id: str, timeout: float = ABORT_WAIT) -> None:
        """Wait (at most ``timeout`` seconds) until the session's running loop ends."""
        run = self._runs.get(session_id)
        if run is not None:
            with anyio.move_on_after(timeout, shield=True):
                await run.finished.wait()

    async def _abort_run(self, run: _SessionRun) -> None:
        run.queue.clear()
        if run.current is not None:
            run.current.abort()
        else:
            run.abort_pending = True
        with anyio.move_on_after(ABORT_WAIT, shield=True):
            await run.finished.wait()

    async def read_for_message(self, session_id: str) -> StartPoint:
        """The session's row, head event and state in one read, for a message (its pending
        request's check, then its run, which starts from them when nothing was recorded
        through the session's writer since); Nones when there is no such session."""
        writer = self._writer(session_id)  # held: what it records meanwhile is counted
        commits = writer.commits
        known = self._profiles.get(session_id)

        def read(store: EventStore) -> tuple[Session, Event, SessionState, RunFiles | None]:
            session, head, state = store.get_session_head_and_state(session_id)
            # The run's agent definitions and memory settings in the same trip (its
            # first worker-thread trip otherwise); a failure leaves them to the run,
            # which reads them again and reports it as before.
            profile = known or (TOP_LEVEL if session.parent_session_id is None else None)
            files: RunFiles | None = None
            if profile is not None and session.status == "active":
                task, memory = self._file_needs(profile)
                if task or memory:
                    wd = Path(session.working_directory)
                    try:
                        agents, settings = self._read_run_files(wd, task, memory)
                    except Exception:
                        log.debug("agent files of %s not read ahead", session_id, exc_info=True)
                    else:
                        files = ((str(wd), task, memory), agents, settings)
            return session, head, state, files

        try:
            session, head, state, files = await self.store.read_with(read)
        except (SessionNotFound, EventNotFound):
            return StartPoint(None, None, None, writer, commits)
        return StartPoint(session, head, state, writer, commits, files)

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
        await self._writer(session_id).record(event_type, payload)

    def defer_event(self, session_id: str, event_type: str, payload: dict[str, Any]) -> bool:
        """Record an event with the session's next commit while a loop runs it (False:
        none runs; record it now). The run commits what is left at its end."""
        run = self._runs.get(session_id)
        if run is None or run.current is None or run.current.ended or not run.writer.running:
            return False
        run.writer.defer(event_type, payload)
        return True

    async def append_event(
        self, session_id: str, event_type: str, payload: dict[str, Any]
    ) -> Event:
        """:meth:`record_event`, returning the event."""
        return await self._writer(session_id).record(event_type, payload)

    async def shutdown(self, timeout: float = 10.0) -> None:
        """Abort every running loop, wait for them to record it, drain the hooks."""
        self._closing = True
        runs = list(self._runs.values())
        # A run waiting for the user stops without recording: its request stays pending
        # in the events and can be answered after the restart.
        waiting = set(self.interaction.waiting_runs()) if self.interaction is not None else set()
        for run in runs:
            run.queue.clear()
            if run.current is not None and run.current in waiting:
                run.current.suspend()
            elif run.current is not None:
                run.current.abort(shutdown=True)
            else:
                run.abort_pending = True
        with anyio.move_on_after(timeout, shield=True):
            for run in runs:
                await run.finished.wait()
        for run in runs:
            if run.task is not None and not run.task.done():
                log.warning("agent loop of %s did not stop in time; cancelling", run.session_id)
                run.task.cancel()
        # Every browser (and whatever else tools keep) goes before the server does.
        with anyio.CancelScope(shield=True):
            await self.tools.aclose()
        await self.lifecycle.drain(timeout)

    # -- sub-agents and lifecycle hooks ------------------------------------------------

    async def profile(self, session_id: str) -> SessionProfile:
        """Depth, parent and tool limits of a session (see :mod:`.subagents.profile`)."""
        return await load_profile(self.store, session_id, self._profiles)

    def announce_session(self, method: str, session: Session) -> None:
        """Tell every client about a session the runtime created (``session.created``)."""
        self._notify(session.id, method, {"session": session_json(session)})

    def session_created(self, session: Session) -> None:
        """A client created ``session``: SessionStart (:meth:`.Lifecycle.session_created`)."""
        self.lifecycle.session_created(session)

    async def session_ending(self, session: Session, reason: str) -> None:
        """SessionEnd, before ``session.end`` (:meth:`.Lifecycle.session_ending`); what the
        session's tools keep (its browser) is released first, and the session's handoff
        and ledger are recorded (:meth:`.SessionMemory.at_session_end`)."""
        await self.release(session.id)
        if self.memory is not None:
            await self.memory.at_session_end(session.id)
        await self.lifecycle.session_ending(session, reason)

    async def context_reset(self, session_id: str, source: str) -> None:
        """SessionStart again after ``/clear`` or a compaction
        (:meth:`.Lifecycle.context_reset`), then the ledgers and lessons again."""
        await self.lifecycle.context_reset(session_id, source)
        if self.memory is not None:
            await self.memory.after_reset(session_id, source)

    async def remember_compaction(
        self,
        session_id: str,
        messages: list[Message],
        through: str,
        writer: SessionWriter | None,
    ) -> None:
        """After a compaction: the handoff of the compacted part and the ledger
        (:meth:`.SessionMemory.after_compaction`; nothing when memory is off)."""
        if self.memory is not None:
            await self.memory.after_compaction(session_id, messages, through, writer)

    async def handoff(self, session_id: str) -> Event:
        """Make a handoff of the session now (``/handoff``, ``memory.handoff``). Raises
        :class:`InvalidOperationError` when memory or handoffs are off or the session has
        no conversation yet, :class:`ProviderError` when the side call fails."""
        if self.memory is None:
            raise InvalidOperationError("memory is not enabled in this server")
        session = await self.store.get_session(session_id)
        settings = await self.memory.settings(Path(session.working_directory))
        if not settings.handoffs:
            raise InvalidOperationError(
                'handoffs are switched off for this folder ("memory" in settings.json)'
                + (f": {settings.error}" if settings.error else "")
            )
        remembered = await self.memory.remember(session_id, "manual", ledger=False)
        if remembered.handoff is None:
            raise InvalidOperationError("the model gave no handoff; nothing was recorded")
        return remembered.handoff

    async def hook_session_info(self, ctx: HookContext) -> dict[str, Any]:
        """What every hook gets about its session (:meth:`.Lifecycle.hook_session_info`)."""
        return await self.lifecycle.hook_session_info(ctx)

    # -- what the lifecycle asks (LifecycleHost) ----------------------------------------

    async def permission_mode(self, session_id: str) -> str | None:
        """The session's permission mode (None: no permissions attached)."""
        return await self.interaction.mode(session_id) if self.interaction is not None else None

    def run_link(self, session_id: str) -> ParentLink | None:
        """The parent of the session's running child run (None: none runs, or top-level)."""
        run = self._runs.get(session_id)
        return run.link if run is not None else None

    def notify_session(self, session_id: str, method: str, data: dict[str, Any]) -> None:
        """Tell the session's clients, through its running loop if any (so that a child's
        notification carries its parent), else directly."""
        run = self.current_run(session_id)
        if run is not None:
            run.notify_client(method, data)
        else:
            self._notify(session_id, method, data)

    def _file_needs(self, profile: SessionProfile) -> tuple[bool, bool]:
        """(whether the run offers Task, whether it reads the memory settings)."""
        wants_task = profile.tools is None or TASK_TOOL_NAME in profile.tools
        task = self.subagents.enabled and profile.depth < self.subagents.max_depth and wants_task
        return task, self.memory is not None and RECALL_TOOL in self.tools

    def _read_run_files(
        self, wd: Path, task: bool, memory: bool
    ) -> tuple[Any, MemorySettings | None]:
        """The agent definitions and the memory settings (reads files: a worker thread)."""
        with shared():  # both look in the home and the working directory
            return (
                discover_agents(self.home, wd) if task else None,
                self.memory.settings_now(wd) if memory and self.memory is not None else None,
            )

    async def _tools_for(
        self, agent: AgentRun, profile: SessionProfile, files: RunFiles | None = None
    ) -> ToolRegistry:
        """The run's tools: the session's allow-list, plus Task while the depth allows.
        ``files``: the agent definitions and memory settings the message's read took
        with it (used when read for this folder and these needs)."""
        extra: list[Any] = []
        task, memory = self._file_needs(profile)
        wd = agent.working_directory
        if files is not None and files[0] == (str(wd), task, memory):
            agents, settings = files[1], files[2]
        elif task or memory:
            # The agent definitions and the memory settings in one worker-thread trip.
            agents, settings = await anyio.to_thread.run_sync(
                self._read_run_files, wd, task, memory
            )
        else:
            agents, settings = None, None
        if agents is not None:
            spawner = Spawner(self, agent, profile, agents)
            extra.append(TaskTool(spawner, max_parallel=self.subagents.max_parallel))
        extra += await self._mcp_tools(agent, profile)
        allowed = profile.tools
        if settings is not None and not settings.recall:  # the tool is not offered at all
            names = allowed if allowed is not None else self.tools.names()
            allowed = tuple(n for n in names if n != RECALL_TOOL)
        if allowed is None and not extra:
            return self.tools
        return ScopedTools(self.tools, allowed, extra)

    async def _mcp_tools(self, agent: AgentRun, profile: SessionProfile) -> list[Any]:
        """The MCP tools of the session's folder (a sub-agent's only those its ``tools:``
        names, as in Claude Code); a server found failed is told to the user once."""
        if self.mcp is None:
            return []
        usable = await self.mcp.tools_for(agent.session_id, agent.working_directory)
        for server, message in usable.failures:
            payload = {"title": f"MCP server {server} failed", "body": message,
                       "urgency": "normal", "mcpServer": server}  # fmt: skip
            await self.record_event(agent.session_id, "notification.user", payload)
            agent.notify_client(SESSION_NOTIFICATION, dict(payload))
        tools = []
        for connection in dict.fromkeys(c for c, _t in usable.tools):
            # Made once per listing of the connection, shared by its sessions' runs.
            made = self._mcp_made.get(connection)
            if made is None or made[0] != connection.generation:
                made = (connection.generation,
                        [make_tool(c, t, self.mcp_ask) for c, t in usable.tools
                         if c is connection])  # fmt: skip
                self._mcp_made[connection] = made
            tools += made[1]
        return [t for t in tools if mcp_allowed(t.name, profile.tools)]

    # -- internals --------------------------------------------------------------------

    def _writer(self, session_id: str) -> SessionWriter:
        writer = self._writers.get(session_id)
        if writer is None:
            writer = self._writers[session_id] = SessionWriter(self.store, session_id)
        return writer

    def _start_run(
        self,
        session_id: str,
        request: RunRequest,
        *,
        link: ParentLink | None = None,
        waiter: tuple[anyio.Event, list[RunResult]] | None = None,
    ) -> _SessionRun:
        """Register a run for ``session_id`` and start its loop (no await: no race)."""
        writer = self._writer(session_id)
        # Until the run syncs, anything recorded lands at the session's head.
        writer.running, writer.head = True, None
        run = _SessionRun(session_id, writer)
        if link is not None:
            run.links[request.run_id] = link
        if waiter is not None:
            run.waiters[request.run_id] = waiter
        self._runs[session_id] = run
        run.task = asyncio.create_task(self._drive(run, request), name=f"agent:{session_id}")
        self._run_changed(session_id, True)
        return run

    def _run_changed(self, session_id: str, running: bool) -> None:
        if self.on_run_change is not None:
            try:
                self.on_run_change(session_id, running)
            except Exception:
                log.exception("on_run_change for %s failed", session_id)

    def _notify(self, session_id: str, method: str, data: dict[str, Any]) -> None:
        try:
            self.emit(method, session_id, data)
        except Exception:
            log.exception("emit %s for %s failed", method, session_id)

    def _notify_run(self, run: _SessionRun, method: str, data: dict[str, Any]) -> None:
        """A notification of a running session (a child's carries its parent)."""
        if method == AGENT_ERROR:
            run.last_error = str(data.get("message", "")) or None
        link = run.link
        if link is not None:
            data = {**data, "parentSessionId": link.parent_session_id,
                    "parentToolCallId": link.tool_call_id}  # fmt: skip
            if link.on_event is not None:
                try:
                    link.on_event(method, data)
                except Exception:
                    log.exception("relaying %s of %s to its parent failed", method, run.session_id)
        self._notify(run.session_id, method, data)

    def hooks_for(self, working_directory: Path) -> HookEngine | None:
        """The hook engine for sessions in ``working_directory`` (:meth:`.Lifecycle.hooks_for`)."""
        return self.lifecycle.hooks_for(working_directory)

    def _rules_for(self, session_id: str, working_directory: Path) -> SessionRules:
        rules = self._rules.get(session_id)
        if rules is None:
            rules = self._rules[session_id] = SessionRules(self.home, working_directory)
        return rules

    def _before_turn_idle(self, run: AgentRun) -> bool:
        """Whether :meth:`_before_turn` would do nothing now (no read, no record)."""
        return self.auto_compact_threshold is None or compaction.auto_compact_idle(self, run)

    async def _before_turn(self, run: AgentRun) -> None:
        if self.auto_compact_threshold is None:
            return
        # Through the module: a profiler (benchmarks/bench_server.py) may wrap it.
        await compaction.maybe_auto_compact(self, run)

    async def _drive(self, run: _SessionRun, first: RunRequest) -> None:
        request: RunRequest | None = first
        try:
            while request is not None:
                run.last_error = None
                try:
                    profile = await self.profile(run.session_id)
                except Exception as exc:  # the session cannot be read: nothing can run
                    log.exception("cannot load session %s", run.session_id)
                    result = RunResult(0, "error", f"cannot read the session: {exc}")
                    self._notify_run(run, AGENT_ERROR, {"message": result.error,
                                     "category": "internal", "retryable": True})  # fmt: skip
                    self._complete(run, request, result)
                    request = run.queue.popleft() if run.queue else None
                    continue
                run.link = run.links.pop(request.run_id, None)
                if run.link is None and profile.parent_session_id is not None:
                    run.link = ParentLink(profile.parent_session_id, profile.parent_tool_call_id)
                agent = AgentRun(self._deps, request, run.writer, partial(self._notify_run, run))
                for limit in (profile.max_turns, request.max_turns):
                    if limit is not None:
                        agent.max_turns = min(agent.max_turns, limit)
                run.current = agent
                if run.abort_pending:
                    run.abort_pending = False
                    agent.abort(shutdown=self._closing)
                agent.known_context = self._known_context.pop(run.session_id, None)
                result = await self._execute(agent, profile, run)
                self._remember_context(agent)
                if self.memory is not None:
                    self.memory.run_done(run.session_id, result.turns)
                if result.stop_reason == "error" and run.last_error:
                    result.error = run.last_error  # what the client was told
                self._complete(run, request, result)
                request = run.queue.popleft() if run.queue else None
        finally:
            run.current = None
            run.writer.running = False
            if self._runs.get(run.session_id) is run:
                del self._runs[run.session_id]
                self._run_changed(run.session_id, False)
                if run.session_id in self._forget_after_run:
                    self._forget(run.session_id)
            for done, slot in run.waiters.values():  # a run that never got to them
                if not slot:
                    slot.append(RunResult(0, "aborted", "the run stopped before this message"))
                done.set()
            run.finished.set()

    def _remember_context(self, agent: AgentRun) -> None:
        """Keep the context use a run left when its text reply is still the head (the
        next run's first compaction check then reads nothing); a bounded memory."""
        head = agent.reply_head
        if (
            head is None
            or head != agent.writer.head
            or agent.writer.deferred
            or agent.context_model is None
            or agent.last_call_tokens is None
        ):
            return
        known = self._known_context
        known[agent.session_id] = (head, agent.context_model, agent.last_call_tokens)
        while len(known) > KNOWN_CONTEXTS:
            del known[next(iter(known))]

    def _complete(self, run: _SessionRun, request: RunRequest, result: RunResult) -> None:
        self._notify_run(
            run,
            AGENT_COMPLETE,
            {"turns": result.turns, "stopReason": result.stop_reason, "runId": request.run_id},
        )
        waiter = run.waiters.pop(request.run_id, None)
        if waiter is not None:
            waiter[1].append(result)
            waiter[0].set()

    async def _execute(
        self, agent: AgentRun, profile: SessionProfile, run: _SessionRun
    ) -> RunResult:
        """Run one message; turn store failures into a clear ``agent.error``."""
        sid = agent.session_id
        notify = agent.notify
        try:
            start, run.start = run.start, None
            files: RunFiles | None = None
            if (
                start is not None
                and start.session is not None
                and start.state is not None
                and start.writer is run.writer
                and await run.writer.adopt(start.state, start.commits)
            ):
                session, agent.started_state = start.session, start.state  # just read
                files = start.files
            else:
                # The row and the state at its head in one read: the run goes on from both.
                session, agent.started_state = await run.writer.sync_session_state()
            agent.session = session
            agent.working_directory = Path(session.working_directory)
            agent.tools = await self._tools_for(agent, profile, files)
            return await agent.execute()
        except ConcurrencyConflict as exc:
            log.warning("agent loop of %s stopped: %s", sid, exc)
            message = (
                "the session changed while the agent was running (another client rewound, "
                "switched the model or wrote to it); the turn stopped. Send the message again."
            )
            notify(AGENT_ERROR, {"message": message, "category": "conflict", "retryable": True})
            return RunResult(agent.progress.turn and 1, "error", str(exc))
        except SessionNotActive as exc:
            notify(AGENT_ERROR, {"message": str(exc), "category": "conflict", "retryable": False})
            return RunResult(0, "error", str(exc))
        except HookSettingsError as exc:
            # The user's safety hooks cannot be loaded: refuse to run without them.
            notify(
                AGENT_ERROR,
                {"message": f"hooks are misconfigured, nothing was run: {exc}",
                 "category": "configuration", "retryable": False},
            )  # fmt: skip
            return RunResult(0, "error", str(exc))
        except Exception as exc:
            log.exception("agent loop of %s failed", sid)
            notify(
                AGENT_ERROR,
                {"message": f"internal error in the agent loop: {type(exc).__name__}: {exc}",
                 "category": "internal", "retryable": False},
            )  # fmt: skip
            return RunResult(0, "error", str(exc))
