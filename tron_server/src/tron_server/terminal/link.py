"""The interactive client's connection: calls, notifications in wire order, and
reconnection after a drop.

Notifications are handed to a synchronous handler as the client's reader
receives them, in the order they came over the socket, not through a queue
drained later: a call's answer (an ``agent.getState`` snapshot) is then always
applied after every notification that preceded it on the wire, which is what
the resume rule needs (deltas before the snapshot are in it, and are ignored).

After a drop, :meth:`Link.reconnect` tries again with backoff (the token is
read again each time: ``tron-server --rotate-token`` may have replaced it)
until a connection is made; the caller then resumes its session (subscribe,
sync, snapshot).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from typing import Any

from ..client import ConnectionLost, Notification, NotificationStream, TronClient
from .attach import Connection, Refused, ServerAddress, Unreachable, connect_once

log = logging.getLogger(__name__)

Handler = Callable[[Notification], None]

#: Backoff between reconnection attempts: from the first to the last, jittered.
BACKOFF_FIRST = 0.2
BACKOFF_MAX = 3.0


class _Pump(NotificationStream):
    """A notification stream that applies each notification as it is received."""

    def __init__(self, client: TronClient, handle: Handler, ended: Callable[[], None]) -> None:
        self._handle = handle
        self._ended = ended
        self._done = False
        super().__init__(client, None, None)

    def _offer(self, n: Notification) -> None:
        try:
            self._handle(n)
        except Exception:  # a display bug must not kill the connection's reader
            log.exception("handling %s failed", n.method)

    def _end(self) -> None:
        if not self._done:
            self._done = True
            self._ended()


class Link:
    """One connection at a time to the server, replaced after a drop."""

    def __init__(self, address: ServerAddress, handle: Handler) -> None:
        self.address = address
        self._handle = handle
        self.connection: Connection | None = None
        self.lost = asyncio.Event()
        self.last_error = ""
        self._closing = False

    def adopt(self, connection: Connection) -> None:
        """Use ``connection`` (just opened) from now on."""
        self.connection = connection
        self.lost.clear()
        _Pump(connection.client, self._handle, lambda: self._dropped(connection))
        if connection.client.closed is not None:  # closed before the pump was in place
            self._dropped(connection)

    def _dropped(self, connection: Connection) -> None:
        if self.connection is connection:
            self.connection = None
            self.lost.set()

    @property
    def online(self) -> bool:
        return self.connection is not None

    @property
    def client(self) -> TronClient:
        if self.connection is None:
            raise ConnectionLost(None, "not connected")
        return self.connection.client

    async def call(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = 60
    ) -> Any:
        """Call on the current connection; ConnectionLost when there is none."""
        return await self.client.call(method, params, timeout=timeout)

    async def reconnect(self, on_attempt: Callable[[float, str], None] | None = None) -> None:
        """Connect again, with backoff, until it works (or the link is closed)."""
        delay = BACKOFF_FIRST
        while not self._closing:
            try:
                connection = await connect_once(self.address)
            except Refused as exc:
                self.last_error = f"the server refused the token (HTTP {exc.status})"
            except Unreachable as exc:
                self.last_error = str(exc)
            else:
                self.adopt(connection)
                return
            if on_attempt is not None:
                on_attempt(delay, self.last_error)
            await asyncio.sleep(delay * (0.75 + random.random() / 2))
            delay = min(BACKOFF_MAX, delay * 2)

    async def close(self) -> None:
        self._closing = True
        connection, self.connection = self.connection, None
        if connection is not None:
            await connection.close()


__all__ = ["Link"]
