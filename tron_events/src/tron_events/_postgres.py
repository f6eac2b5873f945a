"""The PostgreSQL backend: psycopg 3, a connection pool, row locks per session.

Transactions
    Writes run in READ COMMITTED. An append first locks its session row
    (``SELECT … FOR NO KEY UPDATE``): appends to one session serialize across
    processes, appends to different sessions do not wait on each other, and
    every statement after the lock sees the head the previous writer
    committed. ``NO KEY UPDATE`` (not ``UPDATE``) so that the foreign-key
    checks of other transactions (a fork referencing the session) are not
    blocked. Reads run in ``REPEATABLE READ READ ONLY``: one snapshot for the
    whole read, and a read-only RR transaction can never fail to serialize.

Commit order of positions (the feed's high-water mark)
    ``position`` comes from a sequence, so two transactions can take 10 and 11
    and commit 11 first; a reader following ``position`` that saw 11 and
    moved its cursor past 10 would skip 10 forever. The ``eventsourcing``
    library prevents this by serializing inserts (``LOCK TABLE … IN EXCLUSIVE
    MODE`` until commit), which makes every writer wait for every other
    writer's commit. Marten lets a daemon compute a high-water mark and gives
    up on a gap after a timeout, which can skip. We compute an exact
    high-water mark instead, and writers never wait on each other:

    * A writer *registers* before it takes positions: the statement that
      inserts events first takes a shared transaction-level advisory lock whose
      key is ``REGISTRATION_NAMESPACE + c``, where ``c`` is the sequence's
      ``last_value`` read at that moment; every position it then takes is
      ``>= c``. The lock goes away when its transaction commits or rolls back
      (or its connection dies). Shared locks never conflict with each other.
    * A reader (:meth:`feed_upper_bound`) reads (1) the sequence's
      ``last_value`` L, then (2) the lowest registration key R still held
      (``pg_locks``), and cuts the feed at ``min(L, R - 1)``.

    Why nothing is skipped: take a position p <= L whose transaction T has not
    finished at (2). T took p before (1), so it registered before (1), and its
    lock is still held at (2) with a key <= p, hence the cut is below p. A
    position taken after (1) is > L. Every other position <= the cut belongs
    to a transaction that had committed or rolled back before (2); the feed
    query then reads with a snapshot taken after (2) (``position_feed`` runs
    in READ COMMITTED for that reason), so it sees all of them that committed.

Errors
    psycopg errors are translated into the store's typed errors: a unique
    violation on ``events.id`` (two writers racing with one client event id) is
    an :class:`EventIdConflict`; NUL characters, which PostgreSQL text cannot
    hold, are an :class:`InvalidPayload` (the store refuses them earlier, in
    the values it keeps in columns; payloads are JSON text, where NUL is
    escaped); a pool that hands out no connection is :class:`StoreBusy`; a
    full disk (SQLSTATE 53100) is :class:`DiskFull` and an I/O error (58030)
    :class:`StorageIOError` (see :func:`_translate`). Deadlocks and
    serialization failures cannot be retried from inside a ``with`` block
    (the block cannot be run again), so the locking order is designed to make
    them impossible: an append locks one session row and no other row
    (foreign-key checks take only key-share locks, which row updates by
    appenders do not block); deletions lock all their session rows in id
    order before touching events. Should one still occur it surfaces as
    :class:`TransientConflict` (a :class:`StoreBusy`), which the store retries.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

import psycopg
import psycopg.errors
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg_pool import ConnectionPool, PoolTimeout
from sqlalchemy.engine import make_url

from ._changes import ALL_EVENTS, ANY
from ._pg_conninfo import conninfo_from_url as conninfo_from_url  # for callers of old
from ._recorder import (
    SESSION_AND_HEAD,
    SESSION_COLUMNS,
    Cursor,
    NewEvent,
    Recorder,
    SessionDelta,
    session_and_head_from_row,
    session_from_row,
)
from .errors import (
    DatabaseReadOnly,
    DiskFull,
    EventIdConflict,
    EventNotFound,
    InvalidPayload,
    InvalidQuery,
    SessionHasForks,
    SessionNotFound,
    StorageError,
    StorageIOError,
    StoreBusy,
    StoreClosed,
    TransientConflict,
)
from .models import Event, SearchHit, Session
from .search_text import MAX_INDEXED_CHARS as MAX_INDEXED_CHARS  # for callers of old
from .search_text import literal_words

log = logging.getLogger(__name__)

#: Writers register with an advisory lock whose int8 key is this namespace plus
#: a lower bound of the positions they are about to take (keys below 2**48
#: positions; the migration lock in ``migrate.py`` is 7262700001, far below).
REGISTRATION_NAMESPACE = 0x7262 << 48
#: The sequence behind ``events.position`` (a BIGSERIAL made by revision 0001).
POSITION_SEQUENCE = "events_position_seq"
#: Common terms are ranked among their most recent matches only (as on SQLite),
#: so the first page of a term found in most of a million events stays fast.
SEARCH_CANDIDATES = 2_000
SNIPPET_OPTIONS = (
    'StartSel=«, StopSel=», MaxWords=16, MinWords=6, MaxFragments=2, FragmentDelimiter=" … "'
)
#: How long a caller waits for a pooled connection before StoreBusy.
POOL_TIMEOUT_S = 60.0
#: LISTEN/NOTIFY channel; a payload is "session_id workspace_id[;…]".
CHANNEL = "tron_events"
#: application_name of listener connections: writers send NOTIFYs only while one
#: is connected to the database (looked up at most every LISTENERS_RECHECK_S).
LISTENER_APPLICATION = "tron-events-listener"
LISTENERS_RECHECK_S = 0.2
POOL_MAX_SIZE = 10
#: How long optional writes (state snapshots) wait for a row lock.
TRY_WRITE_LOCK_TIMEOUT_MS = 200

_DUPLICATE_KEY = re.compile(r"Key \(id\)=\((?P<id>[^)]*)\)")


def _append_cursor(conn: psycopg.Connection[tuple[Any, ...]]) -> psycopg.Cursor[tuple[Any, ...]]:
    """The pooled connection's own cursor for the one-statement append.

    A new cursor per append builds a new adaptation context each time (~30 µs
    of the writer's CPU, a tenth of an append's); the pool hands a connection
    to one thread at a time, so its cursor is never shared.
    """
    cur: psycopg.Cursor[tuple[Any, ...]] | None = getattr(conn, "_tron_append_cursor", None)
    if cur is None or cur.closed:
        cur = conn.cursor()
        conn._tron_append_cursor = cur  # type: ignore[attr-defined]
    return cur


def database_name(url: str) -> str:
    """``url`` as error messages show it: the password hidden."""
    return make_url(url).render_as_string(hide_password=True)


def _translate(exc: psycopg.Error, where: str = "PostgreSQL") -> Exception | None:
    """The store's typed error for a psycopg error (None: re-raise as is).
    ``where`` names the database in messages (without its password)."""
    storage = _storage_error(exc, where)
    if storage is not None:
        return storage
    if isinstance(exc, psycopg.errors.DeadlockDetected | psycopg.errors.SerializationFailure):
        return TransientConflict(type(exc).__name__)
    if isinstance(exc, psycopg.errors.UniqueViolation):
        constraint = exc.diag.constraint_name or ""
        if constraint == "events_id_key":
            m = _DUPLICATE_KEY.search(exc.diag.message_detail or "")
            return EventIdConflict(m["id"] if m else "?", "an event stored concurrently")
        return None
    if isinstance(exc, psycopg.errors.ForeignKeyViolation):
        # Only possible when a row we depend on was deleted concurrently (the
        # store checked it exists earlier in this transaction).
        constraint = exc.diag.constraint_name or ""
        detail = exc.diag.message_detail or str(exc)
        if constraint.startswith("events_parent_id"):
            return EventNotFound(f"{detail} (deleted concurrently)")
        if constraint.startswith("sessions_"):
            return SessionNotFound(f"{detail} (deleted concurrently)")
        return None
    if isinstance(exc, psycopg.errors.DataError) and "0x00" in str(exc):
        return InvalidPayload("text cannot contain NUL (\\x00) characters on PostgreSQL")
    if isinstance(exc, psycopg.errors.UntranslatableCharacter):
        return InvalidPayload(f"text not storable on PostgreSQL: {exc}")
    return None


def _storage_error(exc: psycopg.Error, where: str) -> StorageError | None:
    """What a failure of the server's storage is, by SQLSTATE class: 53
    (insufficient resources: 53100 disk full), 58 (system errors: 58030 I/O),
    XX001/XX002 (corruption) and 25006 (a read-only server). The statement or
    transaction failed as a whole: nothing was written."""
    state = exc.sqlstate or ""
    detail = f"SQLSTATE {state}: {str(exc).strip()}"
    if state == "53100":
        return DiskFull(where, detail)
    if state.startswith("58"):
        return StorageIOError(where, detail)
    if state.startswith("53") and state != "53300":  # too_many_connections: not storage
        return StorageError(
            f"the database server {where!r} ran out of resources ({detail}): nothing was "
            "written; retry later or ask its administrator"
        )
    if state in ("XX001", "XX002"):
        return StorageError(
            f"the database {where!r} reports damaged data ({detail}): nothing was written; "
            "ask its administrator (REINDEX, or restore from a backup)"
        )
    if state == "25006":
        return DatabaseReadOnly(
            f"the database {where!r} is read-only ({detail}): nothing was written; "
            "connect to the primary server"
        )
    return None


class PostgresRecorder(Recorder):
    placeholder = "%s"
    has_append_at_head = True
    lock_clause = " FOR NO KEY UPDATE"
    #: Writes to different sessions take different row locks and run in
    #: parallel; keep a few pooled connections free for readers.
    concurrent_writers = POOL_MAX_SIZE - 2

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.conninfo = conninfo_from_url(url)
        #: The database as error messages name it (no password).
        self.where = database_name(url)
        self._closed = False
        #: ids of the cursors of open REPEATABLE READ transactions (see position_feed).
        self._snapshot_cursors: set[int] = set()
        #: (session, workspace) pairs written by open write transactions, by cursor id:
        #: announced with NOTIFY once the transaction has committed.
        self._written: dict[int, set[tuple[str, str]]] = {}
        self._listener: threading.Thread | None = None
        self._listener_lock = threading.Lock()
        self._notify_cond = threading.Condition()
        self._to_announce: set[tuple[str, str]] = set()
        self._notifier: threading.Thread | None = None
        #: The server process id of this recorder's NOTIFY connection: its notifications
        #: tell of commits this recorder has signalled already, and the listener skips
        #: them (each woke every live feed for a read that found nothing new).
        self._notifier_pid: int | None = None
        self._listeners_seen = False
        self._listeners_checked_at = -1e9
        # autocommit: we issue BEGIN with the isolation level we want ourselves.
        self._pool: ConnectionPool[psycopg.Connection[tuple[Any, ...]]] = ConnectionPool(
            self.conninfo,
            min_size=1,
            max_size=POOL_MAX_SIZE,
            kwargs={"autocommit": True},
            timeout=POOL_TIMEOUT_S,
            name="tron-events",
            open=True,
        )

    def close(self) -> None:
        with self._notify_cond:
            self._closed = True  # the notifier sends what is pending, then stops
            self._notify_cond.notify()
        self._pool.close()
        for thread in (self._notifier, self._listener):
            if thread is not None and thread is not threading.current_thread():
                thread.join(timeout=5)

    # -- transactions -----------------------------------------------------

    @contextmanager
    def _connection(self, begin: str) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
        """A pooled connection with ``begin`` executed on it.

        A pooled connection can be dead (server restart, idle timeout); BEGIN
        is where we find out, nothing was done yet, so we try another one. The
        pool discards broken connections when they come back.
        """
        for attempt in range(3):
            if self._closed:
                raise StoreClosed()
            try:
                with self._pool.connection() as conn:
                    try:
                        conn.execute(begin)
                    except psycopg.OperationalError:
                        if conn.closed and attempt < 2:
                            log.warning("a pooled PostgreSQL connection was broken; retrying")
                            continue
                        raise
                    yield conn
                    return
            except PoolTimeout as exc:
                raise StoreBusy(f"{self.url} (no free connection in the pool)") from exc
        raise AssertionError("unreachable")  # pragma: no cover

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[Cursor]:
        with self._connection(begin) as conn:
            cur = conn.cursor()
            if "REPEATABLE READ" in begin:
                self._snapshot_cursors.add(id(cur))
            try:
                try:
                    yield cur
                    conn.execute("COMMIT")
                    written = self._written.pop(id(cur), None)
                    if written:
                        self._announce(written)
                except BaseException as exc:
                    self._written.pop(id(cur), None)
                    self._rollback(conn)
                    if isinstance(exc, psycopg.Error):
                        translated = _translate(exc, self.where)
                        if translated is not None:
                            raise translated from exc
                    raise
            finally:
                self._snapshot_cursors.discard(id(cur))
                cur.close()

    @staticmethod
    def _rollback(conn: psycopg.Connection[tuple[Any, ...]]) -> None:
        if conn.closed:
            return
        try:
            conn.execute("ROLLBACK")
        except psycopg.Error:  # a broken connection: the pool will discard it
            log.debug("rollback failed", exc_info=True)

    def write(self) -> Any:
        return self._transaction("BEGIN ISOLATION LEVEL READ COMMITTED")

    def read(self) -> Any:
        return self._transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")

    @contextmanager
    def try_write(self) -> Iterator[Cursor]:
        # Optional work (a state snapshot) never queues long behind a row lock.
        with self._transaction("BEGIN ISOLATION LEVEL READ COMMITTED") as cur:
            cur.execute(f"SET LOCAL lock_timeout = '{TRY_WRITE_LOCK_TIMEOUT_MS}ms'")
            yield cur

    def read_snapshot(self, cur: Cursor, event_id: str, fmt: str) -> bytes | None:
        # Binary results: a bytea of megabytes in text form is hex, twice the size.
        pcur = cast("psycopg.Cursor[tuple[Any, ...]]", cur)
        pcur.execute(
            "SELECT data FROM state_snapshots WHERE event_id = %s AND format = %s",
            (event_id, fmt),
            binary=True,
        )
        row = pcur.fetchone()
        return bytes(row[0]) if row is not None else None

    # -- live subscriptions across processes --------------------------------

    def _announce(self, written: set[tuple[str, str]]) -> None:
        """Tell listening processes that events were committed (a wake-up only).

        Not in the write transaction: a NOTIFY there makes every commit queue
        on PostgreSQL's global notification lock while it flushes the WAL,
        which serializes writers. Not even on the writer's path: a notifier
        thread sends them from its own connection, coalescing what several
        commits wrote while it was busy, so a process appending fast sends far
        fewer NOTIFYs than it commits. A lost or late wake-up only delays a
        subscriber until its next poll; the events are already durable.
        """
        if (
            not self._listeners_seen
            and time.monotonic() < self._listeners_checked_at + LISTENERS_RECHECK_S
        ):
            # Nobody listened when the notifier last looked, and it will look
            # again at the first commit after LISTENERS_RECHECK_S: waking it
            # for each commit in between would cost a thread switch per append.
            return
        with self._notify_cond:
            self._to_announce.update(written)
            if self._notifier is None and not self._closed:
                self._notifier = threading.Thread(
                    target=self._notify_loop, name="tron-postgres-notify", daemon=True
                )
                self._notifier.start()
            self._notify_cond.notify()

    def _notify_loop(self) -> None:
        conn: psycopg.Connection[tuple[Any, ...]] | None = None
        try:
            while True:
                with self._notify_cond:
                    while not self._to_announce and not self._closed:
                        self._notify_cond.wait()
                    batch, self._to_announce = self._to_announce, set()
                    stop = self._closed
                if batch:
                    conn = self._send_notify(conn, batch)
                if stop:
                    return
        finally:
            if conn is not None:
                conn.close()

    def _send_notify(
        self, conn: psycopg.Connection[tuple[Any, ...]] | None, batch: set[tuple[str, str]]
    ) -> psycopg.Connection[tuple[Any, ...]] | None:
        try:
            if conn is None or conn.closed:
                conn = psycopg.connect(self.conninfo, autocommit=True)
                self._notifier_pid = conn.info.backend_pid
            if not self._anyone_listening(conn):
                return conn
        except psycopg.Error:
            log.warning("could not look for change listeners", exc_info=True)
            if conn is not None:
                conn.close()
            return None
        payload = ";".join(f"{sid} {wid}" for sid, wid in sorted(batch))
        if len(payload) > 7_900:  # NOTIFY payloads are capped at 8000 bytes
            payload = ANY  # wake every subscriber of this database
        # One transaction without a WAL flush (the wake-up needs no durability).
        statement = sql.SQL(
            "BEGIN; SET LOCAL synchronous_commit = off; SELECT pg_notify({}, {}); COMMIT"
        ).format(sql.Literal(CHANNEL), sql.Literal(payload))
        try:
            conn.execute(statement.as_string(conn))
        except psycopg.Error:
            log.warning("could not send a change notification", exc_info=True)
            if conn is not None:
                conn.close()
            return None
        return conn

    def _anyone_listening(self, conn: psycopg.Connection[tuple[Any, ...]]) -> bool:
        """Is a listener connected to this database? A NOTIFY costs a small
        transaction on both sides; without listeners it is skipped. A listener
        that connects just after a "no" misses at most LISTENERS_RECHECK_S of
        wake-ups, and it wakes its subscribers itself when it connects."""
        now = time.monotonic()
        if now >= self._listeners_checked_at + LISTENERS_RECHECK_S:
            row = conn.execute(
                "SELECT EXISTS (SELECT 1 FROM pg_stat_activity "
                "WHERE datname = current_database() AND application_name = %s)",
                (LISTENER_APPLICATION,),
            ).fetchone()
            self._listeners_seen = bool(row and row[0])
            self._listeners_checked_at = now
        return self._listeners_seen

    def start_change_listener(self) -> None:
        with self._listener_lock:
            if self._listener is not None or self._closed:
                return
            self._listener = threading.Thread(
                target=self._listen, name="tron-postgres-changes", daemon=True
            )
            self._listener.start()

    def _listen(self) -> None:
        while not self._closed:
            try:
                info = make_conninfo(self.conninfo, application_name=LISTENER_APPLICATION)
                with psycopg.connect(info, autocommit=True) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    # Commits made while we were not listening: wake everyone.
                    self.changes.bump(ANY)
                    while not self._closed:
                        for note in conn.notifies(timeout=0.5):
                            if note.pid == self._notifier_pid:
                                continue  # this recorder's commits, signalled as made
                            keys: set[str] = {ALL_EVENTS}
                            for pair in note.payload.split(";"):
                                keys.update(pair.split(" "))
                            self.changes.bump(*keys)
            except psycopg.Error:
                if self._closed:
                    return
                log.warning("change listener lost its connection; reconnecting", exc_info=True)
                self.changes.bump(ANY)
                time.sleep(1.0)

    # -- backend-specific operations --------------------------------------

    def lock_session(self, cur: Cursor, session_id: str) -> tuple[Session, Event] | None:
        # One statement in the common case. FOR NO KEY UPDATE OF s: the session
        # row only, and forks referencing the session are not blocked.
        cur.execute(self.sql(f"SELECT {SESSION_AND_HEAD} FOR NO KEY UPDATE OF s"), (session_id,))
        row = cur.fetchone()
        if row is not None:
            return session_and_head_from_row(row)
        # No row: the session does not exist, or another writer moved its head
        # while we waited for the lock (READ COMMITTED rechecks the join against
        # the new session row but the old head row, and drops it). Lock alone,
        # then read the new head.
        cur.execute(
            f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = %s FOR NO KEY UPDATE",
            (session_id,),
        )
        srow = cur.fetchone()
        if srow is None:
            return None
        session = session_from_row(srow)
        head = self.get_event(cur, session.head_event_id)
        if head is None:  # pragma: no cover - a head always exists
            raise EventNotFound(session.head_event_id)
        return session, head

    # One statement for any number of events: register (see the module
    # docstring), insert the chain in order (positions follow ``ord``), add the
    # search rows. ``r`` is volatile, so it is evaluated once, before any row
    # reaches the INSERT and its nextval().
    _INSERT_EVENTS = (
        f"WITH r AS (SELECT pg_advisory_xact_lock_shared({REGISTRATION_NAMESPACE} + last_value) "
        f"FROM {POSITION_SEQUENCE}), "
        "d AS (SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], "
        "%s::int[], %s::int[], %s::text[], %s::text[], %s::text[], %s::text[]) "
        "WITH ORDINALITY AS d(id, parent_id, session_id, workspace_id, sequence, depth, "
        "type, timestamp, payload, search, ord)), "
        "ins AS (INSERT INTO events (id, parent_id, session_id, workspace_id, sequence, depth, "
        "type, timestamp, payload) SELECT d.id, d.parent_id, d.session_id, d.workspace_id, "
        "d.sequence, d.depth, d.type, d.timestamp, d.payload FROM d, r ORDER BY d.ord "
        "RETURNING id, position), "
        "s AS (INSERT INTO events_search (position, text) SELECT ins.position, d.search "
        "FROM ins JOIN d ON d.id = ins.id WHERE d.search <> '') "
        "SELECT id, position FROM ins"
    )

    # (1) the sequence's last value L, then (2) the lowest registration still
    # held; the correlated subquery makes (2) run after (1).
    _HIGH_WATER_MARK = (
        "SELECT l.last_value, (SELECT min(((k.classid::bigint << 32) | k.objid::bigint)) "
        f"- {REGISTRATION_NAMESPACE} FROM pg_locks k WHERE k.locktype = 'advisory' "
        "AND k.objsubid = 1 AND k.database = (SELECT oid FROM pg_database "
        "WHERE datname = current_database()) "
        f"AND k.classid::bigint >> 16 = {REGISTRATION_NAMESPACE >> 48} "
        "AND l.last_value IS NOT NULL) "
        f"FROM (SELECT last_value FROM {POSITION_SEQUENCE} OFFSET 0) l"
    )

    # The common append (to the head, no client id, nothing to check but the
    # session's status and expected head) as ONE statement in autocommit: lock
    # the session row, check, register, insert the event and its search row,
    # move the head and counters. One round trip and no BEGIN/COMMIT, where the
    # general path takes five; it inserts nothing when a check fails (or when
    # another writer moved the head while it waited for the lock, see
    # lock_session), and the store then takes the general path, which raises
    # the precise error. ``r`` reads the sequence and locks after ``ok`` has a
    # row, so a writer waiting for its session holds no registration.
    _APPEND_AT_HEAD = (
        "WITH s AS (SELECT s.id, s.workspace_id, s.head_event_id, s.status, s.event_count, "
        "e.depth FROM sessions s JOIN events e ON e.id = s.head_event_id "
        "WHERE s.id = %(sid)s FOR NO KEY UPDATE OF s), "
        "ok AS (SELECT * FROM s WHERE s.status = 'active' "
        "AND (%(expected)s::text IS NULL OR s.head_event_id = %(expected)s::text)), "
        f"r AS (SELECT pg_advisory_xact_lock_shared({REGISTRATION_NAMESPACE} + q.last_value) "
        f"AS registered FROM ok, {POSITION_SEQUENCE} q), "
        "ins AS (INSERT INTO events (id, parent_id, session_id, workspace_id, sequence, depth, "
        "type, timestamp, payload) SELECT %(id)s, ok.head_event_id, ok.id, ok.workspace_id, "
        "ok.event_count, ok.depth + 1, %(type)s, %(ts)s, %(payload)s FROM ok, r "
        "RETURNING position, parent_id, workspace_id, sequence, depth), "
        "srch AS (INSERT INTO events_search (position, text) SELECT ins.position, "
        "%(search)s::text FROM ins WHERE %(search)s::text <> ''), "
        "upd AS (UPDATE sessions SET head_event_id = %(id)s, event_count = event_count + 1, "
        "message_count = message_count + %(messages)s, "
        "turn_count = CASE WHEN turn_count > %(turn)s THEN turn_count ELSE %(turn)s END, "
        "input_tokens = input_tokens + %(input)s, output_tokens = output_tokens + %(output)s, "
        "cache_read_tokens = cache_read_tokens + %(cache_read)s, "
        "cache_creation_tokens = cache_creation_tokens + %(cache_creation)s, "
        "cost = cost + %(cost)s, "
        "last_activity_at = %(ts)s FROM ins WHERE sessions.id = %(sid)s) "
        "SELECT position, parent_id, workspace_id, sequence, depth FROM ins"
    )

    def append_at_head(
        self, row: NewEvent, delta: SessionDelta, expected_head: str | None
    ) -> tuple[int, str, str, int, int] | None:
        params = {
            "sid": row.session_id,
            "expected": expected_head,
            "id": row.id,
            "type": row.type,
            "ts": row.timestamp,
            "payload": row.payload_json,
            "search": row.search_text,
            "messages": delta.messages,
            "turn": delta.max_turn,
            "input": delta.input_tokens,
            "output": delta.output_tokens,
            "cache_read": delta.cache_read_tokens,
            "cache_creation": delta.cache_creation_tokens,
            "cost": delta.cost,
        }
        if self._closed:
            raise StoreClosed()
        try:
            with self._pool.connection() as conn:
                try:
                    found = _append_cursor(conn).execute(self._APPEND_AT_HEAD, params).fetchone()
                except psycopg.OperationalError:
                    if not conn.closed:
                        raise
                    # A dead pooled connection. Whether the statement committed
                    # is unknown; the event id (ours, unique) says. If it did
                    # not, the general path appends on another connection.
                    found = None
                    with self.read() as cur:
                        event = self.get_event(cur, row.id)
                    if event is not None:
                        found = (event.position, event.parent_id, event.workspace_id,
                                 event.sequence, event.depth)  # fmt: skip
        except PoolTimeout as exc:
            raise StoreBusy(f"{self.url} (no free connection in the pool)") from exc
        except psycopg.Error as exc:
            translated = _translate(exc, self.where)
            if translated is not None:
                raise translated from exc
            raise
        if found is None:
            return None
        self._announce({(row.session_id, found[2])})
        return found

    def insert_events(self, cur: Cursor, rows: Sequence[NewEvent]) -> list[int]:
        if not rows:
            return []
        cur.execute(
            self._INSERT_EVENTS,
            (
                [r.id for r in rows],
                [r.parent_id for r in rows],
                [r.session_id for r in rows],
                [r.workspace_id for r in rows],
                [r.sequence for r in rows],
                [r.depth for r in rows],
                [r.type for r in rows],
                [r.timestamp for r in rows],
                [r.payload_json for r in rows],
                [r.search_text for r in rows],
            ),
        )
        by_id = {row[0]: int(row[1]) for row in cur.fetchall()}
        self._written.setdefault(id(cur), set()).update(
            (r.session_id, r.workspace_id) for r in rows
        )
        return [by_id[r.id] for r in rows]

    def delete_search_rows(self, cur: Cursor, session_ids: Sequence[str]) -> None:
        # The store calls this first when deleting sessions: lock every session
        # row being deleted, in id order, before touching any event, so a
        # deletion never deadlocks with appends; then make sure no fork was
        # created since the store looked (a fork inserts with a key-share lock
        # on its source's row, which FOR UPDATE excludes from here on).
        ids = sorted(set(session_ids))
        cur.execute("SELECT id FROM sessions WHERE id = ANY(%s) ORDER BY id FOR UPDATE", (ids,))
        cur.execute(
            "SELECT parent_session_id, id FROM sessions "
            "WHERE parent_session_id = ANY(%s) AND NOT id = ANY(%s) ORDER BY created_at",
            (ids, ids),
        )
        late_forks = cur.fetchall()
        if late_forks:
            raise SessionHasForks(late_forks[0][0], [row[1] for row in late_forks])
        cur.execute(
            "DELETE FROM events_search WHERE position IN "
            "(SELECT position FROM events WHERE session_id = ANY(%s))",
            (ids,),
        )

    def feed_upper_bound(self, cur: Cursor) -> int | None:
        cur.execute(self._HIGH_WATER_MARK)
        last, lowest_registered = cur.fetchone()
        if lowest_registered is None:
            return int(last)
        return min(int(last), int(lowest_registered) - 1)

    def position_feed_rows(
        self, cur: Cursor, columns: str, workspace_id: str | None, after_position: int, limit: int
    ) -> list[Any]:
        # The feed must read with a snapshot taken AFTER its high-water mark
        # (a transaction that commits between an older snapshot and the mark
        # would be invisible yet below the mark, and skipped). A read
        # transaction's snapshot is older, so end it (it only read) and go on
        # in READ COMMITTED, where every statement takes a new snapshot.
        if id(cur) in self._snapshot_cursors:
            cur.execute("COMMIT")
            cur.execute("BEGIN ISOLATION LEVEL READ COMMITTED READ ONLY")
        return super().position_feed_rows(cur, columns, workspace_id, after_position, limit)

    def json_quote(self, column: str) -> str:
        return f"COALESCE(to_json({column})::text, 'null')"

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
        # Literal text: plainto_tsquery ANDs the words and reads no operator
        # (websearch_to_tsquery would interpret OR, - and quotes), so it cannot
        # fail on any string. raw: to_tsquery's syntax, which raises on bad input.
        text = query if raw else " ".join(literal_words(query))
        if not text.strip():
            return []
        parse = "to_tsquery" if raw else "plainto_tsquery"
        join, filters, filter_params = self.search_filters(
            "s.position", workspace_id, session_id, types, session_ids
        )
        where = "s.tsv @@ q.q" + filters
        params: list[Any] = [text, *filter_params]
        try:
            # Phase 1: rank the most recent candidates (newest positions first,
            # so the planner can walk the primary key backwards and stop early
            # for a common term; a rare term comes from the GIN index).
            # Never a prepared statement: a generic plan cannot know whether the
            # term is rare (use the GIN index) or common (walk positions back),
            # and the wrong one costs ~30x on a million events.
            pcur = cast("psycopg.Cursor[tuple[Any, ...]]", cur)
            pcur.execute(
                f"SELECT s.position, ts_rank(s.tsv, q.q) "
                f"FROM {parse}('english', %s) AS q(q), events_search s{join} "
                f"WHERE {where} ORDER BY s.position DESC LIMIT %s",
                [*params, SEARCH_CANDIDATES],
                prepare=False,
            )
            ranked = sorted(cur.fetchall(), key=lambda r: (-r[1], -r[0]))[:limit]
        except psycopg.errors.SyntaxError as exc:
            if raw:
                raise InvalidQuery(f"invalid full-text query {query!r}: {exc}") from None
            raise
        if not ranked:
            return []
        # Phase 2: snippets and event details for the page only (ts_headline
        # re-parses the text, so it runs on at most ``limit`` rows).
        positions = [r[0] for r in ranked]
        cur.execute(
            f"SELECT s.position, ts_headline('english', s.text, q.q, %s), e.id, e.session_id, "
            "e.workspace_id, e.type, e.timestamp, e.sequence "
            f"FROM {parse}('english', %s) AS q(q), events_search s "
            "JOIN events e ON e.position = s.position WHERE s.position = ANY(%s)",
            (SNIPPET_OPTIONS, text, positions),
        )
        details = {row[0]: row for row in cur.fetchall()}
        hits: list[SearchHit] = []
        for position, rank in ranked:
            d = details.get(position)
            if d is None:
                continue
            hits.append(
                SearchHit(
                    event_id=d[2], session_id=d[3], workspace_id=d[4], type=d[5],
                    timestamp=d[6], snippet=d[1], score=float(rank), sequence=d[7],
                )
            )  # fmt: skip
        return hits
