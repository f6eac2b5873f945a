"""The Responses adapter against hand-written streams in the exact wire format
(fixtures/openai_responses/*.sse), then its request body and input items."""

from __future__ import annotations

import json
import random
from typing import Any

import httpx
import pytest
from hypothesis import example, given, settings
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
)
from tron_llm import (
    ContextLengthExceededError,
    InvalidRequestError,
    LLMRequest,
    NetworkError,
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
from tron_llm.openai_responses import (
    OpenAIResponsesProvider,
    ResponsesStreamParser,
    is_reasoning_model,
    to_input_items,
)

pytestmark = pytest.mark.anyio

ENC = (
    "gAAAAABoZk3x9QmT2vL8pW_rN0aYc1dE4fG7hJ-kL5mN6oP8qR9sT0uV1wX2yZ3a"
    "B4cD5eF6gH7iJ8kL9mN0oP1qR2sT3uV4wX5yZ6=="
)
SUMMARY = "**Checking the weather**\n\nThe user asks about Paris.\n\nI should call get_weather."


def request(**kw: Any) -> LLMRequest:
    base: dict[str, Any] = {
        "model": "gpt-5",
        "messages": [Message(role="user", content=[TextBlock(text="Weather in Paris?")])],
    }
    base.update(kw)
    return LLMRequest(**base)


async def run(
    body: bytes | list[bytes],
    *,
    status: int = 200,
    capture: list[httpx.Request] | None = None,
    retry: RetryPolicy | None = None,
    base_url: str | None = None,
    **kw: Any,
) -> list[StreamEvent]:
    client = mock_client(body, status=status, capture=capture)
    provider = OpenAIResponsesProvider(
        api_key="sk-test-key-123456",
        client=client,
        base_url=base_url,
        retry=retry or RetryPolicy(max_retries=0),
    )
    try:
        return [event async for event in provider.stream(request(**kw))]
    finally:
        await client.aclose()


def sse(*events: dict[str, Any]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


# --- streams ------------------------------------------------------------------------


async def test_reasoning_and_function_call() -> None:
    events = await run(fixture_bytes("openai_responses", "reasoning_tool_call.sse"))
    result = last_done(events)
    thinking = [e for e in events if isinstance(e, ThinkingDelta)]
    assert "".join(e.thinking for e in thinking) == SUMMARY
    assert {e.index for e in thinking} == {0}
    start = next(e for e in events if isinstance(e, ToolCallStart))
    # Deltas name the item (fc_…); everything we emit uses the call id.
    assert (start.index, start.id, start.name) == (1, "call_Xy12AbC34dEf", "get_weather")
    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert {e.id for e in deltas} == {"call_Xy12AbC34dEf"}
    assert "".join(e.partial_json for e in deltas) == '{"city":"Paris","units":"c"}'
    end = next(e for e in events if isinstance(e, ToolCallEnd))
    assert (end.id, end.input) == ("call_Xy12AbC34dEf", {"city": "Paris", "units": "c"})
    assert result.message.content == [
        ThinkingBlock(
            thinking=SUMMARY, signature=ENC, provider="openai", item_id="rs_68a1b2c3d4e5f607aa"
        ),
        ToolUseBlock(
            id="call_Xy12AbC34dEf", name="get_weather", input={"city": "Paris", "units": "c"}
        ),
    ]
    assert result.stop_reason == "tool_use"
    assert result.response_id == "resp_68a1b2c3d4e5f60718293a4b5c6d7e8f"
    assert result.model == "gpt-5-2025-08-07"
    expected = Usage(
        input_tokens=2000, cache_read_tokens=1536, output_tokens=300, reasoning_tokens=192
    )
    assert result.usage == with_cost("openai", "gpt-5-2025-08-07", expected)
    assert result.usage.cost_usd is not None


async def test_encrypted_reasoning_is_replayed_on_the_next_request() -> None:
    first = last_done(await run(fixture_bytes("openai_responses", "reasoning_tool_call.sse")))
    # What the store keeps and reconstruction gives back: the block payloads.
    stored = Message.model_validate({"role": "assistant", "content": first.message.to_payload()})
    history = [
        Message(role="user", content=[TextBlock(text="Weather in Paris?")]),
        stored,
        Message(
            role="user",
            content=[ToolResultBlock(tool_use_id="call_Xy12AbC34dEf", content="18°C, sunny")],
        ),
    ]
    capture: list[httpx.Request] = []
    await run(fixture_bytes("openai_responses", "text.sse"), capture=capture, messages=history)
    sent = json.loads(capture[0].content)
    assert sent["input"] == [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "Weather in Paris?"}],
        },
        {
            "type": "reasoning",
            "id": "rs_68a1b2c3d4e5f607aa",
            "summary": [{"type": "summary_text", "text": SUMMARY}],
            "encrypted_content": ENC,
        },
        {
            "type": "function_call",
            "call_id": "call_Xy12AbC34dEf",
            "name": "get_weather",
            "arguments": '{"city": "Paris", "units": "c"}',
        },
        {"type": "function_call_output", "call_id": "call_Xy12AbC34dEf", "output": "18°C, sunny"},
    ]
    assert sent["include"] == ["reasoning.encrypted_content"] and sent["store"] is False


