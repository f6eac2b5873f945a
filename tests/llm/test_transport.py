"""An adapter's own client speaks HTTP/1.1 over asyncio (``tron_llm._transport``): over
real sockets, the same replies, the same errors, one connection kept for the next call,
a connection the server closed (or a reply left unfinished) not reused, concurrent
calls on their own connections, chunked replies, large bodies, TLS."""

from __future__ import annotations

import asyncio
import errno
import os
import socket
import ssl
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from tests.llm.conftest import fixture_bytes
from tron_events.messages import Message, TextBlock
from tron_llm import Done, ErrorEvent, LLMError, LLMRequest, RetryPolicy, StreamEvent
from tron_llm._transport import AsyncioTransport, use_asyncio_transport
from tron_llm.anthropic import AnthropicProvider

pytestmark = pytest.mark.anyio

REQUEST = LLMRequest(
    model="claude-sonnet-4-5", messages=[Message(role="user", content=[TextBlock(text="hi")])]
)
BODY = fixture_bytes("anthropic", "text_with_pings.sse")
NO_RETRY = RetryPolicy(max_retries=0)

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@asynccontextmanager
async def serve(handler: Handler, *, tls: ssl.SSLContext | None = None) -> AsyncIterator[int]:
    """A raw TCP server on 127.0.0.1 (its port) answering with ``handler``."""
    server = await asyncio.start_server(handler, "127.0.0.1", 0, ssl=tls)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()


