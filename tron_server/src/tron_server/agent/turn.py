"""The agent loop of one user message: LLM call, tools, LLM call, ... until done.

Each LLM call is a *turn* (numbered on from the session's highest turn). Events are
recorded in the order of DESIGN §4 / reference 004, every append on top of the
last one (:class:`~tron_server.agent.writer.SessionWriter`):

    config.reasoning_level        (only when the message changes the level)
    message.user {content, turn}
    stream.turn_start {turn}
    message.assistant {content, turn, tokenUsage, stopReason, model, latency[, interrupted]}
    tool.call {toolCallId, name, arguments, turn}      one per tool_use, in order
    tool.result {toolCallId, content, isError, duration}   one per tool_use, in order
    stream.turn_end {turn, stopReason, tokenUsage, cost}
    stream.turn_start {turn + 1} ...                    while the model calls tools

Tools start in the order the model called them. A call of a concurrent tool
(``TurnDeps.concurrent_tools``: the Task tool) starts and the next call starts
without waiting for it, up to ``max_parallel_tools`` of them at once, so every Task
call of a message runs at the same time as the others (``Task, Read, Task``: the two
children overlap, Read runs meanwhile); any other call waits for its own end before
the next one starts. Results are recorded in the order of the calls. Each call goes
through its PreToolUse hooks (which may block it: the reason becomes the error
result the model sees; or modify its input) and the permission gate just before it
starts, and through its PostToolUse hooks as soon as it ends.

Hooks talk back (:mod:`tron_server.hooks.feedback`): a hook's context (a
UserPromptSubmit or SessionStart hook's output, ``additionalContext``) and a PostToolUse
hook's block reason are recorded as ``hook.context`` events, which the history turns
into user text: after the user's message, or after the call's ``tool.result``. When the
model stops, the Stop hooks (SubagentStop in a sub-agent) run before the run ends; one
that blocks sends the model on with its reason as the next input (``hook.context``, a
new turn; ``stop_hook_active`` true on the next Stop), at most
``max_stop_continuations`` times in a row. A hook answering ``{"continue": false}``
ends the run: no call starts after it (the calls not run get an error result), no
model call follows, and the run ends with stop reason ``hook_stopped``.

Abort cancels the LLM stream or the running tool (an anyio cancel scope) and
records what the turn got to: the partial assistant message marked
``interrupted`` (text and *complete* tool calls only: a thinking block is only
replayable with its signature, which arrives at the block's end, so partial
thinking is kept in ``partialThinking`` instead), an ``interrupted`` error result
for every tool_use that has none, ``notification.interrupted`` and
``stream.turn_end`` with stop reason ``aborted``. The next turn's history is then
valid without relying on reconstruction's repairs.

A provider failure (after the adapter's retries) records the partial message,
error results for its tool calls, ``error.provider`` and ``turn.failed``, then
``stream.turn_end`` with stop reason ``error``; the client gets ``agent.error``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import types
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio

from tron_events import AsyncEventStore, Session
from tron_events.messages import Message, TextBlock, ThinkingBlock, ToolUseBlock
from tron_llm import (
    Done,
    ErrorEvent,
    LLMError,
    LLMRequest,
    Provider,
    ReasoningLevel,
    TextDelta,
    ThinkingDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)

from ..browser.urls import UrlVerdict
from ..hooks.base import HookContext, HookDecision, HookEngine, HookEvent
from ..hooks.feedback import context_drafts
from ..hooks.guardrails import path_policy
from ..protocol import (
    AGENT_ERROR,
    AGENT_TEXT_DELTA,
    AGENT_THINKING_DELTA,
    AGENT_TOOL_END,
    AGENT_TOOL_OUTPUT,
    AGENT_TOOL_START,
    AGENT_TURN_END,
    AGENT_TURN_START,
    SESSION_NOTIFICATION,
    usage_json,
)
from ..tools.base import ToolContext, ToolRegistry, ToolResult
from ..workspace.editor import EditorFiles
from .context import HistoryCheckers, InvalidHistoryError, build_system_prompt, check_history
from .progress import TurnProgress
from .rules import SessionRules
from .writer import SessionWriter

if TYPE_CHECKING:
    from tron_events.reconstruct import SessionState

__all__ = [
    "ABORTED_RESULT",
    "HOOK_STOPPED",
    "SHUTDOWN_RESULT",
    "AgentRun",
    "Resume",
    "RunRequest",
    "RunResult",
    "ToolGate",
    "TurnDeps",
    "usage_json",
]

log = logging.getLogger("tron_server.agent")

ABORTED_RESULT = "Tool execution was interrupted by the user (the turn was aborted)."
#: The same when the server stopped the turn because it was shutting down (SIGTERM, Ctrl-C).
SHUTDOWN_RESULT = "Tool execution was interrupted: the server shut down (the turn was stopped)."
NOT_RUN_AFTER_ERROR = "Tool was not run: the model call failed before the turn could continue."
#: The stop reason of a run a hook ended (``{"continue": false}``).
HOOK_STOPPED = "hook_stopped"
#: Runs that end this way have nothing a Stop hook could send on.
_FINAL_STOPS = frozenset({"aborted", "suspended", "error", "blocked", "max_turns", HOOK_STOPPED})

T = TypeVar("T")

Notify = Callable[[str, dict[str, Any]], None]
"""(notification method, data) for this run's session; never blocks."""
#: An event to record: (type, payload).
Draft = tuple[str, dict[str, Any]]


class Resume(Protocol):
    """Finishes a turn a stopped run left waiting for the user (``interaction``'s resume)."""

    async def finish(self, run: AgentRun) -> tuple[str, bool]:
        """Record the answer and the turn's remaining tool results; (stop reason, whether
        the model is called again)."""
        ...


ToolGate = Callable[["AgentRun", ToolUseBlock, dict[str, Any], HookDecision],
                    Awaitable["ToolResult | None"]]  # fmt: skip
"""The permission check before a tool runs (after the PreToolUse hooks): None lets it run,
a result refuses it (the model sees it). It may wait for the user's approval."""


