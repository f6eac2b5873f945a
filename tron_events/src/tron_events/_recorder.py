"""The backend interface: one abstract recorder, one module per database.

The store (``store.py``) holds the rules of the event tree and calls a
``Recorder`` for storage. The SQL shared by every backend lives here, written
with ``?`` placeholders; a backend converts it to its own paramstyle once, and
overrides only what truly differs: connections and transactions, locking a
session for an append, full-text indexing and search, and error translation.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from ._changes import ChangeSignal
from ._path_cache import PathCache
from ._storable import findable
from .blobs import BlobRow
from .errors import InvalidCursor
from .models import Event, EventPage, SearchHit, Session, SharedPayload, Workspace


class Cursor(Protocol):
    """The part of a DB-API cursor the recorders use."""

    def execute(self, sql: Any, params: Any = ..., /) -> Any: ...
    def executemany(self, sql: Any, params: Any, /) -> Any: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...
    @property
    def rowcount(self) -> int: ...


EVENT_COLUMNS = (
    "position, id, parent_id, session_id, workspace_id, sequence, depth, type, timestamp, payload"
)
SESSION_COLUMNS = (
    "id, workspace_id, root_event_id, head_event_id, status, model, provider, "
    "working_directory, title, parent_session_id, fork_from_event_id, created_at, "
    "last_activity_at, ended_at, event_count, message_count, turn_count, input_tokens, "
    "output_tokens, cache_read_tokens, cache_creation_tokens, cost"
)
WORKSPACE_COLUMNS = "id, path, name, created_at, last_activity_at"
#: A session row followed by its head event's row (lock_session).
SESSION_AND_HEAD = (
    ", ".join("s." + c.strip() for c in SESSION_COLUMNS.split(","))
    + ", "
    + ", ".join("e." + c.strip() for c in EVENT_COLUMNS.split(","))
    + " FROM sessions s JOIN events e ON e.id = s.head_event_id WHERE s.id = ?"
)
_SESSION_WIDTH = len(SESSION_COLUMNS.split(","))


def session_and_head_from_row(row: Sequence[Any]) -> tuple[Session, Event]:
    return Session(*row[:_SESSION_WIDTH]), event_from_row(row[_SESSION_WIDTH:])


#: The path cache's row shape (session and workspace are the same for a session).
NARROW_COLUMNS = "position, id, parent_id, sequence, depth, type, timestamp, payload"

_new = object.__new__


def event_from_row(row: Sequence[Any]) -> Event:
    return Event(
        position=row[0],
        id=row[1],
        parent_id=row[2],
        session_id=row[3],
        workspace_id=row[4],
        sequence=row[5],
        depth=row[6],
        type=row[7],
        timestamp=row[8],
        raw_payload=row[9],
    )


def _event(row: Sequence[Any], session_id: str, workspace_id: str) -> Event:
    """An Event from a NARROW_COLUMNS row, without keyword-argument overhead
    (ancestor walks build thousands of them)."""
    e: Event = _new(Event)
    e.position, e.id, e.parent_id, e.sequence, e.depth, e.type, e.timestamp, e._raw = row
    e._payload = None
    e.session_id = session_id
    e.workspace_id = workspace_id
    return e


def session_from_row(row: Sequence[Any]) -> Session:
    return Session(*row)


@dataclass(slots=True)
class NewEvent:
    """A row to insert, with the text to index (empty: not indexed)."""

    id: str
    parent_id: str | None
    session_id: str
    workspace_id: str
    sequence: int
    depth: int
    type: str
    timestamp: str
    payload_json: str
    search_text: str


@dataclass(slots=True)
class SessionDelta:
    """How one append changes a session row (applied in the append's transaction)."""

    head_event_id: str
    events: int = 0
    messages: int = 0
    max_turn: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    cost: float = 0.0
    last_activity_at: str = ""


#: An event to append after a known head: its ``INSERT_EVENT`` values (id,
#: parent_id, session_id, workspace_id, sequence, depth, type, timestamp, payload)
#: and the text to index ("" for none).
RowToAppend = tuple[tuple[str, str, str, str, int, int, str, str, str], str]
#: What an append adds to the session row: messages, the highest turn seen, input,
#: output, cache-read and cache-creation tokens, cost.
Counters = tuple[int, int, int, int, int, int, float]

INSERT_EVENT = (
    "INSERT INTO events (id, parent_id, session_id, workspace_id, sequence, depth, "
    "type, timestamp, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
#: The session row of an append to the head the store knows: moved on only if it
#: is still at that head and count, and active (``Recorder.append_after_head``).
ADVANCE_HEAD = (
    "UPDATE sessions SET head_event_id = ?, event_count = event_count + ?, "
    "message_count = message_count + ?, "
    "turn_count = CASE WHEN turn_count > ? THEN turn_count ELSE ? END, "
    "input_tokens = input_tokens + ?, output_tokens = output_tokens + ?, "
    "cache_read_tokens = cache_read_tokens + ?, "
    "cache_creation_tokens = cache_creation_tokens + ?, cost = cost + ?, "
    "last_activity_at = ? "
    "WHERE id = ? AND head_event_id = ? AND event_count = ? AND status = 'active'"
)


def advance_params(
    session_id: str, head_id: str, event_count: int, rows: Sequence[RowToAppend], c: Counters
) -> tuple[Any, ...]:
    """``ADVANCE_HEAD``'s parameters."""
    last = rows[-1][0]
    return (
        last[0], len(rows), c[0], c[1], c[1], c[2], c[3], c[4], c[5], c[6], last[7],
        session_id, head_id, event_count,
    )  # fmt: skip


class _HeadMoved(Exception):
    """The session row no longer says what the store knew: roll back (internal)."""


class Recorder(abc.ABC):
    """Storage for the event store. Each method taking ``cur`` runs inside a
    transaction opened by :meth:`write` or :meth:`read`.

    Lookups by a key that no row can have (not a string, or one holding NUL or
    a lone surrogate, which nothing stored holds) find nothing without asking
    the database, whose driver would raise on it (``_storable.py``).
    """

    #: ``?`` placeholders are rewritten to this backend's paramstyle.
    placeholder = "?"
    #: Whether :meth:`append_at_head` is implemented (else the store skips it).
    has_append_at_head = False
    #: How many write transactions are worth running at once from one process:
    #: 1 where the database has one writer lock (more would only queue on it).
    concurrent_writers = 1
    #: SQL for the workspace of the event ``e`` in searches.
    event_workspace = "e.workspace_id"
    #: Appended to a SELECT of a session row to lock it until the transaction ends
    #: (SQLite: nothing, its write transaction holds the database's lock).
    lock_clause = ""

    def __init__(self, url: str) -> None:
        self.url = url
        #: Wake-ups for live subscriptions (see ``_changes.py``).
        self.changes = ChangeSignal()
        #: Sessions' immutable rows for ancestor walks (see ``_path_cache.py``).
        self.path_cache = PathCache()

    @abc.abstractmethod
    def start_change_listener(self) -> None:
        """Start (once) noticing commits made by other processes and bumping
        ``self.changes`` for them. Commits of this process bump it directly."""

    def committed_here(self, events: Sequence[Event]) -> None:
        """``events`` were just committed through this recorder (and signalled): a
        listener that hears of every commit (SQLite's) tells them from other processes'
        commits, which alone need a wake-up from it. Nothing by default."""
        return None

    def sql(self, text: str) -> str:
        if self.placeholder == "?":
            return text
        return text.replace("?", self.placeholder)

    # -- connections and transactions (backend-specific) -------------------

    @abc.abstractmethod
    def write(self) -> AbstractContextManager[Cursor]:
        """A write transaction; writes to the database are serialized per session
        (and on SQLite globally). Retries "busy" internally; never leaks it."""

    @abc.abstractmethod
    def read(self) -> AbstractContextManager[Cursor]:
        """A read-only transaction with a consistent snapshot."""

    @abc.abstractmethod
    def close(self) -> None: ...

    def shrink_memory(self) -> None:
        """Give memory the backend's connections keep for reuse back (nothing to do by
        default: PostgreSQL's caches live in the server)."""
        return None

    @abc.abstractmethod
    def lock_session(self, cur: Cursor, session_id: str) -> tuple[Session, Event] | None:
        """Read a session row and its head event in one statement, and hold the
        session against concurrent appends until commit."""

    def append_at_head(
        self, row: NewEvent, delta: SessionDelta, expected_head: str | None
    ) -> tuple[int, str, str, int, int] | None:
        """Optional fast path of the common append, in a transaction of its own:
        ``row`` (its parent, workspace, sequence and depth not filled in) goes
        after the session's head if the session is active and its head is
        ``expected_head`` (when given), and the session row takes ``delta``.
        Returns (position, parent_id, workspace_id, sequence, depth) of the
        committed event, or None when nothing was written (a check failed, or
        this backend has no fast path): the store then takes the general path.
        """
        return None

    def append_after_head(
        self,
        session_id: str,
        head_id: str,
        event_count: int,
        rows: Sequence[RowToAppend],
        counters: Counters,
    ) -> list[int] | None:
        """The store's append to a head it knows (``EventStore._tips``), in a
        transaction of its own: the session row moves on (``ADVANCE_HEAD``: head,
        counters, activity) only if it is active and still at ``head_id`` with
        ``event_count`` events, which its write lock then holds; the rows follow.
        Returns their positions, or None when the row said otherwise (another
        writer moved the head, a rewind, an end, a deletion): nothing was
        written and the store takes the general path, which reads the row.

        ``rows``: (the events' column values in ``INSERT_EVENT``'s order, the
        text to index); ``counters``: what :data:`ADVANCE_HEAD` adds (see
        ``store._counters``)."""
        try:
            with self.write() as cur:
                cur.execute(
                    self.sql(ADVANCE_HEAD),
                    advance_params(session_id, head_id, event_count, rows, counters),
                )
                if cur.rowcount != 1:
                    raise _HeadMoved
                return self.insert_events(cur, [NewEvent(*r, text) for r, text in rows])
        except _HeadMoved:
            return None

    def append_one_after_head(
        self,
        session_id: str,
        head_id: str,
        event_count: int,
        values: tuple[Any, ...],
        text: str,
        counters: Counters,
    ) -> int | None:
        """:meth:`append_after_head` of one event (``values``, ``text``): its position,
        or None (nothing written)."""
        positions = self.append_after_head(
            session_id, head_id, event_count, [(values, text)], counters
        )
        return None if positions is None else positions[0]

    @abc.abstractmethod
    def insert_events(self, cur: Cursor, rows: Sequence[NewEvent]) -> list[int]:
        """Insert events (and their search rows); return their positions."""

    @abc.abstractmethod
    def delete_search_rows(self, cur: Cursor, session_ids: Sequence[str]) -> None: ...

    @abc.abstractmethod
    def search(
        self,
        cur: Cursor,
        query: str,
        *,
        raw: bool,
        workspace_id: str | None,
        session_id: str | None,
        types: Sequence[str] | None,
        limit: int,
        session_ids: Sequence[str] | None = None,
    ) -> list[SearchHit]:
        """``session_ids`` (when given) restricts to those sessions, like
        ``session_id`` for one (pass it on to :meth:`search_filters`)."""

    def search_filters(
        self,
        position: str,
        workspace_id: str | None,
        session_id: str | None,
        types: Sequence[str] | None,
        session_ids: Sequence[str] | None = None,
    ) -> tuple[str, str, list[Any]]:
        """The JOIN and the extra WHERE conditions (in this backend's
        placeholders) that restrict a search whose index rows are keyed by the
        event's ``position`` expression; empty when nothing restricts it."""
        if workspace_id is None and session_id is None and not types and session_ids is None:
            return "", "", []
        where = ""
        params: list[Any] = []
        if workspace_id is not None:
            where += f" AND {self.event_workspace} = ?"
            params.append(workspace_id)
        if session_id is not None:
            where += " AND e.session_id = ?"
            params.append(session_id)
        if session_ids is not None:
            where += " AND e.session_id IN (" + ", ".join("?" for _ in session_ids) + ")"
            params.extend(session_ids)
        if types:
            where += " AND e.type IN (" + ", ".join("?" for _ in types) + ")"
            params.extend(types)
        return f" JOIN events e ON e.position = {position}", self.sql(where), params

    @abc.abstractmethod
    def feed_upper_bound(self, cur: Cursor) -> int | None:
        """The highest position a workspace feed may hand out now (None: no limit).

        Positions below it are all committed or rolled back, so a reader that
        follows ``position`` never skips an event that commits late."""

    # -- shared SQL -------------------------------------------------------

    def get_event(self, cur: Cursor, event_id: str) -> Event | None:
        if not findable(event_id):  # no stored id holds NUL or a lone surrogate
            return None
        cur.execute(self.sql(f"SELECT {EVENT_COLUMNS} FROM events WHERE id = ?"), (event_id,))
        row = cur.fetchone()
        return event_from_row(row) if row else None

    def get_session(self, cur: Cursor, session_id: str) -> Session | None:
        if not findable(session_id):
            return None
        cur.execute(self.sql(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?"), (session_id,))
        row = cur.fetchone()
        return session_from_row(row) if row else None

    def get_session_and_head(self, cur: Cursor, session_id: str) -> tuple[Session, Event] | None:
        """A session row and its head event in one statement; None when either is missing
        (the caller tells which with :meth:`get_session` and :meth:`get_event`)."""
        if not findable(session_id):
            return None
        cur.execute(self.sql(f"SELECT {SESSION_AND_HEAD}"), (session_id,))
        row = cur.fetchone()
        return session_and_head_from_row(row) if row else None

    def get_path(self, cur: Cursor, event: Event) -> list[Event]:
        """Ancestors of ``event``, root first, the event last, crossing forks.

        Not one query per step: per session on the path, one lookup of the
        entry event and (unless the path cache has them) one indexed range
        read of the session's rows up to it; the walk follows ``parent_id`` in
        memory. Cycle-safe.
        """
        return self.get_path_after(cur, event, {})[0]

    def get_path_after(
        self, cur: Cursor, event: Event, stops: Mapping[str, tuple[str, int]]
    ) -> tuple[list[Event], str | None]:
        """The ancestors of ``event`` (root first, ``event`` last) after the
        nearest one in ``stops`` (event id -> (session id, sequence)), and that
        ancestor's id; the whole path and None if no ancestor is in ``stops``.

        As in :meth:`get_path` (which is this without stops), but a session's
        rows are read only down to the highest stop below the entry point (a
        cold resume from a snapshot reads the events after it, not the
        session); cached rows are used when the path cache has them. A stop
        that is not an ancestor (orphaned by a rewind) costs one more lookup
        and a further range below it.
        """
        if event.id in stops:
            return [], event.id
        path: list[Event] = [event]
        seen = {event.id}
        current = event
        found: str | None = None
        while current.parent_id is not None:
            if current.parent_id in stops:
                found = current.parent_id
                break
            # The parent is usually in the same session; a fork's root (or an
            # event appended after rewinding into inherited history) points
            # into the source session. Reading it from the database also
            # proves its session exists, which keeps the cache honest.
            parent = self.get_event(cur, current.parent_id)
            if parent is None or parent.id in seen:
                break
            sid, wid = parent.session_id, parent.workspace_id
            low = max(
                (seq for s, seq in stops.values() if s == sid and seq < parent.sequence),
                default=-1,
            )
            entry = self.path_cache.get(sid)
            rows: Mapping[str, tuple[Any, ...]]
            if low < 0 or (entry is not None and entry.max_sequence >= parent.sequence):
                rows = self._session_rows(cur, sid, wid, parent.sequence)
            else:
                cur.execute(
                    self.sql(
                        f"SELECT {NARROW_COLUMNS} FROM events "
                        "WHERE session_id = ? AND sequence > ? AND sequence <= ?"
                    ),
                    (sid, low, parent.sequence),
                )
                rows = {row[1]: row for row in cur.fetchall()}
            step = parent
            while True:
                seen.add(step.id)
                path.append(step)
                current = step
                parent_id = step.parent_id
                if parent_id is None or parent_id in stops:
                    break
                row = rows.get(parent_id)
                if row is None or row[1] in seen:
                    break  # another session, or below the range read: look it up
                step = _event(row, sid, wid)
        path.reverse()
        return path, found

    # -- state snapshots (see _state_snapshots.py) ---------------------------

    def snapshot_stops(self, cur: Cursor, session_id: str, fmt: str) -> dict[str, tuple[str, int]]:
        """Snapshots of ``fmt`` in a session and the sessions it was forked
        from (every session its paths can cross): id -> (session, sequence)."""
        cur.execute(
            self.sql(
                "WITH RECURSIVE chain(id) AS (SELECT CAST(? AS VARCHAR(64)) UNION "
                "SELECT s.parent_session_id FROM sessions s JOIN chain c ON s.id = c.id "
                "WHERE s.parent_session_id IS NOT NULL) "
                "SELECT event_id, session_id, sequence FROM state_snapshots "
                "WHERE format = ? AND session_id IN (SELECT id FROM chain)"
            ),
            (session_id, fmt),
        )
        return {row[0]: (row[1], row[2]) for row in cur.fetchall()}

    def read_snapshot(self, cur: Cursor, event_id: str, fmt: str) -> bytes | None:
        cur.execute(
            self.sql("SELECT data FROM state_snapshots WHERE event_id = ? AND format = ?"),
            (event_id, fmt),
        )
        row = cur.fetchone()
        return bytes(row[0]) if row is not None else None

    def write_snapshot(
        self, cur: Cursor, event: Event, fmt: str, data: bytes, keep: int, when: str
    ) -> None:
        """Store (or replace) the snapshot at ``event``, keeping only the
        ``keep`` newest of its session."""
        cur.execute(
            self.sql(
                "INSERT INTO state_snapshots (event_id, session_id, sequence, format, "
                "created_at, data) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (event_id) DO UPDATE "
                "SET format = excluded.format, created_at = excluded.created_at, "
                "data = excluded.data"
            ),
            (event.id, event.session_id, event.sequence, fmt, when, data),
        )
        cur.execute(
            self.sql(
                "DELETE FROM state_snapshots WHERE session_id = ? AND event_id NOT IN "
                "(SELECT event_id FROM state_snapshots WHERE session_id = ? "
                "ORDER BY sequence DESC LIMIT ?)"
            ),
            (event.session_id, event.session_id, keep),
        )

    def has_snapshot_table(self) -> bool:
        """False on a schema older than revision 0002 (opened with upgrade=False)."""
        try:
            with self.read() as cur:
                cur.execute("SELECT 1 FROM state_snapshots WHERE 1 = 0")
                cur.fetchall()
        except Exception:  # any error means: do not use snapshots
            return False
        return True

    def try_write(self) -> AbstractContextManager[Cursor]:
        """A write transaction for optional work: gives up quickly instead of
        waiting for a busy database (default: an ordinary write)."""
        return self.write()

    def _session_rows(
        self, cur: Cursor, session_id: str, workspace_id: str, sequence: int
    ) -> dict[str, tuple[Any, ...]]:
        """A session's rows (by id) up to at least ``sequence``."""
        entry = self.path_cache.get(session_id)
        have = entry.max_sequence if entry is not None else -1
        if have < sequence:
            cur.execute(
                self.sql(
                    f"SELECT {NARROW_COLUMNS} FROM events "
                    "WHERE session_id = ? AND sequence > ? AND sequence <= ? ORDER BY sequence"
                ),
                (session_id, have, sequence),
            )
            entry = self.path_cache.extend(session_id, workspace_id, have, cur.fetchall())
        assert entry is not None
        return entry.by_id

    def remember(self, events: Sequence[Event]) -> None:
        """Cache events this process committed (extends a cached session prefix).

        Call after the commit, never before: a rolled-back row must not be cached.
        """
        if not events:
            return
        first = events[0]
        self.path_cache.extend(
            first.session_id,
            first.workspace_id,
            first.sequence - 1,
            [
                (
                    e.position,
                    e.id,
                    e.parent_id,
                    e.sequence,
                    e.depth,
                    e.type,
                    e.timestamp,
                    SharedPayload(e._raw, e._payload),  # type: ignore[arg-type]
                )
                for e in events
            ],
        )

    def get_events(
        self,
        cur: Cursor,
        session_id: str,
        after_sequence: int | None,
        types: Sequence[str] | None,
        limit: int | None,
    ) -> list[Event]:
        if types is not None and not types:
            types = None
        if types is not None:
            types = [t for t in types if findable(t)]
            if not types:
                return []  # only types that cannot be stored: nothing matches
        sql = f"SELECT {EVENT_COLUMNS} FROM events WHERE session_id = ?"
        params: list[Any] = [session_id]
        if after_sequence is not None:
            sql += " AND sequence > ?"
            params.append(after_sequence)
        if types:
            sql += " AND type IN (" + ", ".join("?" for _ in types) + ")"
            params.extend(types)
        sql += " ORDER BY sequence"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        cur.execute(self.sql(sql), params)
        return [event_from_row(row) for row in cur.fetchall()]

    def get_events_of_sessions(
        self, cur: Cursor, session_ids: Sequence[str], types: Sequence[str]
    ) -> list[Event]:
        ids = [i for i in dict.fromkeys(session_ids) if findable(i)]
        types = [t for t in types if findable(t)]
        if not ids or not types:
            return []
        out: list[Event] = []
        marks_t = ", ".join("?" for _ in types)
        for start in range(0, len(ids), 500):  # well under every backend's parameter limit
            chunk = ids[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            cur.execute(
                self.sql(
                    f"SELECT {EVENT_COLUMNS} FROM events WHERE session_id IN ({marks}) "
                    f"AND type IN ({marks_t}) ORDER BY session_id, sequence"
                ),
                [*chunk, *types],
            )
            out += [event_from_row(row) for row in cur.fetchall()]
        return out

    def get_children(self, cur: Cursor, event_id: str) -> list[Event]:
        if not findable(event_id):
            return []
        cur.execute(
            self.sql(f"SELECT {EVENT_COLUMNS} FROM events WHERE parent_id = ? ORDER BY position"),
            (event_id,),
        )
        return [event_from_row(row) for row in cur.fetchall()]

    def session_feed(
        self, cur: Cursor, session_id: str, after_sequence: int, limit: int
    ) -> EventPage:
        rows = self.session_feed_rows(cur, EVENT_COLUMNS, session_id, after_sequence, limit)
        return page_of([event_from_row(row) for row in rows], limit)

    def position_feed(
        self, cur: Cursor, workspace_id: str | None, after_position: int, limit: int
    ) -> EventPage:
        rows = self.position_feed_rows(cur, EVENT_COLUMNS, workspace_id, after_position, limit)
        return page_of([event_from_row(row) for row in rows], limit)

    def session_feed_rows(
        self, cur: Cursor, columns: str, session_id: str, after_sequence: int, limit: int
    ) -> list[Any]:
        """Up to ``limit + 1`` rows of ``columns`` (one more says there are more)."""
        cur.execute(
            self.sql(
                f"SELECT {columns} FROM events WHERE session_id = ? AND sequence > ? "
                "ORDER BY sequence LIMIT ?"
            ),
            (session_id, after_sequence, limit + 1),
        )
        return list(cur.fetchall())

    def position_feed_rows(
        self, cur: Cursor, columns: str, workspace_id: str | None, after_position: int, limit: int
    ) -> list[Any]:
        """Up to ``limit + 1`` rows of ``columns`` in position order, never past
        the high-water mark (DESIGN §2)."""
        if workspace_id is not None and not findable(workspace_id):
            return []
        sql = f"SELECT {columns} FROM events WHERE position > ?"
        params: list[Any] = [after_position]
        if workspace_id is not None:
            sql += " AND workspace_id = ?"
            params.append(workspace_id)
        bound = self.feed_upper_bound(cur)
        if bound is not None:
            sql += " AND position <= ?"
            params.append(bound)
        sql += " ORDER BY position LIMIT ?"
        params.append(limit + 1)
        cur.execute(self.sql(sql), params)
        return list(cur.fetchall())

    @abc.abstractmethod
    def json_quote(self, column: str) -> str:
        """SQL for ``column`` (text, may be NULL) as a JSON string or ``null``."""

    def wire_json_columns(self) -> str:
        """``id, sequence, position`` and SQL building the event's wire form
        (:meth:`Event.to_wire`, key for key) as JSON text in the database; the
        stored payload JSON goes in as it is."""
        q = self.json_quote
        wire = (
            f"""'{{"id":' || {q("id")} || ',"parentId":' || {q("parent_id")} """
            f"""|| ',"sessionId":' || {q("session_id")} """
            f"""|| ',"workspaceId":' || {q("workspace_id")} """
            f"""|| ',"sequence":' || sequence || ',"depth":' || depth """
            f"""|| ',"type":' || {q("type")} || ',"timestamp":' || {q("timestamp")} """
            """|| ',"payload":' || payload || '}'"""
        )
        return f"id, sequence, position, {wire}"

    def current_position(self, cur: Cursor) -> int:
        """Where a live position feed starts: everything up to here counts as past."""
        bound = self.feed_upper_bound(cur)
        if bound is not None:
            return bound
        cur.execute("SELECT COALESCE(MAX(position), 0) FROM events")
        return int(cur.fetchone()[0])

    def last_sequence(self, cur: Cursor, session_id: str) -> int:
        cur.execute(
            self.sql("SELECT COALESCE(MAX(sequence), -1) FROM events WHERE session_id = ?"),
            (session_id,),
        )
        return int(cur.fetchone()[0])

    def resolve_cursor(self, cur: Cursor, event_id: str) -> Event:
        event = self.get_event(cur, event_id)
        if event is None:
            raise InvalidCursor(
                f"cursor {event_id!r} is not an event in this store; "
                "start from the beginning (no cursor) or use a cursor this store returned"
            )
        return event

    def get_workspace_by_path(self, cur: Cursor, path: str) -> Workspace | None:
        if not findable(path):
            return None
        cur.execute(self.sql(f"SELECT {WORKSPACE_COLUMNS} FROM workspaces WHERE path = ?"), (path,))
        row = cur.fetchone()
        return Workspace(*row) if row else None

    def get_workspace(self, cur: Cursor, workspace_id: str) -> Workspace | None:
        if not findable(workspace_id):
            return None
        cur.execute(
            self.sql(f"SELECT {WORKSPACE_COLUMNS} FROM workspaces WHERE id = ?"), (workspace_id,)
        )
        row = cur.fetchone()
        return Workspace(*row) if row else None

    def insert_workspace_if_absent(self, cur: Cursor, ws: Workspace) -> None:
        cur.execute(
            self.sql(
                f"INSERT INTO workspaces ({WORKSPACE_COLUMNS}) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (path) DO NOTHING"
            ),
            (ws.id, ws.path, ws.name, ws.created_at, ws.last_activity_at),
        )

    def touch_workspace(self, cur: Cursor, workspace_id: str, when: str) -> None:
        cur.execute(
            self.sql("UPDATE workspaces SET last_activity_at = ? WHERE id = ?"),
            (when, workspace_id),
        )

    def insert_session(self, cur: Cursor, s: Session) -> None:
        cur.execute(
            self.sql(
                f"INSERT INTO sessions ({SESSION_COLUMNS}) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            ),
            (
                s.id, s.workspace_id, s.root_event_id, s.head_event_id, s.status, s.model,
                s.provider, s.working_directory, s.title, s.parent_session_id,
                s.fork_from_event_id, s.created_at, s.last_activity_at, s.ended_at,
                s.event_count, s.message_count, s.turn_count, s.input_tokens,
                s.output_tokens, s.cache_read_tokens, s.cache_creation_tokens, s.cost,
            ),
        )  # fmt: skip

    def apply_session_delta(self, cur: Cursor, session_id: str, d: SessionDelta) -> None:
        cur.execute(
            self.sql(
                "UPDATE sessions SET head_event_id = ?, event_count = event_count + ?, "
                "message_count = message_count + ?, "
                "turn_count = CASE WHEN turn_count > ? THEN turn_count ELSE ? END, "
                "input_tokens = input_tokens + ?, output_tokens = output_tokens + ?, "
                "cache_read_tokens = cache_read_tokens + ?, "
                "cache_creation_tokens = cache_creation_tokens + ?, cost = cost + ?, "
                "last_activity_at = ? WHERE id = ?"
            ),
            (
                d.head_event_id, d.events, d.messages, d.max_turn, d.max_turn,
                d.input_tokens, d.output_tokens, d.cache_read_tokens,
                d.cache_creation_tokens, d.cost, d.last_activity_at, session_id,
            ),
        )  # fmt: skip

    def set_session_model(self, cur: Cursor, session_id: str, model: str, provider: str) -> None:
        """The model and provider of the session's head (what its next turn uses)."""
        cur.execute(
            self.sql("UPDATE sessions SET model = ?, provider = ? WHERE id = ?"),
            (model, provider, session_id),
        )

    def set_session_directory(self, cur: Cursor, session_id: str, directory: str) -> None:
        cur.execute(
            self.sql("UPDATE sessions SET working_directory = ? WHERE id = ?"),
            (directory, session_id),
        )

    def set_head(self, cur: Cursor, session_id: str, head_event_id: str, when: str) -> None:
        cur.execute(
            self.sql("UPDATE sessions SET head_event_id = ?, last_activity_at = ? WHERE id = ?"),
            (head_event_id, when, session_id),
        )

    def mark_ended(self, cur: Cursor, session_id: str, when: str) -> None:
        cur.execute(
            self.sql("UPDATE sessions SET status = 'ended', ended_at = ? WHERE id = ?"),
            (when, session_id),
        )

    def list_sessions(
        self, cur: Cursor, workspace_id: str | None, status: str | None, limit: int
    ) -> list[Session]:
        if (workspace_id is not None and not findable(workspace_id)) or (
            status is not None and not findable(status)
        ):
            return []
        sql = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE 1 = 1"
        params: list[Any] = []
        if workspace_id is not None:
            sql += " AND workspace_id = ?"
            params.append(workspace_id)
        if status is not None:
            sql += " AND status = ?"
            params.append(status)
        sql += " ORDER BY last_activity_at DESC, id DESC LIMIT ?"
        params.append(limit)
        cur.execute(self.sql(sql), params)
        return [session_from_row(row) for row in cur.fetchall()]

    def child_sessions(self, cur: Cursor, session_id: str, *, recursive: bool) -> list[Session]:
        """Sub-agent sessions under ``session_id`` (``parent_session_id`` set and
        ``fork_from_event_id`` NULL; forks are not children), oldest first;
        ``recursive``: their children too, at any depth."""
        direct = "parent_session_id = ? AND fork_from_event_id IS NULL"
        if not recursive:
            cur.execute(
                self.sql(
                    f"SELECT {SESSION_COLUMNS} FROM sessions WHERE {direct} ORDER BY created_at, id"
                ),
                (session_id,),
            )
            return [session_from_row(row) for row in cur.fetchall()]
        cur.execute(
            self.sql(
                "WITH RECURSIVE sub(id) AS (SELECT id FROM sessions WHERE "
                f"{direct} UNION SELECT s.id FROM sessions s JOIN sub ON "
                "s.parent_session_id = sub.id WHERE s.fork_from_event_id IS NULL) "
                f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id IN (SELECT id FROM sub) "
                "ORDER BY created_at, id"
            ),
            (session_id,),
        )
        return [session_from_row(row) for row in cur.fetchall()]

    def fork_ids(self, cur: Cursor, session_id: str) -> list[str]:
        cur.execute(
            self.sql("SELECT id FROM sessions WHERE parent_session_id = ? ORDER BY created_at"),
            (session_id,),
        )
        return [row[0] for row in cur.fetchall()]

    def delete_sessions(self, cur: Cursor, session_ids: Sequence[str]) -> None:
        """Delete sessions (dependents first) with their events and search rows."""
        self.delete_search_rows(cur, session_ids)
        marks = ", ".join("?" for _ in session_ids)
        cur.execute(
            self.sql(f"DELETE FROM state_snapshots WHERE session_id IN ({marks})"), session_ids
        )
        cur.execute(self.sql(f"DELETE FROM events WHERE session_id IN ({marks})"), session_ids)
        for sid in session_ids:
            cur.execute(self.sql("DELETE FROM sessions WHERE id = ?"), (sid,))

    def iter_session_ids(self, cur: Cursor) -> Iterator[str]:
        cur.execute("SELECT id FROM sessions ORDER BY created_at")
        for row in cur.fetchall():
            yield row[0]

    # -- file contents (see blobs.py; revision 0004) -------------------------------

    def blob_depths(self, cur: Cursor, hashes: Sequence[str]) -> dict[str, int]:
        """The stored ones of ``hashes`` and their delta-chain depths."""
        found: dict[str, int] = {}
        for start in range(0, len(hashes), _BLOB_BATCH):
            chunk = list(hashes[start : start + _BLOB_BATCH])
            marks = ", ".join("?" for _ in chunk)
            cur.execute(
                self.sql(f"SELECT hash, depth FROM file_blobs WHERE hash IN ({marks})"), chunk
            )
            found.update((row[0], row[1]) for row in cur.fetchall())
        return found

    def insert_blobs(self, cur: Cursor, rows: Sequence[BlobRow], when: str) -> None:
        """Store contents not stored yet (a content already there is kept as is)."""
        cur.executemany(
            self.sql(
                "INSERT INTO file_blobs (hash, size, encoding, base_hash, depth, created_at, "
                "data) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (hash) DO NOTHING"
            ),
            [(r.hash, r.size, r.encoding, r.base_hash, r.depth, when, r.data) for r in rows],
        )

    def get_blob_rows(self, cur: Cursor, hashes: Sequence[str]) -> dict[str, BlobRow]:
        found: dict[str, BlobRow] = {}
        for start in range(0, len(hashes), _BLOB_BATCH):
            chunk = list(hashes[start : start + _BLOB_BATCH])
            marks = ", ".join("?" for _ in chunk)
            cur.execute(
                self.sql(
                    "SELECT hash, size, encoding, base_hash, depth, data FROM file_blobs "
                    f"WHERE hash IN ({marks})"
                ),
                chunk,
            )
            for row in cur.fetchall():
                found[row[0]] = BlobRow(row[0], row[1], row[2], row[3], row[4], bytes(row[5]))
        return found


#: Hashes per ``IN (...)`` list.
_BLOB_BATCH = 500


def page_of(events: list[Event], limit: int) -> EventPage:
    has_more = len(events) > limit
    events = events[:limit]
    return EventPage(
        events=events, next_cursor=events[-1].id if events else None, has_more=has_more
    )