async def read_request(reader: asyncio.StreamReader) -> bytes:
    """One HTTP/1.1 request (its head and a Content-Length body)."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return head + await reader.readexactly(length)


def sse_response(body: bytes, *, close: bool = False) -> bytes:
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        + f"content-length: {len(body)}\r\n".encode()
        + (b"connection: close\r\n" if close else b"")
        + b"\r\n"
    )
    return head + body


async def collect(provider: AnthropicProvider) -> list[StreamEvent]:
    return [event async for event in provider.stream(REQUEST)]


async def call_once(port: int, *, api_key: str = "k") -> list[StreamEvent]:
    """One call through a new adapter to 127.0.0.1:``port``: its events."""
    provider = AnthropicProvider(
        api_key=api_key, base_url=f"http://127.0.0.1:{port}", retry=NO_RETRY
    )
    try:
        return await collect(provider)
    finally:
        await provider.aclose()


async def three_calls(port: int, *, pause: float = 0.0) -> None:
    """Three calls through one adapter to 127.0.0.1:``port``, each a whole reply
    (``pause`` seconds after each)."""
    provider = AnthropicProvider(api_key="k", base_url=f"http://127.0.0.1:{port}", retry=NO_RETRY)
    try:
        for _ in range(3):
            events = await collect(provider)
            assert isinstance(events[-1], Done), events[-1]
            assert events[-1].stop_reason == "end_turn"
            await asyncio.sleep(pause)
    finally:
        await provider.aclose()


class KeepAlive:
    """A handler that answers every request of a connection with ``reply`` (in writes of
    ``piece`` bytes, as a model's stream arrives); ``accepted`` counts connections."""

    def __init__(self, reply: bytes, piece: int | None = None) -> None:
        self.reply = reply
        self.piece = piece or len(reply)
        self.accepted = 0

    async def __call__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        try:
            while True:
                await read_request(reader)
                for start in range(0, len(self.reply), self.piece):
                    writer.write(self.reply[start : start + self.piece])
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()


async def test_an_adapters_own_client_uses_the_asyncio_transport_and_a_given_one_is_untouched() -> (
    None
):
    own = AnthropicProvider(api_key="k")
    given_client = httpx.AsyncClient()
    given = AnthropicProvider(api_key="k", client=given_client)
    assert given._client is given_client
    try:
        url = httpx.URL("https://api.anthropic.com/v1/messages")
        assert isinstance(own._client._transport_for_url(url), AsyncioTransport)
        assert type(given_client._transport_for_url(url)) is httpx.AsyncHTTPTransport
    finally:
        await own.aclose()
        await given_client.aclose()


async def test_a_proxy_from_the_environment_keeps_httpx_transport(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    provider = AnthropicProvider(api_key="k")
    try:
        mounts = provider._client._mounts
        assert mounts, "the proxy from the environment is mounted"
        url = httpx.URL("https://api.anthropic.com/v1/messages")
        assert not isinstance(provider._client._transport_for_url(url), AsyncioTransport)
        for transport in mounts.values():
            client = httpx.AsyncClient(transport=transport)
            assert not use_asyncio_transport(client, ssl.create_default_context())
    finally:
        await provider.aclose()


async def test_a_connection_the_server_closed_is_not_reused() -> None:
    accepted = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal accepted
        accepted += 1
        await read_request(reader)
        # Says nothing of closing, then closes: the idle connection must not be reused.
        writer.write(sse_response(BODY))
        await writer.drain()
        writer.close()

    async with serve(handler) as port:
        await three_calls(port, pause=0.05)  # the close reaches the client in between
    assert accepted == 3


async def test_a_refused_connection_is_a_network_error_that_names_the_endpoint() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    events = await call_once(port)
    assert isinstance(events[-1], ErrorEvent)
    assert isinstance(events[-1].error, LLMError)
    assert events[-1].error.category == "network", events[-1].error
    # As docs/providers.md shows it (not asyncio's "Connect call failed (...)").
    refused = f"[Errno {errno.ECONNREFUSED}] {os.strerror(errno.ECONNREFUSED)}"
    assert events[-1].error.message == f"connection failed: http://127.0.0.1:{port}: {refused}"


async def test_a_stalled_reply_times_out_as_a_network_error() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(30)  # nothing more: the client's read timeout must end it

    async with serve(handler) as port:
        provider = AnthropicProvider(
            api_key="k", base_url=f"http://127.0.0.1:{port}", retry=NO_RETRY, timeout=0.3
        )
        try:
            async with asyncio.timeout(10):
                events = await collect(provider)
        finally:
            await provider.aclose()
    assert isinstance(events[-1], ErrorEvent)
    assert isinstance(events[-1].error, LLMError)
    assert events[-1].error.category == "network", events[-1].error


def self_signed(folder: Path) -> tuple[Path, Path]:
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "1", "-subj", "/CN=localhost", "-addext",
         "subjectAltName=DNS:localhost", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


async def test_tls_is_verified_and_streams(tmp_path: Path) -> None:
    try:
        cert, key = self_signed(tmp_path)
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"openssl cannot make a test certificate: {exc}")
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await read_request(reader)
            writer.write(sse_response(BODY, close=True))
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        writer.close()

    trusting = ssl.create_default_context(cafile=str(cert))
    async with serve(handler, tls=server_tls) as port:
        client = httpx.AsyncClient(verify=trusting)
        assert use_asyncio_transport(client, trusting)
        provider = AnthropicProvider(
            api_key="k", base_url=f"https://localhost:{port}", client=client, retry=NO_RETRY
        )
        try:
            events = await collect(provider)
            assert isinstance(events[-1], Done), events[-1]
        finally:
            await client.aclose()
        # The adapter's own client verifies: this certificate is nobody's it trusts.
        own = AnthropicProvider(api_key="k", base_url=f"https://localhost:{port}", retry=NO_RETRY)
        try:
            events = await collect(own)
        finally:
            await own.aclose()
        assert isinstance(events[-1], ErrorEvent)
        assert "certificate" in str(events[-1].error).lower(), events[-1].error


def chunked_response(body: bytes, size: int = 61) -> bytes:
    """``body`` as a chunked reply (how a model's stream usually comes)."""
    out = [
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    ]
    for start in range(0, len(body), size):
        piece = body[start : start + size]
        out.append(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
    out.append(b"0\r\n\r\n")
    return b"".join(out)


@pytest.mark.parametrize(
    ("reply", "piece"),
    [(sse_response(BODY), 97), (chunked_response(BODY), 200)],
    ids=["content-length", "chunked"],
)
async def test_replies_stream_and_the_connection_is_kept_for_the_next_call(
    reply: bytes, piece: int
) -> None:
    handler = KeepAlive(reply, piece=piece)
    async with serve(handler) as port:
        await three_calls(port)
    assert handler.accepted == 1


async def test_a_reply_left_unfinished_does_not_leave_its_connection_for_the_next_call() -> None:
    handler = KeepAlive(chunked_response(BODY))

    async with serve(handler) as port:
        provider = AnthropicProvider(
            api_key="k", base_url=f"http://127.0.0.1:{port}", retry=NO_RETRY
        )
        try:
            stream = provider.stream(REQUEST)
            async for _ in stream:
                break  # the caller stops after the first event (a cancelled turn)
            await stream.aclose()  # type: ignore[attr-defined]  # an async generator
            events = await collect(provider)  # the rest of the first reply is not read as this one
            assert isinstance(events[-1], Done), events[-1]
            assert events[-1].stop_reason == "end_turn"
        finally:
            await provider.aclose()
    assert handler.accepted == 2


async def test_a_reply_cut_off_by_the_server_is_a_network_error() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        reply = sse_response(BODY)
        writer.write(reply[: len(reply) // 2])  # a Content-Length it never reaches
        await writer.drain()
        writer.close()

    async with serve(handler) as port:
        events = await call_once(port)
    assert isinstance(events[-1], ErrorEvent)
    assert isinstance(events[-1].error, LLMError)
    assert events[-1].error.category == "network", events[-1].error


async def test_calls_at_once_each_get_a_connection_and_an_error_reply_keeps_its_own() -> None:
    accepted = 0
    both_in = asyncio.Event()
    waiting = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal accepted, waiting
        accepted += 1
        try:
            first = True
            while True:
                await read_request(reader)
                if first:
                    first = False
                    waiting += 1
                    if waiting == 2:
                        both_in.set()
                    await both_in.wait()  # both requests are in flight at once
                writer.write(sse_response(BODY))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async with serve(handler) as port:
        provider = AnthropicProvider(
            api_key="k", base_url=f"http://127.0.0.1:{port}", retry=NO_RETRY
        )
        try:
            async with asyncio.timeout(10):
                results = await asyncio.gather(collect(provider), collect(provider))
            for events in results:
                assert isinstance(events[-1], Done), events[-1]
            for _ in range(2):  # the two kept connections serve the next calls
                events = await collect(provider)
                assert isinstance(events[-1], Done), events[-1]
        finally:
            await provider.aclose()
    assert accepted == 2


async def test_a_large_request_body_is_sent_whole() -> None:
    received: list[bytes] = []
    big = "x" * (8 * 1024 * 1024)

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(0.2)  # the client's socket buffer fills first: it must wait
        received.append(await read_request(reader))
        writer.write(sse_response(BODY, close=True))
        await writer.drain()
        writer.close()

    request = LLMRequest(
        model="claude-sonnet-4-5", messages=[Message(role="user", content=[TextBlock(text=big)])]
    )
    async with serve(handler) as port:
        provider = AnthropicProvider(
            api_key="k", base_url=f"http://127.0.0.1:{port}", retry=NO_RETRY
        )
        try:
            events = [event async for event in provider.stream(request)]
        finally:
            await provider.aclose()
    assert isinstance(events[-1], Done), events[-1]
    head, _, body = received[0].partition(b"\r\n\r\n")
    assert big.encode() in body
    assert f"content-length: {len(body)}".encode() in head.lower()


async def test_the_request_carries_httpx_headers_and_a_compressed_reply_is_decoded() -> None:
    import gzip

    heads: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        heads.append(await read_request(reader))
        body = gzip.compress(BODY)
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-encoding: gzip\r\n"
            + f"content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode()
            + body
        )
        await writer.drain()
        writer.close()

    async with serve(handler) as port:
        events = await call_once(port, api_key="secret-key")
    assert isinstance(events[-1], Done), events[-1]
    assert events[-1].stop_reason == "end_turn"
    head = heads[0].partition(b"\r\n\r\n")[0].lower()
    assert head.startswith(b"post /v1/messages http/1.1\r\n"), head
    for line in (
        f"host: 127.0.0.1:{port}".encode(),
        b"user-agent: python-httpx/",
        b"accept-encoding: gzip",
        b"accept: text/event-stream",
        b"content-type: application/json",
        b"x-api-key: secret-key",
    ):
        assert line in head, (line, head)


async def test_an_idle_connection_is_not_reused_past_its_keepalive_expiry() -> None:
    handler = KeepAlive(sse_response(BODY))
    async with serve(handler) as port:
        provider = AnthropicProvider(
            api_key="k", base_url=f"http://127.0.0.1:{port}", retry=NO_RETRY
        )
        transport = provider._client._transport
        assert isinstance(transport, AsyncioTransport)
        transport.keepalive_expiry = 0.2
        try:
            for pause in (0.0, 0.4, 0.0):  # reused, expired (a new one), reused
                events = await collect(provider)
                assert isinstance(events[-1], Done), events[-1]
                await asyncio.sleep(pause)
        finally:
            await provider.aclose()
    assert handler.accepted == 2


async def test_a_body_of_unknown_length_goes_whole_with_its_length() -> None:
    received: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received.append(await read_request(reader))
        writer.write(b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n")
        await writer.drain()
        writer.close()

    async def pieces() -> AsyncIterator[bytes]:
        yield b"hello, "
        yield b"world"

    async with serve(handler) as port:
        client = httpx.AsyncClient()
        assert use_asyncio_transport(client, ssl.create_default_context())
        try:
            response = await client.post(f"http://127.0.0.1:{port}/x", content=pieces())
        finally:
            await client.aclose()
    assert response.status_code == 204
    head, _, body = received[0].partition(b"\r\n\r\n")
    assert body == b"hello, world"
    assert b"content-length: 12" in head.lower()
    assert b"transfer-encoding" not in head.lower()
