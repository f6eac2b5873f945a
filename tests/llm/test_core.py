"""The provider-neutral core: errors, retry-after parsing, backoff bounds, tool ids,
usage, and the HTTP base's key handling."""

from __future__ import annotations

import email.utils
import re
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.llm._serve import mock_client
from tests.llm.conftest import fixture_bytes
from tron_events.messages import Message, TextBlock
from tron_llm import (
    AuthenticationError,
    ContextLengthExceededError,
    Done,
    HTTPCall,
    HTTPProvider,
    InvalidRequestError,
    LLMError,
    LLMRequest,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    Provider,
    RateLimitError,
    RetryPolicy,
    ServerError,
    StreamParser,
    ToolIdMap,
    Usage,
    safe_tool_id,
)
from tron_llm._retry import parse_retry_after
from tron_llm.anthropic import AnthropicProvider, AnthropicStreamParser
from tron_llm.errors import error_for_status

pytestmark = pytest.mark.anyio

REQUEST = LLMRequest(
    model="claude-sonnet-4-5", messages=[Message(role="user", content=[TextBlock(text="hi")])]
)


# --- errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "message", "cls", "retryable"),
    [
        (400, "messages: text content blocks must be non-empty", InvalidRequestError, False),
        (
            400,
            "prompt is too long: 210000 tokens > 200000 maximum",
            ContextLengthExceededError,
            False,
        ),
        (
            400,
            "This model's maximum context length is 128000 tokens",
            ContextLengthExceededError,
            False,
        ),
        (401, "invalid x-api-key", AuthenticationError, False),
        (403, "no access", PermissionDeniedError, False),
        (404, "model: claude-x", NotFoundError, False),
        (408, "timeout", ServerError, True),
        (409, "conflict", ServerError, True),
        (413, "request too large", InvalidRequestError, False),
        (422, "bad", InvalidRequestError, False),
        (429, "rate limited", RateLimitError, True),
        (500, "internal", ServerError, True),
        (502, "bad gateway", ServerError, True),
        (503, "unavailable", OverloadedError, True),
        (529, "Overloaded", OverloadedError, True),
    ],
)
def test_error_for_status(status: int, message: str, cls: type[LLMError], retryable: bool) -> None:
    error = error_for_status(status, message, retry_after=2.0, provider="p", error_type="t")
    assert type(error) is cls
    assert error.retryable is retryable
    assert (error.status_code, error.retry_after, error.provider, error.error_type) == (
        status,
        2.0,
        "p",
        "t",
    )
    assert str(error) == message and error.category
    assert cls.__name__ in repr(error)


def test_error_categories_are_distinct() -> None:
    classes = [
        AuthenticationError,
        PermissionDeniedError,
        NotFoundError,
        InvalidRequestError,
        ContextLengthExceededError,
        RateLimitError,
        OverloadedError,
        ServerError,
    ]
    assert len({c.category for c in classes}) == len(classes)


# --- retry-after and backoff ----------------------------------------------------------


def test_parse_retry_after() -> None:
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after-ms": "soon", "retry-after": "9"}) == 9.0
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after": "-4"}) == 0.0
    assert parse_retry_after({"retry-after": "whenever"}) is None
    assert parse_retry_after({}) is None
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after({"retry-after": date}, now=now) == pytest.approx(30)
    past = email.utils.formatdate(now - 30, usegmt=True)
    assert parse_retry_after({"retry-after": past}, now=now) == 0.0
    # httpx headers are case-insensitive, as servers vary.
    assert parse_retry_after(httpx.Headers({"Retry-After-Ms": "10"})) == 0.01


@given(
    attempt=st.integers(1, 20),
    jitter=st.floats(0, 1),
    initial=st.floats(0.01, 5),
    cap=st.floats(0.01, 60),
)
def test_backoff_stays_between_half_the_ceiling_and_the_ceiling(
    attempt: int, jitter: float, initial: float, cap: float
) -> None:
    policy = RetryPolicy(
        max_retries=20, initial_delay=initial, max_delay=cap, random=lambda: jitter
    )
    delay = policy.delay(attempt, None)
    ceiling = min(cap, initial * 2 ** (attempt - 1))
    assert delay is not None
    assert ceiling / 2 - 1e-9 <= delay <= ceiling + 1e-9


@given(attempt=st.integers(1, 10), retry_after=st.floats(0, 200))
def test_retry_after_is_honoured_up_to_the_cap(attempt: int, retry_after: float) -> None:
    policy = RetryPolicy(max_retries=5, max_retry_after=60)
    delay = policy.delay(attempt, retry_after)
    if attempt > 5 or retry_after > 60:
        assert delay is None
    else:
        assert delay == retry_after


