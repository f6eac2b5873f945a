"""The Chat Completions adapter against hand-written streams in the exact wire format
of OpenAI and of the compatible servers (Ollama, llama.cpp, vLLM, OpenRouter).

Fixtures live in fixtures/openai_chat/*.sse; the expectations are written out here.
Request building and message conversion are tested at the end.
"""

from __future__ import annotations

import json
import random
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from tests.llm._events import last_done, last_error
from tests.llm._serve import mock_client, serve_asgi
from tests.llm.conftest import fixture_bytes
from tron_events.messages import (
    Base64ImageSource,
    ImageBlock,
    Message,
    NativeBlock,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UrlImageSource,
)
from tron_llm import (
    AuthenticationError,
    ContextLengthExceededError,
    Done,
    InvalidRequestError,
    LLMRequest,
    NetworkError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    RateLimitError,
    RetryPolicy,
    ServerError,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolSpec,
    Usage,
)
from tron_llm._cost import with_cost
from tron_llm._ids import ToolIdMap, safe_tool_id
from tron_llm._sse import SSEDecoder
from tron_llm.openai_chat import ChatStreamParser, OpenAIChatProvider

pytestmark = pytest.mark.anyio

OLLAMA = "http://localhost:11434/v1"


def request(**kw: Any) -> LLMRequest:
    base: dict[str, Any] = {
        "model": "gpt-4o",
        "messages": [Message(role="user", content=[TextBlock(text="hi")])],
    }
    base.update(kw)
    return LLMRequest(**base)


async def run(
    body: bytes | list[bytes],
    *,
    base_url: str | None = None,
    status: int = 200,
    headers: dict[str, str] | None = None,
    capture: list[httpx.Request] | None = None,
    retry: RetryPolicy | None = None,
    **kw: Any,
) -> list[StreamEvent]:
    client = mock_client(body, status=status, headers=headers, capture=capture)
    provider = OpenAIChatProvider(
        api_key="sk-test-key-123456",
        base_url=base_url,
        client=client,
        retry=retry or RetryPolicy(max_retries=0),
    )
    try:
        return [event async for event in provider.stream(request(**kw))]
    finally:
        await client.aclose()


def sse(*chunks: dict[str, Any] | str) -> bytes:
    """A Chat Completions stream of ``chunks`` (dicts as JSON), ending in [DONE]."""
    lines = [c if isinstance(c, str) else json.dumps(c) for c in chunks]
    return "".join(f"data: {line}\n\n" for line in [*lines, "[DONE]"]).encode()


def choice(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    """One chunk holding one choice."""
    return {
        "id": "a",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, **extra}],
    }


