"""The ASGI app: ``/rpc`` (JSON-RPC over WebSocket), ``/health``, ``/login`` and the web chat.

    app = create_app(Settings())          # the token of home/server-token (created if none)
    uvicorn.run(app, **uvicorn_options(settings))

Every request first passes :class:`~tron_server.security.HostOriginGuard`.
``/rpc`` needs ``Authorization: Bearer <token>`` or the ``tron_session``
cookie set by ``/login?token=…`` (a one-time login code, or the token). The
web chat's static files (``/``) load without credentials — they hold no
secrets — and the page's RPC connection needs the cookie. ``/health`` needs
nothing and says nothing secret. After the Host/Origin check, any other path is
404, for an HTTP request and a WebSocket upgrade alike (``/rpc`` over plain HTTP:
426).

Frames: over ``settings.max_frame_bytes`` a request is answered with -32600
and the connection stays open; over four times that, the WebSocket layer
itself closes the connection with 1009 (message too big) before reading it.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect

from . import commands, methods
from .connection import Connection
from .heap import release_memory
from .hub import Hub
from .logging import add_secret
from .rpc import Dispatcher, MethodRegistry, RpcContext
from .rpc.frames import Request as RpcRequest
from .rpc.mapping import to_rpc_error
from .security import (
    COOKIE_NAME,
    Authenticator,
    HostOriginGuard,
    allowed_hosts,
    allowed_origins,
    is_loopback_host,
    load_or_create_token,
    login_url,
)
from .services import Services, open_services, server_version, stop_runtime
from .settings import Settings
from .web import STATIC_DIR

if TYPE_CHECKING:
    from .cluster.node import ClusterNode

log = logging.getLogger("tron_server.app")

#: Requests of one connection handled at the same time; more wait (TCP backpressure).
MAX_IN_FLIGHT = 32
#: A connection that held at least this much for its client gives memory back when it ends.
RELEASE_AFTER_BYTES = 4 * 1024 * 1024


def transport_max_size(settings: Settings) -> int:
    """The WebSocket layer's frame limit: above it the connection is closed with 1009.

    Larger than ``max_frame_bytes`` so that moderately oversized requests get a
    JSON-RPC error (-32600) instead of a dropped connection.
    """
    return settings.max_frame_bytes * 4


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """Keyword arguments for ``uvicorn.Config`` / ``uvicorn.run`` matching ``settings``."""
    return {
        "host": settings.host,
        "port": settings.port,
        "ws_max_size": transport_max_size(settings),
        "ws": "websockets-sansio",
        # Every client offers permessage-deflate; compressing each frame for each client
        # on the event loop stalled every other connection (benchmarks/RESULTS_server.md).
        "ws_per_message_deflate": False,
        "lifespan": "on",
        "log_config": None,
        "timeout_graceful_shutdown": 15,
    }


def build_registry() -> MethodRegistry:
    """Every method this server answers: the JSON-RPC methods (:mod:`.methods`), then
    the slash commands, which install ``command.list`` and route ``agent.message``."""
    registry = MethodRegistry()
    methods.register(registry)
    commands.register(registry)
    return registry


def served_hub(services: Services) -> Hub:
    """The hub the app runs and attaches connections to (a :class:`Hub`: the services
    below the transport know it only as their ``Notifier``)."""
    if not isinstance(services.hub, Hub):
        raise TypeError(f"create_app needs services with a tron_server.hub.Hub: {services.hub!r}")
    return services.hub


def create_app(
    settings: Settings,
    *,
    services: Services | None = None,
    token: str | None = None,
    owns_services: bool | None = None,
    registry: MethodRegistry | None = None,
) -> Starlette:
    """The server app, with ``token`` or the one in ``settings.token_path`` (a new
    one is written there, mode 0600, when there is none), answering the methods of
    ``registry`` (default :func:`build_registry`).

    Without ``services`` the lifespan opens the store and builds everything, and
    closes them at shutdown. With them, it runs their hub, and stops the runtime
    and closes the store only if ``owns_services`` (the command opens them first,
    so that a database it cannot open is one line, not a failed startup).
    ``app.state.login_code`` is a one-time login code (see :mod:`.security`).
    """
    if token is None:
        token, _ = load_or_create_token(settings.token_path)
    auth = Authenticator(token)
    login_code = auth.login_codes.issue()
    add_secret(token, auth.cookie(), login_code)

    def issue_login_url() -> str:
        code = auth.login_codes.issue()
        add_secret(code)
        return login_url(settings.host, settings.port, code)

    registry = registry or build_registry()
    dispatcher = Dispatcher(registry, max_frame_bytes=settings.max_frame_bytes)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        own = services is None if owns_services is None else owns_services
        svc = await open_services(settings, Hub) if services is None else services
        hub = served_hub(svc)
        svc.issue_login_url = issue_login_url
        app.state.services = svc
        try:
            async with hub, contextlib.AsyncExitStack() as stack:
                if svc.cluster is not None:
                    await stack.enter_async_context(join_cluster(svc, hub, dispatcher))
                log.info(
                    "tron-server ready",
                    extra={"fields": {"version": svc.version, "home": str(settings.home)}},
                )
                yield
                log.info("tron-server shutting down")
                if own:
                    # Running turns are aborted and recorded before the store closes.
                    await stop_runtime(svc)
                hub.close_all()
        finally:
            if own and svc.store is not None:
                await svc.store.aclose()

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "version": server_version()})

    async def login(request: Request) -> Response:
        candidate = request.query_params.get("token", "")
        no_cache = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
        if not candidate or not auth.check_login_token(candidate):
            return PlainTextResponse(
                "This login link is not valid (a login link works once). Open the newest "
                "login URL tron-server printed, or paste the token from "
                "~/.tron/server-token into the page.\n",
                status_code=403,
                headers=no_cache,
            )
        response = RedirectResponse("/", status_code=303, headers=no_cache)
        response.set_cookie(COOKIE_NAME, auth.cookie(), httponly=True, samesite="strict", path="/")
        return response

    async def rpc(websocket: WebSocket) -> None:
        if not auth.is_authorized(websocket.headers):
            log.warning("websocket refused: no valid token")
            await websocket.close(code=1008)  # before accept: HTTP 403
            return
        await websocket.accept()
        await serve_connection(websocket, websocket.app.state.services, dispatcher)

    async def rpc_over_http(request: Request) -> Response:
        return PlainTextResponse(
            "/rpc is tron-server's JSON-RPC endpoint: connect with a WebSocket "
            "(ws://HOST:PORT/rpc)\n",
            status_code=426,
            headers={"Upgrade": "websocket", "Connection": "Upgrade"},
        )

    routes: list[Any] = [
        Route("/health", health, methods=["GET"]),
        Route("/login", login, methods=["GET"]),
        WebSocketRoute("/rpc", rpc),
        Route("/rpc", rpc_over_http),
    ]
    static = _static_dir()
    if static is not None:
        from starlette.staticfiles import StaticFiles

        web = StaticFiles(directory=static, html=True)
        routes.append(Mount("/", app=_http_only(web), name="web"))

    hosts = allowed_hosts(settings.port, _extra_hosts(settings))
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=[
            Middleware(HostOriginGuard, hosts=hosts, origins=allowed_origins(hosts)),
        ],
    )
    app.router.default = not_found
    _quiet_denials()
    app.state.token = token
    app.state.login_code = login_code
    app.state.auth = auth
    app.state.settings = settings
    app.state.dispatcher = dispatcher
    app.state.registry = registry
    return app


def join_cluster(services: Services, hub: Hub, dispatcher: Dispatcher) -> ClusterNode:
    """Wire the services' cluster node to this hub and dispatcher (notifications both
    ways, forwarded calls answered like a client's); enter it to start it."""
    node = services.cluster
    assert node is not None

    async def serve_call(method: str, params: object, hops: int) -> Any:
        ctx = RpcContext(services, None, dispatcher.registry, hops=hops)
        try:
            return await dispatcher.call(RpcRequest(method, params, 0), ctx)
        except Exception as exc:
            error = to_rpc_error(exc)  # a store error answers as it would here
            if error is None:
                raise
            raise error from None

    node.serve_call = serve_call
    node.deliver = hub.deliver
    node.on_gap = hub.close_subscribers
    hub.relay = node.relay
    return node


