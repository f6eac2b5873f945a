"""A response the adapter cannot make sense of ends the stream in an
``ErrorEvent``, never in a raised exception: any SSE stream of JSON values, of
any shape, ends in exactly one ``Done`` or ``ErrorEvent`` for every adapter,
and a parser that fails outright gives a ``ResponseError``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.llm._events import last_error
from tests.llm._serve import mock_client
from tron_events.messages import Message, TextBlock
from tron_llm import (
    AnthropicProvider,
    Done,
    ErrorEvent,
    GeminiProvider,
    HTTPProvider,
    LLMRequest,
    OpenAIChatProvider,
    OpenAIResponsesProvider,
    ResponseError,
    RetryPolicy,
    ServerSentEvent,
    StreamEvent,
)
from tron_llm.anthropic import AnthropicStreamParser

pytestmark = pytest.mark.anyio

REQUEST = LLMRequest(model="m-1", messages=[Message(role="user", content=[TextBlock(text="hi")])])
NO_RETRY = RetryPolicy(max_retries=0)
Make = Callable[[httpx.AsyncClient], HTTPProvider]
PROVIDERS: dict[str, Make] = {
    "anthropic": lambda c: AnthropicProvider(api_key="k" * 10, client=c, retry=NO_RETRY),
    "openai-chat": lambda c: OpenAIChatProvider(api_key="k" * 10, client=c, retry=NO_RETRY),
    "openai-responses": lambda c: OpenAIResponsesProvider(
        api_key="k" * 10, client=c, retry=NO_RETRY
    ),
    "gemini": lambda c: GeminiProvider(api_key="k" * 10, client=c, retry=NO_RETRY),
}

# Keys the adapters look for, so generated objects reach deep into the parsers.
KEYS = st.sampled_from([
    "type", "index", "delta", "text", "content", "content_block", "message", "usage",
    "choices", "finish_reason", "tool_calls", "function", "arguments", "id", "name",
    "item", "output_index", "response", "output", "candidates", "parts", "finishReason",
    "functionCall", "args", "usageMetadata", "error", "stop_reason", "partial_json",
    "thinking", "signature", "reasoning_content", "item_id", "status", "thought",
])  # fmt: skip
TYPES = st.sampled_from([
    "message_start", "content_block_start", "content_block_delta", "content_block_stop",
    "message_delta", "message_stop", "text_delta", "input_json_delta", "thinking_delta",
    "tool_use", "text", "response.output_item.added", "response.output_text.delta",
    "response.function_call_arguments.delta", "response.output_item.done",
    "response.completed", "response.failed", "function_call", "error",
])  # fmt: skip
SCALARS = st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=5) | TYPES
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=16,
)


def sse(values: list[Any]) -> bytes:
    out = b""
    for value in values:
        kind = value.get("type") if isinstance(value, dict) else None
        if isinstance(kind, str):
            out += b"event: " + kind.encode() + b"\n"
        out += b"data: " + orjson.dumps(value) + b"\n\n"
    return out


async def events_of(provider: HTTPProvider) -> list[StreamEvent]:
    return [e async for e in provider.stream(REQUEST)]


@pytest.mark.parametrize("name", sorted(PROVIDERS))
@settings(max_examples=60, deadline=None)
@given(values=st.lists(JSON, max_size=6))
async def test_any_stream_of_json_ends_in_exactly_one_done_or_error(
    name: str, values: list[Any]
) -> None:
    events = await events_of(PROVIDERS[name](mock_client(sse(values))))
    assert isinstance(events[-1], Done | ErrorEvent)
    assert sum(isinstance(e, Done | ErrorEvent) for e in events) == 1


class _BrokenParser(AnthropicStreamParser):
    def feed(self, event: ServerSentEvent) -> list[StreamEvent]:
        raise KeyError("a parser bug")


class _BrokenProvider(AnthropicProvider):
    def new_parser(self, request: LLMRequest) -> AnthropicStreamParser:
        return _BrokenParser(request.model)


async def test_a_parser_that_fails_gives_a_response_error_not_an_exception() -> None:
    body = b'event: ping\ndata: {"type":"ping"}\n\n'
    provider = _BrokenProvider(api_key="k" * 10, client=mock_client(body), retry=NO_RETRY)
    error = last_error(await events_of(provider)).error
    assert isinstance(error, ResponseError)
    assert error.category == "bad_response" and not error.retryable
    assert error.provider == provider.name and "KeyError" in error.message
    with pytest.raises(ResponseError):
        await _BrokenProvider(api_key="k" * 10, client=mock_client(body)).complete(REQUEST)