async def test_text() -> None:
    events = await run(fixture_bytes("openai_responses", "text.sse"), model="gpt-4.1")
    result = last_done(events)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Bonjour — ça va? 🙂"
    assert result.message.content == [TextBlock(text="Bonjour — ça va? 🙂")]
    assert result.stop_reason == "end_turn"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (42, 9)


async def test_incomplete_is_max_tokens() -> None:
    events = await run(fixture_bytes("openai_responses", "incomplete.sse"))
    result = last_done(events)
    assert result.stop_reason == "max_tokens"
    assert result.message.content == [TextBlock(text="The first three")]
    assert result.usage.output_tokens == 16 and result.usage.reasoning_tokens == 12


async def test_failed_is_a_typed_error() -> None:
    error = last_error(await run(fixture_bytes("openai_responses", "failed.sse")))
    assert isinstance(error.error, ServerError) and error.error.retryable
    assert error.error.error_type == "server_error"
    assert "retry your request" in error.error.message


async def test_flat_error_event() -> None:
    error = last_error(await run(fixture_bytes("openai_responses", "error_flat.sse"))).error
    assert isinstance(error, RateLimitError)
    assert error.error_type == "rate_limit_exceeded"
    assert error.message.startswith("Rate limit reached for gpt-5")


async def test_nested_error_event() -> None:
    error = last_error(await run(fixture_bytes("openai_responses", "error_nested.sse"))).error
    assert isinstance(error, OverloadedError)
    assert error.error_type == "server_is_overloaded"
    assert "overloaded" in error.message


async def test_error_before_output_is_retried(sleeps: list[float], fake_retry: RetryPolicy) -> None:
    bodies = [
        fixture_bytes("openai_responses", "error_nested.sse"),
        fixture_bytes("openai_responses", "text.sse"),
    ]

    async def handler(_request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=bodies.pop(0))

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    provider = OpenAIResponsesProvider(api_key="k", client=client, retry=fake_retry)
    result = await provider.complete(request())
    assert result.message.content == [TextBlock(text="Bonjour — ça va? 🙂")]
    assert len(sleeps) == 1
    await client.aclose()


async def test_error_after_text_keeps_the_partial_message() -> None:
    raw = fixture_bytes("openai_responses", "text.sse").split(b"\n\n")
    error = {"type": "error", "code": "server_error", "message": "boom", "param": None}
    body = b"\n\n".join(raw[:6]) + b"\n\n" + sse(error)
    event = last_error(await run(body))
    assert isinstance(event.error, ServerError)
    assert event.message == Message(
        role="assistant", content=[TextBlock(text="Bonjour — ça va? 🙂")]
    )


async def test_stream_without_terminal_event_is_a_network_error() -> None:
    raw = fixture_bytes("openai_responses", "reasoning_tool_call.sse").split(b"\n\n")
    event = last_error(await run(b"\n\n".join(raw[:16]) + b"\n\n"))
    assert isinstance(event.error, NetworkError)
    # The reasoning finished; the half-streamed call is left out.
    assert event.message is not None
    assert [b.type for b in event.message.content] == ["thinking"]


