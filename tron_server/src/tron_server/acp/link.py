"""``tron acp``'s connection to tron-server, found or started as ``tron`` does
(:mod:`tron_server.terminal.attach`), and made again when the server went away.

The editor's sessions stay open across a server restart: when the connection is lost,
the next request attaches again, subscribes to every open session and registers the
file provider of each again (:class:`Link.on_attach` does that).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ..client import ConnectionLost, TronClient
from ..terminal.attach import Connection, ServerAddress, attach

log = logging.getLogger("tron_server.acp")

#: Calls not tried again after a lost connection: the first may have been done.
NOT_REPEATED = frozenset({"session.create", "session.fork", "model.switch", "agent.message"})

#: Called with each new connection (subscriptions, file providers, the notification reader).
OnAttach = Callable[[TronClient], Awaitable[None]]


class Link:
    """The one connection to tron-server (attached on first use, again after a loss)."""

    def __init__(self, address: ServerAddress, *, start: bool = True) -> None:
        self.address = address
        self.start = start
        self._conn: Connection | None = None
        self._lock = asyncio.Lock()
        self.on_attach: OnAttach | None = None
        #: How many times a connection was made (1 after the first).
        self.attached = 0

    async def client(self) -> TronClient:
        """The live connection; attaches (starting a server when none answers) if needed.

        Raises :class:`~tron_server.terminal.errors.TerminalError` when no server can be had."""
        async with self._lock:
            conn = self._conn
            if conn is not None and conn.client.closed is None:
                return conn.client
            if conn is not None:
                await conn.close()
                log.warning("the connection to tron-server was lost: attaching again")
            self._conn = await attach(self.address, start=self.start, announce=log.info)
            self.attached += 1
            log.info("attached to tron-server at %s", self._conn.url)
            if self.on_attach is not None:
                await self.on_attach(self._conn.client)
            return self._conn.client

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """``method`` on the server; a read (or an idempotent call) cut by a lost
        connection is tried once more on a new one."""
        client = await self.client()
        try:
            return await client.call(method, params)
        except ConnectionLost:
            if method in NOT_REPEATED:
                raise
            client = await self.client()
            return await client.call(method, params)

    async def close(self) -> None:
        async with self._lock:
            if self._conn is not None:
                await self._conn.close()
                self._conn = None


__all__ = ["Link", "OnAttach"]
