"""The Anthropic adapter against hand-written streams in the exact wire format.

Fixtures live in fixtures/anthropic/*.sse (one response each); the expectations are
written out here. Request building and message conversion are tested on their own
at the end.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from tests.llm._events import last_done
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
)
from tron_llm import (
    ErrorEvent,
    LLMRequest,
    NetworkError,
    OverloadedError,
    RateLimitError,
    ReasoningLevel,
    RetryPolicy,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolSpec,
)
from tron_llm._cost import with_cost
from tron_llm._sse import SSEDecoder
from tron_llm.anthropic import (
    API_VERSION,
    AnthropicProvider,
    AnthropicStreamParser,
    build_body,
    convert_messages,
    thinking_budget,
)

pytestmark = pytest.mark.anyio

SIG = (
    "EqQBCkYIBxgCKkBN8mTq3vX1cR9sB2Zq0f/wYk7Ry4yGz3nQ+Hn0aVq1x5cX8b0Wn3e2Jp7kz4Uo9lW6sE1rA2tG5y"
    "H3dK8fJ0bEgx0hTqZr1v8pX3mYc2waDMl4nFq9sR2tV7uA1iIwK3pL8mN0qR5sT9vW2xY4zB6cD8eF0gH2iJ4kL6m"
    "N8oP0qR2sT4uV6wX8yZ0aB2cD4eFKhM="
)

HELLO = LLMRequest(
    model="claude-sonnet-4-5", messages=[Message(role="user", content=[TextBlock(text="hi")])]
)


async def run(
    name: str,
    *,
    request: LLMRequest = HELLO,
    chunks: int | None = None,
    retry: RetryPolicy | None = None,
    capture: list[httpx.Request] | None = None,
) -> list[StreamEvent]:
    """Stream fixture ``name`` through the adapter (cut into ``chunks``-byte pieces)."""
    body = fixture_bytes("anthropic", name)
    pieces: bytes | list[bytes] = body
    if chunks:
        pieces = [body[i : i + chunks] for i in range(0, len(body), chunks)]
    client = mock_client(pieces, capture=capture)
    provider = AnthropicProvider(
        api_key="sk-ant-test", client=client, retry=retry or RetryPolicy(max_retries=0)
    )
    async with client:
        return [event async for event in provider.stream(request)]


def text_of(events: list[StreamEvent], index: int) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta) and e.index == index)


@pytest.mark.parametrize("chunks", [None, 1, 7])
async def test_text_with_pings_and_utf8(chunks: int | None) -> None:
    events = await run("text_with_pings.sse", chunks=chunks)
    done = last_done(events)
    expected = "Hello, wörld — ça va? 日本語 🌍 ok."
    assert text_of(events, 0) == expected
    assert done.message == Message(role="assistant", content=[TextBlock(text=expected)])
    assert done.stop_reason == "end_turn"
    assert done.model == "claude-sonnet-4-5-20250929"
    assert done.response_id == "msg_01TextPing"
    assert (done.usage.input_tokens, done.usage.output_tokens) == (25, 15)
    assert done.usage.cost_usd is not None and done.usage.cost_usd > 0


async def test_tool_without_arguments_gets_empty_object() -> None:
    events = await run("tool_no_args.sse")
    done = last_done(events)
    starts = [e for e in events if isinstance(e, ToolCallStart)]
    ends = [e for e in events if isinstance(e, ToolCallEnd)]
    assert starts == [ToolCallStart(index=1, id="toolu_01NoArgsAbCdEf", name="get_time")]
    assert ends == [ToolCallEnd(index=1, id="toolu_01NoArgsAbCdEf", name="get_time", input={})]
    # The empty first fragment is not worth an event.
    assert not [e for e in events if isinstance(e, ToolCallDelta)]
    assert done.stop_reason == "tool_use"
    assert done.message.content == [
        TextBlock(text="Let me check the time."),
        ToolUseBlock(id="toolu_01NoArgsAbCdEf", name="get_time", input={}),
    ]


async def test_thinking_keeps_its_signature_and_provider() -> None:
    events = await run("thinking_signature.sse", chunks=5)
    done = last_done(events)
    thinking = "".join(e.thinking for e in events if isinstance(e, ThinkingDelta))
    assert thinking == "The user asks 27 * 453. 27 * 453 = 12231."
    assert done.message.content == [
        ThinkingBlock(thinking=thinking, signature=SIG, provider="anthropic"),
        TextBlock(text="27 × 453 = **12,231**."),
    ]
    # Replayed to Anthropic as received (no provider field on the wire).
    wire = convert_messages([done.message])
    assert wire[0]["content"][0] == {"type": "thinking", "thinking": thinking, "signature": SIG}


async def test_redacted_thinking_is_kept_verbatim() -> None:
    done = last_done(await run("redacted_thinking.sse"))
    blocks = done.message.content
    assert isinstance(blocks[0], RedactedThinkingBlock)
    assert blocks[0].data.startswith("EmwKAhgBEgy3va3pzix") and blocks[0].data.endswith("AA==")
    assert isinstance(blocks[1], ThinkingBlock) and blocks[1].signature == SIG[::-1]
    assert blocks[2] == TextBlock(text="Here is the answer.")
    assert convert_messages([done.message])[0]["content"][0] == {
        "type": "redacted_thinking",
        "data": blocks[0].data,
    }


async def test_message_delta_usage_overwrites_and_includes_cache() -> None:
    done = last_done(await run("message_delta_input_tokens.sse"))
    usage = done.usage
    # message_start said 43 input; the (cumulative) message_delta says 61 plus cache.
    assert usage.cache_read_tokens == 4096
    assert usage.cache_write_tokens == 2048
    assert usage.input_tokens == 61 + 4096 + 2048
    assert usage.uncached_input_tokens == 61
    # Two message_deltas (9 then 12 output tokens): the last one wins, never the sum.
    assert usage.output_tokens == 12
    assert usage == with_cost("anthropic", "claude-sonnet-4-5-20250929", usage)


async def test_multi_tool_call_events_and_message() -> None:
    events = await run("multi_tool.sse", chunks=3)
    done = last_done(events)
    ends = [e for e in events if isinstance(e, ToolCallEnd)]
    assert [(e.index, e.id, e.input) for e in ends] == [
        (2, "toolu_01ReadA", {"path": "src/a.py", "limit": 200}),
        (3, "toolu_01ReadB", {"path": "src/b/über.py", "nested": {"a": [1, 2.5, True, None]}}),
    ]
    fragments = "".join(
        e.partial_json for e in events if isinstance(e, ToolCallDelta) and e.index == 2
    )
    assert json.loads(fragments) == ends[0].input
    # Each call starts before its fragments and ends after them.
    for end in ends:
        kinds = [
            type(e).__name__
            for e in events
            if isinstance(e, ToolCallStart | ToolCallDelta | ToolCallEnd) and e.index == end.index
        ]
        assert kinds[0] == "ToolCallStart" and kinds[-1] == "ToolCallEnd"
        assert set(kinds[1:-1]) <= {"ToolCallDelta"}
    assert done.stop_reason == "tool_use"
    assert [type(b).__name__ for b in done.message.content] == [
        "ThinkingBlock",
        "TextBlock",
        "ToolUseBlock",
        "ToolUseBlock",
    ]
    assert done.message.tool_use_ids() == ["toolu_01ReadA", "toolu_01ReadB"]
    usage = done.usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (
        3 + 15000 + 1200,
        15000,
        1200,
    )
    assert usage.output_tokens == 96


@pytest.mark.parametrize(
    "name", ["tool_json_cut_max_tokens.sse", "tool_json_cut_with_block_stop.sse"]
)
async def test_tool_json_cut_at_max_tokens_is_not_a_call(name: str) -> None:
    events = await run(name)
    done = last_done(events)
    assert done.stop_reason == "max_tokens"
    # The call started (the UI may have shown it) but never completed: no end event,
    # and the final message does not ask for it.
    assert [e for e in events if isinstance(e, ToolCallStart)]
    assert not [e for e in events if isinstance(e, ToolCallEnd)]
    assert not [b for b in done.message.content if isinstance(b, ToolUseBlock)]
    if name == "tool_json_cut_max_tokens.sse":
        assert done.message.content == [TextBlock(text="I'll write the file.")]
    else:
        assert done.message.content == []


async def test_error_mid_stream_is_typed_and_keeps_the_partial_text() -> None:
    capture: list[httpx.Request] = []
    events = await run(
        "error_mid_stream.sse",
        capture=capture,
        retry=RetryPolicy(sleep=_no_sleep, max_retries=3),
    )
    error = events[-1]
    assert isinstance(error, ErrorEvent)
    assert isinstance(error.error, OverloadedError)
    assert error.error.error_type == "overloaded_error"
    assert error.error.message == "Overloaded"
    assert error.message == Message(
        role="assistant", content=[TextBlock(text="Partial answer bef")]
    )
    assert error.usage.input_tokens == 30
    # Text had streamed: a retry would show it twice, so there is none.
    assert len(capture) == 1


async def test_error_before_any_content_is_retried() -> None:
    capture: list[httpx.Request] = []
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    events = await run(
        "error_before_content.sse",
        capture=capture,
        retry=RetryPolicy(sleep=sleep, random=lambda: 0.0, max_retries=2),
    )
    error = events[-1]
    assert isinstance(error, ErrorEvent) and isinstance(error.error, RateLimitError)
    assert error.message is None
    assert len(capture) == 3 and len(sleeps) == 2
    assert len([e for e in events if isinstance(e, ErrorEvent)]) == 1


async def test_complete_raises_the_typed_error() -> None:
    client = mock_client(fixture_bytes("anthropic", "error_mid_stream.sse"))
    provider = AnthropicProvider(api_key="k" * 10, client=client, retry=RetryPolicy(max_retries=0))
    async with client:
        with pytest.raises(OverloadedError):
            await provider.complete(HELLO)


@pytest.mark.parametrize(
    ("name", "stop_reason"),
    [
        ("refusal.sse", "refusal"),
        ("stop_sequence.sse", "stop_sequence"),
        ("unknown_events.sse", "end_turn"),  # pause_turn
    ],
)
async def test_stop_reasons(name: str, stop_reason: str) -> None:
    assert last_done(await run(name)).stop_reason == stop_reason


async def test_unknown_events_and_deltas_are_ignored() -> None:
    events = await run("unknown_events.sse")
    done = last_done(events)
    # The text in content_block_start counts; the citations delta does not.
    assert text_of(events, 0) == "Hi there"
    assert done.message.content == [TextBlock(text="Hi there")]


async def test_stream_cut_before_the_end_is_a_network_error() -> None:
    body = fixture_bytes("anthropic", "text_with_pings.sse")
    cut = body[: body.index(b"event: content_block_stop")]
    client = mock_client(cut)
    provider = AnthropicProvider(api_key="k" * 10, client=client, retry=RetryPolicy(max_retries=0))
    async with client:
        events = [e async for e in provider.stream(HELLO)]
    error = events[-1]
    assert isinstance(error, ErrorEvent) and isinstance(error.error, NetworkError)
    assert error.message is not None
    assert error.message.content == [TextBlock(text=text_of(events, 0))]


async def test_request_line_and_headers() -> None:
    capture: list[httpx.Request] = []
    await run("text_with_pings.sse", capture=capture)
    (request,) = capture
    assert request.method == "POST"
    assert str(request.url) == "https://api.anthropic.com/v1/messages"
    assert request.headers["x-api-key"] == "sk-ant-test"
    assert request.headers["anthropic-version"] == API_VERSION == "2023-06-01"
    assert request.headers["content-type"] == "application/json"
    assert "authorization" not in request.headers
    body = json.loads(request.content)
    assert body["stream"] is True and body["model"] == "claude-sonnet-4-5"


async def test_over_a_real_socket_with_slow_chunks() -> None:
    seen: list[dict[str, Any]] = []
    body = fixture_bytes("anthropic", "multi_tool.sse")

    async def messages(request: Request) -> StreamingResponse:
        raw = await request.body()
        seen.append({"headers": dict(request.headers), "body": json.loads(raw), "raw": raw})

        async def chunks() -> Any:
            for i in range(0, len(body), 97):
                yield body[i : i + 97]
                await anyio.sleep(0)

        return StreamingResponse(chunks(), media_type="text/event-stream")

    app = Starlette(routes=[Route("/v1/messages", messages, methods=["POST"])])
    async with serve_asgi(app) as base_url:
        provider = AnthropicProvider(api_key="sk-ant-socket", base_url=base_url)
        async with provider:
            done = await provider.complete(HELLO)
    assert done.message.tool_use_ids() == ["toolu_01ReadA", "toolu_01ReadB"]
    assert seen[0]["headers"]["x-api-key"] == "sk-ant-socket"
    assert seen[0]["body"]["messages"][0]["content"][0]["text"] == "hi"
    # The body is sent as a stream (so httpx does not keep it) of the length said.
    assert seen[0]["headers"]["content-length"] == str(len(seen[0]["raw"]))
    assert "transfer-encoding" not in seen[0]["headers"]


async def _no_sleep(_seconds: float) -> None:
    return None


# --- request building ----------------------------------------------------------------

TOOLS = [
    ToolSpec(name="read", description="Read a file", input_schema={"type": "object"}),
    ToolSpec(name="bash", description="Run a command", input_schema={"type": "object"}),
]


def user(*blocks: Any) -> Message:
    return Message(role="user", content=list(blocks))


def assistant(*blocks: Any) -> Message:
    return Message(role="assistant", content=list(blocks))


def cache_marks(body: dict[str, Any]) -> list[str]:
    """Where the cache breakpoints are."""
    marks = []
    if isinstance(body.get("system"), list):
        marks += ["system" for b in body["system"] if "cache_control" in b]
    marks += [f"tool:{t['name']}" for t in body.get("tools", []) if "cache_control" in t]
    for i, message in enumerate(body["messages"]):
        for j, block in enumerate(message["content"]):
            if "cache_control" in block:
                marks.append(f"message:{i}:{j}")
    return marks


def test_system_tools_and_cache_breakpoints() -> None:
    request = LLMRequest(
        model="claude-sonnet-4-5",
        system="You are Tron.",
        tools=TOOLS,
        messages=[
            user(TextBlock(text="list files")),
            assistant(ToolUseBlock(id="toolu_1", name="bash", input={"command": "ls"})),
            user(ToolResultBlock(tool_use_id="toolu_1", content="a.txt"), TextBlock(text="and?")),
            assistant(TextBlock(text="One file.")),
        ],
        stop_sequences=["STOP"],
        temperature=0.2,
    )
    body = build_body(request)
    assert body["system"] == [
        {"type": "text", "text": "You are Tron.", "cache_control": {"type": "ephemeral"}}
    ]
    assert "system" not in [m["role"] for m in body["messages"]]
    assert body["tools"][0] == {
        "name": "read",
        "description": "Read a file",
        "input_schema": {"type": "object"},
    }
    # System, the last tool, the last block of the last user message.
    assert cache_marks(body) == ["system", "tool:bash", "message:2:1"]
    assert body["stop_sequences"] == ["STOP"]
    assert body["temperature"] == 0.2
    assert body["max_tokens"] == 8192
    assert "thinking" not in body

    plain = build_body(request.model_copy(update={"prompt_caching": False}))
    assert plain["system"] == "You are Tron."
    assert cache_marks(plain) == []


@pytest.mark.parametrize(
    ("level", "budget"), [("low", 2048), ("medium", 8192), ("high", 16384), ("xhigh", 32000)]
)
def test_thinking_budgets(level: Any, budget: int) -> None:
    request = LLMRequest(
        model="claude-sonnet-4-5",
        messages=[user(TextBlock(text="hi"))],
        reasoning=level,
        temperature=0.7,
        max_tokens=4096,
    )
    body = build_body(request)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert body["max_tokens"] == 4096 + budget
    # The API refuses a temperature with thinking on.
    assert "temperature" not in body


def test_thinking_budget_fits_the_models_output_limit() -> None:
    # Opus 4.1 writes at most 32,000 tokens.
    max_tokens, budget = thinking_budget("claude-opus-4-1", 8192, "xhigh")
    assert max_tokens == 32000 and budget < max_tokens and max_tokens - budget >= 8192
    # A huge request still leaves half for the answer.
    max_tokens, budget = thinking_budget("claude-opus-4-1", 100_000, "high")
    assert (max_tokens, budget) == (32000, 16000)
    # Unknown models are not capped.
    assert thinking_budget("claude-next", 1000, "low") == (3048, 2048)
    # The API minimum budget, and budget < max_tokens always.
    levels: list[ReasoningLevel] = ["low", "medium", "high", "xhigh"]
    for level in levels:
        for limit in (1, 500, 2000, 64000):
            total, b = thinking_budget("claude-sonnet-4-5", limit, level)
            assert 1024 <= b < total <= 64000


def test_foreign_and_unsigned_thinking_become_text() -> None:
    history = [
        user(TextBlock(text="q")),
        assistant(
            ThinkingBlock(thinking="openai thoughts", signature="enc", provider="openai"),
            ThinkingBlock(thinking="gemini thoughts", signature="sig", provider="google"),
            ThinkingBlock(thinking="unsigned", signature=None),
            ThinkingBlock(thinking="mine", signature="s1", provider="anthropic"),
            ThinkingBlock(thinking="legacy", signature="s2"),  # provider None: Anthropic
            ThinkingBlock(thinking="  ", provider="openai"),  # nothing to say: dropped
            TextBlock(text="answer", signature="gemini-sig"),
        ),
    ]
    (_, reply) = convert_messages(history)
    assert reply["content"] == [
        {"type": "text", "text": "openai thoughts"},
        {"type": "text", "text": "gemini thoughts"},
        {"type": "text", "text": "unsigned"},
        {"type": "thinking", "thinking": "mine", "signature": "s1"},
        {"type": "thinking", "thinking": "legacy", "signature": "s2"},
        {"type": "text", "text": "answer"},
    ]


def test_empty_text_dropped_and_empty_messages_skipped() -> None:
    history = [
        user(TextBlock(text="first")),
        assistant(TextBlock(text=""), TextBlock(text=" \n")),  # nothing left: skipped
        user(TextBlock(text="second"), TextBlock(text="")),
    ]
    assert convert_messages(history) == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}],
        }
    ]


def test_tool_results_merge_into_one_user_message_first() -> None:
    history = [
        user(TextBlock(text="go")),
        assistant(
            ToolUseBlock(id="functions.Bash:0", name="bash", input={}, signature="g"),
            ToolUseBlock(id="call|2", name="read", input={"p": 1}),
        ),
        user(ToolResultBlock(tool_use_id="functions.Bash:0", content="ok")),
        user(TextBlock(text="also this"), ToolResultBlock(tool_use_id="call|2", content="")),
    ]
    wire = convert_messages(history)
    assert [m["role"] for m in wire] == ["user", "assistant", "user"]
    calls = wire[1]["content"]
    results = wire[2]["content"]
    assert [b["type"] for b in results] == ["tool_result", "tool_result", "text"]
    # Ids every provider accepts, the same on both sides, never the Gemini signature.
    assert [c["id"] for c in calls] == [r["tool_use_id"] for r in results[:2]]
    for call in calls:
        assert set(call) == {"type", "id", "name", "input"}
        assert all(ch.isalnum() or ch in "_-" for ch in call["id"])
    assert results[0]["content"] == "ok"
    assert "content" not in results[1]  # an empty result has no empty text


def test_tool_result_parts_and_images() -> None:
    image = ImageBlock(source=Base64ImageSource(media_type="image/png", data="iVBORw0KGgo="))
    history = [
        user(TextBlock(text="look"), image),
        assistant(ToolUseBlock(id="t1", name="screenshot", input={})),
        user(
            ToolResultBlock(
                tool_use_id="t1",
                content=[TextBlock(text=""), TextBlock(text="shot"), image],
                is_error=True,
            )
        ),
    ]
    wire = convert_messages(history)
    assert wire[0]["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
    }
    result = wire[2]["content"][0]
    assert result["is_error"] is True
    assert [p["type"] for p in result["content"]] == ["text", "image"]


def test_thinking_off_when_the_tool_loop_started_without_it() -> None:
    call = ToolUseBlock(id="t1", name="bash", input={})
    result = user(ToolResultBlock(tool_use_id="t1", content="ok"))
    # The calls came from another provider (its thinking turned into text) or with
    # thinking off: the API would demand a signed thinking block first.
    foreign = [
        user(TextBlock(text="go")),
        assistant(ThinkingBlock(thinking="hm", signature="x", provider="openai"), call),
        result,
    ]
    request = LLMRequest(
        model="claude-sonnet-4-5", messages=foreign, reasoning="high", max_tokens=1000
    )
    body = build_body(request)
    assert "thinking" not in body and body["max_tokens"] == 1000
    # Signed Anthropic thinking first: thinking stays on.
    own = [
        user(TextBlock(text="go")),
        assistant(ThinkingBlock(thinking="hm", signature="s"), call),
        result,
    ]
    assert (
        build_body(request.model_copy(update={"messages": own}))["thinking"]["budget_tokens"]
        == 16384
    )
    # A fresh user prompt after the loop: thinking on again.
    fresh = [*foreign, assistant(TextBlock(text="done")), user(TextBlock(text="next"))]
    assert "thinking" in build_body(request.model_copy(update={"messages": fresh}))


# --- what the recorded streams taught (tests/llm/test_recorded_streams.py) --------------

MODELED = {"text", "thinking", "redacted_thinking", "tool_use"}
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


def frames(*events: dict[str, Any]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def parse(body: bytes) -> Any:
    parser = AnthropicStreamParser("claude-sonnet-4-5")
    decoder = SSEDecoder()
    for event in [*decoder.feed(body), *decoder.flush()]:
        parser.feed(event)
    return parser.finish()


def block_events(
    index: int, start: dict[str, Any], *deltas: dict[str, Any]
) -> list[dict[str, Any]]:
    return [
        {"type": "content_block_start", "index": index, "content_block": start},
        *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
        {"type": "content_block_stop", "index": index},
    ]


MESSAGE_START = {
    "type": "message_start",
    "message": {"id": "msg_1", "model": "claude-sonnet-4-5", "usage": {"input_tokens": 5}},
}


@given(
    kind=st.from_regex(r"[a-z][a-z_]{1,24}", fullmatch=True).filter(lambda k: k not in MODELED),
    fields=st.dictionaries(st.from_regex(r"[a-z_]{1,8}", fullmatch=True), json_values, max_size=3),
    arguments=st.dictionaries(st.text(max_size=5), json_values, max_size=3),
    cuts=st.lists(st.integers(0, 200), max_size=4),
    update=st.dictionaries(
        st.from_regex(r"[a-z_]{1,8}", fullmatch=True).filter(lambda k: k != "type"),
        json_values,
        max_size=2,
    ),
)
@settings(max_examples=50)
def test_blocks_we_do_not_model_are_kept_as_sent_and_go_back_in_place(
    kind: str,
    fields: dict[str, Any],
    arguments: dict[str, Any],
    cuts: list[int],
    update: dict[str, Any],
) -> None:
    # Server tool calls and results, MCP blocks, compaction, and whatever comes next:
    # the block as it started, its streamed JSON input parsed, other deltas' fields
    # applied; then replayed to Anthropic in its place (a pause_turn continuation and a
    # compacted history need them), and to no one else.
    start = {**fields, "type": kind, "input": {}}
    raw = json.dumps(arguments)
    points = sorted({c % (len(raw) + 1) for c in cuts})
    pieces = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]
    deltas: list[dict[str, Any]] = [{"type": "input_json_delta", "partial_json": p} for p in pieces]
    deltas.append({"type": f"{kind}_delta", **update})
    done = parse(
        frames(
            MESSAGE_START,
            *block_events(0, {"type": "text", "text": "Let me look."}),
            *block_events(1, start, *deltas),
            *block_events(2, {"type": "text", "text": "Found it."}),
            {
                "type": "message_delta",
                "delta": {"stop_reason": "pause_turn"},
                "usage": {"output_tokens": 9},
            },
            {"type": "message_stop"},
        )
    )
    kept = NativeBlock(provider="anthropic", data={**start, **update, "input": arguments})
    assert done.message.content == [
        TextBlock(text="Let me look."),
        kept,
        TextBlock(text="Found it."),
    ]
    assert done.stop_reason == "end_turn"
    sent = convert_messages(
        [user(TextBlock(text="q")), done.message, user(TextBlock(text="go on"))]
    )
    assert sent[1]["content"] == [
        {"type": "text", "text": "Let me look."},
        kept.data,
        {"type": "text", "text": "Found it."},
    ]
    foreign = kept.model_copy(update={"provider": "google"})
    sent = convert_messages([user(TextBlock(text="q")), assistant(foreign, TextBlock(text="x"))])
    assert sent[1]["content"] == [{"type": "text", "text": "x"}]


def test_a_server_tool_call_cut_off_is_not_kept() -> None:
    start = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    done = parse(
        frames(
            MESSAGE_START,
            {"type": "content_block_start", "index": 0, "content_block": start},
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": '{"query": "wea'},
            },
            {
                "type": "message_delta",
                "delta": {"stop_reason": "max_tokens"},
                "usage": {"output_tokens": 9},
            },
            {"type": "message_stop"},
        )
    )
    assert done.message.content == []
    assert done.stop_reason == "max_tokens"


@pytest.mark.parametrize("where", ["message_start", "message_delta"])
def test_thinking_tokens_are_the_reasoning_tokens(where: str) -> None:
    details = {"output_tokens_details": {"thinking_tokens": 53}}
    start = {**MESSAGE_START, "message": {**MESSAGE_START["message"], "usage": {"input_tokens": 5}}}
    if where == "message_start":
        start["message"]["usage"] |= details
    delta: dict[str, Any] = {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn"},
        "usage": {"output_tokens": 92},
    }
    if where == "message_delta":
        delta["usage"] |= details
    done = parse(frames(start, *block_events(0, {"type": "text", "text": "ok"}), delta))
    assert (done.usage.output_tokens, done.usage.reasoning_tokens) == (92, 53)
