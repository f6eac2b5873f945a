"""Retries, backoff, cancellation and key hygiene of the shared HTTP provider base.

The clock is the test's: ``RetryPolicy(sleep=..., random=...)`` records the delays
instead of sleeping (fixtures ``fake_retry`` and ``sleeps`` in conftest.py).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import anyio
import httpx
import pytest

from tests.llm._serve import serve_asgi
from tests.llm.conftest import fixture_bytes
from tron_events.messages import Message, TextBlock
from tron_llm import (
    AuthenticationError,
    Done,
    ErrorEvent,
    InvalidRequestError,
    LLMError,
    LLMRequest,
    NetworkError,
    NotFoundError,
    OverloadedError,
    RateLimitError,
    RetryPolicy,
    ServerError,
    StreamEvent,
    TextDelta,
)
from tron_llm.anthropic import AnthropicProvider

pytestmark = pytest.mark.anyio

REQUEST = LLMRequest(
    model="claude-sonnet-4-5", messages=[Message(role="user", content=[TextBlock(text="hi")])]
)
OK = fixture_bytes("anthropic", "text_with_pings.sse")
KEY = "sk-ant-api03-SECRET-abcdef0123456789"


def error_body(kind: str, message: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


Reply = tuple[int, dict[str, str], bytes]


class Script:
    """An HTTP transport answering requests with the next scripted reply (the last
    one repeats), counting the requests."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[httpx.Request] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        status, headers, body = self.replies[min(len(self.requests), len(self.replies)) - 1]
        return httpx.Response(
            status, headers={"content-type": "application/json", **headers}, content=body
        )

    def provider(self, retry: RetryPolicy) -> AnthropicProvider:
        client = httpx.AsyncClient(transport=httpx.MockTransport(self.handler))
        return AnthropicProvider(api_key=KEY, client=client, retry=retry)


async def collect(provider: AnthropicProvider) -> list[StreamEvent]:
    return [event async for event in provider.stream(REQUEST)]


def ok() -> Reply:
    return (200, {"content-type": "text/event-stream"}, OK)


async def test_429_waits_for_retry_after_ms(fake_retry: RetryPolicy, sleeps: list[float]) -> None:
    script = Script(
        (
            429,
            {"retry-after-ms": "1500", "retry-after": "9"},
            error_body("rate_limit_error", "slow down"),
        ),
        ok(),
    )
    events = await collect(script.provider(fake_retry))
    assert isinstance(events[-1], Done)
    assert len(script.requests) == 2
    assert sleeps == [1.5]  # retry-after-ms wins over retry-after


async def test_retry_after_in_seconds(fake_retry: RetryPolicy, sleeps: list[float]) -> None:
    script = Script((429, {"retry-after": "3"}, error_body("rate_limit_error", "slow")), ok())
    assert isinstance((await collect(script.provider(fake_retry)))[-1], Done)
    assert sleeps == [3.0]


@pytest.mark.parametrize(
    ("status", "kind", "error_class"),
    [
        (529, "overloaded_error", OverloadedError),
        (503, "api_error", OverloadedError),
        (500, "api_error", ServerError),
        (408, "timeout_error", ServerError),
        (409, "api_error", ServerError),
    ],
)
async def test_transient_statuses_are_retried_with_backoff(
    status: int,
    kind: str,
    error_class: type[LLMError],
    fake_retry: RetryPolicy,
    sleeps: list[float],
) -> None:
    script = Script((status, {}, error_body(kind, "try again")), ok())
    events = await collect(script.provider(fake_retry))
    assert isinstance(events[-1], Done)
    assert len(script.requests) == 2
    # First retry: ceiling 0.5 s, equal jitter at 0.5 → 0.25 + 0.125.
    assert sleeps == [0.375]
    assert error_class.retryable


@pytest.mark.parametrize(
    ("status", "kind", "error_class"),
    [
        (400, "invalid_request_error", InvalidRequestError),
        (401, "authentication_error", AuthenticationError),
        (404, "not_found_error", NotFoundError),
    ],
)
async def test_client_errors_are_not_retried(
    status: int,
    kind: str,
    error_class: type[LLMError],
    fake_retry: RetryPolicy,
    sleeps: list[float],
) -> None:
    script = Script((status, {}, error_body(kind, "no")), ok())
    events = await collect(script.provider(fake_retry))
    assert len(events) == 1 and isinstance(events[0], ErrorEvent)
    error = events[0].error
    assert type(error) is error_class
    assert isinstance(error, LLMError)
    assert (error.status_code, error.error_type, error.message) == (status, kind, "no")
    assert len(script.requests) == 1 and sleeps == []


async def test_max_retries_then_the_error(fake_retry: RetryPolicy, sleeps: list[float]) -> None:
    script = Script((529, {}, error_body("overloaded_error", "Overloaded")))
    events = await collect(script.provider(fake_retry))
    assert isinstance(events[-1], ErrorEvent) and isinstance(events[-1].error, OverloadedError)
    assert len(script.requests) == fake_retry.max_retries + 1 == 4
    assert sleeps == [0.375, 0.75, 1.5]  # doubling ceilings 0.5, 1, 2 with equal jitter


async def test_backoff_is_capped(sleeps: list[float]) -> None:
    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    retry = RetryPolicy(max_retries=6, initial_delay=1, max_delay=4, sleep=sleep, random=lambda: 1)
    await collect(Script((500, {}, error_body("api_error", "x"))).provider(retry))
    assert sleeps == [1, 2, 4, 4, 4, 4]