MemoryAtStart = Callable[[str, Path, "str | list[dict[str, Any]]"], Awaitable[list[Draft]]]
"""``(session_id, working_directory, prompt content)`` → events to record before the prompt."""

StopHooks = Callable[["AgentRun", "RunResult", bool],
                     Awaitable["tuple[HookEvent, HookDecision] | None"]]  # fmt: skip
"""``(run, result so far, stop_hook_active)`` → the event run (Stop or SubagentStop) and its
hooks' merged answer; None when none ran."""


@dataclass(frozen=True)
class RunRequest:
    """One ``agent.message`` to process."""

    session_id: str
    content: str | list[dict[str, Any]]
    reasoning_level: ReasoningLevel | None = None
    run_id: str = ""
    resume: Resume | None = None
    """First finish the turn a stopped run left waiting for the user (content may be empty)."""
    allowed_tools: tuple[str, ...] = ()
    """Permission rules allowed for this run only (a command file's ``allowed-tools``)."""
    model: str | None = None
    provider: str | None = None
    """The model (and its provider) for this run only (a command file's ``model``)."""
    before: tuple[Draft, ...] = ()
    """Events recorded in the same commit as, and just before, the user message."""
    #: At most this many LLM calls for this message (the server's limit still applies).
    max_turns: int | None = None


@dataclass
class RunResult:
    """How a run ended: ``stop_reason`` of the last turn (or aborted / error / blocked)."""

    turns: int = 0
    stop_reason: str = "end_turn"
    error: str | None = None


@dataclass
class TurnDeps:
    """What a run needs from the orchestrator."""

    store: AsyncEventStore
    providers: Callable[[str, str], Provider]
    tools: ToolRegistry
    hooks_for: Callable[[Path], HookEngine | None]
    home: Path
    max_turns: int = 50
    max_tokens: int | None = None
    before_turn: Callable[[AgentRun], Any] | None = None
    """Awaited before each LLM call (auto-compaction); returns nothing."""
    before_turn_idle: Callable[[AgentRun], bool] | None = None
    """Whether ``before_turn`` would do nothing now (no read, no record): then a run's
    rules files and its prompt's commit go in one worker-thread trip."""
    rules_for: Callable[[str, Path], SessionRules] | None = None
    """The session's rules files (AGENTS.md), kept across its runs."""
    concurrent_tools: frozenset[str] = frozenset()
    """Tools whose consecutive calls in one message run together (the Task tool)."""
    max_parallel_tools: int = 4
    gate: ToolGate | None = None
    """Permissions and approvals (:mod:`tron_server.interaction`)."""
    check_url: Callable[[str, str, str, str | None], Awaitable[UrlVerdict]] | None = None
    """``(session_id, tool, url, tool_call_id)`` → the permission verdict for a URL a tool
    reaches while it runs (redirects, a page's navigations); given to tools as
    ``ToolContext.check_url``."""
    editor_files: Callable[[str], EditorFiles | None] | None = None
    """``(session_id)`` → the session's file provider (an editor serving its buffers),
    given to tools as ``ToolContext.editor``; None: the disk."""
    session_start: Callable[[AgentRun], Awaitable[None]] | None = None
    """Awaited first in a run (the SessionStart hooks, whose context precedes the prompt)."""
    memory_at_start: MemoryAtStart | None = None
    """The events putting memory before a session's first message (``memory.loaded``),
    recorded in the same commit as, just before, the ``message.user``."""
    memory_started: Callable[[str], bool] | None = None
    """``(session_id)`` → whether ``memory_at_start`` answers nothing without reading
    (the session's start is behind it)."""
    on_stop: StopHooks | None = None
    """The Stop (SubagentStop) hooks, run when the model stops."""
    max_stop_continuations: int = 8
    """How many times in a row Stop hooks may send the model on (Claude Code's cap)."""
    history_checkers: HistoryCheckers = field(default_factory=HistoryCheckers)
    """The history check of each recent session, to go on from in its next model call
    (this run's or the next run's: the store hands the same messages over)."""


def _prompt_text(content: str | list[dict[str, Any]]) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(
        str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
    )


def _has_text_or_blocks(content: str | list[dict[str, Any]]) -> bool:
    return bool(content.strip()) if isinstance(content, str) else bool(content)


def _with_prompt(content: str | list[dict[str, Any]], prompt: str) -> str | list[dict[str, Any]]:
    """``content`` with its text replaced by a hook's modified prompt (images kept)."""
    if isinstance(content, str):
        return prompt
    others = [b for b in content if not (isinstance(b, dict) and b.get("type") == "text")]
    return [{"type": "text", "text": prompt}, *others]


class _Cancellable(Protocol):
    def cancel(self) -> Any: ...


class _AbortScope:
    """What an abort cancels around a stream or a hook step (``async with``): an asyncio
    time-out without a deadline that :meth:`cancel` expires at once. The server runs on
    asyncio, and anyio's CancelScope costs several times more, twice or three times per
    run (issue 29). The block ends quietly when it was cancelled; a TimeoutError of the
    work's own goes on."""

    __slots__ = ("timeout",)

    def __init__(self) -> None:
        self.timeout = asyncio.timeout(None)

    async def __aenter__(self) -> _AbortScope:
        await self.timeout.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: types.TracebackType | None,
    ) -> bool:
        try:
            await self.timeout.__aexit__(exc_type, exc, tb)
        except TimeoutError:
            if self.timeout.expired():
                return True  # the abort
            raise
        return False

    def cancel(self) -> None:
        # Only while its block runs (it is registered inside it) and once: an expired or
        # exited time-out cannot be moved again.
        if not self.timeout.expired():
            with contextlib.suppress(RuntimeError):
                self.timeout.reschedule(0)