async def test_items_without_added_events_and_summary_only_on_done() -> None:
    """A lenient server: no output_item.added, summary and text only in the done items."""
    body = sse(
        {"type": "response.created", "response": {"id": "r1", "model": "gpt-oss-20b"}},
        {
            "type": "response.output_item.done",
            "item": {
                "id": "rs_1",
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "hmm"}],
                "encrypted_content": None,
            },
        },
        {
            "type": "response.output_item.done",
            "item": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "hi", "annotations": []}],
            },
        },
        {
            "type": "response.output_item.done",
            "item": {
                "id": "fc_1",
                "type": "function_call",
                "call_id": "c1",
                "name": "f",
                "arguments": "",
            },
        },
        {"type": "response.completed", "response": {"id": "r1", "usage": None}},
    )
    events = await run(body, base_url="http://127.0.0.1:8000/v1")
    result = last_done(events)
    assert result.message.content == [
        ThinkingBlock(thinking="hmm", provider="openai", item_id="rs_1"),
        TextBlock(text="hi"),
        ToolUseBlock(id="c1", name="f", input={}),
    ]
    assert [type(e).__name__ for e in events[:-1]] == [
        "ThinkingDelta",
        "TextDelta",
        "ToolCallStart",
        "ToolCallEnd",
    ]
    assert result.usage == Usage()  # and no price off OpenAI


async def test_refusal_and_content_filter() -> None:
    refusal = sse(
        {"type": "response.output_item.added", "item": {"id": "m", "type": "message"}},
        {"type": "response.refusal.delta", "item_id": "m", "delta": "No."},
        {"type": "response.completed", "response": {"id": "r"}},
    )
    result = last_done(await run(refusal))
    assert result.stop_reason == "refusal" and result.message.content == [TextBlock(text="No.")]
    filtered = sse(
        {
            "type": "response.incomplete",
            "response": {"id": "r", "incomplete_details": {"reason": "content_filter"}},
        }
    )
    assert last_done(await run(filtered)).stop_reason == "refusal"


async def test_rechunked_at_random_offsets_gives_the_same_events() -> None:
    for name in ("reasoning_tool_call.sse", "text.sse", "incomplete.sse"):
        raw = fixture_bytes("openai_responses", name)
        whole = await run(raw)
        rng = random.Random(name)
        for _ in range(5):
            cuts = sorted(rng.sample(range(1, len(raw)), 40))
            chunks = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
            assert await run(chunks) == whole


async def test_served_over_a_real_socket() -> None:
    seen: list[dict[str, Any]] = []
    raw = fixture_bytes("openai_responses", "reasoning_tool_call.sse")

    async def responses(req: Request) -> StreamingResponse:
        seen.append(await req.json())

        async def body() -> Any:
            for start in range(0, len(raw), 101):
                yield raw[start : start + 101]

        return StreamingResponse(body(), media_type="text/event-stream")

    app = Starlette(routes=[Route("/v1/responses", responses, methods=["POST"])])
    async with serve_asgi(app) as base_url:
        provider = OpenAIResponsesProvider(base_url=base_url + "/v1")
        try:
            result = await provider.complete(request(system="Be brief."))
        finally:
            await provider.aclose()
    assert result.stop_reason == "tool_use"
    assert seen[0]["instructions"] == "Be brief." and seen[0]["stream"] is True


# --- the request --------------------------------------------------------------------


def body_of(req: LLMRequest) -> dict[str, Any]:
    return OpenAIResponsesProvider(api_key="k").build_body(req)


def test_request_body() -> None:
    body = body_of(
        request(
            system="Be brief.",
            reasoning="xhigh",
            max_tokens=2000,
            temperature=0.5,
            stop_sequences=["END"],
            tools=[ToolSpec(name="read", description="Read", input_schema={"type": "object"})],
        )
    )
    assert body == {
        "model": "gpt-5",
        "input": [
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Weather in Paris?"}],
            }
        ],
        "stream": True,
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "max_output_tokens": 2000,
        "instructions": "Be brief.",
        "temperature": 0.5,
        "reasoning": {"effort": "high", "summary": "auto"},
        "tools": [
            {
                "type": "function",
                "name": "read",
                "description": "Read",
                "parameters": {"type": "object"},
                "strict": False,
            }
        ],
    }
    assert body_of(request(model="gpt-5.2", reasoning="xhigh"))["reasoning"]["effort"] == "xhigh"


