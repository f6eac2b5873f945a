"""Handoffs: episodic memory, the original Tron's ``Handoff`` as ``memory.handoff`` events.

A handoff is made by a side call over a session's transcript (:mod:`.sidecall`) whose
reply is one forced tool call: the tool's input schema is the handoff
(:func:`memory_tool`), so every provider returns the fields typed. :func:`parse_reply`
turns the reply into the event's payload; a reply that does not fit the schema keeps what
it can as a summary-only handoff (``complete: false``), never dropping it.

At session start the handoffs of the workspace most relevant to the first prompt are put
before it (:func:`relevant_handoffs`): each keyword of the prompt is searched among the
workspace's handoffs (full-text, both backends), and a handoff's score is the share of
keywords it matches (weighted by search rank) plus a recency bonus; handoffs of every
session of the workspace count (forks, other branches, sub-agents).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from tron_events import AsyncEventStore, Event
from tron_events.messages import Message, TextBlock, ToolUseBlock
from tron_events.payloads import MemoryHandoff
from tron_llm import ToolSpec

__all__ = [
    "HANDOFF_TYPE",
    "MEMORY_TOOL",
    "ParsedReply",
    "handoff_json",
    "keywords",
    "memory_tool",
    "parse_reply",
    "recent_handoffs",
    "relevant_handoffs",
    "render_handoff",
]

HANDOFF_TYPE = "memory.handoff"
MEMORY_TOOL = "record_memory"
#: Sessions of a workspace looked at for recent handoffs and lessons (most recently active
#: first; the keyword search covers every session). One indexed read each, at session start.
RECENT_SESSIONS = 100
#: Keywords of a prompt searched for (the first ones, longest words kept first).
MAX_KEYWORDS = 8
#: Characters of a handoff's free text kept when a reply does not fit the schema.
FALLBACK_CHARS = 4_000

_HANDOFF_SCHEMA: dict[str, Any] = {
    "summary": {
        "type": "string",
        "description": "What the user asked for and what was done, in 2-6 sentences.",
    },
    "codeChanges": {
        "type": "array",
        "description": "Each file created, edited or deleted, with what changed.",
        "items": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "description": {"type": "string"}},
            "required": ["path", "description"],
        },
    },
    "currentState": {
        "type": "string",
        "description": "Where the work stands: what works, what does not, what is half done.",
    },
    "nextSteps": {
        "type": "array",
        "items": {"type": "string"},
        "description": "What the next session should do, in order.",
    },
    "blockers": {
        "type": "array",
        "items": {"type": "string"},
        "description": "What stops progress (questions for the user, failures, missing access).",
    },
    "patterns": {
        "type": "array",
        "items": {"type": "string"},
        "description": "Lessons for this project that the session shows: conventions, commands "
        "that work, pitfalls. Short imperative sentences; none if nothing was learnt.",
    },
}
_LEDGER_SCHEMA: dict[str, Any] = {
    "ledger": {
        "type": "string",
        "description": "The complete updated ledger in Markdown, with the sections Goal, "
        "Current state, Decisions, Next steps.",
    }
}
_KEYWORD = re.compile(r"[^\W_][\w.-]*[^\W_]", re.UNICODE)
_STOPWORDS = frozenset(
    [
        "about",
        "above",
        "after",
        "again",
        "also",
        "and",
        "any",
        "are",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "can",
        "could",
        "did",
        "does",
        "doing",
        "done",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "her",
        "here",
        "hers",
        "him",
        "his",
        "how",
        "into",
        "its",
        "just",
        "let",
        "lets",
        "like",
        "make",
        "more",
        "most",
        "much",
        "must",
        "not",
        "now",
        "off",
        "once",
        "only",
        "other",
        "our",
        "out",
        "over",
        "own",
        "please",
        "same",
        "she",
        "should",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "too",
        "under",
        "until",
        "very",
        "want",
        "was",
        "way",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
    ]
)


def memory_tool(*, handoff: bool, ledger: bool) -> ToolSpec:
    """The forced tool of a memory side call: the handoff's fields and/or ``ledger``."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    if handoff:
        properties |= _HANDOFF_SCHEMA
        required += ["summary", "currentState", "nextSteps"]
    if ledger:
        properties |= _LEDGER_SCHEMA
        required.append("ledger")
    what = " and ".join(
        w for w, on in (("the session's handoff", handoff), ("the ledger", ledger)) if on
    )
    return ToolSpec(
        name=MEMORY_TOOL,
        description=f"Record {what}.",
        input_schema={"type": "object", "properties": properties, "required": required},
    )


