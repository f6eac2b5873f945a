"""An httpx transport that connects only to addresses the permission check allowed.

Every connection resolves its host itself, checks *every* address it got, and connects to
one of those very addresses (TLS still checks the certificate against the host name): a
host that resolved to a public address when it was approved and to ``127.0.0.1`` a moment
later (DNS rebinding) is refused, on the first request and on each redirect alike. Hosts
must be granted first (:meth:`GuardedBackend.grant`); a connection to any other host is
refused, so nothing reaches the network without a check.
"""

from __future__ import annotations

from typing import Any

import httpcore
import httpx

from ..browser.urls import non_public, resolve_host

__all__ = ["AddressRefused", "GuardedBackend", "guarded_transport"]


class AddressRefused(Exception):
    """A connection the grants do not cover; the message says which host and why."""


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend with the address check in front of ``connect_tcp``."""

    def __init__(self) -> None:
        self._inner = httpcore.AnyIOBackend()
        #: host → whether its non-public addresses may be used.
        self._grants: dict[str, bool] = {}

    def grant(self, host: str, private_ok: bool) -> None:
        """Allow connections to ``host`` (to its private addresses too with ``private_ok``)."""
        self._grants[host.lower()] = private_ok

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.AsyncNetworkStream:
        key = host.strip("[]").lower()
        if key not in self._grants:
            raise AddressRefused(f"{host} was not checked before the connection")
        try:
            addresses = await resolve_host(key, port)
        except OSError as exc:
            raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from exc
        private = non_public(addresses)
        if private and not self._grants[key]:
            raise AddressRefused(
                f"{host} resolves to a private or loopback address ({', '.join(private[:3])}) "
                "that was not approved"
            )
        failure: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        raise failure or httpcore.ConnectError(f"{host} has no address")

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore.AsyncNetworkStream:
        raise AddressRefused("unix sockets are never used")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def guarded_transport(backend: GuardedBackend) -> httpx.AsyncHTTPTransport:
    """An httpx transport (HTTP/1.1, certificates verified, no proxy) over ``backend``."""
    transport = httpx.AsyncHTTPTransport(retries=0)
    # httpx builds its connection pool without a way to pass a network backend: replace
    # the pool with the same one over ours (httpcore's public API).
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=httpx.create_ssl_context(trust_env=False),
        max_connections=4,
        http1=True,
        http2=False,
        network_backend=backend,
    )
    return transport
