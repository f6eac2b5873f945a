"""One client connection: an outgoing queue bounded in bytes, drained by a writer task.

Everything sent to a client — replies and notifications — goes through
:meth:`Connection.enqueue`, which never blocks: publishers (the agent loop,
the event feeds) must not wait for a slow client. The queue has a byte budget
(``budget_bytes``) and a frame limit (``queue_limit``); a frame counts from
when it is queued until the socket has taken it. A frame that would take the
connection over either (with something already waiting) means the client is
too far behind: it is closed with code 4008 (``CLOSE_TOO_SLOW``, retryable:
reconnect, subscribe and ``events.sync`` after the last sequence) and its
queued frames are dropped at once, so memory stays bounded. A single frame
larger than the budget still goes out when nothing else waits (a big page of
events is a legitimate answer).

Frames queued while the writer was busy go out together when the socket offers
``send_many`` (tron-server's WebSocket protocol does: one socket write for the lot,
each still its own WebSocket frame, in order); else one ``send`` each.

The connection's reader asks :meth:`Connection.wait_writable` before it reads
the next request: while more than ``pause_bytes`` wait to be sent, the
connection's requests stay unread (in the socket: TCP pushes back on the
client), so a client that sends requests and does not read the answers
cannot make the server compute more of them.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import secrets
import sys
from collections.abc import Awaitable, Callable

import anyio

log = logging.getLogger("tron_server.connection")

#: The client fell too far behind (its outgoing queue is over budget). Retryable.
CLOSE_TOO_SLOW = 4008
#: The server is going away (shutdown). Retryable once it is back.
CLOSE_GOING_AWAY = 1001
#: The server hit an unexpected condition (e.g. an event feed failed). Retryable.
CLOSE_INTERNAL = 1011

#: How long a close may wait for a stalled socket before the connection is dropped.
CLOSE_TIMEOUT = 5.0

#: Default byte budget of one connection's outgoing queue.
DEFAULT_BUDGET_BYTES = 64 * 1024 * 1024

SendText = Callable[[str], Awaitable[None]]
#: Sends several text frames (str, or UTF-8 bytes) in order, in one socket write.
SendFrames = Callable[[list[str | bytes]], Awaitable[None]]

#: What one ``send_many`` takes at most (but a single larger frame goes alone).
BATCH_BYTES = 256 * 1024


def frame_size(text: str | bytes) -> int:
    """The bytes a queued frame holds: its length when it is ASCII (most frames), else
    the memory of the string, which is 2 or 4 bytes a character for text beyond
    Latin-1 (a page of emoji counted by characters would hold 4x the budget)."""
    return len(text) if text.isascii() else sys.getsizeof(text)


CloseSocket = Callable[[int, str], Awaitable[None]]


class Connection:
    """A client connection as the hub and the methods see it.

    ``send`` writes one text frame to the socket (it may wait on a slow
    client); ``close`` closes the socket with a code and reason; ``send_many``, when
    given, writes several frames at once (and ``send`` is then not used).
    """

    def __init__(
        self,
        send: SendText,
        close: CloseSocket,
        *,
        queue_limit: int,
        budget_bytes: int = DEFAULT_BUDGET_BYTES,
        pause_bytes: int | None = None,
        id: str | None = None,
        send_many: SendFrames | None = None,
    ) -> None:
        self.id = id or secrets.token_hex(6)
        self._send = send
        self._send_many = send_many
        self._close = close
        self.queue_limit = queue_limit
        self.budget_bytes = budget_bytes
        self.pause_bytes = budget_bytes // 8 if pause_bytes is None else pause_bytes
        # Frames as given (bytes are UTF-8 JSON: decoded only for a ``send`` of text).
        self._queue: collections.deque[str | bytes] = collections.deque()
        self._pending_bytes = 0
        self._sending = 0  # bytes of the frames the writer is sending
        # asyncio's events, cleared and reused: an anyio.Event per wait cost a backend
        # lookup each time, for each frame (the server runs on asyncio).
        self._has_frames = asyncio.Event()
        self._drained = asyncio.Event()
        self._drained.set()
        self._writer_scope: anyio.CancelScope | None = None
        self.subscriptions: set[str] = set()
        #: Subscribed sessions whose ``events.new`` this client does not want (it asked
        #: for the ``agent.*`` notifications only: ``agent.message`` with ``events: false``).
        self.without_events: set[str] = set()
        self.close_code: int | None = None
        self.close_reason = ""
        self.frames_sent = 0
        self.bytes_sent = 0
        #: Socket writes (a ``send``, or a ``send_many`` of several frames).
        self.writes = 0
        self.peak_pending_bytes = 0
        self.disconnected = False
        #: One bulk read (a page of events …) at a time per connection: see rpc.middleware.
        self.bulk_lock = anyio.Lock()

    @property
    def closing(self) -> bool:
        return self.close_code is not None

    @property
    def queued(self) -> int:
        """Frames waiting in the outgoing queue (not counting the one being sent)."""
        return len(self._queue)

    @property
    def pending_bytes(self) -> int:
        """Bytes queued or being sent: what this connection holds for its client."""
        return self._pending_bytes

    def enqueue(self, frame: bytes | str) -> bool:
        """Queue a frame for the client without waiting; False if it was dropped.

        Over the byte budget or the frame limit, the connection is closed with 4008.
        """
        if self.closing:
            return False
        size = frame_size(frame)
        over_bytes = self._pending_bytes > 0 and self._pending_bytes + size > self.budget_bytes
        if over_bytes or len(self._queue) >= self.queue_limit:
            log.warning(
                "client too far behind, closing it",
                extra={
                    "fields": {
                        "connection": self.id,
                        "queued": len(self._queue),
                        "pendingBytes": self._pending_bytes,
                    }
                },
            )
            self.close_soon(CLOSE_TOO_SLOW, "too far behind: reconnect and events.sync")
            return False
        self._queue.append(frame)
        self._pending_bytes += size
        if self._pending_bytes > self.peak_pending_bytes:
            self.peak_pending_bytes = self._pending_bytes
        if self._pending_bytes > self.pause_bytes:
            self._drained.clear()
        self._has_frames.set()
        return True

    async def wait_writable(self) -> None:
        """Return once at most ``pause_bytes`` wait to be sent (or the connection closes)."""
        while self._pending_bytes > self.pause_bytes and not self.closing:
            await self._drained.wait()

    def close_soon(self, code: int, reason: str) -> None:
        """Stop sending and close the socket with ``code``; queued frames are dropped."""
        if self.closing:
            return
        self.close_code = code
        self.close_reason = reason
        self._drop_queue()
        if self._writer_scope is not None:
            self._writer_scope.cancel()

    def _drop_queue(self) -> None:
        self._queue.clear()
        self._pending_bytes = self._sending
        self._drained.set()
        self._has_frames.set()

    async def run_writer(self) -> None:
        """Send queued frames until the connection closes; then close the socket.

        Returns when the socket is closed (or the client disconnected).
        """
        with anyio.CancelScope() as scope:
            self._writer_scope = scope
            if self.closing:
                scope.cancel()
            while True:
                if not self._queue:
                    self._has_frames.clear()
                    await self._has_frames.wait()
                    # One more step of the loop first: what the other tasks woken with
                    # the same commit send (the feed's events.new, the run's
                    # notifications) goes in the same write (issue 29).
                    await asyncio.sleep(0)
                    continue
                batch = self._take_batch()
                try:
                    if self._send_many is not None:
                        await self._send_many(batch)
                    else:
                        frame = batch[0]
                        await self._send(frame.decode() if isinstance(frame, bytes) else frame)
                except Exception:  # the client went away; the reader sees the disconnect
                    self.disconnected = True
                    break
                finally:
                    self._pending_bytes -= self._sending
                    self._sending = 0
                    if self._pending_bytes <= self.pause_bytes:
                        self._drained.set()
                self.writes += 1
                self.frames_sent += len(batch)
                self.bytes_sent += sum(len(f) for f in batch)
                del batch  # a big page must not stay alive while the writer waits
        self._drop_queue()
        self._pending_bytes = 0
        if self.close_code is not None and not self.disconnected:
            # A stalled client cannot take even the close frame: give up after a while.
            with anyio.move_on_after(CLOSE_TIMEOUT, shield=True):
                try:
                    await self._close(self.close_code, self.close_reason)
                except Exception:  # the peer may be gone already
                    log.debug("close failed", exc_info=True)

    def _take_batch(self) -> list[str | bytes]:
        """The next frames to send (removed from the queue; their size in ``_sending``):
        one without ``send_many``; with it, all that wait, up to :data:`BATCH_BYTES`."""
        queue = self._queue
        frame = queue.popleft()
        size = frame_size(frame)
        batch = [frame]
        if self._send_many is not None:
            while queue:
                more = frame_size(queue[0])
                if size + more > BATCH_BYTES:
                    break
                batch.append(queue.popleft())
                size += more
        self._sending = size
        return batch

    def __repr__(self) -> str:
        return f"Connection({self.id!r}, subscriptions={sorted(self.subscriptions)})"


__all__ = [
    "CLOSE_GOING_AWAY",
    "CLOSE_INTERNAL",
    "CLOSE_TOO_SLOW",
    "DEFAULT_BUDGET_BYTES",
    "Connection",
    "SendFrames",
]
