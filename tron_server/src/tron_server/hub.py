"""The hub: which connections are open, which sessions each follows, and the
fan-out of notifications to them.

``publish`` never blocks: it serializes a notification once and queues it on
every target connection (a client too far behind is closed with 4008, see
:mod:`tron_server.connection`). ``session.*`` notifications go to every
connection; the others to the connections subscribed to that session, and a
sub-agent's ``agent.*`` notifications (``data.parentSessionId`` set) to the
parent's subscribers as well, so a client watching the parent sees its
children work.

``events.new`` comes from the store: one ``store.subscribe(session_id=…)``
feed per session that has subscribers, shared by all of them (started on the
first subscription, "from now", stopped when the last one leaves). A
connection subscribed before an event is committed receives it; a client that
resumes subscribes first, then calls ``events.sync`` after its last sequence
and drops duplicates by sequence, and so sees every event exactly once.

Several servers on one database (:mod:`tron_server.cluster`): ``agent.*`` and
``session.*`` notifications published here also go to :attr:`Hub.relay`, which
sends them to the other servers, whose hubs publish them to their own clients with
:meth:`Hub.deliver` (not relayed again). ``events.new`` is never relayed: each server
reads the events from the database itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup

from .connection import CLOSE_GOING_AWAY, CLOSE_INTERNAL, Connection
from .protocol import BROADCAST_PREFIXES, EVENTS_NEW
from .rpc.frames import notification_frame, now_iso

if TYPE_CHECKING:
    from tron_events import AsyncEventStore

log = logging.getLogger("tron_server.hub")

#: Notifications sent to the other servers' clients too (when :attr:`Hub.relay` is set).
RELAYED_PREFIXES = ("agent.", "session.")

Relay = Callable[[str, str | None, Any, str, str | None], None]

#: A ``lossy`` notification (a browser frame) skips a connection holding more than this
#: for its client: the next frame shows the page anyway, and a slow client is not closed.
LOSSY_PENDING_BYTES = 1024 * 1024


@dataclass(eq=False)
class _Feed:
    """One store subscription shared by the subscribers of a session."""

    session_id: str
    ready: anyio.Event = field(default_factory=anyio.Event)
    error: BaseException | None = None
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)


class Hub:
    """Connections, subscriptions and notification fan-out. Use as ``async with hub:``."""

    def __init__(self, store: AsyncEventStore | None = None) -> None:
        self.store = store
        self.connections: set[Connection] = set()
        self._subscribers: dict[str, set[Connection]] = {}
        self._feeds: dict[str, _Feed] = {}
        self._tg: TaskGroup | None = None
        self._closing = False
        #: (method, session id, data, timestamp, also_to) to the other servers.
        self.relay: Relay | None = None
        #: Called with a session's id once its last client left and the store dropped
        #: its caches: what else keeps the session's history in memory drops it too.
        self.caches_dropped: list[Callable[[str], None]] = []

    async def __aenter__(self) -> Hub:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        self._closing = True
        assert self._tg is not None
        for feed in self._feeds.values():
            feed.scope.cancel()
        self._tg.cancel_scope.cancel()
        try:
            return await self._tg.__aexit__(exc_type, exc, tb)
        finally:
            self._tg = None

    # -- connections ----------------------------------------------------

    def attach(self, conn: Connection) -> None:
        self.connections.add(conn)

    def detach(self, conn: Connection) -> None:
        """Forget a connection and its subscriptions (stopping feeds nobody follows)."""
        self.connections.discard(conn)
        for session_id in list(conn.subscriptions):
            self._remove_subscriber(conn, session_id)

    def close_all(self, code: int = CLOSE_GOING_AWAY, reason: str = "server shutting down") -> None:
        """Ask every connection to close (their handlers return soon after)."""
        self._closing = True
        for conn in list(self.connections):
            conn.close_soon(code, reason)

    def close_subscribers(self, reason: str) -> None:
        """Close every connection that follows a session (it may have missed relayed
        notifications): its client reconnects, subscribes and syncs."""
        for conn in list(self.connections):
            if conn.subscriptions:
                conn.close_soon(CLOSE_INTERNAL, reason)

    # -- subscriptions --------------------------------------------------

    def subscribers(self, session_id: str) -> frozenset[Connection]:
        return frozenset(self._subscribers.get(session_id, ()))

    async def subscribe(self, conn: Connection, session_id: str, *, events: bool = True) -> None:
        """Subscribe ``conn`` to the session's notifications and ``events.new``.

        When this returns, every event committed from now on reaches ``conn``.
        ``events=False``: the notifications without ``events.new`` (a client that only
        follows the run, as ``tron -p`` does; no store feed runs for it); a later
        subscription with events adds them. Raises the store's SessionNotFound for an
        unknown session.
        """
        if session_id in conn.subscriptions and (
            not events or session_id not in conn.without_events
        ):
            return
        if events and self.store is not None:
            feed = self._feeds.get(session_id)
            if feed is None:
                feed = self._start_feed(session_id)
            await feed.ready.wait()
            if feed.error is not None:
                raise feed.error
        if events:
            conn.without_events.discard(session_id)
        else:
            conn.without_events.add(session_id)
        conn.subscriptions.add(session_id)
        self._subscribers.setdefault(session_id, set()).add(conn)

    def unsubscribe(self, conn: Connection, session_id: str) -> bool:
        """False if ``conn`` was not subscribed."""
        if session_id not in conn.subscriptions:
            return False
        self._remove_subscriber(conn, session_id)
        return True

    def drop_session(self, session_id: str) -> None:
        """A session was deleted: stop its feed and forget its subscribers."""
        for conn in self._subscribers.pop(session_id, set()):
            conn.subscriptions.discard(session_id)
        self._stop_feed(session_id)

    def _remove_subscriber(self, conn: Connection, session_id: str) -> None:
        conn.subscriptions.discard(session_id)
        conn.without_events.discard(session_id)
        subs = self._subscribers.get(session_id)
        if subs is None:
            return
        subs.discard(conn)
        if subs and all(session_id in c.without_events for c in subs):
            self._stop_feed(session_id)  # nobody left wants its events.new
        if not subs:
            del self._subscribers[session_id]
            self._stop_feed(session_id)
            if self.store is not None:
                # What the store keeps in memory for the session (its live projection, its
                # rows): the next client, or the next turn, builds it again. This bounds a
                # server's memory by the sessions someone has open (issue 29).
                self.store.drop_caches([session_id])
            for forget in self.caches_dropped:
                forget(session_id)

    # -- publishing -----------------------------------------------------

    def publish(
        self,
        session_id: str | None,
        method: str,
        data: Any,
        *,
        timestamp: str | None = None,
        also_to: str | None = None,
        lossy: bool = False,
    ) -> int:
        """Send a notification without waiting; returns how many connections got it.

        ``also_to``: another session whose subscribers get it too (once each). ``lossy``:
        skip connections already holding :data:`LOSSY_PENDING_BYTES` (frames)."""
        if self.relay is not None and method.startswith(RELAYED_PREFIXES):
            timestamp = timestamp or now_iso()
            try:
                self.relay(method, session_id, data, timestamp, also_to)
            except Exception:
                log.exception("relaying %s failed", method)
        return self.deliver(method, session_id, data, timestamp, also_to, lossy=lossy)

    def deliver(
        self,
        method: str,
        session_id: str | None,
        data: Any,
        timestamp: str | None = None,
        also_to: str | None = None,
        *,
        lossy: bool = False,
    ) -> int:
        """``publish`` to this server's connections only (a notification relayed here)."""
        if method.startswith(BROADCAST_PREFIXES):
            targets: set[Connection] | frozenset[Connection] = self.connections
        else:
            targets = self._subscribers.get(session_id, frozenset()) if session_id else frozenset()
            if also_to is not None and also_to in self._subscribers:
                targets = targets | self._subscribers[also_to]
        if lossy:
            targets = {c for c in targets if c.pending_bytes <= LOSSY_PENDING_BYTES}
        if method == EVENTS_NEW and session_id is not None:
            targets = {c for c in targets if session_id not in c.without_events}
        if not targets:
            return 0
        # Bytes as they are: the socket takes UTF-8 (no decoding here and encoding there).
        frame = notification_frame(method, session_id, data, timestamp)
        sent = 0
        for conn in list(targets):
            sent += conn.enqueue(frame)
        return sent

    def emit(self, method: str, session_id: str, data: dict[str, Any]) -> None:
        """``publish`` in the orchestrator's ``Emit`` argument order (method first); a
        child's notifications also reach its parent's subscribers."""
        parent = data.get("parentSessionId")
        self.publish(session_id, method, data, also_to=parent if isinstance(parent, str) else None)

    # -- store feeds ----------------------------------------------------

    def _start_feed(self, session_id: str) -> _Feed:
        if self._tg is None:
            raise RuntimeError("the hub is not running (use `async with hub:`)")
        feed = self._feeds[session_id] = _Feed(session_id)
        self._tg.start_soon(self._run_feed, feed)
        return feed

    def _stop_feed(self, session_id: str) -> None:
        feed = self._feeds.pop(session_id, None)
        if feed is not None:
            feed.scope.cancel()

    async def _run_feed(self, feed: _Feed) -> None:
        assert self.store is not None
        with feed.scope:
            try:
                # Resolving "from now" is a short read: do it off the event loop.
                events = await anyio.to_thread.run_sync(
                    partial(self.store.subscribe, session_id=feed.session_id, poll_interval=0.5)
                )
            except Exception as exc:
                feed.error = exc
                if self._feeds.get(feed.session_id) is feed:
                    del self._feeds[feed.session_id]
                return
            finally:
                feed.ready.set()
            try:
                async for event in events:
                    self.publish(
                        event.session_id, EVENTS_NEW, event.to_wire(), timestamp=event.timestamp
                    )
            except Exception:
                if self._closing:
                    return
                # Never let a client silently miss events: close its subscribers so
                # they reconnect, subscribe and sync.
                log.exception("event feed failed", extra={"fields": {"sessionId": feed.session_id}})
                for conn in self.subscribers(feed.session_id):
                    conn.close_soon(CLOSE_INTERNAL, "event feed failed: reconnect and sync")
                if self._feeds.get(feed.session_id) is feed:
                    del self._feeds[feed.session_id]


__all__ = ["BROADCAST_PREFIXES", "LOSSY_PENDING_BYTES", "RELAYED_PREFIXES", "Hub"]