def streamed_text(events: list[StreamEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


# --- streams ------------------------------------------------------------------------


async def test_text_usage_chunk_and_done() -> None:
    events = await run(fixture_bytes("openai_chat", "text.sse"))
    result = last_done(events)
    assert streamed_text(events) == "Hello, wörld — 日本 🌍!"
    assert result.message == Message(
        role="assistant", content=[TextBlock(text="Hello, wörld — 日本 🌍!")]
    )
    assert all(e.index == 0 for e in events if isinstance(e, TextDelta))
    assert result.stop_reason == "end_turn"
    assert result.model == "gpt-4o-2024-08-06"
    assert result.response_id == "chatcmpl-BxT1a2"
    # prompt_tokens already includes the cached tokens: no double counting.
    expected = Usage(input_tokens=1200, cache_read_tokens=1024, output_tokens=9)
    assert result.usage == with_cost("openai", "gpt-4o-2024-08-06", expected)
    assert result.usage.cost_usd is not None and result.usage.cost_usd > 0
    assert result.usage.uncached_input_tokens == 176


async def test_parallel_tool_calls() -> None:
    events = await run(fixture_bytes("openai_chat", "tool_calls_parallel.sse"))
    result = last_done(events)
    starts = [e for e in events if isinstance(e, ToolCallStart)]
    ends = [e for e in events if isinstance(e, ToolCallEnd)]
    assert [(s.index, s.id, s.name) for s in starts] == [
        (0, "call_Qw1aZ3y", "get_weather"),
        (1, "call_Rt7bN0x", "get_time"),
    ]
    fragments = "".join(
        e.partial_json for e in events if isinstance(e, ToolCallDelta) and e.index == 0
    )
    assert json.loads(fragments) == {"city": "Edinburgh", "units": "c"}
    assert [e.input for e in ends] == [
        {"city": "Edinburgh", "units": "c"},
        {"zone": "Europe/London"},
    ]
    assert result.message.content == [
        ToolUseBlock(
            id="call_Qw1aZ3y", name="get_weather", input={"city": "Edinburgh", "units": "c"}
        ),
        ToolUseBlock(id="call_Rt7bN0x", name="get_time", input={"zone": "Europe/London"}),
    ]
    assert result.stop_reason == "tool_use"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (149, 60)


async def test_tool_without_arguments_gets_empty_input() -> None:
    events = await run(fixture_bytes("openai_chat", "tool_no_args.sse"), model="gpt-4o-mini")
    result = last_done(events)
    assert result.message.content == [
        TextBlock(text="Let me check."),
        ToolUseBlock(id="call_noargs01", name="list_files", input={}),
    ]
    end = next(e for e in events if isinstance(e, ToolCallEnd))
    assert (end.index, end.input) == (1, {})
    assert not any(isinstance(e, ToolCallDelta) for e in events)
    assert result.stop_reason == "tool_use"


async def test_ollama_reused_index_whole_arguments_and_reasoning_field() -> None:
    events = await run(
        fixture_bytes("openai_chat", "ollama_reused_index.sse"), base_url=OLLAMA, model="qwen3:8b"
    )
    result = last_done(events)
    assert result.message.content == [
        ThinkingBlock(thinking="Two files to read.", provider="openai"),
        ToolUseBlock(id="call_k2v7p1aa", name="read_file", input={"path": "a.txt"}),
        ToolUseBlock(id="call_9dd0x2bb", name="read_file", input={"path": "b.txt"}),
    ]
    assert [(e.index, e.id) for e in events if isinstance(e, ToolCallStart)] == [
        (1, "call_k2v7p1aa"),
        (2, "call_9dd0x2bb"),
    ]
    assert result.stop_reason == "tool_use"
    # Usage on the last choice chunk (no separate usage chunk); no price for Ollama.
    assert result.usage == Usage(input_tokens=212, output_tokens=41)


async def test_reasoning_content_field() -> None:
    events = await run(fixture_bytes("openai_chat", "reasoning_content.sse"), base_url=OLLAMA)
    result = last_done(events)
    thinking = [e for e in events if isinstance(e, ThinkingDelta)]
    assert "".join(e.thinking for e in thinking) == "The user wants 2+2. That is 4."
    assert {e.index for e in thinking} == {0}
    assert [e.index for e in events if isinstance(e, TextDelta)] == [1]
    assert result.message.content == [
        ThinkingBlock(thinking="The user wants 2+2. That is 4.", provider="openai"),
        TextBlock(text="2 + 2 = 4"),
    ]
    assert result.usage == Usage(input_tokens=11, output_tokens=18)


async def test_reasoning_field_with_openrouter_comments() -> None:
    events = await run(
        fixture_bytes("openai_chat", "reasoning_field.sse"), base_url="https://openrouter.ai/api/v1"
    )
    result = last_done(events)
    assert result.message.content == [
        ThinkingBlock(thinking="Think about colours.", provider="openai"),
        TextBlock(text="Blue."),
    ]
    assert result.stop_reason == "end_turn"
    assert result.usage == Usage(input_tokens=15, output_tokens=22, reasoning_tokens=17)
    assert result.usage.cost_usd is None  # not OpenAI: price unknown


async def test_both_reasoning_fields_are_read_once() -> None:
    chunk = {
        "id": "x",
        "model": "m",
        "choices": [
            {"index": 0, "delta": {"reasoning_content": "same", "reasoning": "same"}},
        ],
    }
    body = (
        f"data: {json.dumps(chunk)}\n\n"
        'data: {"id":"x","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        "data: [DONE]\n\n"
    ).encode()
    result = last_done(await run(body, base_url=OLLAMA))
    assert result.message.content == [ThinkingBlock(thinking="same", provider="openai")]


async def test_vllm_call_without_id_gets_one() -> None:
    events = await run(fixture_bytes("openai_chat", "vllm_no_id.sse"), base_url=OLLAMA)
    result = last_done(events)
    (call,) = result.message.content
    assert isinstance(call, ToolUseBlock)
    assert call.name == "search" and call.input == {"q": "sse"}
    assert call.id.startswith("call_") and safe_tool_id(call.id) == call.id
    start = next(e for e in events if isinstance(e, ToolCallStart))
    assert start.id == call.id


async def test_finish_reason_length() -> None:
    result = last_done(await run(fixture_bytes("openai_chat", "length.sse")))
    assert result.stop_reason == "max_tokens"
    assert result.message.content == [TextBlock(text="Once upon a")]


async def test_midstream_error_is_typed_and_keeps_partial_text() -> None:
    events = await run(fixture_bytes("openai_chat", "midstream_error.sse"))
    error = last_error(events)
    assert isinstance(error.error, OverloadedError)
    assert error.error.retryable
    assert error.error.error_type == "server_is_overloaded"
    assert "error while processing" in error.error.message
    assert error.message == Message(role="assistant", content=[TextBlock(text="Partial ans")])
    assert streamed_text(events) == "Partial ans"


async def test_midstream_error_before_output_is_retried(
    sleeps: list[float], fake_retry: RetryPolicy
) -> None:
    error = {"message": "Rate limit", "type": "rate_limit_error", "code": "rate_limit_exceeded"}
    error_chunk = f"data: {json.dumps({'error': error})}\n\n".encode()
    calls = 0
    body = fixture_bytes("openai_chat", "text.sse")

    async def handler(_request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        return httpx.Response(200, content=error_chunk if calls == 1 else body)

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    provider = OpenAIChatProvider(api_key="sk-x", client=client, retry=fake_retry)
    result = await provider.complete(request())
    assert calls == 2 and len(sleeps) == 1
    assert result.message.content == [TextBlock(text="Hello, wörld — 日本 🌍!")]
    await client.aclose()


async def test_stream_cut_off_without_finish_is_a_network_error() -> None:
    body = fixture_bytes("openai_chat", "tool_calls_parallel.sse").split(b"\n\n")[:3]
    events = await run(b"\n\n".join(body) + b"\n\n")
    error = last_error(events)
    assert isinstance(error.error, NetworkError)
    # The call never finished: it is not part of the partial message.
    assert error.message is None


async def test_done_without_usage_chunk() -> None:
    body = (
        b'data: {"id":"a","model":"m","choices":[{"index":0,"delta":{"content":"ok"}}]}\n\n'
        b"data: [DONE]\n\n"
    )
    result = last_done(await run(body, base_url=OLLAMA))
    assert result.message.content == [TextBlock(text="ok")]
    assert result.stop_reason == "end_turn"
    assert result.usage == Usage()


async def test_stop_after_tool_calls_still_means_tool_use_and_dict_arguments() -> None:
    # litellm's ollama_chat route: arguments as an object, finish_reason "stop".
    chunk = {
        "id": "a",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [
                        {"index": 0, "id": "c1", "function": {"name": "f", "arguments": {"x": 1}}}
                    ]
                },
            }
        ],
    }
    body = (
        f"data: {json.dumps(chunk)}\n\n"
        'data: {"id":"a","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        "data: [DONE]\n\n"
    ).encode()
    result = last_done(await run(body, base_url=OLLAMA))
    assert result.message.content == [ToolUseBlock(id="c1", name="f", input={"x": 1})]
    assert result.stop_reason == "tool_use"


