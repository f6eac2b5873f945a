"""Errors answered over JSON-RPC.

Every error has a JSON-RPC ``code``, a ``category`` (what kind of failure it is)
and ``retryable`` (whether sending the same request again later can succeed);
both go to the client in ``error.data`` so it can decide what to do without
parsing messages.
"""

from __future__ import annotations

from typing import Any, ClassVar


class RpcError(Exception):
    """Base of every error the server answers to a JSON-RPC request.

    ``data`` is merged into the error's ``data`` object next to ``category``
    and ``retryable`` (e.g. ``{"errors": [...]}`` for invalid params).
    """

    code: ClassVar[int] = -32603
    # Class defaults; an instance may override them (e.g. a busy database).
    category: str = "internal"
    retryable: bool = False

    def __init__(
        self,
        message: str,
        data: dict[str, Any] | None = None,
        *,
        retryable: bool | None = None,
        category: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.data: dict[str, Any] = dict(data or {})
        if retryable is not None:
            self.retryable = retryable
        if category is not None:
            self.category = category

    def to_json(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` object: ``{code, message, data: {category, retryable, ...}}``."""
        data = {"category": self.category, "retryable": self.retryable, **self.data}
        return {"code": self.code, "message": self.message, "data": data}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code}, {self.message!r})"


class ParseError(RpcError):
    """The frame is not valid JSON."""

    code = -32700
    category = "validation"


class InvalidRequest(RpcError):
    """The frame is JSON but not a JSON-RPC 2.0 request (or is too large)."""

    code = -32600
    category = "validation"


class MethodNotFound(RpcError):
    code = -32601
    category = "not_found"


class InvalidParams(RpcError):
    """The params do not match the method's schema; ``data.errors`` lists the fields."""

    code = -32602
    category = "validation"


class InternalError(RpcError):
    """Something failed inside the server; the message never carries internals."""

    code = -32603
    category = "internal"


class SessionNotFoundError(RpcError):
    code = -32000
    category = "not_found"


class SessionNotActiveError(RpcError):
    """The session has ended: fork it to continue."""

    code = -32001
    category = "conflict"


class ManagerUnavailableError(RpcError):
    """A part of the server the method needs (e.g. the agent runtime) is not running."""

    code = -32002
    category = "unavailable"
    retryable = True


class AgentBusyError(RpcError):
    """The session's agent is already running a turn: wait, abort, or queue the message."""

    code = -32003
    category = "busy"
    retryable = True


class InvalidOperationError(RpcError):
    """Bad fork/rewind target, head moved, conflicting event id, ..."""

    code = -32004
    category = "conflict"


class ProviderError(RpcError):
    """The LLM provider failed; ``retryable`` follows the provider error."""

    code = -32005
    category = "provider"


class FilesConflictError(RpcError):
    """Files a rewind with files would overwrite changed outside the agent, or a merge
    conflicts: ``data.files`` lists them; nothing was written."""

    code = -32006
    category = "conflict"


class WorkspaceRpcError(RpcError):
    """A file, snapshot or git operation that cannot be done (``data.reason``: e.g.
    ``not_git``, ``missing_content``, ``refused``, ``git``); nothing was changed."""

    code = -32007
    category = "workspace"


__all__ = [
    "AgentBusyError",
    "FilesConflictError",
    "InternalError",
    "InvalidOperationError",
    "InvalidParams",
    "InvalidRequest",
    "ManagerUnavailableError",
    "MethodNotFound",
    "ParseError",
    "ProviderError",
    "RpcError",
    "SessionNotActiveError",
    "SessionNotFoundError",
    "WorkspaceRpcError",
]
