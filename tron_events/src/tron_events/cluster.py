"""Several servers on one PostgreSQL database: run leases and messages between servers.

A session's turn runs in one server at a time, its *owner*. The owner holds a
**lease**, a row of ``session_leases`` (revision 0005): ``owner``, ``since``, and
``until`` — the moment the lease lapses unless the owner renews it (a heartbeat
every ``ttl / 4``). Why a row and not a PostgreSQL advisory lock:

* every server can *see* a row: "is this session busy, and where" is one query
  from any server (an advisory lock is visible only as an opaque key in
  ``pg_locks``, with no owner name to route a command to);
* a session-level advisory lock lives and dies with one connection: a pool that
  recycles connections, a proxy (PgBouncer) or a network blip releases it while the
  turn still runs, and it cannot be held across the many connections of a pool;
* expiry is explicit and bounded: a lease of a server that was killed (or that
  stalled) lapses at ``until``, and whoever takes it next knows it took it from a
  dead owner (the row says so) and records the interrupted turn. A TCP connection
  of a killed container can linger for minutes before PostgreSQL drops its locks.

**Messages** between servers go by ``NOTIFY`` on :data:`CHANNEL`: a JSON object with a
``target`` (a server id, or ``"*"`` for all). PostgreSQL caps a payload at 8000
bytes: a larger body is stored in the unlogged ``cluster_messages`` table and the
notification carries its ``ref`` instead. All messages of one :class:`Cluster` are
sent on one connection, in order, so every listener gets them in the order they
were sent (PostgreSQL delivers notifications in commit order); a listener reads a
referenced body before it handles the next notification, which keeps that order.

    cluster = Cluster(url, "srv-a", ttl=6.0)
    claim = cluster.claim(session_id)      # Claim(owned=True, owner="srv-a", ...)
    cluster.start(on_message)              # the listener thread: on_message(dict)
    cluster.send("srv-b", {"kind": "call", ...})
    cluster.release(session_id)
    cluster.close()

Needs the ``postgres`` extra (psycopg).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool

from ._pg_conninfo import conninfo_from_url

__all__ = [
    "BROADCAST",
    "CHANNEL",
    "DEFAULT_LEASE_TTL",
    "MAX_NOTIFY_BYTES",
    "Claim",
    "Cluster",
    "Lease",
]

log = logging.getLogger(__name__)

#: The LISTEN/NOTIFY channel of messages between servers.
CHANNEL = "tron_cluster"
#: The ``target`` of a message for every server.
BROADCAST = "*"
#: Seconds a lease holds without a renewal: a dead owner's sessions can be taken over
#: after at most this (plus the takers' sweep interval).
DEFAULT_LEASE_TTL = 6.0
#: How long :meth:`Cluster.start` waits for the listener to listen (then it returns, and
#: the listener reports the gap once it listens).
LISTEN_WAIT_S = 10.0
#: Payloads above this go through ``cluster_messages`` (PostgreSQL's limit is 8000).
MAX_NOTIFY_BYTES = 7_900
#: Referenced bodies older than this are deleted (every listener read them long ago).
MESSAGE_TTL_S = 120.0


@dataclass(frozen=True, slots=True)
class Lease:
    session_id: str
    owner: str
    #: Seconds since the epoch (the database's clock).
    since: float
    until: float
    #: Whether ``until`` had passed when it was read.
    expired: bool


@dataclass(frozen=True, slots=True)
class Claim:
    """The outcome of :meth:`Cluster.claim`: ``owned`` (the lease is ours now), the
    ``owner`` (ours or the live other one), and ``taken_from``: the server whose
    *expired* lease we took (its turn was interrupted), None otherwise."""

    owned: bool
    owner: str
    taken_from: str | None = None


Handler = Callable[[dict[str, Any]], None]


class Cluster:
    """Leases and messages of one server (``server_id``) on the database at ``url``."""

    def __init__(self, url: str, server_id: str, *, ttl: float = DEFAULT_LEASE_TTL) -> None:
        if ttl <= 0:
            raise ValueError("the lease time must be positive")
        self.server_id = server_id
        self.ttl = ttl
        self.conninfo = conninfo_from_url(url)
        self._pool: ConnectionPool[psycopg.Connection[tuple[Any, ...]]] = ConnectionPool(
            self.conninfo,
            min_size=1,
            max_size=4,
            kwargs={"autocommit": True},
            timeout=10.0,
            name="tron-cluster",
            open=True,
        )
        self._outbox: queue.Queue[tuple[str, bytes] | None] = queue.Queue()
        self._closed = threading.Event()
        self._threads: list[threading.Thread] = []
        self._listening = threading.Event()
        #: start() returned before the listener listened: what was sent before is missed.
        self._returned_early = threading.Event()

    # -- leases -------------------------------------------------------------------

    def claim(self, session_id: str) -> Claim:
        """Take the session's lease if it is free, ours, or expired; else say whose it is."""
        interval = sql.Literal(f"{self.ttl} seconds")
        with self._pool.connection() as conn, conn.transaction():
            row = conn.execute(
                "SELECT owner, until < now() FROM session_leases WHERE session_id = %s FOR UPDATE",
                (session_id,),
            ).fetchone()
            if row is None:
                inserted = conn.execute(
                    sql.SQL(
                        "INSERT INTO session_leases (session_id, owner, until) "
                        "VALUES (%s, %s, now() + interval {}) ON CONFLICT DO NOTHING "
                        "RETURNING owner"
                    ).format(interval),
                    (session_id, self.server_id),
                ).fetchone()
                if inserted is not None:
                    return Claim(True, self.server_id)
                # Another server inserted it between our read and our insert.
                row = conn.execute(
                    "SELECT owner, until < now() FROM session_leases WHERE session_id = %s "
                    "FOR UPDATE",
                    (session_id,),
                ).fetchone()
                assert row is not None
            owner, expired = str(row[0]), bool(row[1])
            if owner != self.server_id and not expired:
                return Claim(False, owner)
            conn.execute(
                sql.SQL(
                    "UPDATE session_leases SET owner = %s, until = now() + interval {}, "
                    "since = CASE WHEN owner = %s THEN since ELSE now() END "
                    "WHERE session_id = %s"
                ).format(interval),
                (self.server_id, self.server_id, session_id),
            )
            taken = owner if owner != self.server_id else None
            return Claim(True, self.server_id, taken_from=taken)

    def renew(self, session_ids: Iterable[str]) -> set[str]:
        """Extend our leases of ``session_ids``; returns those we no longer hold."""
        wanted = sorted(set(session_ids))
        if not wanted:
            return set()
        with self._pool.connection() as conn:
            rows = conn.execute(
                sql.SQL(
                    "UPDATE session_leases SET until = now() + interval {} "
                    "WHERE owner = %s AND session_id = ANY(%s) RETURNING session_id"
                ).format(sql.Literal(f"{self.ttl} seconds")),
                (self.server_id, wanted),
            ).fetchall()
        return set(wanted) - {str(r[0]) for r in rows}

    def release(self, session_id: str) -> bool:
        """Give up our lease of the session (False: we did not hold it)."""
        with self._pool.connection() as conn:
            cur = conn.execute(
                "DELETE FROM session_leases WHERE session_id = %s AND owner = %s",
                (session_id, self.server_id),
            )
            return cur.rowcount > 0

    def leases(self, session_ids: Sequence[str] | None = None) -> list[Lease]:
        """The leases (of ``session_ids``, or all), expired ones included."""
        query = (
            "SELECT session_id, owner, extract(epoch FROM since), extract(epoch FROM until), "
            "until < now() FROM session_leases"
        )
        params: tuple[Any, ...] = ()
        if session_ids is not None:
            query += " WHERE session_id = ANY(%s)"
            params = (list(session_ids),)
        with self._pool.connection() as conn:
            rows = conn.execute(query, params).fetchall()
        return [Lease(str(r[0]), str(r[1]), float(r[2]), float(r[3]), bool(r[4])) for r in rows]

    # -- messages -----------------------------------------------------------------

    def send(self, target: str, body: dict[str, Any]) -> None:
        """Queue ``body`` for server ``target`` (or :data:`BROADCAST`); never blocks.
        Messages of this object reach each listener in the order they were sent."""
        if self._closed.is_set():
            return
        self._outbox.put((target, orjson.dumps({**body, "target": target,
                                                "sender": self.server_id})))  # fmt: skip

    def start(self, on_message: Handler, *, on_reconnect: Callable[[], None] | None = None) -> None:
        """Start listening (messages for us or for everyone, not our own broadcasts, go to
        ``on_message`` in the listener thread) and sending. Returns once listening.
        ``on_reconnect``: called when the listener had lost its connection (messages
        may have been missed meanwhile), and when it first listens only after this
        returned (it waits :data:`LISTEN_WAIT_S` at most: a database slow to answer)."""
        for name, target in (
            ("tron-cluster-listen", lambda: self._listen(on_message, on_reconnect)),
            ("tron-cluster-send", self._send_loop),
        ):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        if not self._listening.wait(timeout=LISTEN_WAIT_S):
            self._returned_early.set()

    def close(self) -> None:
        """Stop the threads (what is queued is sent first) and close the connections."""
        if self._closed.is_set():
            return
        self._outbox.put(None)
        for thread in self._threads:
            if thread.name == "tron-cluster-send":
                thread.join(timeout=5)
        self._closed.set()
        for thread in self._threads:
            thread.join(timeout=5)
        self._pool.close()

    def _send_loop(self) -> None:
        conn: psycopg.Connection[tuple[Any, ...]] | None = None
        stop = False
        while not stop:
            item = self._outbox.get()
            batch: list[tuple[str, bytes]] = []
            while True:
                if item is None:
                    stop = True
                else:
                    batch.append(item)
                if stop or len(batch) >= 200:
                    break
                try:
                    item = self._outbox.get_nowait()
                except queue.Empty:
                    break
            if batch:
                conn = self._send_batch(conn, batch)
        if conn is not None:
            conn.close()

    def _send_batch(
        self, conn: psycopg.Connection[tuple[Any, ...]] | None, batch: list[tuple[str, bytes]]
    ) -> psycopg.Connection[tuple[Any, ...]] | None:
        """One transaction of NOTIFYs (delivered together, in order) without a WAL flush;
        a body too large is inserted in the same transaction and referenced."""
        for attempt in (1, 2):
            try:
                if conn is None or conn.closed:
                    conn = psycopg.connect(self.conninfo, autocommit=True)
                with conn.transaction():
                    conn.execute("SET LOCAL synchronous_commit = off")
                    for target, payload in batch:
                        if len(payload) > MAX_NOTIFY_BYTES:
                            row = conn.execute(
                                "INSERT INTO cluster_messages (target, body) VALUES (%s, %s) "
                                "RETURNING id",
                                (target, payload.decode()),
                            ).fetchone()
                            assert row is not None
                            payload = orjson.dumps(
                                {"target": target, "sender": self.server_id, "ref": row[0]}
                            )
                        conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, payload.decode()))
                return conn
            except psycopg.Error:
                log.warning("could not send %d cluster message(s) (attempt %d)", len(batch),
                            attempt, exc_info=True)  # fmt: skip
                if conn is not None:
                    conn.close()
                conn = None
        return None

    def _listen(self, on_message: Handler, on_reconnect: Callable[[], None] | None) -> None:
        first = True
        last_cleanup = 0.0
        while not self._closed.is_set():
            try:
                with psycopg.connect(self.conninfo, autocommit=True) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self._listening.set()
                    late = first and self._returned_early.is_set()
                    if (late or not first) and on_reconnect is not None:
                        on_reconnect()
                    first = False
                    while not self._closed.is_set():
                        # Collected first: no query may run while notifies() iterates.
                        payloads = [n.payload for n in conn.notifies(timeout=0.5, stop_after=1)]
                        for payload in payloads:
                            body = self._body(conn, payload)
                            if body is not None:
                                self._deliver(on_message, body)
                        if time.monotonic() > last_cleanup + MESSAGE_TTL_S / 4:
                            last_cleanup = time.monotonic()
                            conn.execute(
                                "DELETE FROM cluster_messages WHERE created_at < now() - "
                                "make_interval(secs => %s)",
                                (MESSAGE_TTL_S,),
                            )
            except psycopg.Error:
                if self._closed.is_set():
                    return
                log.warning("cluster listener lost its connection; reconnecting", exc_info=True)
                time.sleep(0.5)

    def _body(
        self, conn: psycopg.Connection[tuple[Any, ...]], payload: str
    ) -> dict[str, Any] | None:
        try:
            body = orjson.loads(payload)
        except orjson.JSONDecodeError:
            log.warning("ignoring a cluster message that is not JSON")
            return None
        if not isinstance(body, dict):
            return None
        target = body.get("target")
        if target == BROADCAST:
            if body.get("sender") == self.server_id:
                return None  # our own broadcast
        elif target != self.server_id:
            return None
        ref = body.get("ref")
        if ref is None:
            return body
        row = conn.execute(
            "SELECT body FROM cluster_messages WHERE id = %s", (int(ref),)
        ).fetchone()
        if row is None:
            log.warning("cluster message %s is gone (older than %s s?)", ref, MESSAGE_TTL_S)
            return None
        if target != BROADCAST:  # read by its only reader
            conn.execute("DELETE FROM cluster_messages WHERE id = %s", (int(ref),))
        loaded = orjson.loads(row[0])
        return loaded if isinstance(loaded, dict) else None

    @staticmethod
    def _deliver(on_message: Handler, body: dict[str, Any]) -> None:
        try:
            on_message(body)
        except Exception:  # one bad message must not stop the listener
            log.exception("handling a cluster message failed")
