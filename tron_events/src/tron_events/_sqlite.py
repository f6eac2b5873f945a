"""The SQLite backend: one file, WAL, one connection per thread, serialized writes.

Writes take the database write lock up front (``BEGIN IMMEDIATE``), so a
transaction never fails half-way because another connection wrote first; a
busy database is waited for (busy_timeout, then our own retry loop) and never
surfaces as "database is locked".

Failures of the file itself are typed (:func:`_translate`): a full disk is
:class:`DiskFull`, an I/O error (a file-size limit too) :class:`StorageIOError`,
a read-only file :class:`DatabaseReadOnly`, a damaged one :class:`StorageError`.
SQLite rolls a transaction back by itself on some of them (a COMMIT that
finds the disk full): the store rolls back only what is still open, so the
cause is what the caller sees, and the connection stays usable once space is
freed.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ._changes import ANY
from ._recorder import (
    ADVANCE_HEAD,
    INSERT_EVENT,
    SESSION_AND_HEAD,
    Counters,
    Cursor,
    NewEvent,
    Recorder,
    RowToAppend,
    advance_params,
    session_and_head_from_row,
)
from ._sqlite_snippets import CHUNK_CHARS, SNIPPET_WORDS, long_text_snippet
from .errors import (
    DatabaseReadOnly,
    DiskFull,
    InvalidQuery,
    StorageError,
    StorageIOError,
    StoreBusy,
    StoreClosed,
)
from .models import Event, SearchHit, Session
from .search_text import fts5_literal_query

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 10_000
#: How long optional writes (state snapshots) wait for the write lock.
TRY_WRITE_TIMEOUT_MS = 50
#: Give up on a busy database only after this long (then raise StoreBusy).
BUSY_GIVE_UP_S = 300.0
#: Common terms are ranked among their most recent matches only, so the first
#: page of a term found in most of a million events still comes back fast.
SEARCH_CANDIDATES = 1_000
SNIPPET_OPEN, SNIPPET_CLOSE = "«", "»"
#: How often subscribers' listener looks for commits by other processes while they
#: write (within CHANGE_BUSY_S of the last one it saw)...
CHANGE_POLL_S = 0.005
#: ...and at most how long apart otherwise: each look is a thread wake-up that takes
#: the GIL from the event loop (200 a second cost a server's turn ~0.5 ms of CPU), and
#: this process's own commits never need one.
CHANGE_POLL_IDLE_S = 0.04
CHANGE_BUSY_S = 1.0
#: Looks after which positions this recorder's commits do not explain are another
#: process's (the pace goes back to CHANGE_POLL_S).
SUSPECT_LOOKS = 3


def sqlite_path(url: str) -> str:
    """The file path of a ``sqlite:///path`` URL (``:memory:`` is refused: the
    store needs one database shared by several connections)."""
    prefix = "sqlite:///"
    if not url.startswith(prefix):
        raise ValueError(f"not a SQLite URL: {url!r} (expected sqlite:///path/to.db)")
    path = url[len(prefix) :].split("?", 1)[0]
    if path in ("", ":memory:"):
        raise ValueError("an in-memory SQLite database cannot be shared; give a file path")
    return path


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc)
    return "locked" in text or "busy" in text


# Primary result codes (https://sqlite.org/rescode.html); extended codes carry
# them in their low byte.
_SQLITE_PERM, _SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_CORRUPT = 3, 8, 10, 11
_SQLITE_FULL, _SQLITE_CANTOPEN, _SQLITE_NOTADB = 13, 14, 26


def _translate(exc: sqlite3.Error, where: str) -> StorageError | None:
    """The store's typed error for a failure of the database file itself
    (None: not one; busy databases are handled where they are waited for).
    Raised after the transaction was rolled back: nothing was written."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        return None
    primary = code & 0xFF
    detail = f"{getattr(exc, 'sqlite_errorname', 'SQLITE_' + str(code))}: {exc}"
    if primary == _SQLITE_FULL:
        return DiskFull(where, detail)
    if primary == _SQLITE_IOERR:
        return StorageIOError(where, detail)
    if primary in (_SQLITE_READONLY, _SQLITE_PERM):
        return DatabaseReadOnly(
            f"the database {where!r} cannot be written ({detail}): nothing was written; "
            "check the permissions of the file, its folder and its -wal and -shm files"
        )
    if primary in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
        return StorageError(
            f"the database file {where!r} is damaged or not a database ({detail}): "
            "nothing was written; restore it from a backup"
        )
    if primary == _SQLITE_CANTOPEN:
        return StorageError(
            f"the database {where!r} (or its -wal or -shm file) cannot be opened ({detail}); "
            "check that its folder exists and is writable"
        )
    return None


