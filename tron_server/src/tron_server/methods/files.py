"""files.*: a client serves a session's files (an editor's buffers).

``files.register {sessionId, read, write}`` makes the calling connection the session's
file provider (:mod:`tron_server.workspace.editor`): Read, Write and Edit of that
session then send it ``files.request {requestId, sessionId, op: "read"|"write", path,
content?}`` and wait for ``files.respond {requestId, content? | error?}``. The
registration ends with ``files.unregister`` or when the connection closes.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from ..errors import InvalidOperationError
from ..protocol import FILES_REQUEST
from ..rpc import MethodRegistry, Params, RpcContext
from ..rpc.frames import notification_frame

__all__ = ["register"]


class RegisterParams(Params):
    session_id: str = Field(min_length=1)
    read: bool = True
    write: bool = True


class UnregisterParams(Params):
    session_id: str = Field(min_length=1)


class RespondParams(Params):
    """``content``: the file's text (a read) or any value (a write done); ``error``: why
    the client could not (a read then goes to the disk; a write fails)."""

    request_id: str = Field(min_length=1, max_length=100)
    content: str | None = None
    error: str | None = Field(default=None, max_length=10_000)

    @model_validator(mode="after")
    def _one(self) -> RespondParams:
        if self.content is not None and self.error is not None:
            raise ValueError("give content or error, not both")
        return self


def register(registry: MethodRegistry) -> None:
    """Add files.register, files.unregister and files.respond."""

    @registry.method(
        "files.register",
        RegisterParams,
        description="Serve the session's files from this connection (an editor's buffers): "
        "Read, Write and Edit send files.request here until files.unregister or the "
        "connection closes.",
        needs=("store",),
    )
    async def register_(ctx: RpcContext, p: RegisterParams) -> dict[str, Any]:
        conn = ctx.connection
        if conn is None:
            raise InvalidOperationError("files.register needs a connection to send requests to")
        store = ctx.services.store
        assert store is not None
        await store.get_session(p.session_id)  # -32000 for an unknown session

        def send(data: dict[str, Any]) -> bool:
            return conn.enqueue(notification_frame(FILES_REQUEST, p.session_id, data))

        ctx.services.files.register(p.session_id, conn.id, send, reads=p.read, writes=p.write)
        return {"registered": True, "sessionId": p.session_id, "read": p.read, "write": p.write}

    @registry.method(
        "files.unregister",
        UnregisterParams,
        description="Stop serving the session's files (the tools use the disk again).",
    )
    async def unregister(ctx: RpcContext, p: UnregisterParams) -> dict[str, Any]:
        owner = ctx.connection.id if ctx.connection is not None else ""
        return {"unregistered": ctx.services.files.unregister(p.session_id, owner)}

    @registry.method(
        "files.respond",
        RespondParams,
        description="Answer a files.request: the file's text (read), or an error.",
    )
    async def respond(ctx: RpcContext, p: RespondParams) -> dict[str, Any]:
        owner = ctx.connection.id if ctx.connection is not None else ""
        accepted = ctx.services.files.answer(p.request_id, owner, p.content, p.error)
        return {"accepted": accepted}
