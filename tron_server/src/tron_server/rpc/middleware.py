"""The middleware chain around every method call: structured logging and timing.

A middleware is ``async def mw(call: Call, call_next: Next) -> Any``; it may
look at the call, time it, log it, and must return what ``call_next`` returns
(or raise what it raises).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..cluster import OwnedElsewhere
from ..errors import AgentBusyError
from .context import RpcContext
from .frames import NO_ID
from .mapping import to_rpc_error
from .registry import MethodSpec

log = logging.getLogger("tron_server.rpc")


@dataclass(frozen=True, slots=True)
class Call:
    """One method call going through the chain."""

    spec: MethodSpec
    params: object
    id: Any
    ctx: RpcContext

    @property
    def method(self) -> str:
        return self.spec.name

    @property
    def connection_id(self) -> str | None:
        conn = self.ctx.connection
        return conn.id if conn is not None else None


Next = Callable[[Call], Awaitable[Any]]
Middleware = Callable[[Call, Next], Awaitable[Any]]

#: Methods whose answer can be a big page (of events, of hits): see :func:`bulk_middleware`.
BULK_METHODS = frozenset({"events.sync", "events.list", "events.search"})


def chain(middleware: list[Middleware], endpoint: Next) -> Next:
    """``endpoint`` wrapped by ``middleware`` (the first one is the outermost)."""
    call_next = endpoint
    for mw in reversed(middleware):
        call_next = _bind(mw, call_next)
    return call_next


def _bind(mw: Middleware, call_next: Next) -> Next:
    # A plain function returning the middleware's coroutine: no coroutine of its own
    # per call and layer.
    def run(call: Call) -> Awaitable[Any]:
        return mw(call, call_next)

    return run


async def logging_middleware(call: Call, call_next: Next) -> Any:
    """One structured log record per call: method, id, connection, duration, outcome.

    Successes log at DEBUG (a busy client would flood INFO), client errors at
    INFO, unexpected failures are logged by the dispatcher with the traceback.
    """
    start = time.perf_counter()
    try:
        result = await call_next(call)
    except Exception as exc:
        err = to_rpc_error(exc)
        if err is not None:
            fields = _call_fields(call, start)
            fields["errorCode"] = err.code
            log.info("rpc call failed: %s", err.message, extra={"fields": fields})
        raise
    if log.isEnabledFor(logging.DEBUG):  # the record's fields are made only when logged
        log.debug("rpc call", extra={"fields": _call_fields(call, start)})
    return result


def _call_fields(call: Call, start: float) -> dict[str, Any]:
    return {
        "rpcMethod": call.method,
        "rpcId": None if call.id is NO_ID else call.id,
        "connection": call.connection_id,
        "durationMs": round((time.perf_counter() - start) * 1000, 3),
    }


async def bulk_middleware(call: Call, call_next: Next) -> Any:
    """One bulk read at a time per connection, started only once the connection's
    earlier replies have mostly gone out.

    A client that pipelines many big reads and does not read the answers would
    otherwise have them all computed and held at once; this way at most one
    page is built ahead of what the client takes (and over the connection's
    byte budget it is closed with 4008).
    """
    conn = call.ctx.connection
    if conn is None or call.method not in BULK_METHODS:
        return await call_next(call)
    async with conn.bulk_lock:
        await conn.wait_writable()
        return await call_next(call)


@dataclass
class MethodTiming:
    count: int = 0
    errors: int = 0
    total_ms: float = 0.0
    max_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        mean = self.total_ms / self.count if self.count else 0.0
        return {
            "count": self.count,
            "errors": self.errors,
            "meanMs": round(mean, 3),
            "maxMs": round(self.max_ms, 3),
        }


@dataclass
class Timings:
    """Per-method call counts and durations (a timing middleware)."""

    methods: dict[str, MethodTiming] = field(default_factory=dict)

    async def __call__(self, call: Call, call_next: Next) -> Any:
        # Only registered methods reach the chain, so this dict stays bounded.
        start = time.perf_counter()
        failed = True
        try:
            result = await call_next(call)
            failed = False
            return result
        finally:
            ms = (time.perf_counter() - start) * 1000
            entry = self.methods.setdefault(call.method, MethodTiming())
            entry.count += 1
            entry.errors += failed
            entry.total_ms += ms
            entry.max_ms = max(entry.max_ms, ms)

    def snapshot(self) -> dict[str, dict[str, Any]]:
        return {name: t.to_dict() for name, t in sorted(self.methods.items())}


__all__ = [
    "BULK_METHODS",
    "Call",
    "Middleware",
    "Next",
    "Timings",
    "bulk_middleware",
    "chain",
    "logging_middleware",
]


#: Methods that go to the server running the session (several servers on one database):
#: "claim" ones may start a run, so with no owner this server claims the session first;
#: "follow" ones only go to an owner when there is one.
ROUTED_METHODS = {
    "agent.message": "claim",
    "agent.respond": "claim",
    "agent.abort": "claim",
    "agent.getState": "follow",
    "session.setMode": "follow",
}
#: Methods that subscribe their caller to the session (before the call is forwarded).
_SUBSCRIBING = frozenset({"agent.message", "agent.respond"})
#: A call is forwarded at most this often (the owner changed meanwhile, again and again).
MAX_HOPS = 3


async def cluster_middleware(call: Call, call_next: Next) -> Any:
    """With several servers on one database (:mod:`tron_server.cluster`), a call of
    :data:`ROUTED_METHODS` runs on the server that runs its session, whichever server
    the client is connected to: its result or error comes back as it is."""
    node = call.ctx.services.cluster
    mode = ROUTED_METHODS.get(call.method)
    params = call.params
    session_id = params.get("sessionId") if isinstance(params, dict) else None
    if node is None or mode is None or not isinstance(session_id, str):
        return await call_next(call)
    owner = node.owner_elsewhere(session_id)
    if owner is None:
        if mode == "follow":
            return await call_next(call)
        try:
            async with node.owning(session_id):
                return await call_next(call)
        except OwnedElsewhere as other:
            owner = other.owner
    if call.ctx.hops >= MAX_HOPS:
        raise AgentBusyError(
            f"session {session_id!r} changed servers while this call was on its way; try again",
            {"sessionId": session_id},
        )
    if call.method in _SUBSCRIBING:
        await call.ctx.subscribe(session_id)  # the relayed notifications of the run
    return await node.forward(owner, call.method, params, call.ctx.hops)