async def test_refusal_and_content_filter() -> None:
    body = sse(choice({"refusal": "I can't help."}), choice({}, "stop"))
    result = last_done(await run(body))
    assert result.stop_reason == "refusal"
    assert result.message.content == [TextBlock(text="I can't help.")]
    assert last_done(await run(sse(choice({}, "content_filter")))).stop_reason == "refusal"


async def test_vllm_stop_reason_names_the_stop_sequence() -> None:
    body = sse(choice({"content": "1 2"}), choice({}, "stop", stop_reason="END"))
    result = last_done(await run(body, base_url=OLLAMA, stop_sequences=["END"]))
    assert result.stop_reason == "stop_sequence"
    result = last_done(await run(body, base_url=OLLAMA, stop_sequences=["OTHER"]))
    assert result.stop_reason == "end_turn"


async def test_rechunked_at_random_offsets_gives_the_same_events() -> None:
    for name in (
        "text.sse",
        "tool_calls_parallel.sse",
        "ollama_reused_index.sse",
        "reasoning_field.sse",
    ):
        raw = fixture_bytes("openai_chat", name)
        whole = await run(raw, base_url=OLLAMA)
        rng = random.Random(name)
        for _ in range(5):
            cuts = sorted(rng.sample(range(1, len(raw)), 25))
            chunks = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
            pieces = await run(chunks, base_url=OLLAMA)
            # Synthesized ids aside, everything is identical.
            assert pieces == whole


