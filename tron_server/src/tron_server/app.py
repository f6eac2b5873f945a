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

import asyncio
import collections
import contextlib
import contextvars
import functools
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect

from .logging import add_secret
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
from .settings import Settings
from .version import server_version
from .web import STATIC_DIR

# What /rpc serves (the hub, the methods, the runtime's services) is imported where it is
# built, not here: `tron-server` answers /health before it has loaded them (DeferredStart).
if TYPE_CHECKING:
    from .cluster.node import ClusterNode
    from .connection import SendFrames
    from .hub import Hub
    from .rpc import Dispatcher, MethodRegistry
    from .services import Services

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


class WebSocketProtocol(asyncio.Protocol):
    """uvicorn's ``websockets-sansio`` protocol, imported at the first WebSocket upgrade
    rather than before the server answers (the websockets package: tens of ms of the
    first ``/health``; the start's thread imports it meanwhile, see :class:`DeferredStart`).

    It offers the app one more way to send (:data:`SEND_FRAMES`, see :func:`frames_sender`)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        return _sansio_protocol()(*args, **kwargs)


#: The ASGI scope extension of :class:`WebSocketProtocol`: ``{"send": send_frames}``,
#: ``await send_frames([frame, ...])`` writing several text frames in one socket write.
SEND_FRAMES = "tron.websocket.send_frames"


@functools.cache
def _sansio_protocol() -> type[asyncio.Protocol]:
    from uvicorn.protocols.utils import ClientDisconnected
    from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
    from websockets.exceptions import InvalidState

    class Protocol(WebSocketsSansIOProtocol):
        """Each ``websocket.send`` is one socket write (a system call) after a walk through
        Starlette's and uvicorn's layers; a turn sends ~9 notifications, often several
        at once. :meth:`send_frames` writes the frames queued together in one go."""

        def handle_connect(self, event: Any) -> None:
            super().handle_connect(event)
            scope = getattr(self, "scope", None)  # none when the upgrade was refused
            if scope is not None:
                scope["extensions"][SEND_FRAMES] = {"send": self.send_frames}

        def send_receive_event_to_app(self) -> None:
            # uvicorn stops reading the socket at each message until the app takes it,
            # and starts again after: two epoll_ctl calls per request. Stop only when
            # one message already waits unread: reading still stops while the app does
            # not take its messages (the transport pushes back, see serve_connection).
            if not self.queue.empty():
                super().send_receive_event_to_app()
                return
            paused = self.read_paused
            self.read_paused = True  # uvicorn's pause is skipped when it says so
            try:
                super().send_receive_event_to_app()
            finally:
                self.read_paused = paused

        async def send_frames(self, frames: list[str | bytes]) -> None:
            """``websocket.send`` of each text frame, in order, in one write (as ``send``
            does for one: wait while the transport is full, ClientDisconnected once the
            client is gone)."""
            await self.writable.wait()
            if self.disconnected:
                raise ClientDisconnected()
            if self.close_sent or not self.handshake_complete:
                raise RuntimeError("send_frames before accept or after close")
            try:
                for frame in frames:
                    self.conn.send_text(frame.encode() if isinstance(frame, str) else frame)
            except InvalidState:
                raise ClientDisconnected() from None
            self.transport.write(b"".join(self.conn.data_to_send()))

    return Protocol


def frames_sender(websocket: WebSocket) -> SendFrames | None:
    """The socket's ``send_frames`` (:data:`SEND_FRAMES`) when its server offers it."""
    extension = websocket.scope.get("extensions", {}).get(SEND_FRAMES)
    send = extension.get("send") if isinstance(extension, dict) else None
    return send if callable(send) else None


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """Keyword arguments for ``uvicorn.Config`` / ``uvicorn.run`` matching ``settings``."""
    return {
        "host": settings.host,
        "port": settings.port,
        "ws_max_size": transport_max_size(settings),
        "ws": WebSocketProtocol,
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
    from . import commands, methods
    from .rpc import MethodRegistry

    registry = MethodRegistry()
    methods.register(registry)
    commands.register(registry)
    return registry


def served_hub(services: Services) -> Hub:
    """The hub the app runs and attaches connections to (a :class:`Hub`: the services
    below the transport know it only as their ``Notifier``)."""
    from .hub import Hub

    if not isinstance(services.hub, Hub):
        raise TypeError(f"create_app needs services with a tron_server.hub.Hub: {services.hub!r}")
    return services.hub


def import_later() -> None:
    """Import what the runtime loads only when first used, and a first turn does not use:
    the slash commands' parts (a message that is not a command needs none) and pathspec
    (Glob and Grep's ignore files). ``tron-server`` does it in a thread once it has served
    a while (:data:`IMPORT_LATER_AFTER`), so that a first use rarely waits; one that
    comes sooner imports what it uses itself. Safe in any thread."""
    import pathspec  # noqa: F401

    from .commands import builtins, expand, files, mcp  # noqa: F401


#: Event loop rounds given to the connections that waited for the start (their first
#: request is answered in ~6) before ``DeferredStart.ready`` runs (the record, the lines).
ANSWER_HELD_FIRST = 16

#: Seconds after ``tron-server`` is ready when :func:`import_later` runs (in a thread).
IMPORT_LATER_AFTER = 0.5


def _import_later_in_background() -> None:
    def run() -> None:
        try:
            import_later()
        except Exception:  # a warm-up only: the first use imports it and says what is wrong
            log.debug("importing the rest of the runtime failed", exc_info=True)

    threading.Thread(target=run, name="tron-import-later", daemon=True).start()


@dataclass(frozen=True)
class DeferredStart:
    """How ``tron-server`` starts: ``/health`` answers as soon as the socket is served,
    while the rest is built in the background — the runtime's modules and the method
    table imported in a thread, then ``open()`` (the store and the services). A ``/rpc``
    connection made meanwhile is accepted and its requests wait: none is refused or
    answered "method not found" for being early.

    ``ready(services)`` is called once everything serves; ``failed(error)`` when
    ``open()`` (or the imports) raised: ``/health`` then answers 503 and connections
    waiting are closed (1011). The caller decides what a failure does (the command
    stops the server and says why)."""

    open: Callable[[], Awaitable[Services]]
    ready: Callable[[Services], None]
    failed: Callable[[BaseException], None]


class NotServing(Exception):
    """``/rpc`` cannot be served: the start failed, or the server stops before it was
    ready. ``code`` is the WebSocket close code for connections that waited."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class Backend:
    """What ``/rpc`` serves — the services and the dispatcher — once they are built.

    ``ready``: they are (``/health`` says so); ``await wait()`` returns them, or raises
    :class:`NotServing` when they never will be."""

    def __init__(self) -> None:
        self._done = asyncio.Event()
        self._served: tuple[Services, Dispatcher] | None = None
        self._error: NotServing | None = None

    @property
    def ready(self) -> bool:
        return self._served is not None

    @property
    def failed(self) -> bool:
        return self._error is not None

    def serve(self, services: Services, dispatcher: Dispatcher) -> None:
        if not self._done.is_set():
            self._served = (services, dispatcher)
            self._done.set()

    def fail(self, message: str, code: int) -> None:
        """Wake the connections waiting (they are closed with ``code``); no-op once ready."""
        if not self._done.is_set():
            self._error = NotServing(message, code)
            self._done.set()

    async def wait(self) -> tuple[Services, Dispatcher]:
        await self._done.wait()
        if self._served is None:
            assert self._error is not None
            raise self._error
        return self._served


#: WebSocket close codes for a connection that waited for a server that did not become ready.
CLOSE_GOING_AWAY = 1001
CLOSE_START_FAILED = 1011


def create_app(
    settings: Settings,
    *,
    services: Services | None = None,
    token: str | None = None,
    owns_services: bool | None = None,
    registry: MethodRegistry | None = None,
    deferred: DeferredStart | None = None,
) -> Starlette:
    """The server app, with ``token`` or the one in ``settings.token_path`` (a new
    one is written there, mode 0600, when there is none), answering the methods of
    ``registry`` (default :func:`build_registry`).

    Without ``services`` the lifespan opens the store and builds everything, and
    closes them at shutdown. With them, it runs their hub, and stops the runtime
    and closes the store only if ``owns_services``. With ``deferred`` (the command's
    way, see :class:`DeferredStart`) the lifespan returns at once, so that ``/health``
    answers while ``deferred.open()`` builds the services in the background; those
    services are then owned (stopped and closed at shutdown).
    ``app.state.login_code`` is a one-time login code (see :mod:`.security`);
    ``app.state.backend`` says whether ``/rpc`` is ready (:class:`Backend`).
    """
    if deferred is not None and services is not None:
        raise ValueError("create_app takes services or deferred, not both")
    if token is None:
        token, _ = load_or_create_token(settings.token_path)
    auth = Authenticator(token)
    login_code = auth.login_codes.issue()
    add_secret(token, auth.cookie(), login_code)

    def issue_login_url() -> str:
        code = auth.login_codes.issue()
        add_secret(code)
        return login_url(settings.host, settings.port, code)

    backend = Backend()
    dispatcher: Dispatcher | None = None
    if deferred is None:
        # Built now, as before: a caller may read app.state.registry before starting it.
        from .rpc import Dispatcher

        registry = registry or build_registry()
        dispatcher = Dispatcher(registry, max_frame_bytes=settings.max_frame_bytes)

    async def built() -> tuple[Services, Dispatcher, bool]:
        """The services and the dispatcher, and whether this app owns the services."""
        if deferred is None:
            from .hub import Hub
            from .services import open_services

            assert dispatcher is not None
            own = services is None if owns_services is None else owns_services
            svc = await open_services(settings, Hub) if services is None else services
            return svc, dispatcher, own

        def load() -> Dispatcher:
            # Every import of the start, here: the event loop keeps answering /health
            # while this thread loads the modules.
            import uvicorn.protocols.websockets.websockets_sansio_impl  # noqa: F401

            from . import hub  # noqa: F401
            from .rpc import Dispatcher
            from .services import import_runtime

            import_runtime()
            table = registry or build_registry()
            return Dispatcher(table, max_frame_bytes=settings.max_frame_bytes)

        loaded = await asyncio.to_thread(load)
        return await deferred.open(), loaded, True

    @asynccontextmanager
    async def running(app: Starlette) -> AsyncIterator[None]:
        """Build (or take) the services, run their hub (and cluster node) and serve
        ``/rpc``; on exit stop the runtime and close the store when they are ours."""
        svc, disp, own = await built()
        from .services import stop_runtime

        hub = served_hub(svc)
        svc.issue_login_url = issue_login_url
        app.state.services = svc
        app.state.dispatcher = disp
        app.state.registry = disp.registry
        try:
            async with hub, contextlib.AsyncExitStack() as stack:
                if svc.cluster is not None:
                    await stack.enter_async_context(join_cluster(svc, hub, disp))
                backend.serve(svc, disp)
                log.info(
                    "tron-server ready",
                    extra={"fields": {"version": svc.version, "home": str(settings.home)}},
                )
                if deferred is not None:
                    # The connections held while it started (tron -p's) get their first
                    # answers before the record is written and "listening" said.
                    for _ in range(ANSWER_HELD_FIRST):
                        await asyncio.sleep(0)
                    deferred.ready(svc)
                    asyncio.get_running_loop().call_later(
                        IMPORT_LATER_AFTER, _import_later_in_background
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

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if deferred is None:
            async with running(app):
                yield
            return
        stop = asyncio.Event()

        async def in_background() -> None:
            try:
                async with running(app):
                    await stop.wait()
            except Exception as exc:
                if backend.ready:
                    log.exception("tron-server shutdown failed")
                    return
                backend.fail("tron-server could not start", CLOSE_START_FAILED)
                deferred.failed(exc)

        task = asyncio.create_task(in_background(), name="tron-server-start")
        try:
            yield
        finally:
            stop.set()
            # Stopped while still starting: what was not built is not waited for.
            backend.fail("tron-server is shutting down", CLOSE_GOING_AWAY)
            if not backend.ready:
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def health(request: Request) -> Response:
        # "ready": /rpc answers now (before, its requests wait for the start to finish).
        if backend.failed and not backend.ready:
            return JSONResponse(
                {"status": "failed", "version": server_version(), "ready": False},
                status_code=503,
            )
        return JSONResponse({"status": "ok", "version": server_version(), "ready": backend.ready})

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
        if backend.ready:
            svc, disp = await backend.wait()
            await serve_connection(websocket, svc, disp)
            return
        early = await wait_for_backend(websocket, backend)
        if early is None:
            return  # the client left, or the server stopped, while it started
        svc, disp = await backend.wait()
        await serve_connection(websocket, svc, disp, early=early)

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
    app.state.backend = backend
    if dispatcher is not None:
        app.state.dispatcher = dispatcher
        app.state.registry = dispatcher.registry
    return app


def join_cluster(services: Services, hub: Hub, dispatcher: Dispatcher) -> ClusterNode:
    """Wire the services' cluster node to this hub and dispatcher (notifications both
    ways, forwarded calls answered like a client's); enter it to start it."""
    from .rpc import RpcContext
    from .rpc.frames import Request as RpcRequest
    from .rpc.mapping import to_rpc_error

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


async def wait_for_backend(websocket: WebSocket, backend: Backend) -> list[Message] | None:
    """Until ``backend`` serves: the frames the client sent meanwhile (answered once it
    does, in order), or None when the client left or the backend will never serve (the
    connection is then closed with :class:`NotServing`'s code). The client is read while
    waiting, so that a server stopping before it was ready does not wait for it."""
    early: list[Message] = []
    waiter = asyncio.ensure_future(backend.wait())
    reader: asyncio.Future[Message] | None = None
    try:
        while not waiter.done():
            # Enough frames held: the rest wait in the transport (it pushes back).
            if reader is None and len(early) < MAX_IN_FLIGHT:
                reader = asyncio.ensure_future(websocket.receive())
            watched: set[asyncio.Future[Any]] = {waiter} if reader is None else {waiter, reader}
            await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
            if reader is not None and reader.done():
                message = reader.result()
                reader = None
                if message["type"] == "websocket.disconnect":
                    return None
                early.append(message)
        try:
            waiter.result()
        except NotServing as exc:
            await websocket.close(code=exc.code, reason=str(exc))
            return None
        return early
    finally:
        for pending in (waiter, reader):
            if pending is not None and not pending.done():
                pending.cancel()  # a queue's get: cancelling it loses no frame


async def serve_connection(
    websocket: WebSocket,
    services: Services,
    dispatcher: Dispatcher,
    *,
    early: Sequence[Message] = (),
) -> None:
    """Read frames and answer them (each in its own task) until the client leaves
    or the connection is closed (shutdown, too slow); ``early``: messages already read
    (while the server started), answered first."""
    import anyio
    import anyio.to_thread

    from .connection import CLOSE_INTERNAL, Connection
    from .heap import release_memory
    from .rpc import RpcContext

    settings = services.settings
    conn = Connection(
        websocket.send_text,
        lambda code, reason: websocket.close(code, reason),
        queue_limit=settings.outgoing_queue_limit,
        budget_bytes=settings.outgoing_budget_bytes,
        send_many=frames_sender(websocket),
    )
    ctx = RpcContext(services, conn, dispatcher.registry)
    # Each request is answered in a plain asyncio task (an anyio task group's task and
    # semaphore cost a backend lookup or two each, per request, on the event loop).
    in_flight = asyncio.Semaphore(MAX_IN_FLIGHT)
    answering: set[asyncio.Task[None]] = set()
    held = collections.deque(early)
    hub = served_hub(services)
    hub.attach(conn)

    async def answer(frame: str | bytes) -> None:
        try:
            reply = await dispatcher.handle(frame, ctx)
            if reply is not None:
                conn.enqueue(reply)
        except Exception:
            # The dispatcher answers every failure: this is a bug. The connection ends,
            # as it did when an answer's failure ended the connection's task group.
            log.exception("answering a request failed")
            conn.close_soon(CLOSE_INTERNAL, "internal error: reconnect")
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
                message = held.popleft() if held else await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    break
                frame = message.get("text")
                if frame is None:
                    frame = message.get("bytes") or b""
                await in_flight.acquire()
                task = asyncio.create_task(answer(frame))
                answering.add(task)
                task.add_done_callback(answering.discard)
            tg.cancel_scope.cancel()
    except WebSocketDisconnect:
        pass
    finally:
        if answering:  # the client left, or the connection was closed: stop answering
            for task in answering:
                task.cancel()
            await asyncio.wait(answering)
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
    "SEND_FRAMES",
    "Backend",
    "DeferredStart",
    "NotServing",
    "build_registry",
    "create_app",
    "frames_sender",
    "serve_connection",
    "transport_max_size",
    "uvicorn_options",
]
