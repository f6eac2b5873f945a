"""httpcore's network I/O on asyncio's own streams, for the adapters' own clients.

httpx's default backend (httpcore over anyio) enters a cancel scope, a timer and a
checkpoint (one more turn of the event loop) for every read and write of a connection:
on a streamed reply of many small network reads that machinery costs more than the
reading (``benchmarks/RESULTS_peers.md``, issue 29). This backend reads and writes
through :class:`asyncio.StreamReader`/:class:`asyncio.StreamWriter`: a read that finds
bytes buffered returns them at once, a timer is armed only for a wait. Errors are
httpcore's (``ConnectError``, ``ReadTimeout``, ...), which httpx maps to its own as
before. Only an adapter's own client uses it, and only its direct connections (a proxy
from the environment keeps httpx's transport).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import Iterable, Iterator
from typing import Any

import httpcore
import httpx

__all__ = ["AsyncioBackend", "use_asyncio_streams"]


@contextlib.contextmanager
def _mapped(timeout_error: type[Exception], os_error: type[Exception]) -> Iterator[None]:
    try:
        yield
    except TimeoutError as exc:
        raise timeout_error(str(exc) or "timed out") from exc
    except (OSError, ssl.SSLError, EOFError) as exc:
        raise os_error(str(exc) or type(exc).__name__) from exc


class AsyncioStream(httpcore.AsyncNetworkStream):
    """One connection: an asyncio stream pair."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        with _mapped(httpcore.ReadTimeout, httpcore.ReadError):
            if timeout is None:
                return await self._reader.read(max_bytes)
            async with asyncio.timeout(timeout):
                return await self._reader.read(max_bytes)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        with _mapped(httpcore.WriteTimeout, httpcore.WriteError):
            self._writer.write(buffer)
            if timeout is None:
                await self._writer.drain()
            else:
                async with asyncio.timeout(timeout):
                    await self._writer.drain()

    async def aclose(self) -> None:
        # Not waiting for the close: a TLS peer that never answers the close_notify
        # would hold the caller for asyncio's shutdown timeout (30 s).
        self._writer.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        with _mapped(httpcore.ConnectTimeout, httpcore.ConnectError):
            try:
                async with asyncio.timeout(timeout):
                    await self._writer.start_tls(ssl_context, server_hostname=server_hostname)
            except BaseException:
                self._writer.transport.abort()
                raise
        return self

    def get_extra_info(self, info: str) -> Any:
        if info == "ssl_object":
            return self._writer.get_extra_info("ssl_object")
        if info == "client_addr":
            return self._writer.get_extra_info("sockname")
        if info == "server_addr":
            return self._writer.get_extra_info("peername")
        if info == "socket":
            return self._writer.get_extra_info("socket")
        if info == "is_readable":
            # The pool asks this of an idle connection it would reuse: readable there
            # means the server closed it (or broke it). asyncio has read that already.
            return (
                self._reader.at_eof()
                or self._reader.exception() is not None
                or self._writer.is_closing()
            )
        return None


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """Connections as :class:`AsyncioStream` (TCP_NODELAY, as asyncio sets it)."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        local = (local_address, 0) if local_address else None
        with _mapped(httpcore.ConnectTimeout, httpcore.ConnectError):
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(host, port, local_addr=local)
        _apply(writer, socket_options)
        return AsyncioStream(reader, writer)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        with _mapped(httpcore.ConnectTimeout, httpcore.ConnectError):
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_unix_connection(path)
        _apply(writer, socket_options)
        return AsyncioStream(reader, writer)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def _apply(writer: asyncio.StreamWriter, options: Iterable[httpcore.SOCKET_OPTION] | None) -> None:
    sock: socket.socket | None = writer.get_extra_info("socket")
    if sock is None:
        return
    for option in options or ():
        sock.setsockopt(*option)


def use_asyncio_streams(client: httpx.AsyncClient) -> bool:
    """Make ``client``'s direct connections use :class:`AsyncioBackend`; whether it could.

    Only a client httpx built with its default transport (an ``AsyncConnectionPool``)
    is changed; mounts (a proxy from the environment) keep theirs. The pool takes the
    backend for each new connection, so this must run before the first request."""
    transport = getattr(client, "_transport", None)
    pool = getattr(transport, "_pool", None)
    if type(pool) is not httpcore.AsyncConnectionPool:
        return False
    pool._network_backend = AsyncioBackend()
    return True
