"""A cache of sessions' event rows for ancestor walks.

Events are immutable and a session's events up to a committed sequence never
change, so once read (or written by this process) they can serve every later
walk: resuming a session each turn then costs one query instead of reading the
whole path again.

Payloads are decoded lazily and at most once per process: every Event built
from a cached row shares the row's ``SharedPayload``, so a resume does not
parse the same JSON again; that sharing is why ``Event.payload`` is
documented as read-only.

Staleness is impossible by construction: a walk enters a session only through
an event just read from the database (which proves the session still exists),
and a session's ids are never reused. A session deleted by another process
leaves only an unreachable entry, which the byte budget evicts in time.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from .models import SharedPayload

#: (position, id, parent_id, sequence, depth, type, timestamp, SharedPayload)
Row = tuple[Any, ...]

DEFAULT_BUDGET_BYTES = 64 * 1024 * 1024


class SessionRows:
    __slots__ = ("by_id", "max_sequence", "nbytes", "session_id", "workspace_id")

    def __init__(self, session_id: str, workspace_id: str) -> None:
        self.session_id = session_id
        self.workspace_id = workspace_id
        self.max_sequence = -1
        self.by_id: dict[str, Row] = {}
        self.nbytes = 0


class PathCache:
    def __init__(self, budget_bytes: int = DEFAULT_BUDGET_BYTES) -> None:
        self.budget_bytes = budget_bytes
        self._sessions: OrderedDict[str, SessionRows] = OrderedDict()
        self._nbytes = 0
        self._lock = threading.Lock()

    def get(self, session_id: str) -> SessionRows | None:
        with self._lock:
            rows = self._sessions.get(session_id)
            if rows is not None:
                self._sessions.move_to_end(session_id)
            return rows

    def extend(
        self, session_id: str, workspace_id: str, after_sequence: int, rows: Iterable[Row]
    ) -> SessionRows:
        """Add a session's rows with sequences following ``after_sequence``
        (which must be what is cached for it already, else nothing is added)."""
        with self._lock:
            entry = self._sessions.get(session_id)
            if entry is None:
                entry = self._sessions[session_id] = SessionRows(session_id, workspace_id)
            self._sessions.move_to_end(session_id)
            if entry.max_sequence != after_sequence:
                return entry  # another thread got there first, or a gap: keep it exact
            added = 0
            for row in rows:
                if row[3] != entry.max_sequence + 1:
                    break  # never leave a gap in a cached prefix
                shared = row[7]
                if type(shared) is not SharedPayload:
                    shared = SharedPayload(shared)
                    row = (*row[:7], shared)
                entry.by_id[row[1]] = row
                entry.max_sequence = row[3]
                # Decoded JSON (once someone reads it) takes a few times its text.
                added += 4 * len(shared.raw) + 300
            entry.nbytes += added
            self._nbytes += added
            self._evict()
            return entry

    def extend_one(self, session_id: str, workspace_id: str, row: Row) -> None:
        """:meth:`extend` with the one row (its ``row[7]`` a ``SharedPayload``) that
        follows what is cached of the session, if it does (every append)."""
        with self._lock:
            sessions = self._sessions
            entry = sessions.get(session_id)
            if entry is None:
                entry = sessions[session_id] = SessionRows(session_id, workspace_id)
            else:
                sessions.move_to_end(session_id)
            sequence = row[3]
            if entry.max_sequence != sequence - 1:
                return  # another thread got there first, or a gap: keep it exact
            entry.by_id[row[1]] = row
            entry.max_sequence = sequence
            added = 4 * len(row[7].raw) + 300  # as extend counts it
            entry.nbytes += added
            self._nbytes += added
            if self._nbytes > self.budget_bytes:
                self._evict()

    def forget(self, session_ids: Iterable[str]) -> None:
        with self._lock:
            for sid in session_ids:
                entry = self._sessions.pop(sid, None)
                if entry is not None:
                    self._nbytes -= entry.nbytes

    def _evict(self) -> None:
        while self._nbytes > self.budget_bytes and len(self._sessions) > 1:
            _, entry = self._sessions.popitem(last=False)
            self._nbytes -= entry.nbytes
