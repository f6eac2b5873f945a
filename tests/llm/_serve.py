"""Test helpers shared by the provider-adapter tests (Anthropic, OpenAI, Gemini).

``mock_client`` answers every request with the given bytes, streamed in the given
chunks, through ``httpx.MockTransport`` (no socket). ``serve_asgi`` runs a real
uvicorn server on 127.0.0.1 on a free port for tests that need a socket (a client
disconnect, a slow stream, cancellation). ``ReplayServer`` serves recorded response
bodies over a real socket from a thread, for SDK clients and our adapters alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import uvicorn

__all__ = ["ChunkStream", "ReplayServer", "free_port", "mock_client", "serve_asgi"]


class ChunkStream(httpx.AsyncByteStream):
    """A response body that yields the given chunks one by one (as a network would)."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk

    async def aclose(self) -> None:
        self.closed = True


def mock_client(
    body: bytes | list[bytes],
    status: int = 200,
    headers: Mapping[str, str] | None = None,
    capture: list[httpx.Request] | None = None,
) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` whose every request gets ``status`` and ``body``.

    ``body`` as a list is streamed chunk by chunk (each item one read). Requests are
    appended to ``capture`` (already read, so ``request.content`` and
    ``json.loads(request.content)`` work). ``headers`` default to an SSE content type.
    """
    chunks = [body] if isinstance(body, bytes) else list(body)
    response_headers = dict(headers or {"content-type": "text/event-stream"})

    async def handler(request: httpx.Request) -> httpx.Response:
        await request.aread()
        if capture is not None:
            capture.append(request)
        return httpx.Response(status, headers=response_headers, stream=ChunkStream(chunks))

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class _TestServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # Ctrl-C belongs to pytest, not to a server inside one test.
        yield


@asynccontextmanager
async def serve_asgi(app: Any, *, timeout: float = 10.0) -> AsyncIterator[str]:
    """Run ``app`` under uvicorn on 127.0.0.1 on a free port; yield its base URL.

    The server runs in a task of the caller's event loop and is shut down (open
    connections closed) when the block exits.
    """
    # Bind the socket ourselves so there is no race for the port.
    # With proto 0 asyncio never sets TCP_NODELAY: ~40 ms stalls per response.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1, access_log=False
    )
    server = _TestServer(config)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])
            with anyio.fail_after(timeout):
                while not server.started:
                    await anyio.sleep(0.01)
            try:
                yield f"http://127.0.0.1:{port}"
            finally:
                server.should_exit = True
    finally:
        sock.close()


Route = tuple[bytes, str, list[int]]
"""A recorded body, its content type, and the byte offsets at which to cut it."""


class ReplayServer:
    """A real HTTP server (uvicorn on 127.0.0.1, in a thread with its own event loop)
    that answers ``POST /<key>/...`` with the body registered under ``key``, written
    in the pieces ``cuts`` makes, so a client's SSE parser sees them cut mid-line,
    mid-character and between CR and LF as a network may deliver them.

    It runs in a thread so synchronous SDK clients and an async test can both use
    it. ``requests`` records ``(key, path, body)`` of every request served.
    """

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.requests: list[tuple[str, str, bytes]] = []
        self.port = 0
        self._server: _TestServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, key: str) -> str:
        """The base URL under which every path replays ``key``."""
        return f"{self.base_url}/{key}"

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        path: str = scope["path"]
        key, _, rest = path.lstrip("/").partition("/")
        if key not in self.routes:
            # Keys hold one slash (``api/name``): take the second segment too.
            second, _, rest = rest.partition("/")
            key = f"{key}/{second}"
        self.requests.append((key, "/" + rest, body))
        route = self.routes.get(key)
        if route is None:
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b"no such recording"})
            return
        content, content_type, cuts = route
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", content_type.encode())],
            }
        )
        points = sorted({c for c in cuts if 0 < c < len(content)})
        for start, end in zip([0, *points], [*points, len(content)], strict=True):
            piece = content[start:end]
            await send({"type": "http.response.body", "body": piece, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    def start(self, timeout: float = 10.0) -> ReplayServer:
        """Start serving (idempotent per instance); returns self."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self._app,
            interface="asgi3",
            log_level="warning",
            lifespan="off",
            access_log=False,
            timeout_graceful_shutdown=1,
        )
        server = self._server = _TestServer(config)

        def run() -> None:
            try:
                asyncio.run(server.serve([sock]))
            finally:
                sock.close()

        self._thread = threading.Thread(target=run, name="replay-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the replay server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Shut the server down and wait for its thread."""
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(10)
        self._server = None
        self._thread = None