async def serve_connection(
    websocket: WebSocket, services: Services, dispatcher: Dispatcher
) -> None:
    """Read frames and answer them (each in its own task) until the client leaves
    or the connection is closed (shutdown, too slow)."""
    settings = services.settings
    conn = Connection(
        websocket.send_text,
        lambda code, reason: websocket.close(code, reason),
        queue_limit=settings.outgoing_queue_limit,
        budget_bytes=settings.outgoing_budget_bytes,
    )
    ctx = RpcContext(services, conn, dispatcher.registry)
    in_flight = anyio.Semaphore(MAX_IN_FLIGHT)
    hub = served_hub(services)
    hub.attach(conn)

    async def answer(frame: str | bytes) -> None:
        try:
            reply = await dispatcher.handle(frame, ctx)
            if reply is not None:
                conn.enqueue(reply)
        finally:
            in_flight.release()

    try:
        async with anyio.create_task_group() as tg:

            async def writer() -> None:
                await conn.run_writer()
                tg.cancel_scope.cancel()  # closed by the server: stop reading too

            tg.start_soon(writer)
            while True:
                # Replies piling up: leave the next requests unread (TCP pushes back).
                await conn.wait_writable()
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    break
                frame = message.get("text")
                if frame is None:
                    frame = message.get("bytes") or b""
                await in_flight.acquire()
                tg.start_soon(answer, frame)
            tg.cancel_scope.cancel()
    except WebSocketDisconnect:
        pass
    finally:
        hub.detach(conn)
        services.files.drop_owner(conn.id)  # its sessions' tools go back to the disk
        if conn.peak_pending_bytes >= RELEASE_AFTER_BYTES:
            # What this client made us hold is free now: give it back to the system.
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(release_memory)


