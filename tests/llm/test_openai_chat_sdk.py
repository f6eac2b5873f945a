"""The official ``openai`` SDK (test-only; it runs on httpx2) as an oracle for the
Chat Completions adapter.

- Differential: the SDK consumes the same bytes (over ``httpx2.MockTransport``, or
  through ``ChatCompletionStreamState`` for generated streams); our final text, tool
  inputs, stop reason and usage must equal what it accumulates.
- Request bodies built from generated histories validate against the SDK's request
  type ``CompletionCreateParamsStreaming`` with no key silently dropped.

The history strategy lives here and is shared with the Responses SDK tests.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable
from typing import Any

import genai_prices
import httpx2
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
from pydantic import TypeAdapter

from tests.llm import _histories
from tests.llm._serve import mock_client
from tests.llm.conftest import fixture_bytes
from tron_events.messages import (
    Message,
    TextBlock,
    ToolUseBlock,
)
from tron_llm import Done, LLMError, LLMRequest, RetryPolicy, ToolSpec
from tron_llm._ids import ToolIdMap
from tron_llm._openai_common import usage_from
from tron_llm._sse import SSEDecoder
from tron_llm.openai_chat import ChatStreamParser, OpenAIChatProvider

FINISH = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}
TOOLS: list[Any] = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
    for n in ("get_weather", "get_time", "list_files", "read_file", "search")
]


def materialize(value: Any) -> Any:
    """Walk a validated TypedDict, turning the lazy ``Iterable`` validators into lists
    (nested errors only surface when iterated)."""
    if isinstance(value, dict):
        return {k: materialize(v) for k, v in value.items()}
    if isinstance(value, list | tuple) or (
        isinstance(value, Iterable) and not isinstance(value, str | bytes)
    ):
        return [materialize(v) for v in value]
    return value


def dropped_keys(sent: Any, validated: Any, path: str = "") -> list[str]:
    """Keys of ``sent`` the TypedDict validation dropped (unknown to the SDK types)."""
    out: list[str] = []
    if isinstance(sent, dict) and isinstance(validated, dict):
        for key, value in sent.items():
            if key not in validated:
                out.append(f"{path}.{key}")
            else:
                out += dropped_keys(value, validated[key], f"{path}.{key}")
    elif isinstance(sent, list) and isinstance(validated, list):
        for i, (a, b) in enumerate(zip(sent, validated, strict=True)):
            out += dropped_keys(a, b, f"{path}[{i}]")
    return out


def final_of(state: Any) -> Any:
    """The SDK's final completion; on finish_reason "length" its parsing helper raises,
    carrying the completion."""
    try:
        return state.get_final_completion()
    except openai.LengthFinishReasonError as exc:
        return exc.completion


# --- differential on the fixtures ------------------------------------------------------


def sdk_final(raw: bytes) -> Any:
    """What the SDK's streaming helper makes of ``raw`` (or the exception it raised)."""

    def handler(_request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=raw, headers={"content-type": "text/event-stream"})

    client = openai.OpenAI(
        api_key="sk-x",
        base_url="http://localhost:11434/v1",
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        max_retries=0,
    )
    with client.chat.completions.stream(
        model="gpt-4o",
        messages=[{"role": "user", "content": "hi"}],
        tools=TOOLS,
        stream_options={"include_usage": True},
    ) as stream:
        for _ in stream:
            pass
        return final_of(stream)


async def ours(raw: bytes) -> Done:
    client = mock_client(raw)
    provider = OpenAIChatProvider(
        base_url="http://localhost:11434/v1", client=client, retry=RetryPolicy(max_retries=0)
    )
    try:
        return await provider.complete(
            LLMRequest(
                model="gpt-4o", messages=[Message(role="user", content=[TextBlock(text="hi")])]
            )
        )
    finally:
        await client.aclose()


def assert_same(done: Done, theirs: Any) -> None:
    message = theirs.choices[0].message
    text = "".join(b.text for b in done.message.content if isinstance(b, TextBlock))
    assert text == (message.content or "") + (message.refusal or "")
    their_calls = [
        (c.id, c.function.name, json.loads(c.function.arguments or "{}"))
        for c in message.tool_calls or []
    ]
    our_calls = [
        (b.id, b.name, b.input) for b in done.message.content if isinstance(b, ToolUseBlock)
    ]
    assert our_calls == their_calls
    assert done.stop_reason == FINISH[theirs.choices[0].finish_reason]
    usage = theirs.usage
    if usage is None:
        assert (done.usage.input_tokens, done.usage.output_tokens) == (0, 0)
        return
    assert done.usage.input_tokens == usage.prompt_tokens
    assert done.usage.output_tokens == usage.completion_tokens
    details = usage.prompt_tokens_details
    assert done.usage.cache_read_tokens == ((details and details.cached_tokens) or 0)
    out_details = usage.completion_tokens_details
    assert done.usage.reasoning_tokens == ((out_details and out_details.reasoning_tokens) or 0)


