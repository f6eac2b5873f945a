"""The last events this process committed to each session, for its live session feeds.

A server's ``events.new`` feed of a session woke after each commit and read back, in a
worker thread, the events the same process had just committed (about three reads per
agent turn). :class:`RecentEvents` keeps the last few events of each session as the
commits left them, and answers a feed's next page from memory when that page is
certainly what the database would return:

- the change signal's version of the session is the one recorded with the last commit
  kept here (taken under the same lock as the commit's bump): no other commit of the
  session was signalled since, from this process or (through the backend's listener)
  from another one;
- the events after the feed's cursor are all here, in sequence order, without a hole.

Anything else (a commit another process made, a session this process did not write, a
page larger than what is kept, a wake-up by time-out rather than by a signal) reads the
database as before. The events handed out are built from the stored JSON text, like
rows read back, so a caller that mutates the payload it appended changes nothing here.

Only sessions with a live feed in this process (:meth:`RecentEvents.watch`) are kept: an
append to any other session costs one dictionary look-up more than the signal's bump.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from ._recorder import event_from_row, page_of
from .models import Event, EventPage

__all__ = ["RecentEvents"]

#: Events kept per session (a turn commits a handful; a page beyond them reads the store).
PER_SESSION = 64
#: Sessions kept (the least recently written go first).
SESSIONS = 256
#: Bytes of stored JSON kept per session (a few large tool results go to the store).
SESSION_BYTES = 1 << 20


def _as_read(event: Event) -> Event | None:
    """``event`` as a read of its row gives it (its payload as the stored JSON text);
    None when the event does not carry that text."""
    raw = event._raw
    if not isinstance(raw, str):
        return None
    return event_from_row(
        (event.position, event.id, event.parent_id, event.session_id, event.workspace_id,
         event.sequence, event.depth, event.type, event.timestamp, raw)
    )  # fmt: skip


def _size(event: Event) -> int:
    """The stored JSON text's length (what a kept event holds beyond its fields)."""
    raw = event._raw
    return len(raw) if isinstance(raw, str) else 0


class RecentEvents:
    """Per session: the signal version after its last commit here, and its last events
    by sequence. Safe from any thread."""

    def __init__(
        self,
        per_session: int = PER_SESSION,
        sessions: int = SESSIONS,
        session_bytes: int = SESSION_BYTES,
    ) -> None:
        self._lock = threading.Lock()
        self._per_session = per_session
        self._sessions = sessions
        self._session_bytes = session_bytes
        #: session -> (signal version, events by sequence, their stored JSON's length: kept
        #: along, not summed again over up to PER_SESSION events at every commit)
        self._kept: dict[str, tuple[int, dict[int, Event], int]] = {}
        #: Sessions with live feeds here → how many.
        self._watched: dict[str, int] = {}

    def watch(self, session_id: str) -> None:
        """A feed of the session starts: keep its commits from now on."""
        with self._lock:
            self._watched[session_id] = self._watched.get(session_id, 0) + 1

    def unwatch(self, session_id: str) -> None:
        """A feed of the session ended (the last one: forget what was kept)."""
        with self._lock:
            left = self._watched.get(session_id, 0) - 1
            if left > 0:
                self._watched[session_id] = left
            else:
                self._watched.pop(session_id, None)
                self._kept.pop(session_id, None)

    def watching(self, session_id: str) -> bool:
        """Whether a feed of the session runs here (a look-up: no lock)."""
        return session_id in self._watched

    def committed(self, session_id: str, events: Sequence[Event], bump: Callable[[], int]) -> None:
        """Run ``bump`` (the commit's change signal; returns the session's version after
        it) and keep ``events`` with that version, as one step for :meth:`page`."""
        if session_id not in self._watched:  # no feed here: nothing to keep
            bump()
            return
        kept = [_as_read(e) for e in events]
        with self._lock:
            version = bump()
            if session_id not in self._watched:
                return
            if not kept or any(e is None for e in kept):
                self._kept.pop(session_id, None)  # nothing to go on from: read the store
                return
            _old, by_sequence, size = self._kept.pop(session_id, (0, {}, 0))
            for event in kept:
                assert event is not None
                replaced = by_sequence.get(event.sequence)
                if replaced is not None:
                    size -= _size(replaced)
                by_sequence[event.sequence] = event
                size += _size(event)
            while by_sequence and (
                len(by_sequence) > self._per_session or size > self._session_bytes
            ):
                # The first kept (commits come in sequence order: a hole otherwise, which
                # only sends the feed to the store).
                size -= _size(by_sequence.pop(next(iter(by_sequence))))
            if not by_sequence:
                self._kept.pop(session_id, None)
                return
            self._kept[session_id] = (version, by_sequence, size)  # now the most recent
            while len(self._kept) > self._sessions:
                del self._kept[next(iter(self._kept))]

    def page(self, session_id: str, after: int, limit: int, version: int) -> EventPage | None:
        """The session feed's page after sequence ``after`` (at most ``limit`` events), when
        memory holds it for certain at signal ``version`` (see the module docstring);
        None: read the store."""
        with self._lock:
            entry = self._kept.get(session_id)
            if entry is None or entry[0] != version:
                return None
            by_sequence = entry[1]
            last = max(by_sequence)
            if after >= last:
                return page_of([], limit)
            wanted = range(after + 1, last + 1)
            if len(wanted) > limit or any(s not in by_sequence for s in wanted):
                return None
            return page_of([by_sequence[s] for s in wanted], limit)

    def forget(self, session_ids: Sequence[str]) -> None:
        with self._lock:
            for sid in session_ids:
                self._kept.pop(sid, None)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
