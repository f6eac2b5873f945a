"""The official ``openai`` SDK (test-only, on httpx2) as an oracle for the Responses
adapter: the same bytes through ``client.responses.stream(...)`` give the same final
items, tool inputs, stop reason and usage; request bodies built from generated
histories validate against ``ResponseCreateParamsStreaming``."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from openai.types.responses.response_create_params import ResponseCreateParamsStreaming
from pydantic import TypeAdapter

from tests.llm._serve import mock_client
from tests.llm.conftest import fixture_bytes
from tests.llm.test_openai_chat_sdk import dropped_keys, json_values, materialize, requests, split
from tron_events.messages import Message, NativeBlock, TextBlock, ThinkingBlock, ToolUseBlock
from tron_llm import Done, LLMError, LLMRequest, RetryPolicy
from tron_llm.openai_responses import OpenAIResponsesProvider, is_reasoning_model

REQUEST = LLMRequest(model="gpt-5", messages=[Message(role="user", content=[TextBlock(text="hi")])])


def sdk_final(raw: bytes) -> Any:
    """The SDK's final response for ``raw``: the ``response.completed`` payload it
    parsed, or the ``response.incomplete`` one (``get_final_response`` wants the former)."""

    def handler(_request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=raw, headers={"content-type": "text/event-stream"})

    client = openai.OpenAI(
        api_key="sk-x",
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        max_retries=0,
    )
    final = None
    with client.responses.stream(model="gpt-5", input="hi") as stream:
        for event in stream:
            if event.type == "error":
                raise RuntimeError(event.message)
            if event.type in ("response.completed", "response.incomplete"):
                final = event.response
        if final is not None and final.status == "completed":
            assert stream.get_final_response() == final
    if final is None:
        raise RuntimeError("no terminal event")
    return final


async def ours(raw: bytes) -> Done:
    client = mock_client(raw)
    provider = OpenAIResponsesProvider(
        api_key="sk-x", client=client, retry=RetryPolicy(max_retries=0)
    )
    try:
        return await provider.complete(REQUEST)
    finally:
        await client.aclose()


def assert_same(done: Done, theirs: Any) -> None:
    expected: list[Any] = []
    for item in theirs.output:
        if item.type == "reasoning":
            summary = "\n\n".join(s.text for s in item.summary)
            expected.append(("reasoning", item.id, item.encrypted_content, summary))
        elif item.type == "function_call":
            expected.append(("call", item.call_id, item.name, json.loads(item.arguments or "{}")))
        elif item.type == "message":
            text = "".join(
                getattr(c, "text", None) or getattr(c, "refusal", "") for c in item.content
            )
            if text:
                expected.append(("text", text))
    got: list[Any] = []
    for block in done.message.content:
        if isinstance(block, ThinkingBlock):
            assert block.provider == "openai"
            got.append(("reasoning", block.item_id, block.signature, block.thinking))
        elif isinstance(block, ToolUseBlock):
            got.append(("call", block.id, block.name, block.input))
        elif isinstance(block, TextBlock):
            got.append(("text", block.text))
    assert got == expected
    if theirs.status == "incomplete":
        assert done.stop_reason == "max_tokens"
    else:
        has_calls = any(item.type == "function_call" for item in theirs.output)
        assert done.stop_reason == ("tool_use" if has_calls else "end_turn")
    usage = theirs.usage
    assert done.usage.input_tokens == usage.input_tokens
    assert done.usage.cache_read_tokens == usage.input_tokens_details.cached_tokens
    assert done.usage.output_tokens == usage.output_tokens
    assert done.usage.reasoning_tokens == usage.output_tokens_details.reasoning_tokens
    assert done.response_id == theirs.id and done.model == theirs.model


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["reasoning_tool_call.sse", "text.sse", "incomplete.sse"])
async def test_same_result_as_the_sdk(name: str) -> None:
    raw = fixture_bytes("openai_responses", name)
    assert_same(await ours(raw), sdk_final(raw))


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["failed.sse", "error_flat.sse", "error_nested.sse"])
async def test_both_fail(name: str) -> None:
    raw = fixture_bytes("openai_responses", name)
    with pytest.raises((openai.APIError, RuntimeError)):
        sdk_final(raw)
    with pytest.raises(LLMError):
        await ours(raw)


# --- generated streams ----------------------------------------------------------------


def response(status: str, output: list[Any], usage: Any, **extra: Any) -> dict[str, Any]:
    return {
        "id": "resp_gen",
        "object": "response",
        "created_at": 1,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "model": "gpt-5-2025-08-07",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "store": False,
        "usage": usage,
        **extra,
    }


@st.composite
def response_streams(draw: st.DrawFn) -> bytes:
    """Reasoning items (summary parts, encrypted content), messages (text deltas) and
    function calls (argument deltas naming the item id), in any order, then the
    terminal event carrying the final output and usage."""
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response("in_progress", [], None)}
    ]
    output: list[dict[str, Any]] = []
    kinds = draw(st.lists(st.sampled_from(["reasoning", "message", "function_call"]), max_size=5))
    for n, kind in enumerate(kinds):
        item_id = f"{kind[:2]}_{n:04d}"
        if kind == "reasoning":
            parts = draw(
                st.lists(
                    st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=3), max_size=3
                )
            )
            enc = draw(st.none() | st.from_regex(r"gAAAA[A-Za-z0-9_=-]{4,30}", fullmatch=True))
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": n,
                    "item": {"id": item_id, "type": "reasoning", "summary": []},
                }
            )
            for i, pieces in enumerate(parts):
                events += [
                    {
                        "type": "response.reasoning_summary_text.delta",
                        "item_id": item_id,
                        "output_index": n,
                        "summary_index": i,
                        "delta": p,
                    }
                    for p in pieces
                ]
            item = {
                "id": item_id,
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "".join(p)} for p in parts],
                "encrypted_content": enc,
            }
        elif kind == "message":
            pieces = draw(st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=4))
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": n,
                    "item": {
                        "id": item_id,
                        "type": "message",
                        "role": "assistant",
                        "status": "in_progress",
                        "content": [],
                    },
                }
            )
            events.append(
                {
                    "type": "response.content_part.added",
                    "item_id": item_id,
                    "output_index": n,
                    "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []},
                }
            )
            events += [
                {
                    "type": "response.output_text.delta",
                    "item_id": item_id,
                    "output_index": n,
                    "content_index": 0,
                    "delta": p,
                    "logprobs": [],
                }
                for p in pieces
            ]
            item = {
                "id": item_id,
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "".join(pieces), "annotations": []}],
            }
        else:
            arguments = draw(
                st.dictionaries(st.text(min_size=1, max_size=5), json_values, max_size=3)
            )
            raw = json.dumps(arguments) if arguments or draw(st.booleans()) else ""
            call_id = f"call_{n}{draw(st.from_regex(r'[A-Za-z0-9]{4,10}', fullmatch=True))}"
            added = {
                "id": item_id,
                "type": "function_call",
                "call_id": call_id,
                "name": f"tool{n}",
                "arguments": "",
                "status": "in_progress",
            }
            events.append({"type": "response.output_item.added", "output_index": n, "item": added})
            pieces = split(raw, draw(st.lists(st.integers(0, 100), max_size=4))) if raw else []
            events += [
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": item_id,
                    "output_index": n,
                    "delta": p,
                }
                for p in pieces
                if p
            ]
            events.append(
                {
                    "type": "response.function_call_arguments.done",
                    "item_id": item_id,
                    "output_index": n,
                    "arguments": raw,
                }
            )
            item = {**added, "arguments": raw, "status": "completed"}
        events.append({"type": "response.output_item.done", "output_index": n, "item": item})
        output.append(item)
    inputs, outputs = draw(st.integers(0, 10**6)), draw(st.integers(0, 10**5))
    usage = {
        "input_tokens": inputs,
        "input_tokens_details": {"cached_tokens": draw(st.integers(0, inputs))},
        "output_tokens": outputs,
        "output_tokens_details": {"reasoning_tokens": draw(st.integers(0, outputs))},
        "total_tokens": inputs + outputs,
    }
    if draw(st.booleans()):
        events.append(
            {"type": "response.completed", "response": response("completed", output, usage)}
        )
    else:
        details = {"reason": "max_output_tokens"}
        events.append(
            {
                "type": "response.incomplete",
                "response": response("incomplete", output, usage, incomplete_details=details),
            }
        )
    return "".join(
        f"event: {e['type']}\ndata: {json.dumps({**e, 'sequence_number': i})}\n\n"
        for i, e in enumerate(events)
    ).encode()


@settings(max_examples=75, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(response_streams())
@pytest.mark.anyio
async def test_generated_streams_match_the_sdk(raw: bytes) -> None:
    assert_same(await ours(raw), sdk_final(raw))


# --- request bodies -------------------------------------------------------------------

PARAMS: TypeAdapter[Any] = TypeAdapter(ResponseCreateParamsStreaming)


SIGNED = ThinkingBlock(thinking="plan", signature="gAAAAenc", provider="openai", item_id="rs_1")
COMPACTION = NativeBlock(
    provider="openai-responses",
    data={"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAAcmp"},
)


def _around(*assistant: Any) -> LLMRequest:
    """A request whose history has one assistant message of ``assistant`` blocks."""
    return LLMRequest(
        model="gpt-5",
        messages=[
            Message(role="user", content=[TextBlock(text="hi")]),
            Message(role="assistant", content=list(assistant)),
            Message(role="user", content=[TextBlock(text="go on")]),
        ],
    )


# Found by hypothesis (issue 27 item 15): signed reasoning then a compaction item.
REASONING_THEN_COMPACTION = _around(SIGNED, COMPACTION)


@settings(max_examples=75, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests(["gpt-5", "o3", "gpt-4.1", "gpt-5.2-codex"]))
@example(REASONING_THEN_COMPACTION)
@example(_around(SIGNED, COMPACTION, TextBlock(text="done")))
def test_request_bodies_are_valid_for_the_api(request: LLMRequest) -> None:
    body = OpenAIResponsesProvider(api_key="k").build_body(request)
    validated = materialize(PARAMS.validate_python(body))
    assert dropped_keys(body, validated) == []
    assert validated == body
    assert body["store"] is False and body["stream"] is True
    # Another provider's native blocks never go; of ours, only compaction (below).
    dumped = json.dumps(body)
    assert not any(k in dumped for k in ("executableCode", "QUJD", "ws_1", "srvtoolu"))

    reasoning = request.reasoning is not None or is_reasoning_model(request.model)
    assert ("include" in body) == reasoning
    items = body["input"]
    calls: set[str] = set()
    for i, item in enumerate(items):
        if item["type"] == "function_call":
            assert len(item["call_id"]) <= 40
            assert isinstance(json.loads(item["arguments"]), dict)
            calls.add(item["call_id"])
        elif item["type"] == "function_call_output":
            assert item["call_id"] in calls, "a result answers an earlier call"
        elif item["type"] == "reasoning":
            assert reasoning, "no reasoning items for a model that does not reason"
            assert set(item) == {"type", "id", "summary", "encrypted_content"}
            assert item["encrypted_content"]
            # Replayed with the output item it led to: the API rejects a reasoning
            # item "provided without its required following item". A compaction
            # item is not one (the compaction pass made it, not this reasoning).
            following = items[i + 1]
            assert following["type"] in ("reasoning", "function_call") or (
                following["type"] == "message" and following["role"] == "assistant"
            )
        elif item["type"] == "compaction":
            # Our kept compaction item, without its id (store is false); no other
            # native item goes back.
            assert item == {"type": "compaction", "encrypted_content": "gAAAAcmp"}
        elif item["type"] == "message":
            assert item["content"], "no empty messages"


def test_reasoning_before_a_compaction_item_is_dropped_and_the_compaction_kept() -> None:
    """Reasoning no message or function call follows cannot go back (issue 27 item
    15); the compaction item, which carries the state before it, does."""
    provider = OpenAIResponsesProvider(api_key="k")

    def user(text: str) -> dict[str, Any]:
        return {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        }

    compaction = {"type": "compaction", "encrypted_content": "gAAAAcmp"}
    reasoning = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "plan"}],
        "encrypted_content": "gAAAAenc",
    }
    done = {"type": "message", "role": "assistant", "content": "done"}
    cases = [
        (REASONING_THEN_COMPACTION, [compaction]),
        (_around(SIGNED, COMPACTION, TextBlock(text="done")), [compaction, done]),
        # Reasoning followed by what it led to still goes, in its place.
        (_around(COMPACTION, SIGNED, TextBlock(text="done")), [compaction, reasoning, done]),
    ]
    for request, assistant in cases:
        assert provider.build_body(request)["input"] == [user("hi"), *assistant, user("go on")]