def test_non_reasoning_models_do_not_ask_for_encrypted_content() -> None:
    body = body_of(request(model="gpt-4.1"))
    assert "include" not in body and "reasoning" not in body
    assert [
        is_reasoning_model(m)
        for m in ("o3", "o4-mini", "gpt-5-mini", "gpt-5-chat-latest", "gpt-4o", "codex-mini-latest")
    ] == [True, True, True, False, False, True]


def test_input_items() -> None:
    png = Base64ImageSource(media_type="image/png", data="iVBORw0KGgo=")
    long_id = "toolu_01:" + "z" * 50
    history = [
        Message(role="user", content=[TextBlock(text="look"), ImageBlock(source=png)]),
        Message(
            role="assistant",
            content=[
                ThinkingBlock(thinking="claude thinks", signature="anthropic-sig"),
                RedactedThinkingBlock(data="opaque"),
                ThinkingBlock(thinking="unreplayable", provider="openai", item_id="rs_x"),
                ThinkingBlock(thinking="gemini thinks", signature="c2ln", provider="google"),
                TextBlock(text="Let me see."),
                ToolUseBlock(id=long_id, name="shot", input={"n": 1}),
            ],
        ),
        Message(
            role="user",
            content=[
                ToolResultBlock(
                    tool_use_id=long_id,
                    content=[TextBlock(text="here"), ImageBlock(source=png)],
                ),
                TextBlock(text="well?"),
            ],
        ),
        Message(
            role="assistant",
            content=[
                ThinkingBlock(thinking="", signature="enc", provider="openai", item_id="rs_y"),
                TextBlock(text="A cat."),
            ],
        ),
    ]
    safe = safe_tool_id(long_id)
    assert body_of(request(messages=history))["input"] == [
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "look"},
                {
                    "type": "input_image",
                    "image_url": "data:image/png;base64,iVBORw0KGgo=",
                    "detail": "auto",
                },
            ],
        },
        {
            "type": "message",
            "role": "assistant",
            "content": "claude thinks\n\ngemini thinks\n\nLet me see.",
        },
        {"type": "function_call", "call_id": safe, "name": "shot", "arguments": '{"n": 1}'},
        {
            "type": "function_call_output",
            "call_id": safe,
            "output": [
                {"type": "input_text", "text": "here"},
                {
                    "type": "input_image",
                    "image_url": "data:image/png;base64,iVBORw0KGgo=",
                    "detail": "auto",
                },
            ],
        },
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "well?"}]},
        {"type": "reasoning", "id": "rs_y", "summary": [], "encrypted_content": "enc"},
        {"type": "message", "role": "assistant", "content": "A cat."},
    ]
    # A model that does not reason gets no reasoning items.
    items = body_of(request(model="gpt-4.1", messages=history))["input"]
    assert all(item["type"] != "reasoning" for item in items)


def test_reasoning_that_ends_a_turn_is_not_replayed() -> None:
    """An aborted turn that only reasoned: alone, the item would be rejected."""
    history = [
        Message(role="user", content=[TextBlock(text="hi")]),
        Message(
            role="assistant",
            content=[ThinkingBlock(thinking="t", signature="enc", provider="openai", item_id="rs")],
        ),
        Message(role="user", content=[TextBlock(text="again")]),
    ]
    items = body_of(request(messages=history))["input"]
    assert [item["type"] for item in items] == ["message", "message"]


