"""What every HTTP adapter shares: the key, the client, retries, errors, SSE."""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import ssl
import threading
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import httpx
import orjson

from tron_events.messages import Message

from ._retry import RetryPolicy, parse_retry_after
from ._sse import ServerSentEvent, iter_sse
from ._transport import AsyncioTransport, ResponseBody, use_asyncio_transport
from ._types import Done, ErrorEvent, LLMRequest, StreamEvent, Usage
from .errors import (
    AuthenticationError,
    LLMError,
    NetworkError,
    ResponseError,
    error_for_status,
)

__all__ = ["HTTPCall", "HTTPProvider", "StreamParser", "shared_ssl_context"]

log = logging.getLogger("tron_llm")

# Streams of long thinking can go quiet for minutes; connecting should not.
DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=10.0)


_SSL_LOCK = threading.Lock()
_SSL_CONTEXT: ssl.SSLContext | None = None


def shared_ssl_context() -> ssl.SSLContext:
    """The TLS context of every adapter's own HTTP client (httpx's default: certifi's
    CAs, ``SSL_CERT_FILE``/``SSL_CERT_DIR`` honoured), made once per process: loading the
    CA bundle takes tens of milliseconds, which a server's first request should not pay
    (it may be made ahead of time in a thread; callers meanwhile wait for it)."""
    global _SSL_CONTEXT
    with _SSL_LOCK:
        if _SSL_CONTEXT is None:
            _SSL_CONTEXT = httpx.create_ssl_context(trust_env=True)
        return _SSL_CONTEXT


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic collector paused while a request's history is converted and encoded:
    tens of thousands of objects that all stay reachable until it is sent, so every
    collection their allocation triggers is pure cost (half of converting a 2,000-turn
    history, ``benchmarks/RESULTS_peers.md``). Re-enabled only if it was enabled."""
    was_enabled = gc.isenabled()
    if was_enabled:
        gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _encode(body: dict[str, Any]) -> bytes:
    """A request body as UTF-8 JSON: orjson (6× faster on a long history), json for what
    orjson refuses (a key that is not a string, an integer beyond 64 bits)."""
    try:
        return orjson.dumps(body)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return json.dumps(body, ensure_ascii=False).encode()


class _OneChunk(httpx.AsyncByteStream):
    """A request body sent as one chunk, let go of once sent (see ``_attempt``)."""

    def __init__(self, content: bytes) -> None:
        self._content: bytes | None = content

    async def __aiter__(self) -> AsyncIterator[bytes]:
        content, self._content = self._content, None
        if content is not None:
            yield content


def _body(response: httpx.Response) -> AsyncIterator[bytes]:
    """A response's body as it arrives. From :class:`AsyncioTransport` with no content
    encoding, its bytes are the body: read straight from the transport, without
    httpx's decoder and chunker generators around each of a stream's many reads."""
    stream = response.stream
    if isinstance(stream, ResponseBody) and "content-encoding" not in response.headers:
        return aiter(stream)
    return response.aiter_bytes()


@dataclass
class HTTPCall:
    """One request to send: a path (joined to ``base_url``), a JSON body, headers."""

    path: str
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)


class StreamParser(ABC):
    """Turns one response's server-sent events into stream events (one per call)."""

    @abstractmethod
    def feed(self, event: ServerSentEvent) -> list[StreamEvent]:
        """The stream events for one SSE event; raises ``LLMError`` for an error event."""

    @abstractmethod
    def finish(self) -> Done:
        """The final result once the stream ended; raises ``LLMError`` if incomplete."""

    def partial(self) -> Message | None:
        """What streamed so far as an assistant message (for an error), or None."""
        return None

    def usage(self) -> Usage:
        """The usage reported so far."""
        return Usage()


