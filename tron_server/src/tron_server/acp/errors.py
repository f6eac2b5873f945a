"""tron-server's errors as ACP errors, with messages an editor can show as they are.

ACP's codes are JSON-RPC's, plus ``-32000`` (authentication required) and ``-32002``
(resource not found). Tron's domain codes map to the nearest: an unknown session is
"resource not found", bad params "invalid params"; any other keeps Tron's message and
code in ``data`` (``tronCode``, ``category``).
"""

from __future__ import annotations

from acp import RequestError

from ..client import RpcCallError


def from_tron(exc: RpcCallError) -> RequestError:
    """The ACP error for a failed tron-server call."""
    data = {"tronCode": exc.code, **exc.data}
    if exc.code == -32000:
        return RequestError(-32002, f"{exc.message} (session/list shows this folder's)", data)
    if exc.code == -32602:
        return RequestError(-32602, exc.message, data)
    if exc.code == -32003:
        return RequestError(
            -32603,
            f"{exc.message} (the session is busy: a turn runs in another client; cancel it "
            "there or wait)",
            data,
        )
    return RequestError(-32603, exc.message, data)


def not_open(session_id: str) -> RequestError:
    """A session this editor connection has not created, loaded or resumed."""
    return RequestError(
        -32002,
        f"session {session_id!r} is not open in this connection: call session/load or "
        "session/resume first",
        {"sessionId": session_id},
    )


__all__ = ["from_tron", "not_open"]