@pytest.mark.parametrize(
    ("error", "cls"),
    [
        (
            {"code": None, "message": "Your input exceeds the context window of this model."},
            ContextLengthExceededError,
        ),
        ({"code": None, "message": "Something went wrong."}, ServerError),
        ({"code": "invalid_prompt", "message": "Invalid prompt: flagged."}, InvalidRequestError),
        ({"code": "vector_store_timeout", "message": "timed out"}, ServerError),
        ({"code": "insufficient_quota", "message": "Quota."}, PermissionDeniedError),
        ({"code": 400, "message": "bad things", "type": "BadRequestError"}, InvalidRequestError),
    ],
)
async def test_failed_error_codes(error: dict[str, Any], cls: type[Exception]) -> None:
    body = sse({"type": "response.failed", "response": {"id": "r", "error": error}})
    assert type(last_error(await run(body)).error) is cls


# --- what the recorded streams taught (tests/llm/test_recorded_streams.py) --------------

KINDS = ["reasoning", "message", "function_call", "web_search_call", "compaction"]


def _item(kind: str, i: int, item_id: str, stage: str) -> dict[str, Any]:
    """Output item ``i`` of ``kind`` as the ``stage`` event (added, done, final) has it."""
    if kind == "reasoning":
        item: dict[str, Any] = {"summary": []}
        if stage != "added":
            item["summary"] = [{"type": "summary_text", "text": f"think {i}"}]
            item["encrypted_content"] = f"{stage}-{i}"  # re-encrypted for every event
    elif kind == "message":
        text = [{"type": "output_text", "text": f"text {i}", "annotations": []}]
        item = {"role": "assistant", "content": [] if stage == "added" else text}
    elif kind == "function_call":
        args = "" if stage == "added" else json.dumps({"n": i})
        item = {"call_id": f"call_{i}", "name": "f", "arguments": args}
    elif kind == "web_search_call":
        item = {"status": "in_progress" if stage == "added" else "completed"}
        if stage != "added":
            item["action"] = {"type": "search", "query": f"q{i}", "sources": None}
    else:
        item = {"encrypted_content": f"{stage}-{i}"}
    return {"id": item_id, "type": kind, **item}


def _deltas(kind: str, i: int, item_id: str) -> list[dict[str, Any]]:
    where = {"item_id": item_id, "output_index": i}
    if kind == "reasoning":
        return [
            {
                "type": "response.reasoning_summary_text.delta",
                "summary_index": 0,
                "delta": f"think {i}",
                **where,
            }
        ]
    if kind == "message":
        return [{"type": "response.output_text.delta", "delta": f"text {i}", **where}]
    if kind == "function_call":
        return [
            {
                "type": "response.function_call_arguments.delta",
                "delta": json.dumps({"n": i}),
                **where,
            }
        ]
    return []


def _block(kind: str, i: int, final: dict[str, Any]) -> Any:
    if kind == "reasoning":
        return ThinkingBlock(
            thinking=f"think {i}", signature=f"final-{i}", provider="openai", item_id=final["id"]
        )
    if kind == "message":
        return TextBlock(text=f"text {i}")
    if kind == "function_call":
        return ToolUseBlock(id=f"call_{i}", name="f", input={"n": i})
    return NativeBlock(provider="openai-responses", data=final)


