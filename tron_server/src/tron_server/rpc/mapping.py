"""Exceptions raised by handlers → the RpcError answered to the client.

Store errors get their domain codes; anything unexpected becomes a bare
-32603 (the details go to the log, never to the client).
"""

from __future__ import annotations

from tron_events import errors as ev

from ..errors import (
    FilesConflictError,
    InternalError,
    InvalidOperationError,
    InvalidParams,
    RpcError,
    SessionNotActiveError,
    SessionNotFoundError,
    WorkspaceRpcError,
)


def to_rpc_error(exc: BaseException) -> RpcError | None:
    """The RpcError for ``exc``, or None if it is unexpected (a bug: log it, answer -32603)."""
    if isinstance(exc, RpcError):
        return exc
    message = str(exc)
    if isinstance(exc, ev.SessionNotFound):
        return SessionNotFoundError(message, {"sessionId": exc.session_id})
    if isinstance(exc, ev.EventNotFound):
        return InvalidOperationError(message, {"eventId": exc.event_id})
    if isinstance(exc, ev.SessionNotActive):
        return SessionNotActiveError(message, {"sessionId": exc.session_id, "status": exc.status})
    if isinstance(exc, ev.ConcurrencyConflict):
        # The head moved under the caller: re-reading and retrying can succeed.
        return InvalidOperationError(message, {"sessionId": exc.session_id}, retryable=True)
    if isinstance(exc, ev.SessionHasForks):
        return InvalidOperationError(message, {"forkIds": exc.fork_ids})
    if isinstance(exc, ev.InvalidRewind | ev.InvalidParent | ev.EventIdConflict):
        return InvalidOperationError(message)
    if isinstance(exc, ev.InvalidQuery | ev.InvalidCursor | ev.InvalidPayload):
        return InvalidParams(message)
    if isinstance(exc, ev.UnknownEventType):
        return InvalidParams(message)
    if isinstance(exc, ev.MissingContent):
        return WorkspaceRpcError(message, {"reason": "missing_content", "hashes": exc.hashes})
    workspace = _workspace_error(exc)
    if workspace is not None:
        return workspace
    if isinstance(exc, ev.StoreBusy):
        return _busy(message)
    if isinstance(exc, ev.StoreClosed):
        return _busy("the server is shutting down; reconnect and retry")
    return None


def _workspace_error(exc: BaseException) -> RpcError | None:
    from ..workspace import FilesConflict, MergeConflict, WorkspaceError
    from ..workspace._git import GitError

    message = str(exc)
    if isinstance(exc, FilesConflict):
        return FilesConflictError(
            message, {"kind": "restore", "files": [p.to_json() for p in exc.problems]}
        )
    if isinstance(exc, MergeConflict):
        return FilesConflictError(
            message, {"kind": "merge", "reason": exc.reason, "files": exc.files}
        )
    if isinstance(exc, WorkspaceError):
        return WorkspaceRpcError(message, {"reason": exc.reason, **exc.data})
    if isinstance(exc, GitError):
        return WorkspaceRpcError(message, {"reason": "git", "stderr": exc.stderr[-2000:]})
    return None


def _busy(message: str) -> RpcError:
    return InternalError(message, retryable=True, category="busy")


__all__ = ["to_rpc_error"]
