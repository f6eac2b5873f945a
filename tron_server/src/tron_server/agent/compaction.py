"""Context use and compaction (issue 7 §5).

*Context use* is what the next LLM call would send: the input plus output tokens of
the last call since the latest compaction (what the provider counted), plus an
estimate (4 characters a token) of anything recorded after it; with no call yet,
an estimate of the whole history. The window comes from ``tron_llm.catalog``
(128k for models it does not know).

*Compaction* summarizes the history with the session's own model — one
non-streaming ``complete()`` call over a plain-text transcript (so any provider
takes it: no tool definitions or thinking signatures needed) — and records
``compact.boundary {originalTokens, compactedTokens, reason, model}`` then
``compact.summary {summary, boundaryEventId, originalTokens, compactedTokens}``.
Reconstruction afterwards starts from the summary; the raw events stay stored,
searchable and forkable. A blocking ``PreCompact`` hook may refuse it. With memory on,
a handoff of the compacted part and the ledger brought up to date follow
(:mod:`.session_memory`), then the ledger is put before the fresh history again.

It runs on ``context.compact``, for ``context.previewCompaction`` without
recording anything, and automatically before a turn when the context use passes
``auto_compact_threshold`` of the window.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from tron_events import AsyncEventStore, Event, Session
from tron_events.messages import (
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from tron_llm import LLMError, LLMRequest, Provider
from tron_llm.catalog import get_model

from ..errors import InvalidOperationError, ProviderError
from ..hooks.base import HookContext, HookEngine
from ..protocol import AGENT_COMPACTED, AGENT_ERROR

if TYPE_CHECKING:
    from .turn import AgentRun
    from .writer import SessionWriter

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "CompactionHost",
    "CompactionResult",
    "ContextUsage",
    "NothingToCompact",
    "compact_session",
    "context_usage",
    "estimate_tokens",
    "known_context_usage",
    "maybe_auto_compact",
    "render_transcript",
]

log = logging.getLogger("tron_server.agent")

DEFAULT_CONTEXT_WINDOW = 128_000
CHARS_PER_TOKEN = 4
MIN_MESSAGES = 2
"""Fewer messages than this: nothing worth compacting."""
TRANSCRIPT_PART_CHARS = 4_000
"""Each tool input/result is cut to this in the transcript (the summary needs the gist)."""
SUMMARY_MAX_TOKENS = 4_096

SUMMARY_SYSTEM = (
    "You summarize a coding session between a user and an AI coding agent so the agent can "
    "continue the work with only your summary as context. Be specific and complete; never "
    "invent anything."
)
SUMMARY_INSTRUCTIONS = (
    "Summarize the conversation above for the agent that will continue it. Include:\n"
    "1. The user's goals and requests, with their exact constraints and preferences.\n"
    "2. What was done: files read, created or edited (with paths), commands run and "
    "their important results, decisions taken and why.\n"
    "3. Errors met and how they were resolved (or not).\n"
    "4. The current state of the work and the immediate next step; quote the user's latest "
    "request verbatim.\n"
    "Write the summary only, no preamble."
)


class NothingToCompact(InvalidOperationError):
    """The session has too little history for a summary to help."""


@dataclass(frozen=True)
class ContextUsage:
    """How full the session's context is."""

    model: str
    context_window: int
    used_tokens: int

    @property
    def percent(self) -> float:
        return (
            round(100.0 * self.used_tokens / self.context_window, 2) if self.context_window else 0.0
        )


@dataclass(frozen=True)
class CompactionResult:
    """A summary and what it saves (``recorded``: whether the events were appended)."""

    summary: str
    tokens_before: int
    tokens_after: int
    recorded: bool = False
    boundary_event_id: str | None = None
    summary_event_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "summary": self.summary,
            "tokensBefore": self.tokens_before,
            "tokensAfter": self.tokens_after,
        }


def context_window(model: str) -> int:
    """The model's context window from the catalog (128k when unknown)."""
    info = get_model(model)
    return info.context_window if info is not None else DEFAULT_CONTEXT_WINDOW


def estimate_tokens(value: Any) -> int:
    """A rough token count of JSON-able content (4 characters a token)."""
    if isinstance(value, str):
        return len(value) // CHARS_PER_TOKEN
    if isinstance(value, Message):
        value = value.to_payload()
    return len(json.dumps(value, ensure_ascii=False, default=str)) // CHARS_PER_TOKEN


def _used_tokens(path: list[Event], messages: list[Message]) -> int:
    """Tokens the next call would send (see the module docstring)."""
    last_call = -1
    for i in range(len(path) - 1, -1, -1):
        kind = path[i].type
        if kind in ("compact.summary", "context.cleared"):
            break
        if kind == "message.assistant" and isinstance(path[i].payload.get("tokenUsage"), dict):
            last_call = i
            break
    if last_call < 0:
        return sum(estimate_tokens(m) for m in messages)
    usage = path[last_call].payload["tokenUsage"]
    counted = int(usage.get("inputTokens") or 0) + int(usage.get("outputTokens") or 0)
    after = sum(
        estimate_tokens(e.payload.get("content", ""))
        for e in path[last_call + 1 :]
        if e.type in ("message.user", "tool.result", "message.assistant")
    )
    return counted + after