@given(
    kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=5),
    renamed=st.booleans(),
    unannounced=st.sampled_from([None, *KINDS]),
)
@example(kinds=["reasoning", "compaction", "reasoning"], renamed=False, unannounced="message")
@settings(max_examples=60)
def test_the_terminal_output_is_the_final_word_on_every_item(
    kinds: list[str], renamed: bool, unannounced: str | None
) -> None:
    # The encrypted reasoning of response.completed is not the one output_item.done
    # carried; a compatible server renames its items there (OpenRouter's rs_tmp_ ids);
    # an item may appear only there. Items are matched by position; the ones we do not
    # model are kept whole; of those only compaction goes back (without its id).
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": "r"}}]
    final: list[dict[str, Any]] = []
    for i, kind in enumerate(kinds):
        item_id = f"{kind[:3]}_{i}"
        events.append(
            {
                "type": "response.output_item.added",
                "output_index": i,
                "item": _item(kind, i, item_id, "added"),
            }
        )
        events.extend(_deltas(kind, i, item_id))
        events.append(
            {
                "type": "response.output_item.done",
                "output_index": i,
                "item": _item(kind, i, item_id, "done"),
            }
        )
        final.append(_item(kind, i, f"{item_id}_final" if renamed else item_id, "final"))
    if unannounced is not None:
        final.append(_item(unannounced, len(kinds), f"late_{len(kinds)}", "final"))
    events.append({"type": "response.completed", "response": {"id": "r", "output": final}})
    parser = ResponsesStreamParser(request(), ToolIdMap())
    decoder = SSEDecoder()
    for event in [*decoder.feed(sse(*events)), *decoder.flush()]:
        parser.feed(event)
    done = parser.finish()
    every = [*kinds, *([unannounced] if unannounced else [])]
    assert done.message.content == [
        _block(kind, i, item) for i, (kind, item) in enumerate(zip(every, final, strict=True))
    ]
    items = to_input_items([done.message], ToolIdMap())
    replayed = [item for item in items if item["type"] in ("compaction", "web_search_call")]
    assert replayed == [
        {"type": "compaction", "encrypted_content": f"final-{i}"}
        for i, kind in enumerate(every)
        if kind == "compaction"
    ]
    reasoning = [item["encrypted_content"] for item in items if item["type"] == "reasoning"]
    # Reasoning goes back only before the output it led to (a message or a function call,
    # past the items that are not replayed); before a compaction or at the end it is not.
    answered: list[str] = []
    run: list[str] = []
    for i, kind in enumerate(every):
        if kind == "reasoning":
            run.append(f"final-{i}")
        elif kind in ("message", "function_call"):
            answered, run = [*answered, *run], []
        elif kind == "compaction":
            run = []
    assert reasoning == answered


def test_another_providers_native_blocks_are_not_sent() -> None:
    foreign = NativeBlock(
        provider="anthropic", data={"type": "compaction", "encrypted_content": "x"}
    )
    history = [
        *request().messages,
        Message(role="assistant", content=[foreign, TextBlock(text="ok")]),
    ]
    assert body_of(request(messages=history))["input"][1:] == [
        {"type": "message", "role": "assistant", "content": "ok"}
    ]


def test_the_phase_of_a_message_is_kept_and_resent() -> None:
    # gpt-5.x labels assistant messages commentary or final_answer, and OpenAI asks to
    # have the label resent: texts of two phases stay two messages.
    body = sse(
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"id": "m1", "type": "message", "role": "assistant", "phase": "commentary"},
        },
        {
            "type": "response.output_text.delta",
            "item_id": "m1",
            "output_index": 0,
            "delta": "Looking.",
        },
        {
            "type": "response.output_item.added",
            "output_index": 1,
            "item": {"id": "m2", "type": "message", "role": "assistant"},
        },
        {
            "type": "response.output_text.delta",
            "item_id": "m2",
            "output_index": 1,
            "delta": "Done.",
        },
        {
            "type": "response.completed",
            "response": {
                "id": "r",
                "output": [
                    {
                        "id": "m1",
                        "type": "message",
                        "role": "assistant",
                        "phase": "commentary",
                        "content": [{"type": "output_text", "text": "Looking.", "annotations": []}],
                    },
                    {
                        "id": "m2",
                        "type": "message",
                        "role": "assistant",
                        "phase": "final_answer",
                        "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
                    },
                ],
            },
        },
    )
    parser = ResponsesStreamParser(request(), ToolIdMap())
    decoder = SSEDecoder()
    for event in [*decoder.feed(body), *decoder.flush()]:
        parser.feed(event)
    message = parser.finish().message
    assert message.content == [
        TextBlock(text="Looking.", phase="commentary"),
        TextBlock(text="Done.", phase="final_answer"),
    ]
    stored = Message.model_validate({"role": "assistant", "content": message.to_payload()})
    plain = TextBlock(text="Before.")
    assert to_input_items(
        [stored.model_copy(update={"content": [plain, *stored.content]})], ToolIdMap()
    ) == [
        {"type": "message", "role": "assistant", "content": "Before."},
        {"type": "message", "role": "assistant", "content": "Looking.", "phase": "commentary"},
        {"type": "message", "role": "assistant", "content": "Done.", "phase": "final_answer"},
    ]