# --- HTTP errors --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body", "cls"),
    [
        (
            401,
            {
                "error": {
                    "message": "Incorrect API key provided: sk-test-key-123456.",
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                }
            },
            AuthenticationError,
        ),
        (
            404,
            {
                "error": {
                    "message": "The model `gpt-9` does not exist",
                    "type": "invalid_request_error",
                    "code": "model_not_found",
                }
            },
            NotFoundError,
        ),
        (
            400,
            {
                "error": {
                    "message": "This model's maximum context length is 128000 tokens.",
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                }
            },
            ContextLengthExceededError,
        ),
        (
            400,
            {
                "error": {
                    "message": "Invalid 'messages[2].tool_calls[0].id': string too long.",
                    "type": "invalid_request_error",
                    "code": "string_above_max_length",
                }
            },
            InvalidRequestError,
        ),
        (
            429,
            {
                "error": {
                    "message": "Rate limit reached",
                    "type": "requests",
                    "code": "rate_limit_exceeded",
                }
            },
            RateLimitError,
        ),
        (
            429,
            {
                "error": {
                    "message": "You exceeded your current quota.",
                    "type": "insufficient_quota",
                    "code": "insufficient_quota",
                }
            },
            PermissionDeniedError,
        ),
        (503, {"error": {"message": "Slow down", "type": "slow_down"}}, OverloadedError),
        (500, {"error": {"message": "boom", "type": "server_error"}}, ServerError),
        (404, {"error": 'model "qwen9" not found, try pulling it first'}, NotFoundError),
    ],
)
async def test_http_errors_are_typed(
    status: int, body: dict[str, Any], cls: type[Exception]
) -> None:
    events = await run(
        json.dumps(body).encode(), status=status, headers={"content-type": "application/json"}
    )
    error = last_error(events).error
    assert type(error) is cls
    assert "sk-test-key-123456" not in str(error)


async def test_quota_is_not_retried(sleeps: list[float], fake_retry: RetryPolicy) -> None:
    body = {
        "error": {
            "message": "You exceeded your current quota.",
            "type": "insufficient_quota",
            "code": "insufficient_quota",
        }
    }
    events = await run(json.dumps(body).encode(), status=429, retry=fake_retry)
    error = last_error(events).error
    assert isinstance(error, PermissionDeniedError) and not error.retryable
    assert "billing" in error.message
    assert sleeps == []


async def test_retry_after_header_is_honoured(sleeps: list[float], fake_retry: RetryPolicy) -> None:
    body = (
        b'{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}'
    )
    events = await run(body, status=429, headers={"retry-after-ms": "1500"}, retry=fake_retry)
    assert isinstance(last_error(events).error, RateLimitError)
    assert sleeps == [1.5, 1.5, 1.5]


async def test_openai_needs_a_key_but_local_servers_do_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    capture: list[httpx.Request] = []
    client = mock_client(fixture_bytes("openai_chat", "text.sse"), capture=capture)
    events = [e async for e in OpenAIChatProvider(client=client).stream(request())]
    assert isinstance(last_error(events).error, AuthenticationError)
    assert "OPENAI_API_KEY" in last_error(events).error.message
    assert capture == []
    local = OpenAIChatProvider(base_url=OLLAMA, client=client)
    assert not local.requires_api_key and OpenAIChatProvider.requires_api_key
    last_done([e async for e in local.stream(request())])
    assert "authorization" not in capture[0].headers
    assert str(capture[0].url) == "http://localhost:11434/v1/chat/completions"


async def test_key_and_url() -> None:
    capture: list[httpx.Request] = []
    await run(fixture_bytes("openai_chat", "text.sse"), capture=capture)
    (sent,) = capture
    assert sent.headers["authorization"] == "Bearer sk-test-key-123456"
    assert str(sent.url) == "https://api.openai.com/v1/chat/completions"
    assert "sk-test" not in repr(OpenAIChatProvider(api_key="sk-test-key-123456"))