async def context_usage(store: AsyncEventStore, session_id: str) -> ContextUsage:
    """The session's context use at its head."""
    state = await store.get_state_at_head(session_id)
    path = await store.get_ancestors(state.head_event_id)
    return ContextUsage(
        state.model, context_window(state.model), _used_tokens(path, state.messages)
    )


def run_context_usage(run: AgentRun) -> ContextUsage | None:
    """:func:`context_usage` from what the running loop saw, without reading the store:
    its last call's counted tokens plus an estimate of the results recorded after it
    (the same figure: nothing else the estimate counts is recorded between a call and
    the next turn). None before the run's first model call."""
    if run.context_model is None or run.last_call_tokens is None:
        return None
    after = sum(estimate_tokens(content) for content in run.recorded_since_call)
    model = run.context_model
    return ContextUsage(model, context_window(model), run.last_call_tokens + after)


def known_context_usage(run: AgentRun) -> ContextUsage | None:
    """The context use an earlier run of the session left at its end
    (``AgentRun.known_context``: its text reply's counted tokens), when the head is still
    the one it was measured at and nothing waits to be committed; None otherwise."""
    known = run.known_context
    if known is None or known[0] != run.writer.head or run.writer.deferred:
        return None
    _head, model, tokens = known
    return ContextUsage(model, context_window(model), tokens)


def _cut(text: str, limit: int = TRANSCRIPT_PART_CHARS) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} more characters]"


def _result_text(block: ToolResultBlock) -> str:
    if isinstance(block.content, str):
        return block.content
    return "\n".join(p.text if isinstance(p, TextBlock) else "[image]" for p in block.content)


def render_transcript(messages: list[Message]) -> str:
    """The history as plain text for the summarizer."""
    lines: list[str] = []
    for message in messages:
        who = "User" if message.role == "user" else "Assistant"
        for block in message.content:
            if isinstance(block, TextBlock):
                lines.append(f"{who}: {block.text}")
            elif isinstance(block, ThinkingBlock):
                lines.append(f"Assistant (thinking): {_cut(block.thinking, 1_000)}")
            elif isinstance(block, ToolUseBlock):
                lines.append(
                    f"Assistant called tool {block.name} ({block.id}) with "
                    f"{_cut(json.dumps(block.input, ensure_ascii=False))}"
                )
            elif isinstance(block, ToolResultBlock):
                status = "error" if block.is_error else "result"
                lines.append(f"Tool {status} ({block.tool_use_id}): {_cut(_result_text(block))}")
            elif isinstance(block, ImageBlock):
                lines.append(f"{who}: [image]")
            elif isinstance(block, RedactedThinkingBlock):
                continue
    return "\n\n".join(lines)


async def _head_past_hook_records(store: AsyncEventStore, session: Session) -> str:
    """The head to append on: past what the PreCompact hooks recorded since ``session`` was
    read (``hook.*``, ``notification.user``), which does not make the summary stale; after
    anything else, the head that was read (the append then reports the conflict)."""
    head = await store.get_event(session.head_event_id)
    if head is None:
        return session.head_event_id
    later = await store.get_events(session.id, after_sequence=head.sequence)
    if later and all(e.type.startswith("hook.") or e.type == "notification.user" for e in later):
        return later[-1].id
    return session.head_event_id


class CompactionHost(Protocol):
    """What compaction uses of the orchestrator (which satisfies it)."""

    @property
    def store(self) -> AsyncEventStore: ...

    @property
    def auto_compact_threshold(self) -> float | None: ...

    def providers(self, provider: str, model: str) -> Provider: ...

    def hooks_for(self, working_directory: Path) -> HookEngine | None: ...

    async def context_reset(self, session_id: str, source: str) -> None: ...

    async def remember_compaction(
        self,
        session_id: str,
        messages: list[Message],
        through: str,
        writer: SessionWriter | None,
    ) -> None: ...