async def not_found(scope: Scope, receive: Receive, send: Send) -> None:
    """404 for a path that is not ours, HTTP or WebSocket alike. (Host and Origin are
    checked before routing: a refused request gets 403 whatever its path.)"""
    response = PlainTextResponse("not found\n", status_code=404)
    if scope["type"] == "websocket":
        if "websocket.http.response" in scope.get("extensions", {}):
            _DENIED.set(True)
            await WebSocket(scope, receive, send).send_denial_response(response)
        else:  # a server without the denial-response extension can only say 403
            await send({"type": "websocket.close", "code": 1008, "reason": ""})
        return
    if scope["type"] == "http":
        await response(scope, receive, send)


#: Set in the task of a WebSocket upgrade answered with a denial response (404).
_DENIED: contextvars.ContextVar[bool] = contextvars.ContextVar("tron_ws_denied", default=False)


class _DeniedIsNoError(logging.Filter):
    """uvicorn's websockets-sansio logs "ASGI callable returned without completing
    handshake." at ERROR after a denial response it sent correctly (its
    ``handshake_complete`` is not set: uvicorn PR #3138). Drop that line for the
    upgrades we denied, and only for those: it still flags a real handler bug."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (_DENIED.get() and record.msg == _INCOMPLETE_HANDSHAKE)


_INCOMPLETE_HANDSHAKE = "ASGI callable returned without completing handshake."


def _quiet_denials() -> None:
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _DeniedIsNoError) for f in logger.filters):
        logger.addFilter(_DeniedIsNoError())


def _http_only(app: ASGIApp) -> ASGIApp:
    """``app`` for HTTP requests; a WebSocket upgrade to its paths is not found."""

    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await app(scope, receive, send)
        else:
            await not_found(scope, receive, send)

    return route


def _static_dir() -> Path | None:
    return STATIC_DIR if STATIC_DIR.is_dir() else None


def _extra_hosts(settings: Settings) -> list[str]:
    # With --allow-remote on a specific address, that address is a valid Host too.
    # (A wildcard bind has no single name to allow: clients use one of the loopback names
    # or the address given with --host.)
    wildcard = settings.host in ("0.0.0.0", "::", "")
    if settings.allow_remote and not is_loopback_host(settings.host) and not wildcard:
        return [settings.host]
    return []


__all__ = [
    "MAX_IN_FLIGHT",
    "build_registry",
    "create_app",
    "serve_connection",
    "transport_max_size",
    "uvicorn_options",
]