# --- a real socket ------------------------------------------------------------------


async def test_served_over_a_real_socket() -> None:
    """An Ollama-like server on 127.0.0.1 streaming the fixture in small writes."""
    seen: list[dict[str, Any]] = []
    raw = fixture_bytes("openai_chat", "ollama_reused_index.sse")

    async def chat(req: Request) -> StreamingResponse:
        seen.append(await req.json())

        async def body() -> Any:
            for start in range(0, len(raw), 37):
                yield raw[start : start + 37]

        return StreamingResponse(body(), media_type="text/event-stream")

    app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
    async with serve_asgi(app) as base_url:
        provider = OpenAIChatProvider(base_url=base_url + "/v1")
        try:
            result = await provider.complete(request(model="qwen3:8b"))
        finally:
            await provider.aclose()
    assert [b.id for b in result.message.content if isinstance(b, ToolUseBlock)] == [
        "call_k2v7p1aa",
        "call_9dd0x2bb",
    ]
    assert seen[0]["model"] == "qwen3:8b" and seen[0]["max_tokens"] == 8192
    assert "max_completion_tokens" not in seen[0]


# --- the request --------------------------------------------------------------------

PNG = Base64ImageSource(media_type="image/png", data="iVBORw0KGgo=")


def body_of(req: LLMRequest, base_url: str | None = None) -> dict[str, Any]:
    return OpenAIChatProvider(api_key="k", base_url=base_url).build_body(req)


def test_request_body_for_openai() -> None:
    body = body_of(
        request(
            system="Be brief.",
            tools=[
                ToolSpec(
                    name="read",
                    description="Read a file",
                    input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
                )
            ],
            max_tokens=1000,
            temperature=0.2,
            stop_sequences=["END"],
            reasoning="medium",
            model="o4-mini",
        )
    )
    assert body == {
        "model": "o4-mini",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "hi"},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_completion_tokens": 1000,
        "temperature": 0.2,
        "stop": ["END"],
        "reasoning_effort": "medium",
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "read",
                    "description": "Read a file",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                },
            }
        ],
    }


def test_request_body_for_compatible_servers_uses_max_tokens() -> None:
    body = body_of(request(model="llama3.2"), base_url=OLLAMA)
    assert body["max_tokens"] == 8192 and "max_completion_tokens" not in body
    assert "reasoning_effort" not in body and "tools" not in body and "stop" not in body


@pytest.mark.parametrize(
    ("model", "effort"),
    [
        ("o3", "high"),
        ("gpt-5", "high"),
        ("gpt-5.1", "high"),
        ("gpt-5.1-codex-max", "xhigh"),
        ("gpt-5.2", "xhigh"),
        ("gpt-5.4-mini", "xhigh"),
        ("qwen3:8b", "high"),
    ],
)
def test_xhigh_only_where_accepted(model: str, effort: str) -> None:
    assert body_of(request(model=model, reasoning="xhigh"))["reasoning_effort"] == effort


