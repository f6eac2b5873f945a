"""From a text frame to the reply frame: parse, check, call, answer.

Every malformed frame is answered (never a crash, never a closed connection):
not JSON → -32700 with ``id: null``; not a request, or an empty batch →
-32600; unknown method → -32601; bad params → -32602 with the field errors;
a failure inside a method that is not a known error → -32603 with a reference
to the log record, and no internals. Notifications (no ``id``) get no reply,
even when they fail. Batches are answered with an array (in request order)
or nothing when every element was a notification.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any

import orjson

from ..errors import InternalError, InvalidRequest, MethodNotFound, ParseError, RpcError
from .context import RpcContext
from .frames import (
    NO_ID,
    BadRequest,
    Request,
    RequestId,
    check_request,
    error_frame,
    loads_request,
    result_frame,
)
from .mapping import to_rpc_error
from .middleware import (
    Call,
    Middleware,
    Timings,
    bulk_middleware,
    chain,
    cluster_middleware,
    logging_middleware,
)
from .registry import MethodRegistry

log = logging.getLogger("tron_server.rpc")

#: A batch larger than this is refused as a whole (the frame limit bounds it too).
MAX_BATCH = 1000


class Dispatcher:
    """Answers frames with the methods of ``registry``."""

    def __init__(
        self,
        registry: MethodRegistry,
        *,
        max_frame_bytes: int = 4 * 1024 * 1024,
        middleware: list[Middleware] | None = None,
    ) -> None:
        self.registry = registry
        self.max_frame_bytes = max_frame_bytes
        self.timings = Timings()
        stack: list[Middleware] = (
            [bulk_middleware, logging_middleware, self.timings, cluster_middleware]
            if middleware is None
            else middleware
        )
        self._call = chain(stack, self._endpoint)

    async def handle(self, frame: str | bytes, ctx: RpcContext) -> bytes | str | None:
        """The reply to one frame (JSON bytes or text), or None when nothing is to be sent."""
        size = len(frame) if isinstance(frame, bytes) else len(frame.encode())
        if size > self.max_frame_bytes:
            return error_frame(
                _id_of(frame),
                InvalidRequest(
                    f"the frame has {size} bytes, more than the limit of "
                    f"{self.max_frame_bytes}; send smaller requests"
                ),
            )
        try:
            decoded = loads_request(frame)
        except (ValueError, RecursionError) as exc:
            return error_frame(None, ParseError(f"the frame is not valid JSON: {exc}"))
        if isinstance(decoded, list):
            return await self._batch(decoded, ctx)
        return await self.handle_one(decoded, ctx)

    async def _batch(self, items: list[Any], ctx: RpcContext) -> bytes | str | None:
        if not items:
            return error_frame(None, InvalidRequest("an empty batch is not a request"))
        if len(items) > MAX_BATCH:
            return error_frame(
                None, InvalidRequest(f"a batch may hold at most {MAX_BATCH} requests")
            )
        replies = [reply for item in items if (reply := await self.handle_one(item, ctx))]
        if not replies:
            return None
        if any(isinstance(r, str) for r in replies):
            texts = [r if isinstance(r, str) else r.decode() for r in replies]
            return "[" + ",".join(texts) + "]"
        return b"[" + b",".join(r for r in replies if isinstance(r, bytes)) + b"]"

    async def handle_one(self, obj: object, ctx: RpcContext) -> bytes | str | None:
        """The reply to one decoded request (None for a notification)."""
        try:
            request = check_request(obj)
        except BadRequest as bad:
            return error_frame(bad.id, bad.error)
        try:
            result = await self.call(request, ctx)
        except Exception as exc:
            if request.is_notification:
                _log_unexpected(exc, request)
                return None
            return error_frame(request.id, self._error_for(exc, request))
        if request.is_notification:
            return None
        try:
            return result_frame(request.id, result)
        except TypeError as exc:
            return error_frame(request.id, self._error_for(exc, request))

    async def call(self, request: Request, ctx: RpcContext) -> Any:
        """Run one request through the middleware chain; raises what the method raises."""
        spec = self.registry.get(request.method)
        if spec is None:
            raise MethodNotFound(
                f"method {request.method!r} does not exist; system.info lists the methods"
            )
        return await self._call(Call(spec, request.params, request.id, ctx))

    async def _endpoint(self, call: Call) -> Any:
        call.spec.check_needs(call.ctx)
        params = call.spec.parse_params(call.params)
        return await call.spec.handler(call.ctx, params)

    def _error_for(self, exc: Exception, request: Request) -> RpcError:
        err = to_rpc_error(exc)
        if err is not None:
            return err
        ref = _log_unexpected(exc, request)
        return InternalError(f"internal error in {request.method} (see the server log, ref {ref})")


def _id_of(frame: str | bytes) -> RequestId:
    """The id of an oversized request, so its caller can match the error (else None)."""
    try:
        obj = loads_request(frame)
    except (ValueError, RecursionError):
        return None
    raw_id = obj.get("id") if isinstance(obj, dict) else None
    if isinstance(raw_id, str | int | float | orjson.Fragment) and not isinstance(raw_id, bool):
        return raw_id
    return None


def _log_unexpected(exc: Exception, request: Request) -> str:
    if to_rpc_error(exc) is not None:
        return ""
    ref = secrets.token_hex(4)
    log.error(
        "unexpected error in %s (ref %s)",
        request.method,
        ref,
        exc_info=exc,
        extra={"fields": {"rpcMethod": request.method, "ref": ref}},
    )
    return ref


__all__ = ["MAX_BATCH", "NO_ID", "Dispatcher"]