class HTTPProvider(ABC):
    """Base of the adapters: subclasses build the request and parse the stream.

    ``api_key`` defaults to the first of ``api_key_env`` that is set (pass ``""`` for
    no key and no environment lookup). The key is kept
    out of ``repr``, logs and error messages. ``base_url`` defaults to the first of
    ``base_url_env`` that is set (the variable the provider's own SDK reads, e.g.
    ``ANTHROPIC_BASE_URL``), else ``default_base_url``. ``base_url_source`` and
    ``api_key_source`` name where an explicit ``base_url``/``api_key`` came from (a
    variable or an option): errors name it, so a user knows what to change. Pass
    ``client`` to supply your own ``httpx.AsyncClient`` (a proxy, a test transport);
    it is then yours to close.
    """

    name: ClassVar[str]
    default_base_url: ClassVar[str]
    api_key_env: ClassVar[tuple[str, ...]] = ()
    base_url_env: ClassVar[tuple[str, ...]] = ()
    requires_api_key: bool = True
    """Whether a call without a key fails at once (an instance may switch it off, e.g.
    for a local OpenAI-compatible server)."""
    price_provider: str | None = None
    """The ``genai-prices`` provider id used for cost (None: cost unknown)."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: httpx.AsyncClient | None = None,
        retry: RetryPolicy | None = None,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        headers: Mapping[str, str] | None = None,
        base_url_source: str | None = None,
        api_key_source: str | None = None,
    ) -> None:
        if api_key is None:
            api_key_source = _first_set(self.api_key_env)
            api_key = os.environ[api_key_source] if api_key_source else None
        # "" means "no key" (a local server): nothing is read from the environment
        # and no auth header is sent.
        self._api_key = api_key or None
        self._api_key_source = api_key_source
        if base_url is None:
            base_url_source = _first_set(self.base_url_env)
            if base_url_source is not None:
                base_url = self.base_url_from_env(os.environ[base_url_source])
        self.base_url = (base_url or self.default_base_url).rstrip("/")
        self.base_url_source = base_url_source if base_url else None
        """The variable or option that set ``base_url`` (None: the default or unknown)."""
        self._own_client = client is None
        if client is None:
            tls = shared_ssl_context()
            client = httpx.AsyncClient(timeout=timeout, verify=tls)
            use_asyncio_transport(client, tls)  # a streamed reply's many reads: _transport.py
        self._client = client
        self.retry = retry or RetryPolicy()
        self._extra_headers = dict(headers or {})
        self._urls: dict[str, httpx.URL] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r})"

    async def aclose(self) -> None:
        """Close the HTTP client if this adapter created it."""
        if self._own_client:
            await self._client.aclose()

    async def __aenter__(self) -> HTTPProvider:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # --- what adapters provide -------------------------------------------------------

    def base_url_from_env(self, value: str) -> str:
        """The base URL for a value of one of ``base_url_env`` (as the provider's SDK
        reads that variable; the same by default)."""
        return value

    @abstractmethod
    def build_call(self, request: LLMRequest) -> HTTPCall:
        """The HTTP request for ``request`` (without authentication headers)."""

    @abstractmethod
    def new_parser(self, request: LLMRequest) -> StreamParser:
        """A fresh parser for one response."""

    @abstractmethod
    def auth_headers(self, api_key: str) -> dict[str, str]:
        """The headers carrying the key."""

    def error_from_response(self, status: int, headers: Mapping[str, str], body: bytes) -> LLMError:
        """The typed error of a non-2xx response (``{"error": {"message", "type"}}``
        bodies, optionally wrapped in a list as Gemini does)."""
        message, error_type = _error_text(body)
        return error_for_status(
            status,
            message or f"HTTP {status}",
            retry_after=parse_retry_after(headers),
            provider=self.name,
            error_type=error_type,
        )

    # --- the protocol ----------------------------------------------------------------

    async def complete(self, request: LLMRequest) -> Done:
        """The final result of ``request``; raises the typed ``LLMError`` on failure."""
        async for event in self.stream(request):
            if isinstance(event, Done):
                return event
            if isinstance(event, ErrorEvent):
                raise event.error
        raise NetworkError("the stream ended without a result", provider=self.name)

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Stream ``request``; ends with exactly one ``Done`` or ``ErrorEvent``.

        Retryable errors are retried with backoff while nothing has been yielded yet.
        Cancelling the caller's scope closes the HTTP stream at once.
        """
        attempt = 0
        while True:
            parser = self.new_parser(request)
            streamed = False
            try:
                async for event in self._attempt(request, parser):
                    streamed = True
                    yield event
                yield parser.finish()
                return
            except LLMError as error:
                failure = error
            except httpx.TimeoutException as exc:
                failure = NetworkError(
                    f"timed out: {self.endpoint}: {type(exc).__name__}", provider=self.name
                )
            except httpx.HTTPError as exc:
                # Transport errors, and also a body that fails to decode (a proxy's
                # broken gzip): the stream must still end in an ErrorEvent.
                failure = NetworkError(
                    f"connection failed: {self.endpoint}: "
                    f"{self._redact(str(exc)) or type(exc).__name__}",
                    provider=self.name,
                )
            except Exception as exc:
                # A bug or a response shape the parser does not know: the stream
                # still ends in an ErrorEvent, so callers record a failed turn.
                log.exception("%s: could not understand the response", self.name)
                failure = ResponseError(
                    f"unexpected response from {self.name}: {type(exc).__name__}: {exc}",
                    provider=self.name,
                )
            failure.message = self._redact(failure.message)
            failure.args = (failure.message,)
            attempt += 1
            delay = (
                self.retry.delay(attempt, failure.retry_after)
                if failure.retryable and not streamed
                else None
            )
            if delay is None:
                log.warning("%s call failed: %s (%s)", self.name, failure.category, failure.message)
                yield ErrorEvent(error=failure, message=parser.partial(), usage=parser.usage())
                return
            log.info(
                "%s call failed (%s); retry %d in %.2fs",
                self.name,
                failure.category,
                attempt,
                delay,
            )
            await self.retry.sleep(delay)

    async def _attempt(
        self, request: LLMRequest, parser: StreamParser
    ) -> AsyncIterator[StreamEvent]:
        if self._api_key is None and self.requires_api_key:
            names = " or ".join(self.api_key_env) or "api_key"
            raise AuthenticationError(f"no API key: set {names}", provider=self.name)
        if self._api_key is not None and not self._api_key.isascii():
            raise AuthenticationError(self._non_ascii_key(self._api_key), provider=self.name)
        with _gc_paused():
            call = self.build_call(request)
            content = _encode(call.body)
        call_path, call_params = call.path, call.params
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            **self._extra_headers,
            **call.headers,
        }
        if self._api_key is not None:
            headers.update(self.auth_headers(self._api_key))
        # The body goes as a one-chunk stream (its length said, so the request is the
        # same on the wire): httpx keeps a bytes body in the Request, which a streamed
        # Response and its stream keep in a reference cycle; that lived on, MBs for a
        # long history, until a full collection (issue 29). A stream lets it go once sent.
        headers["content-length"] = str(len(content))
        stream_body = _OneChunk(content)
        del content, call
        async with self._post(
            self._url(call_path), stream_body, headers, call_params or None
        ) as response:
            if response.status_code >= 400:
                body = await response.aread()
                error = self.error_from_response(response.status_code, response.headers, body)
                if response.status_code == 404 and self.base_url_source is not None:
                    # A wrong endpoint usually answers 404: say which one and who set it.
                    error.message = f"{error.message} ({self.endpoint})"
                    error.args = (error.message,)
                raise error
            async for sse in iter_sse(_body(response)):
                for event in parser.feed(sse):
                    yield event

    @contextlib.asynccontextmanager
    async def _post(
        self,
        url: httpx.URL,
        content: httpx.AsyncByteStream,
        headers: dict[str, str],
        params: dict[str, str] | None,
    ) -> AsyncIterator[httpx.Response]:
        """The streamed response of a POST. Through this adapter's own client's direct
        transport it is sent straight to that transport: the client's send adds auth
        and redirect flows, cookies and event hooks that an adapter's own client has
        none of (a tenth of a short call, issue 29). Any other client, or a proxy's
        transport, gets the request through ``client.stream``."""
        client = self._client
        transport = client._transport_for_url(url) if self._own_client else None
        if not isinstance(transport, AsyncioTransport):
            async with client.stream(
                "POST", url, content=content, headers=headers, params=params
            ) as response:
                yield response
            return
        merged = client.headers.copy()  # httpx's defaults (user-agent, accept-encoding)
        merged.update(headers)
        timeout = {"timeout": client.timeout.as_dict()}
        request = httpx.Request(
            "POST", url, params=params, headers=merged, stream=content, extensions=timeout
        )
        response = await transport.handle_async_request(request)
        response.request = request
        try:
            yield response
        finally:
            await response.aclose()

    def _url(self, path: str) -> httpx.URL:
        """``base_url + path`` parsed once (httpx parses a str URL at every request)."""
        text = self.base_url + path
        cached = self._urls.get(text)
        if cached is None:
            if len(self._urls) >= 64:
                self._urls.clear()
            cached = self._urls[text] = httpx.URL(text)
        return cached

    @property
    def endpoint(self) -> str:
        """The base URL and what set it, as errors name it:
        ``http://127.0.0.1:18501 (ANTHROPIC_BASE_URL)``."""
        if self.base_url_source is None:
            return self.base_url
        return f"{self.base_url} ({self.base_url_source})"

    def _non_ascii_key(self, key: str) -> str:
        # httpx would raise UnicodeEncodeError deep in the request; a pasted
        # placeholder ("sk-ant-…") or a smart quote is the usual cause. The character
        # and its position are named, never the key.
        position, char = next((i, c) for i, c in enumerate(key) if not c.isascii())
        where = f"in {self._api_key_source}" if self._api_key_source else "given"
        return (
            f"the API key {where} has a character that is not ASCII "
            f"({char!r}, U+{ord(char):04X}, at position {position + 1} of {len(key)}): "
            "an API key is plain ASCII; copy the key again"
        )

    def _redact(self, text: str) -> str:
        if self._api_key and len(self._api_key) >= 6:
            text = text.replace(self._api_key, "***")
        return text


def _first_set(names: tuple[str, ...]) -> str | None:
    """The first of ``names`` set to a non-empty value in the environment."""
    return next((n for n in names if os.environ.get(n)), None)


def _error_text(body: bytes) -> tuple[str, str | None]:
    try:
        data: Any = json.loads(body)
    except ValueError:
        return body.decode("utf-8", "replace").strip()[:2000], None
    if isinstance(data, list) and data:
        data = data[0]
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict):
            message = error.get("message")
            kind = error.get("type") or error.get("status") or error.get("code")
            return (str(message) if message is not None else json.dumps(error)[:2000]), (
                str(kind) if kind is not None else None
            )
        if isinstance(error, str):
            return error, None
    return json.dumps(data)[:2000], None
