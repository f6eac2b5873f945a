"""The official ``anthropic`` SDK as an oracle (test-only; it runs on ``httpx2``).

1. Differential: the SDK and our adapter consume the same fixture bytes; the final
   content, tool inputs, stop reason and usage must agree (the documented
   differences: we drop empty text blocks and tool calls cut off at max_tokens).
2. Request bodies built from hypothesis-generated histories validate against the
   SDK's ``MessageCreateParamsStreaming`` TypedDict (deeply, with no dropped keys) and
   keep the rules the API enforces beyond its types.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anthropic
import genai_prices
import httpx2
import pytest
from anthropic.types.message_create_params import MessageCreateParamsStreaming
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter

from tests.llm import _histories
from tests.llm._serve import mock_client
from tests.llm.conftest import FIXTURES
from tron_events.messages import (
    ContentBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
)
from tron_llm import Done, ErrorEvent, LLMError, LLMRequest, RetryPolicy, ToolSpec
from tron_llm.anthropic import AnthropicProvider, build_body

pytestmark = pytest.mark.anyio

ANTHROPIC_FIXTURES = sorted((FIXTURES / "anthropic").glob("*.sse"))
REQUEST = LLMRequest(
    model="claude-sonnet-4-5", messages=[Message(role="user", content=[TextBlock(text="hi")])]
)


async def sdk_result(body: bytes) -> anthropic.types.Message | anthropic.APIStatusError:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    client = anthropic.AsyncAnthropic(
        api_key="test",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
    )
    try:
        async with client.messages.stream(
            model=REQUEST.model, max_tokens=1024, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            return await stream.get_final_message()
    except anthropic.APIStatusError as error:
        return error
    finally:
        await client.close()


async def our_result(body: bytes) -> Done | ErrorEvent:
    client = mock_client(body)
    provider = AnthropicProvider(api_key="test", client=client, retry=RetryPolicy(max_retries=0))
    async with client:
        events = [event async for event in provider.stream(REQUEST)]
    last = events[-1]
    assert isinstance(last, Done | ErrorEvent)
    return last


def sdk_blocks(message: anthropic.types.Message) -> list[ContentBlock]:
    blocks: list[ContentBlock] = []
    for block in message.content:
        if block.type == "text" and block.text:
            blocks.append(TextBlock(text=block.text))
        elif block.type == "thinking":
            blocks.append(
                ThinkingBlock(
                    thinking=block.thinking, signature=block.signature or None, provider="anthropic"
                )
            )
        elif block.type == "redacted_thinking":
            blocks.append(RedactedThinkingBlock(data=block.data))
        elif block.type == "tool_use":
            assert isinstance(block.input, dict)
            blocks.append(ToolUseBlock(id=block.id, name=block.name, input=block.input))
    return blocks


SDK_STOP = {"pause_turn": "end_turn", "model_context_window_exceeded": "max_tokens"}


@pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")
@pytest.mark.parametrize("path", ANTHROPIC_FIXTURES, ids=[p.name for p in ANTHROPIC_FIXTURES])
async def test_same_result_as_the_sdk(path: Path) -> None:
    body = path.read_bytes()
    theirs = await sdk_result(body)
    ours = await our_result(body)
    if isinstance(theirs, anthropic.APIStatusError):
        # An error event inside a 200 stream: the SDK raises a generic status error
        # carrying the body; we raise the typed error of that type.
        assert isinstance(ours, ErrorEvent) and isinstance(ours.error, LLMError)
        assert isinstance(theirs.body, dict)
        assert ours.error.error_type == theirs.body["error"]["type"]
        assert ours.error.message == theirs.body["error"]["message"]
        return
    assert isinstance(ours, Done), ours
    expected = sdk_blocks(theirs)
    if theirs.stop_reason == "max_tokens":
        # The SDK keeps a call whose JSON was cut off (parsed leniently); we do not.
        kept = set(ours.message.tool_use_ids())
        expected = [b for b in expected if not isinstance(b, ToolUseBlock) or b.id in kept]
    assert ours.message.content == expected
    assert ours.stop_reason == SDK_STOP.get(str(theirs.stop_reason), theirs.stop_reason)
    assert ours.model == theirs.model and ours.response_id == theirs.id

    usage = theirs.usage
    cache_read = usage.cache_read_input_tokens or 0
    cache_write = usage.cache_creation_input_tokens or 0
    assert ours.usage.input_tokens == usage.input_tokens + cache_read + cache_write
    assert ours.usage.cache_read_tokens == cache_read
    assert ours.usage.cache_write_tokens == cache_write
    assert ours.usage.output_tokens == usage.output_tokens

    # A second oracle for the normalization: genai-prices reads the raw usage.
    extracted = genai_prices.extract_usage(theirs.model_dump(), provider_id="anthropic")
    assert ours.usage.input_tokens == extracted.usage.input_tokens
    assert ours.usage.cache_read_tokens == (extracted.usage.cache_read_tokens or 0)
    assert ours.usage.cache_write_tokens == (extracted.usage.cache_write_tokens or 0)
    assert ours.usage.output_tokens == extracted.usage.output_tokens


# --- request bodies against the SDK's request type -------------------------------------

PARAMS: TypeAdapter[Any] = TypeAdapter(MessageCreateParamsStreaming)


def materialize(value: Any) -> Any:
    """The validated value with every lazy ``Iterable`` field iterated (pydantic
    validates their items only then)."""
    if isinstance(value, dict):
        return {k: materialize(v) for k, v in value.items()}
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, BaseModel):
        # The SDK takes its response blocks as input too (a kept native block is one):
        # what it would send is what was set.
        return materialize(value.model_dump(exclude_unset=True))
    if isinstance(value, Iterable):
        return [materialize(v) for v in value]
    return value


def dropped_keys(sent: Any, validated: Any, path: str = "") -> list[str]:
    """Keys the TypedDict silently dropped (a typo would pass validation otherwise)."""
    if isinstance(sent, dict):
        assert isinstance(validated, dict), path
        missing = [f"{path}.{k}" for k in sent if k not in validated]
        if not path:
            # The SDK's 2.x types follow API version 2026-10-21, which dropped
            # ``temperature``; we send 2023-06-01, where it is valid.
            missing = [m for m in missing if m != ".temperature"]
        return missing + [
            d
            for k in sent
            if k in validated
            for d in dropped_keys(sent[k], validated[k], f"{path}.{k}")
        ]
    if isinstance(sent, list):
        assert isinstance(validated, list) and len(validated) == len(sent), path
        return [
            d
            for i, (a, b) in enumerate(zip(sent, validated, strict=True))
            for d in dropped_keys(a, b, f"{path}[{i}]")
        ]
    return []


texts = st.text(alphabet=st.sampled_from("ab ü\n\t🌍"), max_size=8)
# Ours go back as sent; every other provider's native blocks must not reach Anthropic.
histories = _histories.every_provider_histories(texts)


requests = st.builds(
    LLMRequest,
    model=st.sampled_from(["claude-sonnet-4-5", "claude-opus-4-1", "claude-next"]),
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
    max_tokens=st.integers(1, 70_000),
    temperature=st.none() | st.floats(0, 1),
    reasoning=st.sampled_from([None, "low", "medium", "high", "xhigh"]),
    stop_sequences=st.lists(st.just("STOP"), max_size=1),
    prompt_caching=st.booleans(),
)

ID_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@given(requests)
def test_request_bodies_are_valid_for_the_api(request: LLMRequest) -> None:
    body = build_body(request)
    validated = materialize(PARAMS.validate_python(body))
    assert dropped_keys(body, validated) == []
    # Native blocks: Anthropic's own as they came, no other provider's.
    sent = [b for m in body["messages"] for b in m["content"]]
    natives = [b for b in sent if b["type"] in ("server_tool_use", "web_search_tool_result")]
    assert all(b in (_histories.SERVER_TOOL_USE, _histories.WEB_SEARCH_RESULT) for b in natives)
    dumped = json.dumps(body)
    assert not any(k in dumped for k in ("executableCode", "gAAAAcmp", "ws_1", "reasoning_det"))

    messages = body["messages"]
    roles = [m["role"] for m in messages]
    assert all(a != b for a, b in itertools.pairwise(roles)), roles
    breakpoints = 0
    for message in messages:
        content = message["content"]
        assert content, "no empty messages"
        kinds = [b["type"] for b in content]
        if "tool_result" in kinds:
            first_other = next((i for i, k in enumerate(kinds) if k != "tool_result"), len(kinds))
            assert "tool_result" not in kinds[first_other:], kinds
        for block in content:
            breakpoints += "cache_control" in block
            assert "provider" not in block and "item_id" not in block
            if block["type"] in ("text", "tool_use"):
                assert "signature" not in block
            if block["type"] == "text":
                assert block["text"].strip()
            if block["type"] == "thinking":
                assert block["signature"]
            if block["type"] == "tool_use":
                assert ID_RE.match(block["id"])
            if block["type"] == "tool_result":
                assert ID_RE.match(block["tool_use_id"])
                for part in (
                    block.get("content", []) if isinstance(block.get("content"), list) else []
                ):
                    assert part["type"] != "text" or part["text"].strip()
    breakpoints += sum("cache_control" in t for t in body.get("tools", []))
    breakpoints += (
        sum("cache_control" in s for s in body["system"])
        if isinstance(body.get("system"), list)
        else 0
    )
    assert breakpoints <= 4
    if not request.prompt_caching:
        assert breakpoints == 0

    # Distinct ids stay distinct, and each result names its call's (mapped) id.
    originals = {b.id for m in request.messages for b in m.content if isinstance(b, ToolUseBlock)}
    calls = [b["id"] for m in messages for b in m["content"] if b["type"] == "tool_use"]
    results = [
        b["tool_use_id"] for m in messages for b in m["content"] if b["type"] == "tool_result"
    ]
    assert sorted(calls) == sorted(results)
    assert len(set(calls)) == len(originals)

    if "thinking" in body:
        assert body["thinking"]["budget_tokens"] >= 1024
        assert body["thinking"]["budget_tokens"] < body["max_tokens"]
        assert "temperature" not in body
        last = messages[-1]["content"] if messages else []
        if any(b["type"] == "tool_result" for b in last) and len(messages) > 1:
            # The turn whose calls are answered must open with its thinking.
            assert messages[-2]["content"][0]["type"] in ("thinking", "redacted_thinking")


def test_a_malformed_body_is_caught() -> None:
    """The oracle can fail: a tool_result with a misspelled text field is rejected."""
    body = build_body(REQUEST)
    body["messages"][0]["content"] = [
        {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "txt": "a"}]}
    ]
    with pytest.raises(ValueError):
        materialize(PARAMS.validate_python(body))
    body = build_body(REQUEST)
    body["messages"][0]["content"][0]["cache_controll"] = {"type": "ephemeral"}
    assert dropped_keys(body, materialize(PARAMS.validate_python(body))) == [
        ".messages[0].content[0].cache_controll"
    ]
