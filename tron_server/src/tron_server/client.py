"""A small async client for tron-server (JSON-RPC over WebSocket).

    from tron_server.client import TronClient

    async with TronClient.from_home() as tron:            # reads ~/.tron/server-token
        session = await tron.call("session.create", {"workingDirectory": "/src/app"})
        done = await tron.send_message_and_wait(session["id"], "List the files here.")
        print(done["stopReason"])

Notifications arrive on ``tron.notifications()`` streams; create the stream
before the call whose notifications you want, so none is missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

DEFAULT_URL = "ws://127.0.0.1:8420/rpc"
#: Frames at least this long are decoded with the cyclic garbage collector paused.
LARGE_FRAME = 64 * 1024
#: Events per ``events.sync`` page that :meth:`TronClient.sync` asks for.
SYNC_PAGE = 2_000


def decode_frame(raw: str | bytes) -> Any:
    """The JSON value of one frame.

    A large frame (a page of events) is decoded with the cyclic garbage
    collector paused: decoding makes only acyclic objects that all stay alive,
    so the collections their allocation triggers are pure cost (a fifth of the
    time of a 10,000-event page). The collector is left as it was found.
    """
    if len(raw) < LARGE_FRAME or not gc.isenabled():
        return orjson.loads(raw)
    gc.disable()
    try:
        return orjson.loads(raw)
    finally:
        gc.enable()


class RpcCallError(Exception):
    """The server answered a call with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data = data or {}

    @property
    def category(self) -> str | None:
        return self.data.get("category")

    @property
    def retryable(self) -> bool:
        return bool(self.data.get("retryable"))


class ConnectionLost(Exception):
    """The connection closed before the answer arrived (``code`` is the close code)."""

    def __init__(self, code: int | None, reason: str = "") -> None:
        super().__init__(f"connection closed (code {code}{': ' + reason if reason else ''})")
        self.code = code
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Notification:
    """A server push: ``method`` (e.g. ``agent.text_delta``) and its params."""

    method: str
    session_id: str | None
    timestamp: str
    data: Any


class NotificationStream:
    """Notifications received from its creation on, optionally filtered.

    Use ``async for n in stream`` (ends when the connection closes) or
    ``await stream.next(timeout=…)``; ``close()`` (or ``async with``) detaches it.
    """

    def __init__(
        self,
        client: TronClient,
        methods: Iterable[str] | None,
        session_id: str | None,
    ) -> None:
        self._client = client
        self._methods = frozenset(methods) if methods is not None else None
        self._session_id = session_id
        self._queue: asyncio.Queue[Notification | None] = asyncio.Queue()
        client._streams.add(self)
        if client._closed is not None:
            self._queue.put_nowait(None)

    def _offer(self, n: Notification) -> None:
        if self._methods is not None and n.method not in self._methods:
            return
        if self._session_id is not None and n.session_id != self._session_id:
            return
        self._queue.put_nowait(n)

    def _end(self) -> None:
        self._queue.put_nowait(None)

    async def next(self, timeout: float | None = None) -> Notification:
        """The next notification; raises ConnectionLost at the end, TimeoutError on timeout."""
        item = await asyncio.wait_for(self._queue.get(), timeout)
        if item is None:
            self._queue.put_nowait(None)  # stay ended for later readers
            code, reason = self._client._closed or (None, "")
            raise ConnectionLost(code, reason)
        return item

    def __aiter__(self) -> AsyncIterator[Notification]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Notification]:
        while True:
            try:
                yield await self.next()
            except ConnectionLost:
                return

    def close(self) -> None:
        self._client._streams.discard(self)

    async def __aenter__(self) -> NotificationStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