def test_history_conversion() -> None:
    long_id = "functions.Bash:0|" + "x" * 50
    messages = [
        Message(
            role="user",
            content=[TextBlock(text="look"), ImageBlock(source=PNG), TextBlock(text="")],
        ),
        Message(
            role="assistant",
            content=[
                ThinkingBlock(thinking="claude thought", signature="sig", provider=None),
                RedactedThinkingBlock(data="xxx"),
                TextBlock(text="I'll look."),
                ToolUseBlock(id=long_id, name="bash", input={"cmd": "ls"}),
                ToolUseBlock(id="call_2", name="shot", input={}),
            ],
        ),
        Message(
            role="user",
            content=[
                ToolResultBlock(
                    tool_use_id=long_id, content=[TextBlock(text="a"), TextBlock(text="b")]
                ),
                ToolResultBlock(
                    tool_use_id="call_2",
                    content=[
                        TextBlock(text="see image"),
                        ImageBlock(source=UrlImageSource(url="https://x/y.png")),
                    ],
                    is_error=False,
                ),
                TextBlock(text="and?"),
            ],
        ),
        Message(
            role="assistant",
            content=[
                ThinkingBlock(thinking="own reasoning", provider="openai"),
                TextBlock(text="done"),
            ],
        ),
        Message(
            role="assistant", content=[ThinkingBlock(thinking="only thinking", provider="openai")]
        ),
    ]
    safe = safe_tool_id(long_id)
    assert len(safe) <= 40
    assert body_of(request(messages=messages))["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            ],
        },
        {
            "role": "assistant",
            "content": "claude thought\n\nI'll look.",
            "tool_calls": [
                {
                    "id": safe,
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"cmd": "ls"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "shot", "arguments": "{}"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": safe, "content": "a\nb"},
        {"role": "tool", "tool_call_id": "call_2", "content": "see image"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Images returned by tool call call_2:"},
                {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
                {"type": "text", "text": "and?"},
            ],
        },
        {"role": "assistant", "content": "done"},
    ]


async def test_mapped_tool_ids_come_back_as_the_original() -> None:
    long_id = "toolu_" + "y" * 60
    safe = safe_tool_id(long_id)
    history = [
        Message(role="user", content=[TextBlock(text="go")]),
        Message(role="assistant", content=[ToolUseBlock(id=long_id, name="f", input={})]),
        Message(role="user", content=[ToolResultBlock(tool_use_id=long_id, content="ok")]),
    ]
    chunk = {
        "id": "a",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [
                        {"index": 0, "id": safe, "function": {"name": "f", "arguments": "{}"}}
                    ]
                },
                "finish_reason": "tool_calls",
            }
        ],
    }
    body = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
    result = last_done(await run(body, messages=history))
    assert result.message.content == [ToolUseBlock(id=long_id, name="f", input={})]


async def test_arguments_before_the_name_are_kept() -> None:
    body = sse(
        choice({"tool_calls": [{"index": 0, "id": "c1", "function": {"arguments": '{"a"'}}]}),
        choice({"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": ": 1}"}}]}),
        choice({}, "tool_calls"),
    )
    events = await run(body, base_url=OLLAMA)
    assert [type(e).__name__ for e in events] == [
        "ToolCallStart",
        "ToolCallDelta",
        "ToolCallEnd",
        "Done",
    ]
    assert last_done(events).message.content == [ToolUseBlock(id="c1", name="f", input={"a": 1})]


async def test_an_empty_key_sends_no_authorization_header() -> None:
    """The registry passes "" for openai-compatible without a key: no bare "Bearer"."""
    capture: list[httpx.Request] = []
    client = mock_client(fixture_bytes("openai_chat", "text.sse"), capture=capture)
    provider = OpenAIChatProvider(api_key="", base_url=OLLAMA, client=client)
    last_done([e async for e in provider.stream(request())])
    assert "authorization" not in capture[0].headers


# --- what the recorded streams taught (tests/llm/test_recorded_streams.py) --------------


def parse(body: bytes, **kw: Any) -> Done:
    """The final result of ``body`` through the parser alone (fast enough for hypothesis)."""
    parser = ChatStreamParser(request(**kw), ToolIdMap())
    decoder = SSEDecoder()
    for event in [*decoder.feed(body), *decoder.flush()]:
        parser.feed(event)
    return parser.finish()


_NOTHING = st.sampled_from(["", None, "absent"])


def _field(chunk: dict[str, Any], name: str, value: str | None) -> dict[str, Any]:
    return chunk if value == "absent" else {**chunk, name: value}


@given(
    leading=st.lists(st.tuples(_NOTHING, _NOTHING, st.booleans()), max_size=4),
    model_later=st.booleans(),
)
def test_the_id_and_model_are_the_first_that_say_something(
    leading: list[tuple[str | None, str | None, bool]], model_later: bool
) -> None:
    # Azure opens with a prompt-filter chunk whose id and model are "": any number of
    # chunks saying nothing (empty, null or absent, with or without a choice) come
    # before the ones that do, and a later id does not replace the first.
    chunks: list[dict[str, Any]] = []
    for chunk_id, model, with_choice in leading:
        chunk: dict[str, Any] = {"object": "", "choices": []}
        if with_choice:
            chunk["choices"] = [{"index": 0, "delta": {"role": "assistant"}}]
        chunks.append(_field(_field(chunk, "id", chunk_id), "model", model))
    first = {"id": "chatcmpl-real", "choices": [{"index": 0, "delta": {"content": "hi"}}]}
    if not model_later:
        first["model"] = "gpt-real"
    chunks.append(first)
    chunks.append({**choice({}, "stop"), "id": "chatcmpl-later", "model": "gpt-real"})
    done = parse(sse(*chunks))
    assert (done.response_id, done.model) == ("chatcmpl-real", "gpt-real")
    assert done.message.content == [TextBlock(text="hi")]


