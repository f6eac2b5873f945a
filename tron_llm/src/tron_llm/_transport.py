"""An HTTP/1.1 transport for the adapters' own httpx clients, on asyncio's streams.

httpx's default transport (httpcore's connection pool over anyio) takes a pool lock,
a connection lock, a shielded cancel scope and an anyio event around every request,
and a cancel scope, a timer and a checkpoint around every read: on a model's streamed
reply of many small reads that machinery costs more than the reading and the parsing
(a third of a turn's event-loop time, ``benchmarks/RESULTS_peers.md``, issue 29). This
transport speaks HTTP/1.1 (:mod:`tron_llm._http11`) over an :class:`asyncio.Protocol`:
the bytes that arrived are parsed at once, and a timer is armed only when it waits.

It keeps what an adapter relies on: connections kept alive and reused (one request at
a time each, any number at once), a connection the server closed (or left in the
middle of a reply) never reused, TLS with the client's context, httpx's timeouts
(``connect``, ``read``, ``write``) and httpx's errors (``ConnectError``,
``ReadTimeout``, ``RemoteProtocolError``, ...), so retries and error messages are the
same. A proxy from the environment is not this transport's: httpx mounts its own for
the URLs the proxy serves.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import ssl
from collections.abc import AsyncIterator, Iterator

import httpcore
import httpx

from ._http11 import ProtocolError, ResponseParser, request_head

__all__ = ["AsyncioTransport", "ResponseBody", "use_asyncio_transport"]

_READ_LIMIT = 256 * 1024
"""Bytes received and not yet parsed beyond which the socket is not read (a slow reader)."""
MAX_IDLE_PER_ORIGIN = 20
"""Idle connections kept per scheme, host and port (httpx's default keep-alive count)."""
KEEPALIVE_EXPIRY = 5.0
"""Seconds an idle connection is kept (httpx's default): past that a server, or a NAT
on the way, may have dropped it without a word, and a request on it would hang."""

_Origin = tuple[str, str, int]


@contextlib.contextmanager
def _mapped(
    request: httpx.Request, timeout: type[Exception], failed: type[Exception]
) -> Iterator[None]:
    """asyncio's and the parser's exceptions as httpx's, which the adapters handle."""
    try:
        yield
    except TimeoutError as exc:
        raise timeout(str(exc) or "timed out", request=request) from exc  # type: ignore[call-arg]
    except ProtocolError as exc:
        raise httpx.RemoteProtocolError(str(exc), request=request) from exc
    except OSError as exc:  # ssl.SSLError included
        raise failed(str(exc) or type(exc).__name__, request=request) from exc  # type: ignore[call-arg]


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection: asyncio's transport and the parser of the response
    being read (the bytes arrive straight into it)."""

    def __init__(self, origin: _Origin) -> None:
        self.origin = origin
        self.transport: asyncio.Transport | None = None
        self.parser: ResponseParser | None = None
        self.idle_since = 0.0  # the event loop's time when it was last put back idle
        self._eof = False
        self._lost: Exception | None = None
        self._closed = False
        self._stray = False  # bytes came while no request was waiting for them
        self._reading_paused = False
        self._waiter: asyncio.Future[None] | None = None
        self._drained: asyncio.Future[None] | None = None

    # --- asyncio's protocol ---------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        parser = self.parser
        if parser is None:
            self._stray = True  # an idle connection that got bytes: never reused
            return
        parser.feed(data)
        if parser.pending > _READ_LIMIT and not self._reading_paused:
            self._reading_paused = True  # the caller reads slower than the server sends
            assert self.transport is not None
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self._eof = True
        if self.parser is not None:
            self.parser.eof()
        self._wake()
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._lost = exc
        self.eof_received()
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    def pause_writing(self) -> None:
        if self._drained is None:
            self._drained = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # --- what the transport asks ----------------------------------------------------

    def usable(self) -> bool:
        """Whether an idle connection can take a request: asyncio has already read a
        close, an error, or bytes nobody asked for (a broken peer) while it was idle."""
        return not (self._eof or self._closed or self._stray)

    def close(self) -> None:
        # Not waiting for the close: a TLS peer that never answers close_notify would
        # hold the caller for asyncio's shutdown timeout.
        self._closed = True
        if self.transport is not None:
            self.transport.close()

    async def write(self, request: httpx.Request, data: bytes, timeout: float | None) -> None:
        transport = self.transport
        if transport is None or self._closed:
            raise httpx.WriteError("the connection is closed", request=request)
        transport.write(data)
        if self._drained is None:
            return
        with _mapped(request, httpx.WriteTimeout, httpx.WriteError):
            async with asyncio.timeout(timeout):
                await self._drained
        if self._lost is not None:
            raise httpx.WriteError(str(self._lost), request=request)

    async def wait(self, request: httpx.Request, timeout: float | None) -> None:
        """Until more bytes (or the close) arrive."""
        if self._reading_paused:
            self._reading_paused = False
            assert self.transport is not None
            self.transport.resume_reading()
        if self._eof:
            if self._lost is not None:
                raise httpx.ReadError(str(self._lost), request=request)
            return
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        with _mapped(request, httpx.ReadTimeout, httpx.ReadError):
            async with asyncio.timeout(timeout):
                await waiter


class AsyncioTransport(httpx.AsyncBaseTransport):
    """httpx's transport interface over an asyncio protocol (see the module).

    ``ssl_context`` verifies ``https`` URLs (httpx's default context when None); an idle
    connection is reused for ``keepalive_expiry`` seconds."""

    def __init__(
        self,
        ssl_context: ssl.SSLContext | None = None,
        *,
        keepalive_expiry: float = KEEPALIVE_EXPIRY,
    ) -> None:
        self._ssl = ssl_context
        self.keepalive_expiry = keepalive_expiry
        self._idle: dict[_Origin, list[_Connection]] = {}
        self._active: set[_Connection] = set()
        self._closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._closed:
            raise RuntimeError("the transport is closed")
        url = request.url
        scheme = url.scheme
        if scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"unsupported URL scheme {scheme!r}", request=request)
        origin: _Origin = (scheme, url.host, url.port or (443 if scheme == "https" else 80))
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        conn = self._take_idle(origin) or await self._connect(
            origin, request, timeouts.get("connect")
        )
        self._active.add(conn)
        try:
            response = await self._send(conn, request, timeouts)
        except BaseException:
            self._drop(conn)
            raise
        return response

    def _take_idle(self, origin: _Origin) -> _Connection | None:
        idle = self._idle.get(origin)
        if not idle:
            return None
        now = asyncio.get_running_loop().time()
        while idle:
            conn = idle.pop()
            if conn.usable() and now - conn.idle_since <= self.keepalive_expiry:
                return conn
            conn.close()
        return None

    async def _connect(
        self, origin: _Origin, request: httpx.Request, timeout: float | None
    ) -> _Connection:
        scheme, host, port = origin
        tls: ssl.SSLContext | None = None
        if scheme == "https":
            tls = self._ssl or httpx.create_ssl_context()
        sni = request.extensions.get("sni_hostname") or host
        loop = asyncio.get_running_loop()
        conn = _Connection(origin)
        with _mapped(request, httpx.ConnectTimeout, httpx.ConnectError):
            try:
                async with asyncio.timeout(timeout):
                    await loop.create_connection(
                        lambda: conn, host, port, ssl=tls, server_hostname=sni if tls else None
                    )
            except OSError as exc:
                code = exc.errno or 0
                if code <= 0 or isinstance(exc, ssl.SSLError | socket.gaierror):
                    raise  # a name not found, TLS: their own messages say it
                # "[Errno 111] Connection refused", not asyncio's "Connect call failed
                # ('127.0.0.1', 8080)": the error already names the endpoint.
                raise OSError(code, os.strerror(code)) from exc
        return conn

    async def _send(
        self, conn: _Connection, request: httpx.Request, timeouts: dict[str, float | None]
    ) -> httpx.Response:
        headers = request.headers.raw
        if "host" not in request.headers:  # httpx's requests have one; a bare one may not
            headers = [(b"host", request.url.netloc), *headers]
        body = [chunk async for chunk in request.stream]  # type: ignore[union-attr]
        if "content-length" not in request.headers and (
            any(body) or "transfer-encoding" in request.headers
        ):
            # The body is whole here: sent with its length (httpx asks chunked framing
            # of a stream of unknown length, which this transport does not write).
            headers = [(k, v) for k, v in headers if k.lower() != b"transfer-encoding"]
            headers.append((b"content-length", str(sum(map(len, body))).encode()))
        method = request.method.encode("ascii")
        try:
            head = request_head(method, request.url.raw_path, headers)
        except ValueError as exc:
            raise httpx.LocalProtocolError(str(exc), request=request) from exc
        parser = conn.parser = ResponseParser(method)
        await conn.write(request, b"".join([head, *body]), timeouts.get("write"))
        read_timeout = timeouts.get("read")
        with _mapped(request, httpx.ReadTimeout, httpx.ReadError):
            while not parser.head():
                await conn.wait(request, read_timeout)
        return httpx.Response(
            status_code=parser.status,
            headers=parser.headers,
            stream=ResponseBody(self, conn, request, read_timeout),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": parser.reason},
        )

    def _release(self, conn: _Connection) -> None:
        """A reply read to its end: the connection goes back to the idle ones if the
        server keeps it open, else it is closed."""
        self._active.discard(conn)
        parser, conn.parser = conn.parser, None
        idle = self._idle.setdefault(conn.origin, [])
        if (
            self._closed
            or parser is None
            or not parser.keep_alive
            or len(idle) >= MAX_IDLE_PER_ORIGIN
            or not conn.usable()
        ):
            conn.close()
            return
        conn.idle_since = asyncio.get_running_loop().time()
        idle.append(conn)

    def _drop(self, conn: _Connection) -> None:
        self._active.discard(conn)
        conn.close()

    async def aclose(self) -> None:
        self._closed = True
        for idle in self._idle.values():
            for conn in idle:
                conn.close()
        self._idle.clear()
        for conn in list(self._active):
            conn.close()
        self._active.clear()


class ResponseBody(httpx.AsyncByteStream):
    """A response's body, read from its connection as it is iterated."""

    def __init__(
        self,
        transport: AsyncioTransport,
        conn: _Connection,
        request: httpx.Request,
        timeout: float | None,
    ) -> None:
        self._transport = transport
        self._conn: _Connection | None = conn
        self._request = request
        self._timeout = timeout

    async def __aiter__(self) -> AsyncIterator[bytes]:
        conn = self._conn
        if conn is None:
            return
        parser = conn.parser
        assert parser is not None
        request, timeout = self._request, self._timeout
        try:
            with _mapped(request, httpx.ReadTimeout, httpx.ReadError):
                while True:
                    pieces = parser.body()
                    for piece in pieces:
                        yield piece
                    if parser.done:
                        break
                    if not pieces:
                        await conn.wait(request, timeout)
        except BaseException:
            self._conn = None
            self._transport._drop(conn)
            raise
        self._conn = None
        self._transport._release(conn)

    async def aclose(self) -> None:
        # Closed before its end (the caller stopped reading, or was cancelled): what
        # is left of the reply would be read as the next one's, so the connection goes.
        conn, self._conn = self._conn, None
        if conn is not None:
            self._transport._drop(conn)


def use_asyncio_transport(client: httpx.AsyncClient, ssl_context: ssl.SSLContext) -> bool:
    """Make ``client``'s direct connections go through :class:`AsyncioTransport`
    (verifying with ``ssl_context``); whether it could.

    Only a client httpx built with its default transport is changed, before its first
    request; its mounts (a proxy from the environment: httpx mounts one only when no
    transport is given, hence this swap) keep theirs."""
    transport = getattr(client, "_transport", None)
    pool = getattr(transport, "_pool", None)
    if (
        type(transport) is not httpx.AsyncHTTPTransport
        or type(pool) is not httpcore.AsyncConnectionPool
    ):
        return False  # a proxy's transport (its pool is httpcore's proxy), or the caller's
    client._transport = AsyncioTransport(ssl_context)
    return True