@pytest.mark.anyio
@pytest.mark.parametrize(
    "name",
    [
        "text.sse",
        "tool_calls_parallel.sse",
        "tool_no_args.sse",
        "length.sse",
        "reasoning_content.sse",
        "reasoning_field.sse",
    ],
)
async def test_same_result_as_the_sdk(name: str) -> None:
    raw = fixture_bytes("openai_chat", name)
    assert_same(await ours(raw), sdk_final(raw))


@pytest.mark.anyio
async def test_both_fail_on_a_midstream_error() -> None:
    raw = fixture_bytes("openai_chat", "midstream_error.sse")
    with pytest.raises(openai.APIError, match="error while processing"):
        sdk_final(raw)
    with pytest.raises(LLMError, match="error while processing"):
        await ours(raw)


# --- differential on generated streams ---------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


def split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts})
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]


@st.composite
def chat_streams(draw: st.DrawFn) -> bytes:
    """A well-formed OpenAI stream: optional text, 0-3 tool calls with their JSON
    arguments cut anywhere, a finish reason, and usually the usage chunk."""
    head = {
        "id": "chatcmpl-gen",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            **head,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    chunks = [chunk({"role": "assistant", "content": "", "refusal": None})]
    for piece in draw(st.lists(st.text(min_size=1, max_size=10), max_size=4)):
        chunks.append(chunk({"content": piece}))
    calls = draw(
        st.lists(
            st.dictionaries(st.text(min_size=1, max_size=6), json_values, max_size=3), max_size=3
        )
    )
    for i, arguments in enumerate(calls):
        raw = json.dumps(arguments) if arguments or draw(st.booleans()) else ""
        name = TOOLS[i % len(TOOLS)]["function"]["name"]
        pieces = split(raw, draw(st.lists(st.integers(0, 100), max_size=4))) if raw else [""]
        chunks.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": f"call_{i}x",
                            "type": "function",
                            "function": {"name": name, "arguments": pieces[0]},
                        }
                    ]
                }
            )
        )
        chunks += [
            chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]})
            for p in pieces[1:]
            if p
        ]
    finish = "tool_calls" if calls else draw(st.sampled_from(["stop", "length"]))
    chunks.append(chunk({}, finish))
    if draw(st.booleans()):
        prompt, completion = draw(st.integers(0, 10**6)), draw(st.integers(0, 10**5))
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": draw(st.integers(0, prompt))},
            "completion_tokens_details": {"reasoning_tokens": draw(st.integers(0, completion))},
        }
        chunks.append({**head, "choices": [], "usage": usage})
    lines = [json.dumps(c, ensure_ascii=draw(st.booleans())) for c in chunks] + ["[DONE]"]
    return "".join(f"data: {line}\n\n" for line in lines).encode()


def parse_ours(raw: bytes) -> Done:
    request = LLMRequest(
        model="gpt-4o", messages=[Message(role="user", content=[TextBlock(text="hi")])]
    )
    parser = ChatStreamParser(request, ToolIdMap())
    decoder = SSEDecoder()
    for event in [*decoder.feed(raw), *decoder.flush()]:
        parser.feed(event)
    return parser.finish()


def parse_theirs(raw: bytes) -> Any:
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState(input_tools=TOOLS)
    decoder = SSEDecoder()
    for event in [*decoder.feed(raw), *decoder.flush()]:
        if event.data != "[DONE]":
            state.handle_chunk(ChatCompletionChunk.model_validate_json(event.data))
    return final_of(state)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chat_streams())
def test_generated_streams_match_the_sdk(raw: bytes) -> None:
    assert_same(parse_ours(raw), parse_theirs(raw))


# --- request bodies ------------------------------------------------------------------------

PARAMS: TypeAdapter[Any] = TypeAdapter(CompletionCreateParamsStreaming)

texts = st.text(max_size=12)
tool_ids = st.one_of(
    st.from_regex(r"call_[A-Za-z0-9]{4,24}", fullmatch=True),
    st.from_regex(r"toolu_[A-Za-z0-9]{10,40}", fullmatch=True),
    st.just("functions.Bash:0"),
    st.just("id|with.odd:chars and spaces" + "x" * 40),
)
histories = _histories.histories(
    texts=texts,
    tool_ids=tool_ids,
    thinking_signatures=st.none() | st.just("gAAAAABenc=="),
    item_ids=st.none() | st.from_regex(r"rs_[a-f0-9]{6}", fullmatch=True),
    tool_inputs=st.dictionaries(st.text(max_size=4), json_values, max_size=2),
    tool_use_signatures=st.none(),
    max_turns=5,
    max_reply_blocks=4,
    native_blocks=st.one_of(*_histories.natives.values()),
)