@dataclass(frozen=True)
class ParsedReply:
    """What a memory side call's reply gave: the handoff payload (None: none asked, or
    nothing usable) and the new ledger text (None: none asked, or none given)."""

    handoff: dict[str, Any] | None
    ledger: str | None


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [v if isinstance(v, str) else str(v) for v in value if v not in (None, "")]
    return []


def _coerce(fields: dict[str, Any]) -> dict[str, Any]:
    """Common near-misses made to fit (a string for a list, a path string for a change),
    so that a handoff is only summary-only when its content really does not fit."""
    out = dict(fields)
    for key in ("nextSteps", "blockers", "patterns"):
        if key in out:
            out[key] = _strings(out[key])
    changes = out.get("codeChanges")
    if isinstance(changes, list):
        fixed: list[Any] = []
        for change in changes:
            if isinstance(change, str):
                fixed.append({"path": change, "description": ""})
            elif isinstance(change, dict) and isinstance(change.get("file"), str):
                fixed.append({"path": change["file"], **{k: v for k, v in change.items()
                                                          if k != "file"}})  # fmt: skip
            else:
                fixed.append(change)
        out["codeChanges"] = fixed
    if isinstance(out.get("currentState"), list):
        out["currentState"] = "\n".join(_strings(out["currentState"]))
    return out


def _reply_text(message: Message) -> str:
    return "\n".join(
        b.text for b in message.content if isinstance(b, TextBlock) and b.text.strip()
    ).strip()


def parse_reply(
    message: Message, *, handoff: bool, ledger: bool, extra: dict[str, Any] | None = None
) -> ParsedReply:
    """The handoff payload (``extra`` merged in: trigger, model…) and the ledger text of a
    memory side call's reply. A reply without the tool call, or whose input is not a
    handoff, becomes a summary-only handoff (``complete: false``, ``fallbackReason``)
    from whatever text it has; None only when it has no text at all."""
    call = next(
        (b for b in message.content if isinstance(b, ToolUseBlock) and b.name == MEMORY_TOOL),
        None,
    )
    fields: dict[str, Any] = dict(call.input) if call is not None else {}
    ledger_text = fields.pop("ledger", None)
    new_ledger = ledger_text if ledger and isinstance(ledger_text, str) and ledger_text.strip() \
        else None  # fmt: skip
    if not handoff:
        return ParsedReply(None, new_ledger)
    extra = extra or {}
    reason: str | None = None
    if call is None:
        reason = "the reply did not call the record_memory tool"
    else:
        try:
            candidate = {**_coerce(fields), **extra}
            payload = MemoryHandoff.model_validate(candidate).model_dump(
                mode="json", by_alias=True, exclude_unset=True
            )
            if payload.get("summary", "").strip():
                return ParsedReply({**payload, "complete": True}, new_ledger)
            reason = "the handoff's summary was empty"
        except ValidationError as exc:
            reason = f"the handoff did not fit its schema: {exc.errors()[0].get('msg')}"
    # Summary-only: what text there is (the tool's summary as given, else any other text).
    given = fields.get("summary")
    summary = given if isinstance(given, str) else ""
    if not summary.strip():
        summary = _reply_text(message)
    if not summary.strip() and fields:
        summary = "; ".join(f"{k}: {v}" for k, v in fields.items() if v)
    summary = summary.strip()[:FALLBACK_CHARS]
    if not summary:
        return ParsedReply(None, new_ledger)
    payload = {**extra, "summary": summary, "complete": False, "fallbackReason": reason}
    return ParsedReply(payload, new_ledger)