# --- tool ids -------------------------------------------------------------------------

SAFE = re.compile(r"[A-Za-z0-9_-]{1,40}")


@given(st.text(min_size=1, max_size=120))
def test_safe_tool_ids(tool_id: str) -> None:
    safe = safe_tool_id(tool_id)
    assert SAFE.fullmatch(safe)
    assert safe_tool_id(tool_id) == safe  # deterministic: a resumed session sends the same
    assert safe_tool_id(safe) == safe  # already safe ids are kept
    ids = ToolIdMap()
    assert ids.back(ids.out(tool_id)) == tool_id
    assert ids.back("toolu_new") == "toolu_new"


@given(st.lists(st.text(min_size=1, max_size=60), min_size=2, max_size=8, unique=True))
def test_distinct_ids_stay_distinct(tool_ids: list[str]) -> None:
    assert len({safe_tool_id(t) for t in tool_ids}) == len(tool_ids)


def test_known_foreign_ids() -> None:
    assert safe_tool_id("toolu_01A09q90qw90lq917835lq9") == "toolu_01A09q90qw90lq917835lq9"
    for foreign in ("functions.Bash:0", "call|abc", "x" * 41, "a b"):
        assert SAFE.fullmatch(safe_tool_id(foreign)) and safe_tool_id(foreign) != foreign


# --- usage ----------------------------------------------------------------------------


def test_usage_totals_and_payload() -> None:
    usage = Usage(
        input_tokens=1000, cache_read_tokens=700, cache_write_tokens=200, output_tokens=50
    )
    assert usage.total_tokens == 1050
    assert usage.uncached_input_tokens == 100
    assert usage.to_payload() == {
        "inputTokens": 1000,
        "outputTokens": 50,
        "cacheReadTokens": 700,
        "cacheCreationTokens": 200,
    }


# --- the HTTP base --------------------------------------------------------------------


class _Parser(StreamParser):
    def feed(self, event: Any) -> list[Any]:
        return []

    def finish(self) -> Done:
        return Done(
            message=Message(role="assistant", content=[]),
            stop_reason="end_turn",
            usage=Usage(),
            model="m",
        )


class LocalProvider(HTTPProvider):
    """A keyless provider (like a local OpenAI-compatible server)."""

    name = "local"
    default_base_url = "http://127.0.0.1:1"
    api_key_env = ("LOCAL_TEST_KEY",)
    requires_api_key = False

    def build_call(self, request: LLMRequest) -> HTTPCall:
        return HTTPCall(path="/x", body={}, headers={"x-extra": "1"}, params={"alt": "sse"})

    def new_parser(self, request: LLMRequest) -> StreamParser:
        return _Parser()

    def auth_headers(self, api_key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {api_key}"}


async def test_missing_key_fails_fast_and_names_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    capture: list[httpx.Request] = []
    client = mock_client(b"", capture=capture)
    provider = AnthropicProvider(client=client, retry=RetryPolicy(max_retries=3))
    with pytest.raises(AuthenticationError, match="ANTHROPIC_API_KEY"):
        await provider.complete(REQUEST)
    assert capture == []  # not sent, not retried


async def test_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    capture: list[httpx.Request] = []
    client = mock_client(fixture_bytes("anthropic", "text_with_pings.sse"), capture=capture)
    provider = AnthropicProvider(client=client)
    await provider.complete(REQUEST)
    assert capture[0].headers["x-api-key"] == "sk-ant-from-env"


@pytest.mark.parametrize("key", [None, ""])
async def test_keyless_provider_sends_no_auth(
    key: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCAL_TEST_KEY", "from-env")
    capture: list[httpx.Request] = []
    provider = LocalProvider(
        api_key=key, client=mock_client(b"", capture=capture), headers={"x-org": "o"}
    )
    assert isinstance(provider, Provider)
    await provider.complete(REQUEST)
    request = capture[0]
    # None reads the environment; "" means no key at all.
    assert request.headers.get("authorization") == ("Bearer from-env" if key is None else None)
    assert request.headers["x-extra"] == "1" and request.headers["x-org"] == "o"
    assert request.url.params["alt"] == "sse"


async def test_own_client_is_closed_and_a_given_one_is_not() -> None:
    given_client = httpx.AsyncClient()
    async with AnthropicProvider(api_key="k", client=given_client):
        pass
    assert not given_client.is_closed
    await given_client.aclose()
    provider = AnthropicProvider(api_key="k")
    await provider.aclose()
    assert provider._client.is_closed


def test_parser_finish_without_anything_is_an_error() -> None:
    with pytest.raises(LLMError):
        AnthropicStreamParser("claude-sonnet-4-5").finish()
