"""Test helpers shared by the provider-adapter tests (Anthropic, OpenAI, Gemini).

``mock_client`` answers every request with the given bytes, streamed in the given
chunks, through ``httpx.MockTransport`` (no socket). ``serve_asgi`` runs a real
uvicorn server on 127.0.0.1 on a free port for tests that need a socket (a client
disconnect, a slow stream, cancellation).
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import uvicorn

__all__ = ["ChunkStream", "free_port", "mock_client", "serve_asgi"]


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
