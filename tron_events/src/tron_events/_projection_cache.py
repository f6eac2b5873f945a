"""Live projections: the state of a session's head, kept in memory to go on from.

A resume (``get_state_at*``) ends with a projection of the path up to some event
(``reconstruct.Projection``). Events are immutable, so that projection stays right
for that event forever, and continuing it over the events appended after it gives
exactly the projection of the longer path (the rules that reach back are detected
by ``reconstruct.advance(resuming=True)``, as for persisted snapshots). Keeping the
last projection of each session makes the next resume after a turn cost the turn's
few events instead of a snapshot load and its tail, and a resume of an unchanged
head a lookup.

An entry is *taken* (removed) by the call that continues it and put back under the
new event id, so two threads never advance one projection. States handed out share
Message objects with the projection; a projection only ever changes its last
message in place, so :func:`detach_last` gives it a copy of that message before it
goes on, and what was handed out never changes.

Bounded by an estimate of the bytes the projections hold (LRU beyond
``budget_bytes``); :meth:`ProjectionCache.forget` drops a session's entries (the
server does when the last client of a session leaves, the store on delete).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_BUDGET_BYTES", "ProjectionCache"]

DEFAULT_BUDGET_BYTES = 96 * 1024 * 1024


@dataclass(slots=True)
class _Entry:
    session_id: str
    sequence: int
    projection: Any  # reconstruct.Projection (not imported: no models in the store's imports)
    nbytes: int
    unsaved: int  # events projected into it since it was last stored as a snapshot


class ProjectionCache:
    """Projections by the id of the event they end at (see the module docstring)."""

    def __init__(self, budget_bytes: int = DEFAULT_BUDGET_BYTES) -> None:
        self.budget_bytes = budget_bytes
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._nbytes = 0
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        """The estimated bytes held."""
        return self._nbytes

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, event_id: object) -> bool:
        return event_id in self._entries

    def stops(self) -> dict[str, tuple[str, int]]:
        """event id -> (session id, sequence) of every entry (for ``get_path_after``)."""
        with self._lock:
            return {eid: (e.session_id, e.sequence) for eid, e in self._entries.items()}

    def take(self, event_id: str) -> tuple[Any, int, int] | None:
        """Remove and return (projection, its byte estimate, events not in a stored
        snapshot), or None."""
        with self._lock:
            entry = self._entries.pop(event_id, None)
            if entry is None:
                return None
            self._nbytes -= entry.nbytes
            return entry.projection, entry.nbytes, entry.unsaved

    def put(
        self,
        event_id: str,
        session_id: str,
        sequence: int,
        projection: Any,
        nbytes: int,
        unsaved: int,
    ) -> None:
        """Keep ``projection`` (at ``event_id``) as its session's newest entry."""
        if nbytes > self.budget_bytes:
            return
        with self._lock:
            # One live projection per session: an older one (a branch left behind by
            # a rewind, or the head before an append) is what the budget should drop.
            for eid in [eid for eid, e in self._entries.items() if e.session_id == session_id]:
                self._nbytes -= self._entries.pop(eid).nbytes
            self._entries[event_id] = _Entry(session_id, sequence, projection, nbytes, unsaved)
            self._nbytes += nbytes
            while self._nbytes > self.budget_bytes and self._entries:
                _, old = self._entries.popitem(last=False)
                self._nbytes -= old.nbytes

    def forget(self, session_ids: Iterable[str]) -> None:
        """Drop the entries of these sessions."""
        drop = set(session_ids)
        with self._lock:
            for eid in [eid for eid, e in self._entries.items() if e.session_id in drop]:
                self._nbytes -= self._entries.pop(eid).nbytes

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._nbytes = 0