def requests(models: list[str]) -> st.SearchStrategy[LLMRequest]:
    return st.builds(
        LLMRequest,
        model=st.sampled_from(models),
        messages=histories,
        system=st.none() | st.just("") | st.just("You are Tron."),
        tools=st.lists(
            st.builds(
                ToolSpec,
                name=st.sampled_from(["read", "bash", "grep"]),
                description=st.sampled_from(["", "Does it"]),
            ),
            max_size=3,
            unique_by=lambda t: t.name,
        ),
        max_tokens=st.integers(1, 100_000),
        temperature=st.none() | st.floats(0, 2),
        reasoning=st.sampled_from([None, "low", "medium", "high", "xhigh"]),
        stop_sequences=st.lists(st.just("STOP"), max_size=2),
    )


@settings(max_examples=75, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    requests(["gpt-4o", "o4-mini", "gpt-5.2", "qwen3:8b"]),
    st.sampled_from([None, "http://localhost:11434/v1"]),
)
def test_request_bodies_are_valid_for_the_api(request: LLMRequest, base_url: str | None) -> None:
    body = OpenAIChatProvider(api_key="k", base_url=base_url).build_body(request)
    validated = materialize(PARAMS.validate_python(body))
    # OpenRouter's reasoning_details are not in OpenAI's types: they go to compatible
    # servers only, each a list of what the server gave.
    extension = [
        f".messages[{i}].reasoning_details"
        for i, m in enumerate(body["messages"])
        if "reasoning_details" in m
    ]
    assert base_url is not None or extension == []
    assert dropped_keys(body, validated) == extension
    for path in extension:
        index = int(path.split("[")[1].split("]")[0])
        validated["messages"][index]["reasoning_details"] = body["messages"][index][
            "reasoning_details"
        ]
    assert validated == body

    messages = body["messages"]
    if request.system:
        assert messages[0] == {"role": "system", "content": request.system}
    calls_open: list[str] = []
    for before, message in itertools.pairwise([{"role": "start"}, *messages]):
        if message["role"] == "tool":
            # A tool message answers a call of the assistant message just before the
            # run of tool messages, in the order of the calls.
            assert before["role"] in ("assistant", "tool")
            assert calls_open and message["tool_call_id"] == calls_open.pop(0)
            assert isinstance(message["content"], str)
        else:
            assert calls_open == [], "every call is answered before the next message"
        if message["role"] == "assistant":
            calls_open = [c["id"] for c in message.get("tool_calls", [])]
            assert message["content"] or calls_open, "no empty assistant messages"
            for call in message.get("tool_calls", []):
                assert (
                    len(call["id"]) <= 40 and call["id"].replace("_", "").replace("-", "").isalnum()
                )
                assert isinstance(json.loads(call["function"]["arguments"]), dict)
    assert calls_open == []
    # Thinking replay fields never leak; OpenAI's own reasoning is never sent as text.
    dumped = json.dumps(body)
    assert "gAAAAABenc==" not in dumped and "EmwKAhgB" not in dumped
    # Another provider's native blocks never go.
    assert not any(k in dumped for k in ("executableCode", "gAAAAcmp", "ws_1", "srvtoolu"))


# --- usage against genai-prices' own extraction ---------------------------------------------


@settings(max_examples=100, deadline=None)
@given(
    st.integers(0, 10**7),
    st.integers(0, 10**6),
    st.floats(0, 1),
    st.floats(0, 1),
    st.sampled_from(["chat", "responses"]),
)
def test_usage_matches_genai_prices(
    inputs: int, outputs: int, cached: float, reasoning: float, flavor: str
) -> None:
    cache_read, thought = int(inputs * cached), int(outputs * reasoning)
    if flavor == "chat":
        raw = {
            "prompt_tokens": inputs,
            "completion_tokens": outputs,
            "total_tokens": inputs + outputs,
            "prompt_tokens_details": {"cached_tokens": cache_read},
            "completion_tokens_details": {"reasoning_tokens": thought},
        }
    else:
        raw = {
            "input_tokens": inputs,
            "output_tokens": outputs,
            "total_tokens": inputs + outputs,
            "input_tokens_details": {"cached_tokens": cache_read},
            "output_tokens_details": {"reasoning_tokens": thought},
        }
    theirs = genai_prices.extract_usage(
        {"model": "gpt-4o", "usage": raw}, provider_id="openai", api_flavor=flavor
    ).usage
    ours = usage_from(raw)
    assert ours.input_tokens == theirs.input_tokens
    assert ours.output_tokens == theirs.output_tokens
    assert ours.cache_read_tokens == (theirs.cache_read_tokens or 0)
    assert ours.reasoning_tokens == (theirs.output_reasoning_tokens or 0)
    assert ours.uncached_input_tokens == inputs - cache_read
