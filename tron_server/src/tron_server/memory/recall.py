"""Recall: search every past session of a workspace, and read around a hit.

What the Recall tool, ``memory.search`` and ``/recall`` use. A workspace's sessions are
every session whose folder is the workspace's, with their forks (also those in a git
worktree), sub-agent sessions, and sessions imported from Claude Code, Codex or pi that
ran in that folder. Search is the store's full-text search (messages, thinking, tool calls
and results, compaction summaries, handoffs; literal words, all of them must match). An
excerpt is the path to a hit: the events before it on its branch and the ones after it in
its session, each cut short, every one cited by its event id. Nothing here writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tron_events import AsyncEventStore, Event, SearchHit
from tron_events.search_text import search_text

__all__ = [
    "EXCERPT_AFTER",
    "EXCERPT_BEFORE",
    "NotInWorkspace",
    "RecallHit",
    "excerpt",
    "render_hits",
    "search_workspace",
]

EXCERPT_BEFORE = 6
EXCERPT_AFTER = 4
#: Characters of each event shown in an excerpt (the hit itself gets more).
EXCERPT_CHARS = 600
HIT_CHARS = 3_000
#: Event types an excerpt leaves out: bookkeeping, not conversation.
_QUIET = frozenset({"stream.turn_start", "stream.turn_end", "rules.loaded", "hook.triggered",
                    "hook.completed", "compact.boundary"})  # fmt: skip


class NotInWorkspace(LookupError):
    """The event is unknown, or belongs to another workspace than the one searched."""


@dataclass(frozen=True)
class RecallHit:
    """A search hit with its session (``current``: the session that searched)."""

    hit: SearchHit
    current: bool = False

    def to_json(self) -> dict[str, Any]:
        h = self.hit
        return {
            "eventId": h.event_id,
            "sessionId": h.session_id,
            "workspaceId": h.workspace_id,
            "type": h.type,
            "timestamp": h.timestamp,
            "snippet": h.snippet,
            "score": h.score,
        }


async def search_workspace(
    store: AsyncEventStore,
    query: str,
    *,
    workspace_id: str | None,
    limit: int = 10,
    current_session: str | None = None,
) -> list[RecallHit]:
    """The best hits for ``query`` in the workspace (every workspace when None), best
    first. ``memory.loaded`` is never indexed, so memory does not find itself."""
    hits = await store.search(query, workspace_id=workspace_id, limit=limit)
    return [RecallHit(h, h.session_id == current_session) for h in hits]


def render_hits(hits: list[RecallHit], query: str) -> str:
    """Hits as the model (or ``/recall``) reads them, each cited by session and event."""
    if not hits:
        return f"No past event of this workspace matches {query!r}."
    lines = [f"{len(hits)} hit(s) for {query!r} (best first). Read around one with "
             "Recall {event_id}:"]  # fmt: skip
    for n, item in enumerate(hits, 1):
        h = item.hit
        mine = " (this session)" if item.current else ""
        snippet = " ".join(h.snippet.split())
        lines.append(
            f"{n}. session {h.session_id}{mine} · event {h.event_id} · {h.type} · "
            f"{h.timestamp[:19]}\n   {snippet}"
        )
    return "\n".join(lines)


def _event_line(event: Event, limit: int) -> str | None:
    if event.type in _QUIET:
        return None
    payload = event.payload
    text = search_text(event.type, payload, limit + 1)
    if event.type == "tool.result" and payload.get("isError"):
        text = "(error) " + text
    elif event.type == "memory.loaded":
        text = f"memory put before the model ({len(str(payload.get('content', '')))} characters)"
    elif not text:
        keys = ", ".join(sorted(payload)[:6])
        text = f"{{{keys}}}" if keys else ""
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[:limit] + " …"
    return f"[{event.id}] {event.type}: {text}"


async def excerpt(
    store: AsyncEventStore,
    event_id: str,
    *,
    workspace_id: str | None,
    before: int = EXCERPT_BEFORE,
    after: int = EXCERPT_AFTER,
) -> str:
    """The surroundings of ``event_id``: up to ``before`` events on the path to it, the
    event (longer), and up to ``after`` events following it in its session (its newest
    branch). Raises :class:`NotInWorkspace` for an unknown event or one of another
    workspace than ``workspace_id`` (None: any)."""
    event = await store.get_event(event_id)
    if event is None or (workspace_id is not None and event.workspace_id != workspace_id):
        raise NotInWorkspace(f"no event {event_id!r} in this workspace's sessions")
    path = await store.get_ancestors(event.id)
    earlier = [e for e in path[:-1] if e.type not in _QUIET][-before:]
    later: list[Event] = []
    cursor = event
    while len(later) < after:
        children = [c for c in await store.get_children(cursor.id)
                    if c.session_id == event.session_id]  # fmt: skip
        if not children:
            break
        cursor = max(children, key=lambda c: c.sequence)  # the newest branch
        if cursor.type not in _QUIET:
            later.append(cursor)
    session = await store.get_session(event.session_id)
    lines = [
        f"Session {session.id} ({session.working_directory}, {session.status}); "
        f"event {event.id} at {event.timestamp[:19]}:"
    ]
    lines += [line for e in earlier if (line := _event_line(e, EXCERPT_CHARS))]
    hit = _event_line(event, HIT_CHARS) or f"[{event.id}] {event.type}"
    lines.append(f">> {hit}")
    lines += [line for e in later if (line := _event_line(e, EXCERPT_CHARS))]
    return "\n".join(lines)
