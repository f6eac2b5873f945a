"""One client connection: a bounded outgoing queue drained by a writer task.

Everything sent to a client — replies and notifications — goes through
:meth:`Connection.enqueue`, which never blocks: publishers (the agent loop,
the event feeds) must not wait for a slow client. When the queue is full the
client is too far behind; it is closed with code 4008 (``CLOSE_TOO_SLOW``,
retryable: reconnect, subscribe and ``events.sync`` after the last sequence)
and its queued frames are dropped, so memory stays bounded.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

log = logging.getLogger("tron_server.connection")

#: The client fell too far behind (its outgoing queue filled up). Retryable.
CLOSE_TOO_SLOW = 4008
#: The server is going away (shutdown). Retryable once it is back.
CLOSE_GOING_AWAY = 1001
#: The server hit an unexpected condition (e.g. an event feed failed). Retryable.
CLOSE_INTERNAL = 1011

#: How long a close may wait for a stalled socket before the connection is dropped.
CLOSE_TIMEOUT = 5.0

SendText = Callable[[str], Awaitable[None]]
CloseSocket = Callable[[int, str], Awaitable[None]]


class Connection:
    """A client connection as the hub and the methods see it.

    ``send`` writes one text frame to the socket (it may wait on a slow
    client); ``close`` closes the socket with a code and reason.
    """

    def __init__(
        self,
        send: SendText,
        close: CloseSocket,
        *,
        queue_limit: int,
        id: str | None = None,
    ) -> None:
        self.id = id or secrets.token_hex(6)
        self._send = send
        self._close = close
        self._tx: MemoryObjectSendStream[str]
        self._rx: MemoryObjectReceiveStream[str]
        self._tx, self._rx = anyio.create_memory_object_stream[str](max_buffer_size=queue_limit)
        self._writer_scope: anyio.CancelScope | None = None
        self.subscriptions: set[str] = set()
        self.close_code: int | None = None
        self.close_reason = ""
        self.frames_sent = 0
        self.disconnected = False

    @property
    def closing(self) -> bool:
        return self.close_code is not None

    def enqueue(self, frame: bytes | str) -> bool:
        """Queue a frame for the client without waiting; False if it was dropped.

        A full queue closes the connection with 4008.
        """
        if self.closing:
            return False
        text = frame.decode() if isinstance(frame, bytes) else frame
        try:
            self._tx.send_nowait(text)
        except anyio.WouldBlock:
            log.warning(
                "client too far behind, closing it",
                extra={"fields": {"connection": self.id, "queued": self.queued}},
            )
            self.close_soon(CLOSE_TOO_SLOW, "too far behind: reconnect and events.sync")
            return False
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False
        return True

    @property
    def queued(self) -> int:
        """Frames waiting in the outgoing queue."""
        return self._tx.statistics().current_buffer_used

    def close_soon(self, code: int, reason: str) -> None:
        """Stop sending and close the socket with ``code`` (queued frames are dropped)."""
        if self.closing:
            return
        self.close_code = code
        self.close_reason = reason
        if self._writer_scope is not None:
            self._writer_scope.cancel()

    async def run_writer(self) -> None:
        """Send queued frames until the connection closes; then close the socket.

        Returns when the socket is closed (or the client disconnected).
        """
        with anyio.CancelScope() as scope:
            self._writer_scope = scope
            if self.closing:
                scope.cancel()
            async for frame in self._rx:
                try:
                    await self._send(frame)
                except Exception:  # the client went away; the reader sees the disconnect
                    self.disconnected = True
                    break
                self.frames_sent += 1
        self._tx.close()
        self._rx.close()
        if self.close_code is not None and not self.disconnected:
            # A stalled client cannot take even the close frame: give up after a while.
            with anyio.move_on_after(CLOSE_TIMEOUT, shield=True):
                try:
                    await self._close(self.close_code, self.close_reason)
                except Exception:  # the peer may be gone already
                    log.debug("close failed", exc_info=True)

    def __repr__(self) -> str:
        return f"Connection({self.id!r}, subscriptions={sorted(self.subscriptions)})"


__all__ = [
    "CLOSE_GOING_AWAY",
    "CLOSE_INTERNAL",
    "CLOSE_TOO_SLOW",
    "Connection",
]