class TronClient:
    """One WebSocket connection to tron-server. Create it with :meth:`connect`."""

    def __init__(self, ws: ClientConnection) -> None:
        self._ws = ws
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._streams: set[NotificationStream] = set()
        self._closed: tuple[int | None, str] | None = None
        self._reader = asyncio.get_running_loop().create_task(self._read())

    # -- connecting -------------------------------------------------------

    @classmethod
    @contextlib.asynccontextmanager
    async def connect(
        cls, url: str = DEFAULT_URL, *, token: str | None = None, **options: Any
    ) -> AsyncIterator[TronClient]:
        """``async with TronClient.connect(url, token=…) as client``.

        ``options`` go to ``websockets.asyncio.client.connect`` (e.g. ``max_size``).
        """
        headers = dict(options.pop("additional_headers", None) or {})
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        options.setdefault("max_size", 64 * 1024 * 1024)
        async with connect(url, additional_headers=headers, **options) as ws:
            client = cls(ws)
            try:
                yield client
            finally:
                await client.close()

    @classmethod
    def from_home(
        cls, home: str | Path | None = None, *, url: str | None = None, **options: Any
    ) -> contextlib.AbstractAsyncContextManager[TronClient]:
        """Connect with the token in ``home/server-token`` (default ``~/.tron``).

        Without ``url``, the server's address comes from ``home/server.json`` (what a
        running tron-server records, whatever its port; see
        :mod:`tron_server.server_record`), else :data:`DEFAULT_URL`."""
        from .server_record import read_server_record

        base = Path(home).expanduser() if home is not None else Path.home() / ".tron"
        token = (base / "server-token").read_text().strip()
        if url is None:
            record = read_server_record(base)
            url = record.url if record is not None else DEFAULT_URL
        return cls.connect(url, token=token, **options)

    async def close(self) -> None:
        """Close the connection (pending calls fail with ConnectionLost)."""
        await self._ws.close()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader

    async def __aenter__(self) -> TronClient:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    @property
    def closed(self) -> tuple[int | None, str] | None:
        """``(close code, reason)`` once the connection is closed, else None."""
        return self._closed

    # -- calls --------------------------------------------------------------

    async def call(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = 60
    ) -> Any:
        """Call ``method`` and return its result; raises RpcCallError or ConnectionLost."""
        if self._closed is not None:
            raise ConnectionLost(*self._closed)
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        frame: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            frame["params"] = params
        try:
            await self._ws.send(orjson.dumps(frame).decode())
            return await asyncio.wait_for(future, timeout)
        except ConnectionClosed as exc:
            raise ConnectionLost(*self._close_info(exc)) from None
        finally:
            self._pending.pop(request_id, None)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a JSON-RPC notification (no answer)."""
        frame: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            frame["params"] = params
        await self._ws.send(orjson.dumps(frame).decode())

    def notifications(
        self, methods: Iterable[str] | None = None, *, session_id: str | None = None
    ) -> NotificationStream:
        """A stream of the notifications received from now on (filtered if asked)."""
        return NotificationStream(self, methods, session_id)

    # -- helpers ------------------------------------------------------------

    async def subscribe(self, session_id: str) -> None:
        """Receive the session's notifications on this connection."""
        await self.call("events.subscribe", {"sessionId": session_id})

    async def sync(self, session_id: str, after_sequence: int = -1) -> list[dict[str, Any]]:
        """Every stored event of the session after ``after_sequence`` (all pages)."""
        events: list[dict[str, Any]] = []
        while True:
            page = await self.call(
                "events.sync",
                {"sessionId": session_id, "afterSequence": after_sequence, "limit": SYNC_PAGE},
            )
            events.extend(page["events"])
            after_sequence = page["nextSequence"]
            if not page["hasMore"]:
                return events

    async def send_message_and_wait(
        self, session_id: str, text: str | list[dict[str, Any]], *, timeout: float = 600
    ) -> dict[str, Any]:
        """Send a user message and wait for the agent to finish; returns ``agent.complete``'s
        data (``{turns, stopReason}``)."""
        async with self.notifications(["agent.complete"], session_id=session_id) as done:
            await self.call("agent.message", {"sessionId": session_id, "content": text})
            n = await done.next(timeout=timeout)
            data: dict[str, Any] = n.data
            return data

    # -- the reader -----------------------------------------------------------

    async def _read(self) -> None:
        try:
            async for raw in self._ws:
                self._dispatch(decode_frame(raw))
            self._finish(self._ws.close_code, self._ws.close_reason or "")
        except ConnectionClosed as exc:
            self._finish(*self._close_info(exc))
        except Exception:
            self._finish(None, "client reader failed")
            raise

    def _dispatch(self, message: Any) -> None:
        for item in message if isinstance(message, list) else [message]:
            if not isinstance(item, dict):
                continue
            if "id" in item and ("result" in item or "error" in item):
                future = self._pending.get(item["id"])
                if future is None or future.done():
                    continue
                if "error" in item:
                    err = item["error"]
                    future.set_exception(
                        RpcCallError(err.get("code", 0), err.get("message", ""), err.get("data"))
                    )
                else:
                    future.set_result(item["result"])
            elif "method" in item:
                params = item.get("params") or {}
                n = Notification(
                    item["method"],
                    params.get("sessionId"),
                    params.get("timestamp", ""),
                    params.get("data"),
                )
                for stream in list(self._streams):
                    stream._offer(n)

    def _close_info(self, exc: ConnectionClosed) -> tuple[int | None, str]:
        frame = exc.rcvd
        return (frame.code, frame.reason) if frame is not None else (None, "")

    def _finish(self, code: int | None, reason: str) -> None:
        if self._closed is not None:
            return
        self._closed = (code, reason)
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionLost(code, reason))
        for stream in list(self._streams):
            stream._end()


__all__ = [
    "DEFAULT_URL",
    "ConnectionLost",
    "Notification",
    "NotificationStream",
    "RpcCallError",
    "TronClient",
    "decode_frame",
]
