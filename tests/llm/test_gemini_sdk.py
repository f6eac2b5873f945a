"""The official ``google-genai`` SDK as an oracle: it reads the same bytes we do, and its
pydantic types (``extra="forbid"``, base64 signatures) judge the bodies we send."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.llm import _histories
from tron_events.messages import (
    Base64ImageSource,
    ContentBlock,
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
from tron_llm import Done, LLMRequest, SSEDecoder, ToolSpec
from tron_llm.gemini import SKIP_SIGNATURE, GeminiStreamParser, build_body, is_synthesized_id

FIXTURES = Path(__file__).parent / "fixtures" / "gemini"
SSE_FILES = sorted(p.name for p in FIXTURES.glob("*.sse"))
MODEL = "gemini-2.5-flash"

# What our stop reasons mean in the SDK's finish reasons (the oracle's side of the table).
FINISH = {
    "STOP": {"end_turn", "tool_use"},
    "MAX_TOKENS": {"max_tokens"},
    "SAFETY": {"refusal"},
    "MALFORMED_FUNCTION_CALL": {"error"},
}


def sdk_chunks(
    body: bytes,
) -> tuple[list[types.GenerateContentResponse], genai_errors.APIError | None]:
    """What ``generate_content_stream`` yields for ``body`` (and what it raised)."""

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == f"/v1beta/models/{MODEL}:streamGenerateContent"
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    client = genai.Client(
        api_key="k",
        http_options=types.HttpOptions(
            api_version="v1beta", httpx_client=httpx.Client(transport=httpx.MockTransport(handler))
        ),
    )
    chunks: list[types.GenerateContentResponse] = []
    try:
        for chunk in client.models.generate_content_stream(model=MODEL, contents="hi"):
            chunks.append(chunk)
    except genai_errors.APIError as exc:
        return chunks, exc
    return chunks, None


def request(messages: list[Message] | None = None, **kw: Any) -> LLMRequest:
    return LLMRequest(
        model=kw.pop("model", MODEL),
        messages=messages or [Message(role="user", content=[TextBlock(text="hi")])],
        **kw,
    )


def ours(body: bytes) -> tuple[Done | None, Exception | None, GeminiStreamParser]:
    decoder = SSEDecoder()
    parser = GeminiStreamParser(request())
    try:
        for sse in [*decoder.feed(body), *decoder.flush()]:
            parser.feed(sse)
        return parser.finish(), None, parser
    except Exception as exc:
        return None, exc, parser


def sdk_parts(chunks: list[types.GenerateContentResponse]) -> list[types.Part]:
    parts: list[types.Part] = []
    for chunk in chunks:
        for candidate in chunk.candidates or []:
            if candidate.content and candidate.content.parts:
                parts.extend(candidate.content.parts)
    return parts


def kind(part: types.Part) -> str:
    if part.function_call is not None:
        return "call"
    return "thought" if part.thought else "text"


def block_kind(block: ContentBlock) -> str:
    return {"tool_use": "call", "thinking": "thought", "text": "text"}[block.type]


def block_text(block: ContentBlock) -> Any:
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, ThinkingBlock):
        return block.thinking
    assert isinstance(block, ToolUseBlock)
    return (block.name, block.input)


@pytest.mark.parametrize("name", SSE_FILES)
def test_same_result_as_the_sdk(name: str) -> None:
    body = (FIXTURES / name).read_bytes()
    chunks, sdk_error = sdk_chunks(body)
    done, error, parser = ours(body)
    parts = sdk_parts(chunks)
    message = done.message if done else parser.partial()
    blocks = message.content if message else []

    # Text and thinking, as the user reads them.
    assert "".join(b.text for b in blocks if isinstance(b, TextBlock)) == "".join(
        p.text or "" for p in parts if p.function_call is None and not p.thought
    )
    assert "".join(b.thinking for b in blocks if isinstance(b, ThinkingBlock)) == "".join(
        p.text or "" for p in parts if p.thought
    )
    # Function calls: name, arguments, and the id when Gemini sent one.
    assert [
        (b.name, b.input, None if is_synthesized_id(b.id) else b.id)
        for b in blocks
        if isinstance(b, ToolUseBlock)
    ] == [
        (p.function_call.name, p.function_call.args or {}, p.function_call.id)
        for p in parts
        if p.function_call is not None
    ]
    # Every signature, on a part of the same kind with the same content, in order.
    # (Compare decoded bytes: the SDK holds bytes, we hold Gemini's string untouched.)
    assert [
        (block_kind(b), block_text(b), base64.b64decode(getattr(b, "signature", "")))
        for b in blocks
        if getattr(b, "signature", None)
    ] == [
        (
            kind(p),
            (p.function_call.name, p.function_call.args or {})
            if p.function_call
            else (p.text or ""),
            p.thought_signature,
        )
        for p in parts
        if p.thought_signature
    ]

    if sdk_error is not None:
        assert error is not None and done is None
        assert getattr(error, "status_code", None) == sdk_error.code == 503
        return
    assert error is None and done is not None
    # Finish reason and usage (the last snapshot).
    finish = next((c.candidates[0].finish_reason for c in reversed(chunks) if c.candidates), None)
    if finish is None:
        blocked = [c.prompt_feedback.block_reason for c in chunks if c.prompt_feedback]
        assert blocked and done.stop_reason == "refusal"
    else:
        assert done.stop_reason in FINISH[finish.value]
    meta = chunks[-1].usage_metadata
    assert meta is not None
    assert done.usage.input_tokens == (meta.prompt_token_count or 0) + (
        meta.tool_use_prompt_token_count or 0
    )
    assert done.usage.cache_read_tokens == (meta.cached_content_token_count or 0)
    assert done.usage.output_tokens == (meta.candidates_token_count or 0) + (
        meta.thoughts_token_count or 0
    )
    assert done.usage.reasoning_tokens == (meta.thoughts_token_count or 0)
    assert done.response_id == chunks[-1].response_id
    assert done.model == chunks[-1].model_version


# --- request bodies judged by the SDK's types -------------------------------------------

SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,40}")
signatures = st.binary(min_size=1, max_size=40).map(lambda b: base64.b64encode(b).decode())
texts = st.text(max_size=20)
tool_names = st.sampled_from(["read_file", "bash", "list_dir", "get_time"])
tool_ids = st.one_of(
    st.from_regex(r"[a-z0-9]{8}", fullmatch=True),  # Gemini 3
    st.builds(lambda h, n: f"gcall_{h:08x}_{n}", st.integers(0, 2**32 - 1), st.integers(1, 9)),
    st.from_regex(r"toolu_[A-Za-z0-9]{10}", fullmatch=True),  # Anthropic
    st.from_regex(r"call_[A-Za-z0-9]{24}", fullmatch=True),  # OpenAI
    st.text(min_size=1, max_size=60),  # anything a foreign server sent
)
args = st.dictionaries(
    st.text(min_size=1, max_size=8),
    st.one_of(st.integers(), st.text(max_size=10), st.booleans(), st.none()),
    max_size=3,
)
images = st.one_of(
    st.builds(
        lambda data: ImageBlock(
            source=Base64ImageSource(media_type="image/png", data=base64.b64encode(data).decode())
        ),
        st.binary(min_size=1, max_size=16),
    ),
    st.sampled_from(["https://example.com/a.png", "gs://b/c.jpg"]).map(
        lambda url: ImageBlock(source=UrlImageSource(url=url))
    ),
)


@st.composite
def assistant_blocks(draw: st.DrawFn, used: set[str]) -> list[ContentBlock]:
    blocks: list[ContentBlock] = []
    for _ in range(draw(st.integers(0, 4))):
        choice = draw(st.sampled_from(["text", "thinking", "redacted", "call", "native"]))
        if choice == "text":
            blocks.append(TextBlock(text=draw(texts), signature=draw(st.none() | signatures)))
        elif choice == "thinking":
            blocks.append(
                ThinkingBlock(
                    thinking=draw(texts),
                    signature=draw(st.none() | signatures),
                    provider=draw(st.sampled_from([None, "anthropic", "openai", "google"])),
                )
            )
        elif choice == "redacted":
            blocks.append(RedactedThinkingBlock(data="EmwKAhgB"))
        elif choice == "native":  # Gemini's own parts go back whole; no one else's
            blocks.append(draw(st.one_of(*_histories.natives.values())))
        else:
            tool_id = draw(tool_ids.filter(lambda i: i not in used))
            used.add(tool_id)
            blocks.append(
                ToolUseBlock(
                    id=tool_id,
                    name=draw(tool_names),
                    input=draw(args),
                    signature=draw(st.none() | signatures),
                )
            )
    return blocks


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    used: set[str] = set()
    messages = [Message(role="user", content=[TextBlock(text=draw(texts) or "hi")])]
    for _ in range(draw(st.integers(0, 4))):
        blocks = draw(assistant_blocks(used))
        messages.append(Message(role="assistant", content=blocks))
        calls = [b for b in blocks if isinstance(b, ToolUseBlock)]
        answered = draw(st.permutations(calls))[: draw(st.integers(0, len(calls)))]
        content: list[ContentBlock] = []
        for call in answered:
            result: str | list[Any] = draw(
                st.one_of(
                    texts,
                    st.lists(st.one_of(texts.map(lambda t: TextBlock(text=t)), images), max_size=2),
                )
            )
            content.append(
                ToolResultBlock(tool_use_id=call.id, content=result, is_error=draw(st.booleans()))
            )
        content += draw(
            st.lists(st.one_of(texts.map(lambda t: TextBlock(text=t)), images), max_size=2)
        )
        messages.append(Message(role="user", content=content))
    return messages


NATIVE_KEYS = {"executableCode", "codeExecutionResult"}


def signatures_in(messages: list[Message]) -> list[str]:
    out: list[str] = []
    for message in messages:
        if message.role != "assistant":
            continue
        for block in message.content:
            google = not isinstance(block, ThinkingBlock) or block.provider == "google"
            signature = getattr(block, "signature", None)
            if isinstance(block, NativeBlock):
                google = block.provider == "google"
                signature = block.data.get("thoughtSignature")
            if signature and google:
                out.append(signature)
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    messages=histories(),
    model=st.sampled_from(["gemini-2.5-flash", "gemini-3-pro-preview"]),
    reasoning=st.sampled_from([None, "low", "medium", "high", "xhigh"]),
    system=st.none() | texts.filter(bool),
)
def test_request_bodies_validate_against_the_sdk_types(
    messages: list[Message], model: str, reasoning: Any, system: str | None
) -> None:
    tools = [
        ToolSpec(
            name="read_file",
            description="Read",
            input_schema={
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "properties": {"path": {"type": "string"}},
            },
        )
    ]
    body = build_body(
        LLMRequest(model=model, messages=messages, system=system, tools=tools, reasoning=reasoning)
    )
    assert set(body) <= {"contents", "systemInstruction", "tools", "generationConfig"}
    contents = [types.Content.model_validate_json(json.dumps(c)) for c in body["contents"]]
    types.GenerationConfig.model_validate_json(json.dumps(body["generationConfig"]))
    for tool in body["tools"]:
        types.Tool.model_validate_json(json.dumps(tool))
    if system:
        types.Content.model_validate_json(json.dumps(body["systemInstruction"]))

    for raw, content in zip(body["contents"], contents, strict=True):
        assert content.role in ("user", "model") and content.parts
        for part in raw["parts"]:
            assert part, "an empty part"
            if raw["role"] == "user":
                assert "thoughtSignature" not in part and "functionCall" not in part
            for key in ("functionCall", "functionResponse"):
                if "id" in part.get(key, {}):
                    assert SAFE_ID.fullmatch(part[key]["id"])
                    assert not is_synthesized_id(part[key]["id"])

    # Every signature we hold goes back, in order; the sentinel only adds to them.
    sent = [
        p["thoughtSignature"]
        for c in body["contents"]
        for p in c["parts"]
        if p.get("thoughtSignature") and p["thoughtSignature"] != SKIP_SIGNATURE
    ]
    assert sent == signatures_in(messages)
    if not model.startswith("gemini-3"):
        assert SKIP_SIGNATURE not in json.dumps(body)
    natives = [p for c in body["contents"] for p in c["parts"] if p.keys() & NATIVE_KEYS]
    expected = [
        b.data
        for m in messages
        if m.role == "assistant"
        for b in m.content
        if isinstance(b, NativeBlock) and b.provider == "google"
    ]
    assert natives == expected
    assert not any(k in json.dumps(body) for k in ("srvtoolu", "gAAAAcmp", "ws_1", "QUJD"))

    # Each model content's calls are answered, in order and by name, right after.
    raw_contents = body["contents"]
    for index, content_dict in enumerate(raw_contents[:-1]):
        calls = [p["functionCall"] for p in content_dict["parts"] if "functionCall" in p]
        if content_dict["role"] != "model" or not calls:
            continue
        following = raw_contents[index + 1]
        assert following["role"] == "user"
        responses = [p["functionResponse"] for p in following["parts"] if "functionResponse" in p]
        assert [r["name"] for r in responses] == [c["name"] for c in calls]
        assert [r.get("id") for r in responses] == [c.get("id") for c in calls]


# --- round trip -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "thinking.sse",
        "function_call_signed.sse",
        "two_calls.sse",
        "gemini3_calls.sse",
        "empty_signed_text.sse",
    ],
)
@pytest.mark.parametrize("model", ["gemini-2.5-flash", "gemini-3-pro-preview"])
def test_a_signed_response_goes_back_with_the_same_signatures_on_the_same_parts(
    name: str, model: str
) -> None:
    body = (FIXTURES / name).read_bytes()
    done, error, _ = ours(body)
    assert done is not None and error is None
    # Through storage as the server keeps it (message.assistant payload content).
    stored = Message(role="assistant", content=done.message.to_payload())
    assert stored == done.message
    history = [Message(role="user", content=[TextBlock(text="hi")]), stored]
    calls = stored.tool_use_ids()
    if calls:
        history.append(
            Message(
                role="user",
                content=[ToolResultBlock(tool_use_id=i, content="ok") for i in calls],
            )
        )
    sent = build_body(request(history, model=model))["contents"][1]

    # The wire parts as Gemini sent them, minus the unsigned empty ones and with
    # unsigned runs of the same kind joined (what the SDK's own parts look like).
    wire = [
        p.model_dump(mode="json", by_alias=True, exclude_none=True)
        for p in sdk_parts(sdk_chunks(body)[0])
    ]
    for part in wire:
        if "functionCall" in part:
            part["functionCall"].pop("id", None)
    for part in sent["parts"]:
        part.get("functionCall", {}).pop("id", None)

    def signed(parts: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return [
            (
                p.get("text"),
                p.get("thought", False),
                json.dumps(p.get("functionCall"), sort_keys=True),
                base64.b64decode(p["thoughtSignature"].replace("-", "+").replace("_", "/")),
            )
            for p in parts
            if "thoughtSignature" in p
        ]

    assert signed(sent["parts"]) == signed(wire)
    # And the strings themselves are Gemini's, untouched (no URL-safe re-encoding).
    assert [p["thoughtSignature"] for p in sent["parts"] if "thoughtSignature" in p] == [
        getattr(b, "signature", None) for b in stored.content if getattr(b, "signature", None)
    ]
    types.Content.model_validate_json(json.dumps(sent))