@given(st.lists(st.permutations([0, 1, 2, None]).map(lambda p: p[:2]), min_size=1, max_size=5))
def test_only_choice_zero_is_read(chunks_choices: list[list[int | None]]) -> None:
    # A chunk may hold other choices, in any order, or none numbered 0: only choice 0
    # (or a choice without an index, which is the only one) is ours.
    chunks = []
    expected = ""
    for n, indices in enumerate(chunks_choices):
        choices = []
        for index in indices:
            entry: dict[str, Any] = {"delta": {"content": f"<{index}:{n}>"}}
            if index is not None:
                entry["index"] = index
            choices.append(entry)
        ours = [c for c in choices if c.get("index") in (0, None)]
        if ours:
            expected += ours[0]["delta"]["content"]
        chunks.append({"id": "a", "model": "m", "choices": choices})
    chunks.append({"id": "a", "model": "m", "choices": [{"index": 1, "finish_reason": "length"}]})
    chunks.append(choice({}, "stop"))
    done = parse(sse(*chunks))
    text = "".join(b.text for b in done.message.content if isinstance(b, TextBlock))
    assert text == expected
    assert done.stop_reason == "end_turn"  # choice 1's "length" is not ours


DETAILS = [
    {
        "type": "reasoning.text",
        "text": "",
        "signature": "",
        "format": "anthropic-claude-v1",
        "index": 0,
    },
    {"type": "reasoning.text", "text": "Two ", "format": "anthropic-claude-v1", "index": 0},
    {"type": "reasoning.encrypted", "data": "QUJD", "format": "google-gemini-v1", "index": 1},
    {"type": "reasoning.text", "text": "plus two.", "format": "anthropic-claude-v1", "index": 0},
    {"type": "reasoning.text", "signature": "c2ln", "format": "anthropic-claude-v1", "index": 0},
]


def test_reasoning_details_are_merged_by_index_kept_and_sent_back() -> None:
    # OpenRouter streams reasoning_details in pieces: each piece continues the entry of
    # its index (text joined, the repeated fields once), and the whole list must go
    # back on the assistant message for tool calls with reasoning on.
    chunks = [choice({"reasoning": "r", "reasoning_details": [d]}) for d in DETAILS]
    call = {"index": 0, "id": "call_1", "function": {"name": "f", "arguments": "{}"}}
    chunks.append(choice({"tool_calls": [call]}, "tool_calls"))
    done = parse(sse(*chunks))
    merged = [
        {
            "type": "reasoning.text",
            "text": "Two plus two.",
            "signature": "c2ln",
            "format": "anthropic-claude-v1",
            "index": 0,
        },
        {"type": "reasoning.encrypted", "data": "QUJD", "format": "google-gemini-v1", "index": 1},
    ]
    native = NativeBlock(provider="openai", data={"reasoning_details": merged})
    assert done.message.content == [
        ThinkingBlock(thinking="rrrrr", provider="openai"),
        ToolUseBlock(id="call_1", name="f", input={}),
        native,
    ]
    history = [
        *request().messages,
        done.message,
        Message(role="user", content=[ToolResultBlock(tool_use_id="call_1", content="4")]),
    ]
    sent = body_of(request(messages=history), base_url="https://openrouter.ai/api/v1")
    assert sent["messages"][1]["reasoning_details"] == merged
    # api.openai.com knows no such field; another provider's native blocks mean nothing.
    assert "reasoning_details" not in body_of(request(messages=history))["messages"][1]
    foreign = done.message.model_copy(
        update={
            "content": [*done.message.content[:2], native.model_copy(update={"provider": "google"})]
        }
    )
    history[1] = foreign
    sent = body_of(request(messages=history), base_url="https://openrouter.ai/api/v1")
    assert "reasoning_details" not in sent["messages"][1]