def handoff_json(event: Event) -> dict[str, Any]:
    """A ``memory.handoff`` event for clients: its payload with ``eventId``,
    ``sessionId`` and ``timestamp``."""
    return {"eventId": event.id, "sessionId": event.session_id,
            "timestamp": event.timestamp, **event.payload}  # fmt: skip


def render_handoff(event: Event) -> str:
    """A handoff as the model reads it (cited by session and event id)."""
    p = event.payload
    lines = [f"### Handoff {event.id} · session {event.session_id} · {event.timestamp[:16]}"]
    lines.append(f"Summary: {str(p.get('summary', '')).strip()}")
    state = str(p.get("currentState") or "").strip()
    if state:
        lines.append(f"State: {state}")
    for key, label in (("nextSteps", "Next steps"), ("blockers", "Blockers")):
        items = _strings(p.get(key))
        if items:
            lines.append(f"{label}: " + "; ".join(items))
    changes = [c for c in p.get("codeChanges") or [] if isinstance(c, dict)]
    if changes:
        lines.append(
            "Changes: " + "; ".join(
                f"{c.get('path')}" + (f" ({c['description']})" if c.get("description") else "")
                for c in changes
            )
        )  # fmt: skip
    return "\n".join(lines)


def keywords(text: str, limit: int = MAX_KEYWORDS) -> list[str]:
    """The words of ``text`` worth searching for: at least 3 characters, not a common
    English word, each once; the longest first when there are more than ``limit``."""
    seen: dict[str, int] = {}
    for match in _KEYWORD.finditer(text):
        word = match.group(0).lower()
        if len(word) < 3 or word in _STOPWORDS or word in seen:
            continue
        seen[word] = len(seen)
    ordered = sorted(seen, key=lambda w: (-len(w), seen[w]))[:limit]
    return sorted(ordered, key=lambda w: seen[w])


async def recent_handoffs(
    store: AsyncEventStore, workspace_id: str, *, sessions: int = RECENT_SESSIONS
) -> list[Event]:
    """The handoffs of the workspace's most recently active sessions, newest first."""
    recent = await store.list_sessions(workspace_id=workspace_id, limit=sessions)
    found = await store.get_events_of_sessions([s.id for s in recent], types=[HANDOFF_TYPE])
    return sorted(found, key=lambda e: (e.timestamp, e.id), reverse=True)


async def relevant_handoffs(
    store: AsyncEventStore,
    workspace_id: str,
    prompt: str,
    *,
    limit: int,
    exclude: Iterable[str] = (),
    recent: list[Event] | None = None,
) -> list[Event]:
    """The workspace's handoffs most relevant to ``prompt``, best first (see the module
    docstring): ``2 × matched keywords (rank-weighted) / keywords + recency``, where
    recency is ``1 / (1 + age rank)`` among the recent handoffs (``recent``: those of
    :func:`recent_handoffs`, when the caller has them already)."""
    excluded = set(exclude)
    if recent is None:
        recent = await recent_handoffs(store, workspace_id)
    recent = [e for e in recent if e.id not in excluded]
    by_id = {e.id: e for e in recent}
    relevance: dict[str, float] = {}
    words = keywords(prompt)
    for word in words:
        hits = await store.search(
            word, workspace_id=workspace_id, types=[HANDOFF_TYPE], limit=2 * limit + 10
        )
        for rank, hit in enumerate(hits):
            if hit.event_id in excluded:
                continue
            relevance[hit.event_id] = relevance.get(hit.event_id, 0.0) + 1.0 / (1 + 0.25 * rank)
    missing = [i for i in relevance if i not in by_id]
    for event_id in missing:
        event = await store.get_event(event_id)
        if event is not None:
            by_id[event_id] = event
    recency = {e.id: 1.0 / (1 + i) for i, e in enumerate(recent)}
    scores = {
        event_id: 2.0 * relevance.get(event_id, 0.0) / max(1, len(words))
        + recency.get(event_id, 0.0)
        for event_id in by_id
    }
    ranked = sorted(by_id.values(), key=lambda e: (scores[e.id], e.timestamp), reverse=True)
    return ranked[:limit]