async def test_retry_after_beyond_the_cap_is_not_retried(
    fake_retry: RetryPolicy, sleeps: list[float]
) -> None:
    script = Script((429, {"retry-after": "120"}, error_body("rate_limit_error", "quota")), ok())
    events = await collect(script.provider(fake_retry))
    error = events[-1]
    assert isinstance(error, ErrorEvent) and isinstance(error.error, RateLimitError)
    assert error.error.retry_after == 120  # the caller can decide to wait that long
    assert len(script.requests) == 1 and sleeps == []


async def test_no_retry_once_something_streamed(
    fake_retry: RetryPolicy, sleeps: list[float]
) -> None:
    script = Script(
        (
            200,
            {"content-type": "text/event-stream"},
            fixture_bytes("anthropic", "error_mid_stream.sse"),
        ),
        ok(),
    )
    events = await collect(script.provider(fake_retry))
    assert [type(e).__name__ for e in events] == ["TextDelta", "ErrorEvent"]
    assert len(script.requests) == 1 and sleeps == []


async def test_connection_errors_are_retried(fake_retry: RetryPolicy, sleeps: list[float]) -> None:
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise httpx.ConnectError("connection refused", request=request)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=OK)

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    provider = AnthropicProvider(api_key=KEY, client=client, retry=fake_retry)
    events = await collect(provider)
    assert isinstance(events[-1], Done) and calls == 2 and len(sleeps) == 1


# --- cancellation over a real socket -------------------------------------------------


def slow_stream_app(disconnected: anyio.Event, started: anyio.Event) -> Callable[..., Any]:
    """An ASGI app streaming a text block one delta every 20 ms, forever."""
    head, _, _ = OK.partition(b"event: content_block_delta")

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        while (await receive()).get("more_body"):
            pass
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        started.set()
        delta = (
            b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
            b'"delta":{"type":"text_delta","text":"tick "}}\n\n'
        )
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                if (await receive())["type"] == "http.disconnect":
                    disconnected.set()
                    tg.cancel_scope.cancel()

            tg.start_soon(watch)
            try:
                await send({"type": "http.response.body", "body": head, "more_body": True})
                while True:
                    await send({"type": "http.response.body", "body": delta, "more_body": True})
                    await anyio.sleep(0.02)
            except OSError:
                disconnected.set()

    return app


async def test_cancelling_the_caller_closes_the_http_stream() -> None:
    disconnected, started = anyio.Event(), anyio.Event()
    async with serve_asgi(slow_stream_app(disconnected, started)) as base_url:
        provider = AnthropicProvider(api_key=KEY, base_url=base_url)
        seen: list[StreamEvent] = []
        with anyio.CancelScope() as scope:
            async for event in provider.stream(REQUEST):
                seen.append(event)
                if len(seen) == 3:
                    scope.cancel()
        assert scope.cancelled_caught
        assert all(isinstance(e, TextDelta) for e in seen)
        # The server sees the connection go away (not at the end of a 600 s timeout).
        with anyio.fail_after(5):
            await disconnected.wait()
        await provider.aclose()


async def test_cancelling_during_backoff_returns_at_once() -> None:
    script = Script((529, {}, error_body("overloaded_error", "Overloaded")))
    # A real sleep of 100 s per retry: only cancellation can end this.
    provider = script.provider(RetryPolicy(initial_delay=100, max_delay=100))
    with anyio.fail_after(5):
        with anyio.move_on_after(0.1) as scope:
            await collect(provider)
    assert scope.cancelled_caught
    assert len(script.requests) == 1


# --- the key stays secret ----------------------------------------------------------


def echo_key_handler(status: int) -> Callable[[httpx.Request], httpx.Response]:
    """A server that puts the key it got into its error message (some proxies do)."""

    def handler(request: httpx.Request) -> httpx.Response:
        key = request.headers["x-api-key"]
        return httpx.Response(
            status, content=error_body("authentication_error", f"invalid x-api-key: {key}")
        )

    return handler


@pytest.mark.parametrize("status", [401, 529])
async def test_api_key_never_in_errors_logs_or_repr(
    status: int, caplog: pytest.LogCaptureFixture, fake_retry: RetryPolicy
) -> None:
    caplog.set_level(logging.DEBUG)
    client = httpx.AsyncClient(transport=httpx.MockTransport(echo_key_handler(status)))
    provider = AnthropicProvider(api_key=KEY, client=client, retry=fake_retry)
    events = await collect(provider)
    error_event = events[-1]
    assert isinstance(error_event, ErrorEvent)
    error = error_event.error
    assert isinstance(error, LLMError)
    assert "invalid x-api-key: ***" in error.message
    for text in (str(error), repr(error), error.message, repr(error.args), repr(error_event)):
        assert KEY not in text
    assert caplog.records, "the failure (and retries) are logged"
    assert KEY not in caplog.text
    assert KEY not in repr(provider) and KEY not in str(provider)
    with pytest.raises(LLMError) as raised:
        await provider.complete(REQUEST)
    assert KEY not in str(raised.value)


async def test_network_error_messages_are_redacted(fake_retry: RetryPolicy) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadError(f"proxy said: bad key {KEY}", request=request)

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    provider = AnthropicProvider(api_key=KEY, client=client, retry=fake_retry)
    error = (await collect(provider))[-1]
    assert isinstance(error, ErrorEvent) and isinstance(error.error, NetworkError)
    assert KEY not in str(error.error) and "***" in str(error.error)


async def test_undecodable_body_ends_in_an_error_event(fake_retry: RetryPolicy) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            headers={"content-type": "text/event-stream", "content-encoding": "gzip"},
            content=b"this is not gzip",
        )

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    provider = AnthropicProvider(api_key=KEY, client=client, retry=fake_retry)
    events = await collect(provider)
    assert len(events) == 1
    assert isinstance(events[0], ErrorEvent) and isinstance(events[0].error, NetworkError)