async def compact_session(
    orchestrator: CompactionHost,
    session_id: str,
    *,
    record: bool,
    reason: str = "manual",
    writer: SessionWriter | None = None,
    instructions: str | None = None,
) -> CompactionResult:
    """Summarize the session's history; append the compaction events when ``record``.

    ``writer`` is the running loop's writer (auto-compaction inside a turn); without
    one the events are appended with ``expected_head`` = the head read here.
    ``instructions`` (``/compact keep the API decisions``) are added to the summary prompt.
    Raises :class:`InvalidOperationError` (nothing to compact, refused by a hook) and
    :class:`ProviderError` (the summary call failed).
    """
    store = orchestrator.store
    session = await store.get_session(session_id)
    state = await store.get_state_at_head(session_id)
    path = await store.get_ancestors(session.head_event_id)
    messages = state.messages
    if len(messages) < MIN_MESSAGES:
        raise NothingToCompact(
            f"session {session_id!r} has too little history to compact ({len(messages)} message(s))"
        )
    tokens_before = _used_tokens(path, messages)
    expected = session.head_event_id
    working_directory = Path(state.working_directory)
    hooks = orchestrator.hooks_for(working_directory)
    if hooks is not None:
        decision = await hooks.run_blocking(
            HookContext(
                event="PreCompact",
                session_id=session_id,
                working_directory=working_directory,
                data={
                    "trigger": reason,
                    "custom_instructions": instructions or "",
                    "tokensBefore": tokens_before,
                },
            )
        )
        if decision.action == "block":
            raise InvalidOperationError(
                f"compaction refused by a PreCompact hook: {decision.reason or 'blocked'}"
            )
        if writer is None:
            expected = await _head_past_hook_records(store, session)

    request = LLMRequest(
        model=state.model,
        system=SUMMARY_SYSTEM,
        messages=[
            Message(
                role="user",
                content=[
                    TextBlock(
                        text=f"<conversation>\n{render_transcript(messages)}\n</conversation>"
                        f"\n\n{SUMMARY_INSTRUCTIONS}"
                        + (f"\n\nAlso: {instructions.strip()}" if instructions else "")
                    )
                ],
            )
        ],
        max_tokens=SUMMARY_MAX_TOKENS,
    )
    try:
        provider = orchestrator.providers(state.provider, state.model)
        done = await provider.complete(request)
    except LLMError as exc:
        raise ProviderError(
            f"the summary call failed: {exc.message}",
            {"providerCategory": exc.category},
            retryable=exc.retryable,
        ) from exc
    except ValueError as exc:
        raise ProviderError(f"the summary call failed: {exc}") from exc
    summary = "\n".join(
        b.text for b in done.message.content if isinstance(b, TextBlock) and b.text.strip()
    ).strip()
    if not summary:
        raise ProviderError("the model returned an empty summary; nothing was compacted")
    tokens_after = estimate_tokens(summary)
    result = CompactionResult(summary, tokens_before, tokens_after)
    if not record:
        return result

    boundary = {"originalTokens": tokens_before, "compactedTokens": tokens_after,
                "reason": reason, "model": state.model}  # fmt: skip
    if writer is not None:
        boundary_event = await writer.append("compact.boundary", boundary)
        summary_event = await writer.append(
            "compact.summary",
            {"summary": summary, "boundaryEventId": boundary_event.id,
             "originalTokens": tokens_before, "compactedTokens": tokens_after},
        )  # fmt: skip
    else:
        [boundary_event] = [await store.append(
            session_id, "compact.boundary", boundary, expected_head=expected
        )]  # fmt: skip
        summary_event = await store.append(
            session_id,
            "compact.summary",
            {"summary": summary, "boundaryEventId": boundary_event.id,
             "originalTokens": tokens_before, "compactedTokens": tokens_after},
            expected_head=boundary_event.id,
        )  # fmt: skip
    log.info(
        "compacted session %s (%s): %d → %d tokens", session_id, reason, tokens_before, tokens_after
    )
    # The handoff of the part just compacted and the ledger brought up to date (memory),
    # then SessionStart hooks and the ledger again for the fresh history.
    await orchestrator.remember_compaction(session_id, messages, path[-1].id, writer)
    await orchestrator.context_reset(session_id, "compact")
    return CompactionResult(
        summary, tokens_before, tokens_after, True, boundary_event.id, summary_event.id
    )


def auto_compact_idle(orchestrator: CompactionHost, run: AgentRun) -> bool:
    """Whether :func:`maybe_auto_compact` would return now without reading or recording
    anything: no threshold, or a context use known without the store below it."""
    threshold = orchestrator.auto_compact_threshold
    if threshold is None or threshold <= 0:
        return True
    usage = run_context_usage(run) or known_context_usage(run)
    return usage is not None and usage.used_tokens < threshold * usage.context_window


async def maybe_auto_compact(orchestrator: CompactionHost, run: AgentRun) -> None:
    """Compact before a turn when the context use passes the threshold.

    A failure is logged and notified, and the turn goes on uncompacted (the provider
    may still take it; if not, its error says the context is too long)."""
    threshold = orchestrator.auto_compact_threshold
    if threshold is None or threshold <= 0:
        return
    usage = run_context_usage(run) or known_context_usage(run)
    if usage is None:  # no model call in this run yet: from the store
        usage = await context_usage(orchestrator.store, run.session_id)
    if usage.used_tokens < threshold * usage.context_window:
        return
    # The compaction reads the history: the turn's results must be in it.
    await run.writer.flush()
    try:
        result = await compact_session(
            orchestrator, run.session_id, record=True, reason="auto", writer=run.writer
        )
    except NothingToCompact:
        return
    except (InvalidOperationError, ProviderError) as exc:
        log.warning("auto-compaction of %s failed: %s", run.session_id, exc)
        message = f"automatic compaction failed: {exc.message}"
        run.notify_client(
            AGENT_ERROR,
            {"message": message, "category": exc.category, "retryable": exc.retryable},
        )
        return
    run.forget_context_usage()  # the history changed: the next check reads it
    run.notify_client(
        AGENT_COMPACTED,
        {"tokensBefore": result.tokens_before, "tokensAfter": result.tokens_after,
         "reason": "auto"},
    )  # fmt: skip