@dataclass
class _Stream:
    """What one LLM call produced."""

    done: Done | None = None
    error: ErrorEvent | None = None
    text: dict[int, str] = field(default_factory=dict)
    thinking: dict[int, str] = field(default_factory=dict)
    tool_calls: dict[int, ToolCallEnd] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)

    def partial(self) -> Message | None:
        """Text and complete tool calls, in block order (for an interrupted message)."""
        blocks: list[Any] = []
        for index in sorted({*self.text, *self.tool_calls}):
            if index in self.text and self.text[index].strip():
                blocks.append(TextBlock(text=self.text[index]))
            elif index in self.tool_calls:
                call = self.tool_calls[index]
                blocks.append(ToolUseBlock(id=call.id, name=call.name, input=call.input))
        return Message(role="assistant", content=blocks) if blocks else None


class AgentRun:
    """Processes one :class:`RunRequest`; :meth:`abort` stops it within a second."""

    def __init__(
        self, deps: TurnDeps, request: RunRequest, writer: SessionWriter, notify: Notify
    ) -> None:
        self.deps = deps
        self.request = request
        self.writer = writer
        self.notify = notify
        self.session_id = request.session_id
        self.progress = TurnProgress()
        self.abort_requested = False
        #: Stopped because the server shuts down, not by the user (what the results say).
        self.shutting_down = False
        #: Stopped while waiting for the user (a server shutdown): nothing more is recorded,
        #: so the request stays pending in the events and can be answered later.
        self.suspended = False
        self.working_directory = Path(".")
        #: The session's row as the run started (read once, by the orchestrator).
        self.session: Session | None = None
        #: The state the writer synced to with that row; the run starts from it while
        #: nothing was recorded since (else it reads the state again).
        self.started_state: SessionState | None = None
        self.hooks: HookEngine | None = None
        #: (folder, hook engine) the SessionStart step looked up just before the first
        #: turn with nothing run since: the first turn takes it instead of looking again.
        self.start_hooks: tuple[Path, HookEngine | None] | None = None
        self._scope: _AbortScope | None = None
        self._tool_scopes: set[_Cancellable] = set()
        self.rules: SessionRules | None = None
        #: The tools of this run (the orchestrator narrows them for sub-agents).
        self.tools: ToolRegistry = deps.tools
        self.max_turns = deps.max_turns
        #: tool call id → id of its ``tool.call`` event (what a Task call's child records).
        self.tool_call_events: dict[str, str] = {}
        #: Why a hook ended the run (``{"continue": false}``); None while it goes on.
        self.stop_requested: str | None = None
        #: ``hook.context`` events to record with a call's result (its hooks' context).
        self._tool_contexts: dict[str, list[Draft]] = {}
        #: How long each call's tool ran (ms), for its ``tool.result``.
        self._durations: dict[str, float] = {}
        #: The system prompt of the last turn and what it was built from.
        self._system_cache: tuple[tuple[Any, ...], str] | None = None
        #: Context use as the loop saw it (``compaction.run_context_usage``): the model
        #: of the last turn's state, the last call's counted tokens (None: no call yet),
        #: and the contents of the results recorded after that call.
        self.context_model: str | None = None
        #: The run is over: nothing more may wait for its commits.
        self.ended = False
        self.last_call_tokens: int | None = None
        self.recorded_since_call: list[Any] = []
        #: The head a text reply of this run was committed at (its tokens are
        #: ``last_call_tokens``): while it stays the head, so is the context use.
        self.reply_head: str | None = None
        #: (head, model, tokens) of the context use an earlier run left at its end (the
        #: orchestrator's): the first check of this run reads nothing when the head is it.
        self.known_context: tuple[str, str, int] | None = None
        #: A text or thinking delta not sent yet: (method, turn, its parts). Deltas the
        #: stream gives in one step of this task (parsed from one network read) go as one
        #: notification, sent at the loop's next turn or before any other notification.
        self._held_delta: tuple[str, int, list[str]] | None = None

    # -- control ----------------------------------------------------------------------

    def abort(self, *, shutdown: bool = False) -> None:
        """Stop the stream or tool in progress; the run records the interruption (as the
        server's shutdown with ``shutdown``, else as the user's abort)."""
        self.abort_requested = True
        self.shutting_down = self.shutting_down or shutdown
        if self._scope is not None:
            self._scope.cancel()
        for scope in list(self._tool_scopes):
            scope.cancel()

    def suspend(self) -> None:
        """Stop like :meth:`abort`, recording nothing more (see ``suspended``)."""
        self.suspended = True
        self.abort()

    def notify_client(self, method: str, data: dict[str, Any]) -> None:
        """Send a notification about this run's session (never raises)."""
        self._emit(method, data)

    def _emit(self, method: str, data: dict[str, Any]) -> None:
        if self._held_delta is not None:
            self._flush_delta()
        try:
            self.notify(method, data)
        except Exception:  # a broken subscriber must never break the turn
            log.exception("notification %s failed", method)

    def _emit_delta(self, method: str, turn: int, text: str) -> None:
        """Queue a text/thinking delta: merged with the held one of the same kind and
        turn (one frame for the client instead of one per SSE event; issue 29)."""
        held = self._held_delta
        if held is not None:
            if held[0] == method and held[1] == turn:
                held[2].append(text)
                return
            self._flush_delta()
        self._held_delta = (method, turn, [text])
        try:
            asyncio.get_running_loop().call_soon(self._flush_delta)
        except RuntimeError:  # no asyncio loop (trio): no merging
            self._flush_delta()

    def _flush_delta(self) -> None:
        held, self._held_delta = self._held_delta, None
        if held is not None:
            self._emit(held[0], {"turn": held[1], "delta": "".join(held[2])})

    # -- the run ----------------------------------------------------------------------

    async def execute(self) -> RunResult:
        """Record the user message and loop over turns until the model stops; then the
        Stop hooks, which may send the model on."""
        try:
            if self.deps.session_start is not None:
                await self._abortable(self.deps.session_start(self))
            result = await self._run_message()
            await self._stop_hooks(result)
        except BaseException:
            self.ended = True
            self.writer.discard()  # recorded on a history this run no longer knows
            raise
        self.ended = True
        await self.writer.flush()
        return result

    def forget_context_usage(self) -> None:
        """The history changed under the loop (a compaction): the next context check
        reads the store."""
        self.last_call_tokens = None
        self.recorded_since_call = []

    async def _run_message(self) -> RunResult:
        state = self.started_state
        self.started_state = None
        if state is None or state.head_event_id != self.writer.head or self.writer.deferred:
            # Something was recorded since (the SessionStart hooks' context): read again.
            state = await self.writer.sync_state()
        self.working_directory = Path(state.working_directory)
        hint, self.start_hooks = self.start_hooks, None
        if hint is not None and hint[0] == self.working_directory:
            self.hooks = hint[1]
        else:
            self.hooks = self.deps.hooks_for(self.working_directory)
        content = self.request.content
        context: list[Draft] = []

        if self.hooks is not None and _has_text_or_blocks(content):
            decision = await self.hooks.run_blocking(
                HookContext(
                    event="UserPromptSubmit",
                    session_id=self.session_id,
                    working_directory=self.working_directory,
                    prompt=_prompt_text(content),
                )
            )
            if decision.action == "block":
                reason = decision.reason or "blocked by a UserPromptSubmit hook"
                self._emit(
                    AGENT_ERROR,
                    {"message": f"Message blocked: {reason}", "category": "blocked",
                     "retryable": False},
                )  # fmt: skip
                return RunResult(0, "blocked", reason)
            if decision.action == "modify" and decision.prompt is not None:
                content = _with_prompt(content, decision.prompt)
            context = context_drafts("UserPromptSubmit", decision)

        if self.deps.rules_for is not None:
            self.rules = self.deps.rules_for(self.session_id, self.working_directory)
            # The system prompt is built in the same trip, with the rules just loaded; the
            # first turn takes it when the stored prompt it was built from is the turn's.
            build = partial(self._build_system, state.system_prompt)
            if self._can_start_in_one_trip(state, content):
                first = await self._start_in_one_trip(state, content, context, build)
                if first is not None:
                    result = RunResult()
                    await self._loop(result, state.turn_count + 1, [], first)
                    return result
            else:
                files, self._system_cache = await self.rules.start_with(
                    self.deps.store, state.head_event_id, build
                )
                await self._record_rules(files)

        level = self.request.reasoning_level
        if level is not None and level != state.reasoning_level:
            await self.writer.append(
                "config.reasoning_level",
                {"previousLevel": state.reasoning_level, "newLevel": level},
            )
        result = RunResult()
        if self.request.resume is not None:
            result.stop_reason, go_on = await self.request.resume.finish(self)
            if self.abort_requested or (not go_on and not _has_text_or_blocks(content)):
                return result
            state = await self.deps.store.get_state_at_head(self.session_id)
        turn = state.turn_count + 1
        # Compact (when due) before the new prompt, so the prompt stays verbatim after it.
        await self._before_turn()
        prompt: list[Draft] = []
        if _has_text_or_blocks(content):
            memory: list[Draft] = []
            if self.deps.memory_at_start is not None:
                memory = await self.deps.memory_at_start(
                    self.session_id, self.working_directory, content
                )
            prompt = [*self.request.before, *memory,
                      ("message.user", {"content": content, "turn": turn}), *context]  # fmt: skip
        await self._loop(result, turn, prompt)
        return result

    def _can_start_in_one_trip(
        self, state: SessionState, content: str | list[dict[str, Any]]
    ) -> bool:
        """Whether nothing this run does between loading its rules files and committing its
        prompt would read or record anything (no level change, no pending request, no
        compaction due, no memory to put first, the recorded files restored), so that
        both go in one worker-thread trip (:meth:`_start_in_one_trip`)."""
        deps = self.deps
        level = self.request.reasoning_level
        return (
            self.rules is not None
            and self.rules.started
            and (level is None or level == state.reasoning_level)
            and self.request.resume is None
            and _has_text_or_blocks(content)
            and not self.abort_requested
            and self.stop_requested is None
            and self.max_turns > 0
            and (
                deps.before_turn is None
                or (deps.before_turn_idle is not None and deps.before_turn_idle(self))
            )
            and (
                deps.memory_at_start is None
                or (deps.memory_started is not None and deps.memory_started(self.session_id))
            )
        )

    async def _start_in_one_trip(
        self,
        state: SessionState,
        content: str | list[dict[str, Any]],
        context: list[Draft],
        build: Callable[[], tuple[tuple[Any, ...], str]],
    ) -> SessionState | None:
        """Load the rules files and build the system prompt, then, when no new rules file
        is to be recorded first, commit the prompt and the first turn's start, all in one
        trip: the state the commit made (the first turn goes on from it). None: a rules
        file was loaded, and recorded here; nothing else was (the run goes on as usual)."""
        assert self.rules is not None
        turn = state.turn_count + 1
        prompt: list[Draft] = [*self.request.before,
                               ("message.user", {"content": content, "turn": turn}), *context,
                               ("stream.turn_start", {"turn": turn})]  # fmt: skip
        rules = self.rules

        def first() -> tuple[bool, tuple[list[Any], tuple[tuple[Any, ...], str]]]:
            files, system = rules.initial_now(build)
            return not files, (files, system)

        self.progress.begin(turn)
        (files, self._system_cache), committed = await self.writer.append_many_and_state_after(
            first, prompt
        )
        if committed is None:
            await self._record_rules(files)
            return None
        return committed[1]

    async def _loop(
        self,
        result: RunResult,
        turn: int,
        prompt: list[Draft],
        started: SessionState | None = None,
    ) -> None:
        """Call the model (``prompt`` recorded with the first turn) until it stops;
        ``started``: the first turn's start is committed already (this is its state)."""
        while True:
            if self.stop_requested is not None:
                result.stop_reason = HOOK_STOPPED
                break
            if result.turns >= self.max_turns:
                result.stop_reason = "max_turns"
                break
            if result.turns:
                await self._before_turn()
            stop, go_on = await self._turn(turn, prompt, started)
            prompt, started = [], None
            result.turns += 1
            result.stop_reason = stop
            if not go_on:
                break
            turn += 1
        # The last turn's deferred results and end (the Stop hooks read the history).
        await self.writer.flush()

    async def _stop_hooks(self, result: RunResult) -> None:
        """Run the Stop (SubagentStop) hooks; while one blocks, the model goes on with its
        reason as the next input (at most ``max_stop_continuations`` times in a row)."""
        on_stop = self.deps.on_stop
        continued = 0
        while on_stop is not None and not self.abort_requested:
            if result.stop_reason in ("aborted", "suspended", HOOK_STOPPED):
                return
            outcome = await self._abortable(on_stop(self, result, continued > 0))
            if outcome is None or self.abort_requested:
                return
            event, decision = outcome
            drafts = context_drafts(event, decision, feedback=True)
            if decision.stop or not drafts or result.stop_reason in _FINAL_STOPS:
                return
            if continued >= self.deps.max_stop_continuations:
                body = (f"{event} hooks asked the agent to go on {continued} times in a row; "
                        "it stopped anyway. Check that they can be satisfied.")  # fmt: skip
                await self._tell_user(f"{event} hooks ignored", body, event)
                return
            continued += 1
            state = await self.deps.store.get_state_at_head(self.session_id)
            await self._loop(result, state.turn_count + 1, drafts)

    async def _tell_user(self, title: str, body: str, hook_event: str) -> None:
        """Record ``notification.user`` and tell the clients (``session.notification``)."""
        payload = {"title": title, "body": body, "urgency": "normal", "hookEvent": hook_event}
        await self.writer.append("notification.user", payload)
        self._emit(SESSION_NOTIFICATION, payload)

    async def _abortable(self, work: Awaitable[T]) -> T | None:
        """Await ``work`` so that an abort cancels it; None when it was cancelled."""
        async with _AbortScope() as scope:
            self._tool_scopes.add(scope)
            if self.abort_requested:
                scope.cancel()
            try:
                return await work
            finally:
                self._tool_scopes.discard(scope)
        return None

    async def _turn(
        self, turn: int, prompt: list[Draft] | None = None, started: SessionState | None = None
    ) -> tuple[str, bool]:
        """One LLM call and its tools; returns (stop reason, whether to call again).

        ``prompt`` (the user's message, on a run's first turn) is recorded in
        the same commit as ``stream.turn_start``; ``started``: both are committed already
        (the state that commit made)."""
        self.progress.begin(turn)
        if started is not None:
            state = started
        else:
            start: Draft = ("stream.turn_start", {"turn": turn})
            _, state = await self.writer.append_many_and_state([*(prompt or []), start])
        messages = state.messages
        self.context_model = state.model
        self._emit(AGENT_TURN_START, {"turn": turn})
        if self.abort_requested:
            return await self._finish_aborted(turn, None, _Stream(), Usage())
        try:
            # The session's checker, not one held by the run: a run outlives its call in
            # reference cycles, and the checker holds the history (dropped with the
            # session's caches when its last client leaves).
            checker = self.deps.history_checkers.get(self.session_id)
            check_history(self.session_id, messages, checker)
        except InvalidHistoryError as exc:
            return await self._finish_invalid(turn, exc)
        system = await self._system_prompt(state.system_prompt)
        model = self.request.model or state.model
        provider_name = self.request.provider or state.provider
        request = LLMRequest(
            model=model,
            messages=messages,
            system=system,
            tools=self.tools.specs(),
            reasoning=self.request.reasoning_level or state.reasoning_level,
            **({"max_tokens": self.deps.max_tokens} if self.deps.max_tokens else {}),
        )
        try:
            provider = self.deps.providers(provider_name, model)
        except ValueError as exc:  # unknown provider, missing endpoint: a config problem
            failed = LLMError(str(exc), provider=provider_name)
            stream = _Stream(error=ErrorEvent(error=failed))
        else:
            stream = await self._stream(provider, request)

        if stream.error is not None:
            return await self._finish_failed(turn, model, stream)
        message = stream.done.message if stream.done is not None else stream.partial()
        usage = stream.done.usage if stream.done is not None else Usage()
        if stream.done is None or self.abort_requested:
            return await self._finish_aborted(turn, message, stream, usage, model)

        done = stream.done
        uses = [b for b in done.message.content if isinstance(b, ToolUseBlock)]
        assistant = self._assistant_draft(
            turn, done.message, usage, done.stop_reason, done.model, stream
        )
        tokens = assistant[1]["tokenUsage"]
        self.last_call_tokens = int(tokens["inputTokens"] or 0) + int(tokens["outputTokens"] or 0)
        self.recorded_since_call = []
        if not uses:  # the turn is complete: one commit for the reply and its end
            await self.writer.append_many(
                [assistant, self._turn_end_draft(turn, done.stop_reason, usage)]
            )
            self.reply_head = self.writer.head
            self._emit_turn_end(turn, done.stop_reason, usage)
            return done.stop_reason, False
        # One commit for the reply and its calls, before any tool runs.
        await self._record_tool_calls(turn, uses, before=assistant)
        answered = await self._run_tools(turn, uses)
        if len(answered) < len(uses) or self.abort_requested:
            return await self._close_aborted(turn, uses, answered, usage)
        # The loop goes on: the turn's end is committed with the next turn's start (and
        # the last result), in one transaction.
        self.writer.defer(*self._turn_end_draft(turn, done.stop_reason, usage))
        self._emit_turn_end(turn, done.stop_reason, usage)
        return done.stop_reason, True

    async def _system_prompt(self, stored: str | None) -> str:
        """The turn's system prompt, built (files read: skills, in a thread) once per run
        and again only when what it is made of changed: the stored prompt, the rules
        loaded, the date. Every turn used to rebuild it."""
        cached = self._system_cache
        if cached is not None and cached[0] == self._system_key(stored):
            return cached[1]
        self._system_cache = await anyio.to_thread.run_sync(self._build_system, stored)
        return self._system_cache[1]

    def _system_key(self, stored: str | None) -> tuple[Any, ...]:
        """What the system prompt is made of (besides files read when it is built)."""
        rules = tuple(self.rules.loaded) if self.rules is not None else ()
        return (stored, rules, datetime.now().astimezone().date())

    def _build_system(self, stored: str | None) -> tuple[tuple[Any, ...], str]:
        """(its key, the system prompt): reads files, so in a worker thread."""
        key = self._system_key(stored)
        system = build_system_prompt(
            stored=stored,
            working_directory=self.working_directory,
            home=self.deps.home,
            rules=key[1],
        )
        return key, system

    async def _record_rules(self, files: list[Any]) -> None:
        if files and self.rules is not None:
            await self.writer.append("rules.loaded", self.rules.payload(files))

    async def _before_turn(self) -> None:
        if self.deps.before_turn is not None and not self.abort_requested:
            await self.deps.before_turn(self)

    # -- streaming --------------------------------------------------------------------

    async def _stream(self, provider: Provider, request: LLMRequest) -> _Stream:
        out = _Stream()
        async with _AbortScope() as scope:
            self._scope = scope
            if self.abort_requested:
                scope.cancel()
            events = provider.stream(request)
            try:
                async for event in events:
                    self._on_stream_event(out, event)
            finally:
                self._scope = None
                self._flush_delta()  # what streamed is sent before what follows it
                # Close the HTTP stream now (not when the generator is collected), also
                # when aborted: shielded, so the close itself is not cancelled. An async
                # generator that ran to its end has nothing left to close (and a timed,
                # shielded scope per turn is not free).
                finished = isinstance(events, types.AsyncGeneratorType) and events.ag_frame is None
                aclose = getattr(events, "aclose", None)
                if aclose is not None and not finished:
                    with anyio.move_on_after(2, shield=True):
                        await aclose()
        return out

    def _on_stream_event(self, out: _Stream, event: Any) -> None:
        turn = self.progress.turn
        if isinstance(event, TextDelta):
            out.text[event.index] = out.text.get(event.index, "") + event.text
            self.progress.text += event.text
            self._emit_delta(AGENT_TEXT_DELTA, turn, event.text)
        elif isinstance(event, ThinkingDelta):
            out.thinking[event.index] = out.thinking.get(event.index, "") + event.thinking
            self.progress.thinking += event.thinking
            self._emit_delta(AGENT_THINKING_DELTA, turn, event.thinking)
        elif isinstance(event, ToolCallStart):
            self.progress.tool(event.id, event.name)
        elif isinstance(event, ToolCallEnd):
            out.tool_calls[event.index] = event
            self.progress.tool(event.id, event.name).arguments = event.input
        elif isinstance(event, Done):
            out.done = event
        elif isinstance(event, ErrorEvent):
            out.error = event

    # -- recording --------------------------------------------------------------------

    @staticmethod
    def _assistant_draft(
        turn: int,
        message: Message,
        usage: Usage,
        stop_reason: str,
        model: str,
        stream: _Stream,
        *,
        interrupted: bool = False,
    ) -> Draft:
        payload: dict[str, Any] = {
            "content": message.to_payload(),
            "turn": turn,
            "tokenUsage": usage.to_payload(),
            "stopReason": stop_reason,
            "model": model,
            "latency": round((time.monotonic() - stream.started) * 1000, 1),
        }
        if interrupted:
            payload["interrupted"] = True
            signed = any(isinstance(b, ThinkingBlock) for b in message.content)
            thinking = "".join(stream.thinking[i] for i in sorted(stream.thinking))
            if thinking and not signed:
                payload["partialThinking"] = thinking
        return ("message.assistant", payload)

    async def _record_interrupted(
        self,
        turn: int,
        message: Message | None,
        usage: Usage,
        stop_reason: str,
        model: str,
        stream: _Stream,
    ) -> list[ToolUseBlock]:
        """Record the part of a reply a cut stream left (if any) and its tool
        calls; returns those calls (none were run)."""
        if message is None or not message.content:
            return []
        uses = [b for b in message.content if isinstance(b, ToolUseBlock)]
        draft = self._assistant_draft(
            turn, message, usage, stop_reason, model, stream, interrupted=True
        )
        await self._record_tool_calls(turn, uses, before=draft)
        return uses

    async def _record_tool_calls(
        self, turn: int, uses: list[ToolUseBlock], before: Draft | None = None
    ) -> None:
        """Record the ``tool.call`` events (after ``before``, the reply, in one commit)."""
        calls: list[Draft] = [("tool.call", self._call_payload(u, turn)) for u in uses]
        events = await self.writer.append_many([before, *calls] if before else calls)
        for use, event in zip(uses, events[len(events) - len(uses) :], strict=True):
            self.tool_call_events[use.id] = event.id

    def _call_payload(self, use: ToolUseBlock, turn: int) -> dict[str, Any]:
        """A ``tool.call``, with what the tool adds (an MCP tool: its server's name)."""
        tool = self.tools.get(use.name)
        extra = tool.record_fields() if tool is not None else {}
        return {"toolCallId": use.id, "name": use.name, "arguments": use.input, "turn": turn,
                **extra}  # fmt: skip

    async def _record_error_results(self, uses: list[ToolUseBlock], text: str) -> None:
        """An interrupted error result per call: what a call that was running printed
        so far, then ``text``; just ``text`` for one that never ran."""
        await self.writer.append_many(
            [
                ("tool.result", {"toolCallId": u.id, "content": self._partial(u.id, text),
                                 "isError": True, "interrupted": True})
                for u in uses
            ]
        )  # fmt: skip

    def _partial(self, tool_call_id: str, note: str) -> str:
        call = self.progress.tool_calls.get(tool_call_id)
        return call.interrupted_content(note) if call is not None else note

    async def _turn_end(self, turn: int, stop_reason: str, usage: Usage) -> None:
        await self.writer.append(*self._turn_end_draft(turn, stop_reason, usage))
        self._emit_turn_end(turn, stop_reason, usage)

    @staticmethod
    def _turn_end_draft(turn: int, stop_reason: str, usage: Usage) -> Draft:
        return (
            "stream.turn_end",
            {"turn": turn, "stopReason": stop_reason, "tokenUsage": usage.to_payload(),
             "cost": usage.cost_usd},
        )  # fmt: skip

    def _emit_turn_end(self, turn: int, stop_reason: str, usage: Usage) -> None:
        self._emit(
            AGENT_TURN_END,
            {"turn": turn, "stopReason": stop_reason, "usage": usage_json(usage),
             "cost": usage.cost_usd},
        )  # fmt: skip

    async def _finish_aborted(
        self,
        turn: int,
        message: Message | None,
        stream: _Stream,
        usage: Usage,
        model: str | None = None,
    ) -> tuple[str, bool]:
        """The stream was cut (or never started): record what there is, then close."""
        uses = await self._record_interrupted(turn, message, usage, "aborted", model or "", stream)
        return await self._close_aborted(turn, uses, set(), usage)

    async def _close_aborted(
        self, turn: int, uses: list[ToolUseBlock], answered: set[str], usage: Usage
    ) -> tuple[str, bool]:
        if self.suspended:  # the waiting request stays pending; the turn is finished later
            return "suspended", False
        unanswered = [u for u in uses if u.id not in answered]
        await self._record_error_results(unanswered, self._interrupted_note())
        for u in unanswered:
            self._emit_cut(turn, u)
        reason = "the server shut down" if self.shutting_down else "aborted by the user"
        await self.writer.append("notification.interrupted", {"turn": turn, "reason": reason})
        await self._turn_end(turn, "aborted", usage)
        return "aborted", False

    def _interrupted_note(self) -> str:
        """What a cut tool's result says: the user aborted, or the server shut down."""
        return SHUTDOWN_RESULT if self.shutting_down else ABORTED_RESULT

    def _emit_cut(self, turn: int, use: ToolUseBlock) -> None:
        """The card of a call cut while running keeps its output (``agent.tool_end``)."""
        call = self.progress.tool_calls.get(use.id)
        if call is not None and call.status == "error":
            self._emit(
                AGENT_TOOL_END,
                {"turn": turn, "toolCallId": use.id, "name": use.name, "isError": True,
                 "content": self._partial(use.id, self._interrupted_note()),
                 "interrupted": True},
            )  # fmt: skip

    async def _finish_failed(self, turn: int, model: str, stream: _Stream) -> tuple[str, bool]:
        assert stream.error is not None
        error = stream.error.error
        usage = stream.error.usage
        message = stream.error.message or stream.partial()
        uses = await self._record_interrupted(turn, message, usage, "error", model, stream)
        await self._record_error_results(uses, NOT_RUN_AFTER_ERROR)
        category = getattr(error, "category", "provider")
        retryable = bool(getattr(error, "retryable", False))
        text = error.message if isinstance(error, LLMError) else str(error)
        info: dict[str, Any] = {
            "turn": turn,
            "message": text,
            "category": category,
            "retryable": retryable,
            "model": model,
        }
        if isinstance(error, LLMError):
            info |= {"provider": error.provider, "statusCode": error.status_code,
                     "errorType": error.error_type}  # fmt: skip
        await self.writer.append_many(
            [
                ("error.provider", info),
                ("turn.failed", {"turn": turn, "error": text, "category": category,
                                 "recoverable": retryable}),
            ]
        )  # fmt: skip
        await self._turn_end(turn, "error", usage)
        self._emit(AGENT_ERROR, {"message": text, "category": category, "retryable": retryable})
        return "error", False

    async def _finish_invalid(self, turn: int, exc: InvalidHistoryError) -> tuple[str, bool]:
        violations = [
            {"index": v.index, "rule": v.rule, "detail": v.detail} for v in exc.violations
        ]
        await self.writer.append_many(
            [
                ("error.agent", {"turn": turn, "message": str(exc), "violations": violations}),
                ("turn.failed", {"turn": turn, "error": str(exc), "category": "internal",
                                 "recoverable": False}),
            ]
        )  # fmt: skip
        await self._turn_end(turn, "error", Usage())
        self._emit(AGENT_ERROR, {"message": str(exc), "category": "internal", "retryable": False})
        return "error", False

    # -- tools ------------------------------------------------------------------------

    async def _run_tools(self, turn: int, uses: list[ToolUseBlock]) -> set[str]:
        """Run the calls (see the module docstring: concurrent ones overlap, the others
        go one after another) and record their results in call order, each as soon as it
        and those before it are done; after an abort, a call cut or never started gets an
        interrupted result and one that finished keeps its own. The ids answered (all of
        them, unless the run was suspended)."""
        answered: set[str] = set()
        limiter = anyio.CapacityLimiter(max(1, self.deps.max_parallel_tools))
        outcomes: dict[int, tuple[ToolResult | None, float]] = {}
        finished = [anyio.Event() for _ in uses]

        async def start(k: int, use: ToolUseBlock) -> None:
            if not self.abort_requested and self.stop_requested is None:
                started = time.monotonic()
                outcomes[k] = (await self._run_tool(turn, use), started)

        async def run_one(k: int, use: ToolUseBlock, concurrent: bool) -> None:
            try:
                if concurrent:
                    async with limiter:
                        await start(k, use)
                else:
                    await start(k, use)
            except Exception as exc:
                fail(exc)
            finally:
                finished[k].set()

        async def record_in_order() -> None:
            try:
                for k, use in enumerate(uses):
                    await finished[k].wait()
                    result, started = outcomes.get(k, (None, 0.0))
                    if result is None and self.suspended:
                        return  # nothing more is recorded: the request stays pending
                    if result is None and self.abort_requested:
                        # Cut (or never started); the calls after it that finished keep
                        # their results.
                        await self._record_error_results([use], self._interrupted_note())
                        self._emit_cut(turn, use)
                    else:
                        if result is None:  # a hook stopped the agent before it started
                            result, started = self._not_run(), time.monotonic()
                        # The turn's last result goes with the next commit (the turn's
                        # end and the next turn's start) unless the run stops.
                        last = k == len(uses) - 1 and not self.abort_requested
                        await self._record_result(turn, use, result, started, defer=last)
                    answered.add(use.id)
                    recorded[k].set()
            except Exception as exc:
                fail(exc)
            finally:
                for event in recorded:
                    event.set()

        failures: list[Exception] = []

        def fail(exc: Exception) -> None:
            # A store failure (a ConcurrencyConflict: someone moved the head) stops every
            # call, and reaches the caller as itself, not wrapped in an exception group.
            failures.append(exc)
            tg.cancel_scope.cancel()

        recorded = [anyio.Event() for _ in uses]
        async with anyio.create_task_group() as tg:
            tg.start_soon(record_in_order)
            for k, use in enumerate(uses):
                if use.name in self.deps.concurrent_tools:
                    tg.start_soon(run_one, k, use, True)
                    continue
                await run_one(k, use, False)
                if all(finished[j].is_set() for j in range(k)):
                    # Nothing before it still runs: its result (and what it recorded) come
                    # before the next call's events, in the order of reference 004.
                    await recorded[k].wait()
        if failures:
            raise failures[0]
        return answered

    def _not_run(self) -> ToolResult:
        reason = self.stop_requested or "a hook stopped the agent"
        return ToolResult(content=f"Tool was not run: a hook stopped the agent ({reason}).",
                          is_error=True)  # fmt: skip

    async def _record_result(
        self,
        turn: int,
        use: ToolUseBlock,
        result: ToolResult,
        started: float,
        *,
        defer: bool = False,
    ) -> None:
        """Record a finished call's result (with its hooks' context), tell the clients;
        ``defer``: with the writer's next commit."""
        duration = self._durations.pop(use.id, None)
        if duration is None:
            duration = round((time.monotonic() - started) * 1000, 1)
        payload: dict[str, Any] = {
            "toolCallId": use.id,
            "content": result.content,
            "isError": result.is_error,
            "duration": duration,
        }
        if result.details:
            payload["details"] = result.details
        context = self._tool_contexts.pop(use.id, [])
        if defer:
            for draft in [("tool.result", payload), *context]:
                self.writer.defer(*draft)
        else:
            await self.writer.append_many([("tool.result", payload), *context])
        self.recorded_since_call.append(result.content)
        if self.rules is not None:
            await self._record_rules(await self.rules.touched(use.input))
        call = self.progress.tool(use.id, use.name)
        call.status = "error" if result.is_error else "done"
        self._emit(
            AGENT_TOOL_END,
            {"turn": turn, "toolCallId": use.id, "name": use.name, "isError": result.is_error,
             "content": result.content, "durationMs": duration},
        )  # fmt: skip

    def _hook_context(
        self,
        event: HookEvent,
        use: ToolUseBlock,
        turn: int,
        arguments: dict[str, Any],
        result: ToolResult | None = None,
    ) -> HookContext:
        response = None if result is None else {"content": result.content,
                                                "isError": result.is_error}  # fmt: skip
        return HookContext(
            event=event,
            session_id=self.session_id,
            working_directory=self.working_directory,
            tool_name=use.name,
            tool_input=arguments,
            tool_result=response,
            data={"toolCallId": use.id, "turn": turn},
        )

    def _hook_answer(self, event: HookEvent, use: ToolUseBlock, decision: HookDecision) -> None:
        """Keep what a tool hook said for the model (recorded with the call's result) and
        whether it stopped the agent."""
        feedback = event == "PostToolUse"
        drafts = context_drafts(event, decision, feedback=feedback, tool_call_id=use.id)
        if drafts:
            self._tool_contexts.setdefault(use.id, []).extend(drafts)
        if decision.stop and self.stop_requested is None:
            self.stop_requested = decision.stop_reason or decision.reason or f"a {event} hook"

    async def _run_tool(self, turn: int, use: ToolUseBlock) -> ToolResult | None:
        """PreToolUse hooks, the permission gate, the tool, then its PostToolUse hooks,
        inside the abort scope; None when aborted."""
        call = self.progress.tool(use.id, use.name)
        call.arguments = use.input
        call.status = "running"
        self._emit(
            AGENT_TOOL_START,
            {"turn": turn, "toolCallId": use.id, "name": use.name, "arguments": use.input},
        )

        def on_output(chunk: str) -> None:
            call.add_output(chunk)
            self._emit(AGENT_TOOL_OUTPUT, {"turn": turn, "toolCallId": use.id, "chunk": chunk})

        async def record(event_type: str, payload: dict[str, Any]) -> None:
            await self.writer.append(event_type, payload)

        result: ToolResult | None = None
        with anyio.CancelScope() as scope:
            # One scope per running tool: several Task calls run at once.
            self._tool_scopes.add(scope)
            if self.abort_requested:
                scope.cancel()
            try:
                arguments = use.input
                decision = HookDecision()
                if self.hooks is not None:
                    decision = await self.hooks.run_blocking(
                        self._hook_context("PreToolUse", use, turn, use.input)
                    )
                    self._hook_answer("PreToolUse", use, decision)
                    if decision.action == "block":
                        reason = decision.reason or "blocked by a PreToolUse hook"
                        return ToolResult(content=f"Tool call blocked: {reason}", is_error=True)
                    if decision.action in ("modify", "ask") and decision.tool_input is not None:
                        arguments = decision.tool_input
                if self.deps.gate is not None:
                    refused = await self.deps.gate(self, use, arguments, decision)
                    if refused is not None:
                        return refused
                ctx = ToolContext(
                    session_id=self.session_id,
                    working_directory=self.working_directory,
                    tool_call_id=use.id,
                    on_output=on_output,
                    record=record,
                    # The tools enforce the guardrails' write policy when they write.
                    paths=path_policy(self.hooks, self.working_directory),
                    check_url=(
                        partial(self.deps.check_url, self.session_id)
                        if self.deps.check_url is not None
                        else None
                    ),
                    editor=(
                        self.deps.editor_files(self.session_id)
                        if self.deps.editor_files is not None
                        else None
                    ),
                )
                started = time.monotonic()
                result = await self.tools.execute(use.name, arguments, ctx)
                self._durations[use.id] = round((time.monotonic() - started) * 1000, 1)
                if self.hooks is not None:
                    after = await self.hooks.run_now(
                        self._hook_context("PostToolUse", use, turn, arguments, result)
                    )
                    self._hook_answer("PostToolUse", use, after)
            finally:
                self._tool_scopes.discard(scope)
        if result is None:
            call.status = "error"
        return result
