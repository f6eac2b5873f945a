"""One writer per session while the agent runs: serialized compare-and-append.

Every event a turn records (its own, the tools' ``file.read``/``todo.write``, the
hooks' ``hook.triggered``/``hook.completed``) goes through the session's
:class:`SessionWriter`. It appends with ``expected_head`` = the head it last
wrote, so nothing can branch the session by accident: if anything else moved the
head meanwhile (a rewind, a model switch from another client), the append fails
with :class:`tron_events.ConcurrencyConflict` and the turn stops instead of
writing onto a history it did not read.

The orchestrator keeps one writer per session (while anything uses it), also
between runs: events recorded from outside a run (a Stop or SessionStart hook
finishing late) go through :meth:`SessionWriter.record` and its lock, so they
never land between a new run's :meth:`~SessionWriter.sync` and its first append.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import anyio

from tron_events import AsyncEventStore, Event

__all__ = ["SessionWriter"]


class SessionWriter:
    """Appends to one session, one event at a time, each on top of the last."""

    def __init__(self, store: AsyncEventStore, session_id: str) -> None:
        self.store = store
        self.session_id = session_id
        self.head: str | None = None
        #: A run owns the session: :meth:`record` compares against its head.
        self.running = False
        self._lock = anyio.Lock()

    async def sync(self) -> str:
        """Re-read the session's head (at the start of a run, before any append)."""
        async with self._lock:
            session = await self.store.get_session(self.session_id)
            self.head = session.head_event_id
            return self.head

    async def append(self, type: str, payload: Mapping[str, Any]) -> Event:
        """Append ``type`` on top of the head this writer last saw."""
        async with self._lock:
            event = await self.store.append(
                self.session_id, type, dict(payload), expected_head=self.head
            )
            self.head = event.id
            return event

    async def record(self, type: str, payload: Mapping[str, Any]) -> Event:
        """Append from outside the run's own flow (hooks): on top of the run's head
        while one runs, at the session's current head otherwise."""
        async with self._lock:
            expected = self.head if self.running else None
            event = await self.store.append(
                self.session_id, type, dict(payload), expected_head=expected
            )
            self.head = event.id
            return event

    async def append_many(self, drafts: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Event]:
        """Append a chain in one transaction (all or nothing)."""
        if not drafts:
            return []
        async with self._lock:
            events = await self.store.append_many(
                self.session_id,
                [{"type": t, "payload": dict(p)} for t, p in drafts],
                expected_head=self.head,
            )
            self.head = events[-1].id
            return events
