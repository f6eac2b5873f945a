"""A real tron-server (uvicorn on 127.0.0.1, a free port) in a background thread, with a
temp home and a temp SQLite database: :class:`RunningServer`. The fixtures that start
one (``server_factory``, ``running_server``, ``server``, ``make_server``) are in
:mod:`tests.support.fixtures`.

``RunningServer`` attributes: ``base_url`` (http://127.0.0.1:PORT), ``ws_url``
(ws://127.0.0.1:PORT/rpc), ``token``, ``home``, ``port``, ``settings``, ``app``,
``services`` (the live Services, once started), ``login_code`` (this launch's
one-time login code); methods: ``connect(**options)`` (an ``async with``
TronClient with the token), ``await run(fn, *args)`` (run a coroutine function
on the server's event loop, e.g. to publish or to read the store),
``restart(rotate_token=False)`` (same home, database, port and token, as
``tron-server`` restarts; a new token with ``rotate_token``), ``stop()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import uvicorn

from tron_server.app import create_app, uvicorn_options
from tron_server.client import TronClient
from tron_server.security import load_or_create_token
from tron_server.services import Services
from tron_server.settings import Settings

T = TypeVar("T")

START_TIMEOUT = 20.0


class RunningServer:
    """A tron-server running in a thread with its own event loop."""

    def __init__(self, home: Path, **overrides: Any) -> None:
        self.home = home
        self.overrides = overrides
        self.port = 0
        self.token = ""
        self.settings: Settings
        self.app: Any = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._error: BaseException | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/rpc"

    @property
    def services(self) -> Services:
        services: Services = self.app.state.services
        return services

    def start(self, *, rotate_token: bool = False) -> RunningServer:
        # With proto 0 asyncio never sets TCP_NODELAY: ~40 ms stalls per response.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        self.port = sock.getsockname()[1]
        fields: dict[str, Any] = {
            "home": self.home,
            "port": self.port,
            "log_level": "warning",
            # Tests written before permission modes (issue 19) run tools without approval
            # prompts; the interaction tests ask for default_permission_mode="default".
            "allow_bypass_permissions": True,
            "default_permission_mode": "bypassPermissions",
            # Never the machine's ~/.claude.json (its MCP servers): one in the temp home.
            "claude_json": self.home / "claude.json",
        }
        fields.update(self.overrides)
        self.settings = Settings(**fields)
        token, _ = load_or_create_token(self.settings.token_path, rotate=rotate_token)
        self.app = create_app(self.settings, token=token)
        self.token = self.app.state.token
        self.login_code: str = self.app.state.login_code
        options = uvicorn_options(self.settings)
        options.update(log_level="warning", access_log=False, timeout_graceful_shutdown=5)
        self._server = uvicorn.Server(uvicorn.Config(self.app, **options))
        self._error = None
        self._thread = threading.Thread(target=self._run, args=(sock,), daemon=True)
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT
        while not self._server.started:
            if self._error is not None or not self._thread.is_alive():
                raise RuntimeError(f"tron-server failed to start: {self._error!r}")
            if time.monotonic() > deadline:
                raise TimeoutError("tron-server did not start")
            time.sleep(0.01)
        return self

    def _run(self, sock: socket.socket) -> None:
        async def serve() -> None:
            self._loop = asyncio.get_running_loop()
            assert self._server is not None
            await self._server.serve([sock])

        try:
            asyncio.run(serve())
        except BaseException as exc:  # surfaced by start()/stop()
            self._error = exc
        finally:
            sock.close()

    def stop(self, timeout: float = 20.0) -> None:
        """Shut down as on SIGTERM (lifespan shutdown runs) and wait for the thread."""
        if self._server is None or self._thread is None:
            return
        self._server.should_exit = True
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._server.force_exit = True
            self._thread.join(5)
        self._server = None
        self._thread = None
        if self._error is not None:
            raise RuntimeError("tron-server stopped with an error") from self._error

    def restart(self, *, rotate_token: bool = False) -> RunningServer:
        """Stop, then start again on the same port, home, database and token (a new
        token with ``rotate_token``, as ``tron-server --rotate-token``)."""
        self.stop()
        return self.start(rotate_token=rotate_token)

    def connect(self, **options: Any) -> contextlib.AbstractAsyncContextManager[TronClient]:
        """``async with server.connect() as client`` — a TronClient with the token."""
        return TronClient.connect(self.ws_url, token=self.token, **options)

    async def run(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Await ``fn(*args)`` on the server's event loop (from a test's loop)."""
        assert self._loop is not None
        future = asyncio.run_coroutine_threadsafe(_call(fn, *args), self._loop)
        return await asyncio.wrap_future(future)

    def run_sync(self, fn: Callable[..., Awaitable[T]], *args: Any, timeout: float = 30) -> T:
        """``run`` for synchronous tests."""
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(_call(fn, *args), self._loop).result(timeout)


async def _call(fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    return await fn(*args)


ServerFactory = Callable[..., RunningServer]
