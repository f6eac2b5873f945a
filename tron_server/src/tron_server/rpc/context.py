"""What a method handler gets besides its params: the services, its caller and the
method registry.

The connection and the registry are described here by what the methods use of them
(:class:`Caller`, :class:`Methods`): the transport's :class:`tron_server.connection.Connection`
and :class:`tron_server.rpc.MethodRegistry` are the ones a server passes, and the RPC
layer imports neither the transport above it nor (from here) the registry beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import anyio

from ..services import Services


class Caller(Protocol):
    """The calling connection, as the methods and the middleware see it."""

    @property
    def id(self) -> str: ...

    @property
    def bulk_lock(self) -> anyio.Lock: ...

    async def wait_writable(self) -> None: ...

    def enqueue(self, frame: bytes | str) -> bool:
        """Queue a frame for this client alone (False: the connection is closing)."""


class Methods(Protocol):
    """The registered methods, as a method sees them (``system.info``, slash commands)."""

    def names(self) -> list[str]: ...

    async def call(self, ctx: RpcContext, method: str, params: object) -> Any: ...


@dataclass(frozen=True, slots=True)
class RpcContext:
    """The call's context. ``connection`` is None for calls made without a socket (tests),
    ``registry`` None where no registry is given (then no method can call another)."""

    services: Services
    connection: Caller | None = None
    registry: Methods | None = None
    #: How many servers forwarded this call before it got here (0: a client's own call);
    #: see :mod:`tron_server.cluster`.
    hops: int = 0

    async def subscribe(self, session_id: str, *, events: bool = True) -> None:
        """Subscribe the calling connection to a session's notifications (a no-op without
        one); ``events=False``: without ``events.new`` (see :meth:`Hub.subscribe`)."""
        if self.connection is not None:
            await self.services.hub.subscribe(self.connection, session_id, events=events)


__all__ = ["Caller", "Methods", "RpcContext"]
