"""What a method handler gets besides its params: the services and its connection."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..connection import Connection
    from ..services import Services


@dataclass(frozen=True, slots=True)
class RpcContext:
    """The call's context. ``connection`` is None for calls made without a socket (tests)."""

    services: Services
    connection: Connection | None = None

    async def subscribe(self, session_id: str) -> None:
        """Subscribe the calling connection to a session's notifications (a no-op without one)."""
        if self.connection is not None:
            await self.services.hub.subscribe(self.connection, session_id)


__all__ = ["RpcContext"]
