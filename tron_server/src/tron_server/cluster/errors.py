"""The errors of routing a call to the server that runs its session."""

from __future__ import annotations

from typing import Any

from ..errors import RpcError

__all__ = ["ForwardedError", "OwnedElsewhere"]


class OwnedElsewhere(Exception):
    """Another live server holds the session's lease: send the call there."""

    def __init__(self, session_id: str, owner: str) -> None:
        super().__init__(f"session {session_id} runs on server {owner}")
        self.session_id = session_id
        self.owner = owner


class ForwardedError(RpcError):
    """The error the owner answered to a forwarded call, passed on as it was."""

    def __init__(self, error: dict[str, Any]) -> None:
        data = dict(error.get("data") or {})
        category = str(data.pop("category", "internal"))
        retryable = bool(data.pop("retryable", False))
        super().__init__(str(error.get("message", "error")), data, retryable=retryable,
                         category=category)  # fmt: skip
        # The code is the owner's (-32003 busy, -32000 not found …), not this class's.
        object.__setattr__(self, "code", int(error.get("code", -32603)))