#: ADVANCE_HEAD with SQLite's max() for the turn: its parameters are the counters as
#: they come (append_one_after_head).
_ADVANCE_HEAD_ONE = ADVANCE_HEAD.replace(
    "turn_count = CASE WHEN turn_count > ? THEN turn_count ELSE ? END",
    "turn_count = max(turn_count, ?)",
)
assert _ADVANCE_HEAD_ONE != ADVANCE_HEAD


class SQLiteRecorder(Recorder):
    # events.workspace_id comes after the payload in the row: reading it walks
    # the payload's overflow pages (27 ms for a 50 MB event). Its session's row
    # says the same in one page.
    event_workspace = "(SELECT s.workspace_id FROM sessions s WHERE s.id = e.session_id)"

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.path = sqlite_path(url)
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False
        self._listener: threading.Thread | None = None
        #: Positions of the events this recorder committed that the listener has not
        #: looked at yet (filled while it runs): a change of ``data_version`` they fully
        #: explain needs no wake-up (see ``_foreign_events``).
        self._own_positions: set[int] = set()
        self._own_lock = threading.Lock()
        self._listening = False

    # -- connections ------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        if self._closed:
            raise StoreClosed()
        # isolation_level=None: we issue BEGIN/COMMIT ourselves.
        conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA temp_store = MEMORY")
            conn.execute("PRAGMA cache_size = -32000")
        except sqlite3.Error:
            conn.close()
            raise
        self._local.conn = conn
        with self._lock:
            self._connections.append(conn)
        return conn

    def shrink_memory(self) -> None:
        """``PRAGMA shrink_memory`` on every connection: their page caches (up to 32 MB
        each, one connection per worker thread that used the store) are what stays of a
        resumed session after its caches were dropped. SQLite serializes calls on one
        connection (threadsafety 3), so another thread's connection may be shrunk here;
        a shrunk cache is read again from the file when needed. Under the lock that
        closing takes: a connection closed while this thread executes on it crashed the
        process (a segmentation fault in the suite, ``drop_caches`` then ``close``)."""
        with self._lock:
            for conn in self._connections:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("PRAGMA shrink_memory")

    def close(self) -> None:
        self._closed = True
        with self._lock:  # not while shrink_memory executes on one of them
            conns, self._connections = self._connections, []
            for conn in conns:
                with contextlib.suppress(sqlite3.Error):  # closing a broken connection
                    conn.close()
        self._local = threading.local()

    @contextmanager
    def _transaction(self, begin: str, give_up_s: float = BUSY_GIVE_UP_S) -> Iterator[Cursor]:
        try:
            conn = self._connection()
            self._begin(conn, begin, give_up_s)
        except sqlite3.Error as exc:
            raise (_translate(exc, self.path) or exc) from exc
        cur = conn.cursor()
        try:
            yield cur
        except BaseException as exc:
            typed = self._rolled_back(conn, exc)
            if typed is None:
                raise
            raise typed from exc
        else:
            self._commit(conn)
        finally:
            cur.close()

    def _begin(self, conn: sqlite3.Connection, begin: str, give_up_s: float) -> None:
        try:
            conn.execute(begin)
        except sqlite3.OperationalError as exc:
            self._begin_again(conn, begin, give_up_s, exc)

    def _begin_again(
        self,
        conn: sqlite3.Connection,
        begin: str,
        give_up_s: float,
        exc: sqlite3.OperationalError,
    ) -> None:
        """``begin`` failed with ``exc``: wait and try again while the database is busy
        (up to ``give_up_s``: then StoreBusy); any other error is raised."""
        deadline = None  # the clock is read only once the database was busy
        delay = 0.001
        while True:
            if not _is_busy(exc):
                raise exc
            now = time.monotonic()
            if deadline is None:
                deadline = now + give_up_s
            if now >= deadline:
                raise StoreBusy(self.path) from exc
            log.debug("sqlite busy on %s; retrying", begin)
            time.sleep(delay)
            delay = min(delay * 2, 0.1)
            try:
                conn.execute(begin)
                return
            except sqlite3.OperationalError as again:
                exc = again

    def _commit(self, conn: sqlite3.Connection) -> None:
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self._commit_again(conn, exc)

    def _commit_again(self, conn: sqlite3.Connection, exc: sqlite3.Error) -> None:
        """``COMMIT`` failed with ``exc``: try again while the database is busy, else
        roll back and raise (typed where it can be)."""
        deadline = None
        while True:
            # A COMMIT can be busy while readers hold an old snapshot during a
            # checkpoint; the transaction stays open and COMMIT can be retried.
            busy = isinstance(exc, sqlite3.OperationalError) and _is_busy(exc)
            if busy:
                now = time.monotonic()
                if deadline is None:
                    deadline = now + BUSY_GIVE_UP_S
                if now < deadline:
                    time.sleep(0.005)
                    try:
                        conn.execute("COMMIT")
                        return
                    except sqlite3.Error as again:
                        exc = again
                        continue
            self._rollback(conn)
            typed = _translate(exc, self.path) or (StoreBusy(self.path) if busy else None)
            if typed is not None:
                raise typed from exc
            raise exc

    def _rolled_back(self, conn: sqlite3.Connection, exc: BaseException) -> StorageError | None:
        """Roll back after ``exc``; the typed error to raise instead (None: ``exc`` itself)."""
        self._rollback(conn)
        return _translate(exc, self.path) if isinstance(exc, sqlite3.Error) else None

    def _rollback(self, conn: sqlite3.Connection) -> None:
        """Roll back what is left of a failed transaction. SQLite has often
        rolled back already (a full disk, an I/O error): a ROLLBACK then would
        only raise "no transaction is active" and hide the cause. A connection
        that cannot roll back is dropped; the next call opens another."""
        if not conn.in_transaction:
            return
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            log.warning("rollback failed on %s; dropping the connection", self.path, exc_info=True)
        if conn.in_transaction:
            self._drop(conn)

    def _drop(self, conn: sqlite3.Connection) -> None:
        if getattr(self._local, "conn", None) is conn:
            self._local.conn = None
        with self._lock:
            if conn in self._connections:
                self._connections.remove(conn)
            with contextlib.suppress(sqlite3.Error):
                conn.close()

    def write(self) -> Any:
        return self._transaction("BEGIN IMMEDIATE")

    def read(self) -> Any:
        return self._transaction("BEGIN")

    @contextmanager
    def try_write(self) -> Iterator[Cursor]:
        # Optional work (a state snapshot) never queues behind other writers:
        # one short wait for the write lock, then StoreBusy.
        conn = self._connection()
        conn.execute(f"PRAGMA busy_timeout = {TRY_WRITE_TIMEOUT_MS}")
        try:
            with self._transaction("BEGIN IMMEDIATE", give_up_s=0.0) as cur:
                yield cur
        finally:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")

    def write_snapshot(
        self, cur: Cursor, event: Event, fmt: str, data: bytes, keep: int, when: str
    ) -> None:
        """As the recorder does, but the bytes go in through incremental blob I/O: a
        cached statement keeps its last bound values until it runs again, so binding a
        snapshot (MBs) kept a copy of it per connection for good, beyond the reach of
        ``shrink_memory`` (issue 29: 2.8 MB per connection after a 2,000-turn resume)."""
        cur.execute(
            "INSERT INTO state_snapshots (event_id, session_id, sequence, format, "
            "created_at, data) VALUES (?, ?, ?, ?, ?, zeroblob(?)) ON CONFLICT (event_id) "
            "DO UPDATE SET format = excluded.format, created_at = excluded.created_at, "
            "data = excluded.data",
            (event.id, event.session_id, event.sequence, fmt, when, len(data)),
        )
        cur.execute("SELECT rowid FROM state_snapshots WHERE event_id = ?", (event.id,))
        (rowid,) = cur.fetchone()
        conn: sqlite3.Connection = cur.connection  # type: ignore[attr-defined]
        with conn.blobopen("state_snapshots", "data", rowid, readonly=False) as blob:
            blob.write(data)
        cur.execute(
            "DELETE FROM state_snapshots WHERE session_id = ? AND event_id NOT IN "
            "(SELECT event_id FROM state_snapshots WHERE session_id = ? "
            "ORDER BY sequence DESC LIMIT ?)",
            (event.session_id, event.session_id, keep),
        )

    def start_change_listener(self) -> None:
        with self._lock:
            if self._listener is not None or self._closed:
                return
            self._listener = threading.Thread(
                target=self._watch_data_version, name="tron-sqlite-changes", daemon=True
            )
            self._listener.start()

    def committed_here(self, events: Sequence[Event]) -> None:
        if self._listening and events:
            with self._own_lock:
                self._own_positions.update(e.position for e in events)

    def _watch_data_version(self) -> None:
        # PRAGMA data_version changes when another connection (another process
        # included) commits: a cheap way to notice foreign writers. This recorder's own
        # commits change it too (they are other connections than this one): those were
        # signalled as they were made, and waking every feed again for them only made
        # each read what it already had (see _foreign_events).
        # It looks every CHANGE_POLL_S while other processes write, backing off (doubling
        # up to CHANGE_POLL_IDLE_S) once none did for CHANGE_BUSY_S: a first foreign commit
        # after a quiet spell is noticed a little later, the ones after it as before.
        conn = sqlite3.connect(self.path, check_same_thread=False)
        try:
            last = None
            allocated = self._allocated(conn)
            self._listening = True
            interval = CHANGE_POLL_S
            busy_until = time.monotonic() + CHANGE_BUSY_S
            #: Positions a wake-up was for that this recorder's commits did not explain
            #: yet: (after, up to], and how many looks since (another process's for sure
            #: after SUSPECT_LOOKS; ours are noted just after their commit, which a busy
            #: GIL can delay).
            suspect: tuple[int, int] | None = None
            looks = 0
            while not self._closed:
                try:
                    version = conn.execute("PRAGMA data_version").fetchone()[0]
                except sqlite3.OperationalError:  # busy: look again shortly
                    version = last
                if suspect is not None:
                    looks += 1
                    if self._explained(*suspect):
                        suspect = None
                    elif looks >= SUSPECT_LOOKS:  # another process writes: keep up
                        suspect = None
                        interval = CHANGE_POLL_S
                        busy_until = time.monotonic() + CHANGE_BUSY_S
                if last is not None and version != last:
                    before = allocated
                    foreign, allocated = self._foreign_events(conn, allocated)
                    if foreign:
                        self.changes.bump(ANY)
                        if before is not None and allocated is not None:
                            if suspect is None:
                                suspect, looks = (before, allocated), 0
                            else:  # consecutive ranges: one
                                suspect = (suspect[0], allocated)
                # Own positions are kept while they may still explain a suspect.
                self._forget_own(allocated if suspect is None else suspect[0])
                last = version
                if interval < CHANGE_POLL_IDLE_S and time.monotonic() > busy_until:
                    interval = min(2 * interval, CHANGE_POLL_IDLE_S)
                time.sleep(interval)
        finally:
            self._listening = False
            conn.close()

    @staticmethod
    def _allocated(conn: sqlite3.Connection) -> int | None:
        """The highest event position ever given (``sqlite_sequence``: it only grows, and
        a rolled-back insert gives none back); None when unknown (then every change
        wakes the feeds)."""
        try:
            row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'events'").fetchone()
        except sqlite3.Error:
            return None
        return int(row[0]) if row is not None and row[0] is not None else None

    def _foreign_events(
        self, conn: sqlite3.Connection, before: int | None
    ) -> tuple[bool, int | None]:
        """(whether events another connection committed may be among the positions given
        since ``before``, the highest position now): not when this recorder's own commits
        account for every one of them, or when none was given (a commit of no events:
        session rows, snapshots, blobs, deletions; feeds only deliver events)."""
        now = self._allocated(conn)
        if now is None or before is None:
            return True, now
        # One of ours not noted yet wakes the feeds (harmless); the listener looks again
        # before it changes its pace.
        return not (now == before or self._explained(before, now)), now

    def _explained(self, before: int, now: int) -> bool:
        """Whether this recorder's own commits account for every position in
        (``before``, ``now``]: positions are unique, so a foreign event in the range
        leaves fewer than its size to this recorder."""
        with self._own_lock:
            mine = sum(1 for p in self._own_positions if before < p <= now)
        return mine == now - before

    def _forget_own(self, now: int | None) -> None:
        """Drop the own positions up to ``now`` (looked at)."""
        if now is not None:
            with self._own_lock:
                self._own_positions = {p for p in self._own_positions if p > now}

    # -- backend-specific operations --------------------------------------

    def lock_session(self, cur: Cursor, session_id: str) -> tuple[Session, Event] | None:
        # BEGIN IMMEDIATE already holds the database's write lock.
        cur.execute(f"SELECT {SESSION_AND_HEAD}", (session_id,))
        row = cur.fetchone()
        return session_and_head_from_row(row) if row else None

    def append_after_head(
        self,
        session_id: str,
        head_id: str,
        event_count: int,
        rows: Sequence[RowToAppend],
        counters: Counters,
    ) -> list[int] | None:
        # The base class's, written out: the appends' hot path, where the context
        # managers and per-event objects were a third of the store's own CPU
        # (benchmarks/RESULTS.md §12). The same statements as the floor's, in the
        # same transaction handling as _transaction.
        conn = self._connection()
        try:
            self._begin(conn, "BEGIN IMMEDIATE", BUSY_GIVE_UP_S)
        except sqlite3.Error as exc:
            raise (_translate(exc, self.path) or exc) from exc
        try:
            cur = conn.cursor()
            execute = cur.execute
            if (
                execute(
                    ADVANCE_HEAD, advance_params(session_id, head_id, event_count, rows, counters)
                ).rowcount
                != 1
            ):
                self._rollback(conn)
                return None
            positions: list[int] = []
            for values, text in rows:
                position: int = execute(INSERT_EVENT, values).lastrowid  # type: ignore[assignment]
                positions.append(position)
                if text:
                    execute("INSERT INTO events_fts (rowid, text) VALUES (?, ?)", (position, text))
        except BaseException as exc:
            typed = self._rolled_back(conn, exc)
            if typed is None:
                raise
            raise typed from exc
        self._commit(conn)
        return positions

    def append_one_after_head(
        self,
        session_id: str,
        head_id: str,
        event_count: int,
        values: tuple[Any, ...],
        text: str,
        counters: Counters,
    ) -> int | None:
        # append_after_head of one row, written out (every append of the agent loop): one
        # cursor for the whole transaction, as the floor's (benchmarks/RESULTS.md §13).
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connection()
        cur = conn.cursor()
        execute = cur.execute
        try:
            execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            try:
                if not isinstance(exc, sqlite3.OperationalError):
                    raise
                self._begin_again(conn, "BEGIN IMMEDIATE", BUSY_GIVE_UP_S, exc)
            except sqlite3.Error as failed:
                raise (_translate(failed, self.path) or failed) from failed
        try:
            params = (values[0], 1, *counters, values[7], session_id, head_id, event_count)
            if execute(_ADVANCE_HEAD_ONE, params).rowcount != 1:
                self._rollback(conn)
                return None
            position: int = execute(INSERT_EVENT, values).lastrowid  # type: ignore[assignment]
            if text:
                execute("INSERT INTO events_fts (rowid, text) VALUES (?, ?)", (position, text))
        except BaseException as exc:
            typed = self._rolled_back(conn, exc)
            if typed is None:
                raise
            raise typed from exc
        try:
            execute("COMMIT")
        except sqlite3.Error as exc:
            self._commit_again(conn, exc)
        return position

    def insert_events(self, cur: Cursor, rows: Sequence[NewEvent]) -> list[int]:
        positions: list[int] = []
        for r in rows:
            cur.execute(
                INSERT_EVENT,
                (r.id, r.parent_id, r.session_id, r.workspace_id, r.sequence, r.depth, r.type,
                 r.timestamp, r.payload_json),
            )  # fmt: skip
            position = int(cur.lastrowid)  # type: ignore[attr-defined]
            positions.append(position)
            if r.search_text:
                cur.execute(
                    "INSERT INTO events_fts (rowid, text) VALUES (?, ?)", (position, r.search_text)
                )
        return positions

    def delete_search_rows(self, cur: Cursor, session_ids: Sequence[str]) -> None:
        marks = ", ".join("?" for _ in session_ids)
        cur.execute(
            "DELETE FROM events_fts WHERE rowid IN "
            f"(SELECT position FROM events WHERE session_id IN ({marks}))",
            list(session_ids),
        )

    def json_quote(self, column: str) -> str:
        return f"json_quote({column})"

    def feed_upper_bound(self, cur: Cursor) -> int | None:
        return None  # writes are serialized: positions commit in order

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
        match = query if raw else fts5_literal_query(query)
        if not match.strip():
            return []
        join, filters, filter_params = self.search_filters(
            "f.rowid", workspace_id, session_id, types, session_ids
        )
        where = "events_fts MATCH ?" + filters
        params: list[Any] = [match, *filter_params]
        try:
            # Phase 1: rank the most recent candidates by bm25 (lower is better).
            # FTS5 walks a term's matches in rowid order, so the LIMIT stops early
            # for common terms instead of scoring every match.
            cur.execute(
                f"SELECT f.rowid, bm25(events_fts) FROM events_fts f{join} WHERE {where} "
                "ORDER BY f.rowid DESC LIMIT ?",
                [*params, SEARCH_CANDIDATES],
            )
            ranked = sorted(cur.fetchall(), key=lambda r: (r[1], -r[0]))[:limit]
            if not ranked:
                return []
            # Phase 2: snippets and event details for the page only. snippet()
            # costs the square of a text's matches: long texts come back whole
            # (at most MAX_INDEXED_CHARS) and get theirs from chunks instead.
            positions = [r[0] for r in ranked]
            marks = ", ".join("?" for _ in positions)
            cur.execute(
                "SELECT f.rowid, CASE WHEN length(f.text) <= ? THEN snippet(events_fts, 0, "
                f"'{SNIPPET_OPEN}', '{SNIPPET_CLOSE}', '…', {SNIPPET_WORDS}) END, e.id, "
                f"e.session_id, {self.event_workspace}, e.type, e.timestamp, e.sequence, "
                "CASE WHEN length(f.text) > ? THEN f.text END "
                "FROM events_fts f JOIN events e ON e.position = f.rowid "
                f"WHERE events_fts MATCH ? AND f.rowid IN ({marks})",
                [CHUNK_CHARS, CHUNK_CHARS, match, *positions],
            )
            details = {row[0]: row for row in cur.fetchall()}
        except sqlite3.OperationalError as exc:
            if raw and ("fts5" in str(exc) or "syntax" in str(exc) or "no such column" in str(exc)):
                raise InvalidQuery(f"invalid full-text query {query!r}: {exc}") from None
            raise
        hits: list[SearchHit] = []
        for position, bm25 in ranked:
            d = details.get(position)
            if d is None:
                continue
            hits.append(
                SearchHit(
                    event_id=d[2], session_id=d[3], workspace_id=d[4], type=d[5],
                    timestamp=d[6], score=-bm25, sequence=d[7],
                    snippet=d[1] if d[8] is None else long_text_snippet(
                        d[8], query, match, SNIPPET_OPEN, SNIPPET_CLOSE
                    ),
                )
            )  # fmt: skip
        return hits

    def integrity_check(self) -> str:
        with self.read() as cur:
            cur.execute("PRAGMA integrity_check")
            return str(cur.fetchone()[0])
