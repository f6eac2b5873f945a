"""Streams recorded against the real APIs, through our adapters and the official SDKs.

``<shared>/provider-streams/`` (``$TRON_SHARED_DIR``, else ``../shared`` next to the
repository) holds response bodies that other projects recorded from Anthropic, OpenAI
(Chat Completions and Responses, and compatible servers) and Gemini; ``manifest.json``
lists them. Each one is served over a real socket, cut into pieces at arbitrary bytes,
to our adapter and to the official SDK (``anthropic``, ``openai``, ``google-genai``),
and both must end with the same final message, stop reason, usage, response id and
model. The test skips, saying why, when the recordings are not there.

The SDKs' final shapes are not ours, so each is mapped to our model explicitly below
(``*_expected``); ``test_mapping_*`` pin down what each mapping keeps, joins and drops,
so that a mapping can never hide a difference by accident. What our model deliberately
does not carry is listed in each mapping, with the reason.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import ssl
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest
from google import genai
from google.genai import types as genai_types
from openai.lib.streaming.chat import ChatCompletionStreamState

from tests.llm._serve import ReplayServer
from tron_events.messages import (
    ContentBlock,
    Message,
    NativeBlock,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
)
from tron_llm import (
    AnthropicProvider,
    Done,
    ErrorEvent,
    GeminiProvider,
    HTTPProvider,
    LLMRequest,
    OpenAIChatProvider,
    OpenAIResponsesProvider,
    RetryPolicy,
    Usage,
)
from tron_llm.gemini import is_synthesized_id

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("TRON_SHARED_DIR") or REPO.parent / "shared")
STREAMS = SHARED / "provider-streams"
MANIFEST = STREAMS / "manifest.json"


@dataclass(frozen=True)
class Case:
    api: str  # anthropic | openai_chat | openai_responses | gemini
    name: str
    content_type: str
    request_uri: str
    sha256: str

    @property
    def key(self) -> str:
        return f"{self.api}/{self.name}"

    @property
    def body(self) -> bytes:
        return (STREAMS / self.api / f"{self.name}.sse").read_bytes()

    @property
    def request(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(
            (STREAMS / self.api / f"{self.name}.request.json").read_text()
        )
        return data

    @property
    def model(self) -> str:
        if self.api == "gemini":
            # .../models/<model>:streamGenerateContent
            return self.request_uri.rsplit("/models/", 1)[1].split(":", 1)[0]
        return str(self.request.get("model") or "unknown-model")


def _cases() -> list[Any]:
    if not MANIFEST.is_file():
        reason = (
            f"no recorded provider streams at {STREAMS}: they are read from "
            "<repo>/../shared/provider-streams, or $TRON_SHARED_DIR/provider-streams"
        )
        return [pytest.param(None, id="absent", marks=pytest.mark.skip(reason=reason))]
    entries = json.loads(MANIFEST.read_text())
    return [
        pytest.param(
            Case(e["api"], e["name"], e["content_type"], e["request_uri"], e["sha256"]),
            id=f"{e['api']}/{e['name']}",
        )
        for e in entries
    ]


CASES = _cases()


def cuts(seed: str, size: int) -> list[int]:
    """Where to cut a body of ``size`` bytes: every 1 to 400 bytes, reproducibly."""
    rng = random.Random(seed)
    points: list[int] = []
    at = 0
    while True:
        at += rng.randint(1, 400)
        if at >= size:
            return points
        points.append(at)


@dataclass(frozen=True)
class Shared:
    """HTTP clients the SDKs share across the streams (making one per call, with its
    certificate store, cost more than reading the stream)."""

    httpx2: httpx2.Client  # anthropic and openai
    httpx: httpx.Client  # google-genai
    httpx_async: httpx.AsyncClient  # google-genai makes one if not given


TLS = ssl.create_default_context()
"""One certificate store for every client our adapters get (none is used: plain HTTP)."""


@pytest.fixture(scope="module")
def shared() -> Iterator[Shared]:
    clients = Shared(httpx2.Client(), httpx.Client(), httpx.AsyncClient(verify=TLS))
    try:
        yield clients
    finally:
        clients.httpx2.close()
        clients.httpx.close()


@pytest.fixture(scope="module")
def replay() -> Iterator[ReplayServer]:
    server = ReplayServer()
    for param in CASES:
        case = param.values[0]
        if case is not None:
            body = case.body
            server.routes[case.key] = (body, case.content_type, cuts(case.key, len(body)))
    server.start()
    try:
        yield server
    finally:
        server.stop()


# --- what both sides end with ----------------------------------------------------------


@dataclass(frozen=True)
class Final:
    """The end of a stream in our terms: what a test compares."""

    message: Message
    stop_reason: str
    usage: tuple[int, int, int, int, int]  # input, output, cache read, cache write, reasoning
    response_id: str | None
    model: str


@dataclass(frozen=True)
class Failure:
    """A stream that ended in an error: its message, and what had streamed before."""

    error: str
    partial: Message | None


def usage_tuple(usage: Usage) -> tuple[int, int, int, int, int]:
    return (
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
        usage.reasoning_tokens,
    )


def assistant(blocks: list[ContentBlock]) -> Message:
    return Message(role="assistant", content=blocks)


# --- our side ----------------------------------------------------------------------------


def our_provider(case: Case, url: str, client: httpx.AsyncClient) -> HTTPProvider:
    options: dict[str, Any] = {
        "api_key": "test",
        "base_url": url,
        "client": client,
        "retry": RetryPolicy(max_retries=0),
    }
    if case.api == "anthropic":
        return AnthropicProvider(**options)
    if case.api == "openai_chat":
        return OpenAIChatProvider(**options)
    if case.api == "openai_responses":
        return OpenAIResponsesProvider(**options)
    return GeminiProvider(**{**options, "base_url": f"{url}/v1beta"})


async def ours(case: Case, url: str) -> Final | Failure:
    client = httpx.AsyncClient(verify=TLS)
    provider = our_provider(case, url, client)
    request = LLMRequest(
        model=case.model, messages=[Message(role="user", content=[TextBlock(text="hi")])]
    )
    try:
        events = [event async for event in provider.stream(request)]
    finally:
        await client.aclose()
    last = events[-1]
    assert sum(isinstance(e, Done | ErrorEvent) for e in events) == 1
    if isinstance(last, ErrorEvent):
        return Failure(last.error.message, last.message)
    assert isinstance(last, Done)
    return Final(
        last.message, last.stop_reason, usage_tuple(last.usage), last.response_id, last.model
    )


# --- Anthropic ----------------------------------------------------------------------------

ANTHROPIC_STOP = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "refusal": "refusal",
    # Server tools paused a long turn: the turn is over for us (the caller continues).
    "pause_turn": "end_turn",
    "model_context_window_exceeded": "max_tokens",
}


def anthropic_blocks(content: list[Any]) -> list[ContentBlock]:
    """The SDK's final content blocks in our model.

    - empty text blocks are dropped (the API rejects them in a request);
    - citations are not carried: they are provenance for the text, which the API
      accepts without them, and the results they point into (the
      ``web_search_tool_result`` blocks) are carried whole, as native blocks;
    - every block type we do not model becomes a ``NativeBlock`` holding the block as
      the API sent it (null and absent fields alike: the SDK's model cannot tell them
      apart, see ``test_mapping_anthropic``).
    """
    blocks: list[ContentBlock] = []
    for block in content:
        if block.type == "text":
            if block.text:
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
            blocks.append(ToolUseBlock(id=block.id, name=block.name, input=dict(block.input)))
        else:
            blocks.append(NativeBlock(provider="anthropic", data=block.to_dict()))
    return blocks


def anthropic_expected(message: Any) -> Final:
    usage = message.usage
    cache_read = usage.cache_read_input_tokens or 0
    cache_write = usage.cache_creation_input_tokens or 0
    details = usage.output_tokens_details
    return Final(
        assistant(anthropic_blocks(message.content)),
        ANTHROPIC_STOP[message.stop_reason],
        (
            usage.input_tokens + cache_read + cache_write,
            usage.output_tokens,
            cache_read,
            cache_write,
            details.thinking_tokens if details is not None else 0,
        ),
        message.id,
        message.model,
    )


def anthropic_theirs(case: Case, url: str, shared: Shared) -> Final | Failure:
    client = anthropic.Anthropic(
        api_key="test", base_url=url, max_retries=0, http_client=shared.httpx2
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # old model names
            # The beta helper: it also assembles compaction and MCP blocks.
            with client.beta.messages.stream(
                model=case.model, max_tokens=1024, messages=[{"role": "user", "content": "hi"}]
            ) as stream:
                return anthropic_expected(stream.get_final_message())
    except anthropic.APIError as error:
        return Failure(error.message, None)


# --- OpenAI Chat Completions -------------------------------------------------------------

CHAT_STOP = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def chat_message(snapshot: Any, chunks: list[Any]) -> Message:
    """The SDK's accumulated choice 0 in our model.

    Its message carries ``reasoning_content`` (DeepSeek, llama.cpp) or ``reasoning``
    (OpenRouter, Groq, Ollama) as extra fields: that is one thinking block, then comes
    the text (content, then any refusal), then the tool calls in order, then
    OpenRouter's ``reasoning_details`` (what must go back to it) as a native block.
    The SDK joins every string of a details entry across its pieces, so a field each
    piece repeats (``format``, ``id``) comes out repeated: those are taken from the
    entry's first piece in ``chunks`` (``details_fields``).
    """
    choice = next(c for c in snapshot.choices if c.index == 0)
    message = choice.message
    extra = message.model_extra or {}
    blocks: list[ContentBlock] = []
    reasoning = extra.get("reasoning_content") or extra.get("reasoning")
    if reasoning:
        blocks.append(ThinkingBlock(thinking=reasoning, provider="openai"))
    text = (message.content or "") + (message.refusal or "")
    if text:
        blocks.append(TextBlock(text=text))
    blocks.extend(
        ToolUseBlock(id=c.id, name=c.function.name, input=json.loads(c.function.arguments or "{}"))
        for c in message.tool_calls or []
    )
    details = extra.get("reasoning_details")
    if details:
        first = details_fields(chunks)
        entries = [
            {k: first[e["index"]].get(k, v) if k in REPEATED else v for k, v in e.items()}
            for e in details
        ]
        blocks.append(NativeBlock(provider="openai", data={"reasoning_details": entries}))
    return assistant(blocks)


REPEATED = frozenset({"format", "id"})


def details_fields(chunks: list[Any]) -> dict[int, dict[str, Any]]:
    """Per details entry (by index), the first value each repeated field had."""
    first: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            for piece in (choice.delta.model_extra or {}).get("reasoning_details") or []:
                entry = first.setdefault(piece["index"], {})
                for key in REPEATED & piece.keys():
                    if entry.get(key) is None:
                        entry[key] = piece[key]
    return first


def chat_expected(chunks: list[Any], snapshot: Any) -> Final:
    """The SDK's final completion in our terms. Usage is the last one a chunk carried:
    the SDK's snapshot takes each chunk's ``usage``, so a chunk after the usage chunk
    (OpenAI's moderation chunk) leaves it None."""
    message = chat_message(snapshot, chunks)
    choice = next(c for c in snapshot.choices if c.index == 0)
    stop = CHAT_STOP[choice.finish_reason]
    if choice.message.refusal:
        stop = "refusal"
    elif choice.message.tool_calls and stop == "end_turn":
        stop = "tool_use"  # some servers say "stop" after tool calls: the calls decide
    usages = [c.usage for c in chunks if c.usage is not None]
    counts = (0, 0, 0, 0, 0)
    if usages:
        usage = usages[-1]
        prompt = usage.prompt_tokens_details
        completion = usage.completion_tokens_details
        counts = (
            usage.prompt_tokens,
            usage.completion_tokens,
            (prompt.cached_tokens or 0) if prompt else 0,
            (getattr(prompt, "cache_write_tokens", None) or 0) if prompt else 0,
            (completion.reasoning_tokens or 0) if completion else 0,
        )
    return Final(message, stop, counts, snapshot.id, snapshot.model)


def chat_theirs(case: Case, url: str, shared: Shared) -> Final | Failure:
    client = openai.OpenAI(api_key="test", base_url=url, max_retries=0, http_client=shared.httpx2)
    chunks: list[Any] = []
    with client.chat.completions.stream(
        model=case.model, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        try:
            for event in stream:
                if event.type == "chunk":
                    chunks.append(event.chunk)
        except openai.APIError as error:
            snapshot = stream.current_completion_snapshot if chunks else None
            partial = chat_message(snapshot, chunks) if snapshot else None
            return Failure(error.message, partial if partial and partial.content else None)
        return chat_expected(chunks, stream.current_completion_snapshot)


# --- OpenAI Responses --------------------------------------------------------------------


def responses_blocks(output: list[Any]) -> list[ContentBlock]:
    """The SDK's final output items in our model.

    - ``reasoning``: one thinking block with the item id and encrypted content; its
      text is the summary parts joined by blank lines, then the raw reasoning text;
    - ``message``: one text block (its output_text parts and refusals joined; none
      when empty) with the message's ``phase``. Annotations and logprobs are not
      carried: output-only metadata that a later request does not need (assistant
      text is replayed as plain text);
    - ``function_call``: a tool call (``call_id``, arguments parsed);
    - every other item (built-in tool calls, compaction) is a ``NativeBlock`` with
      the item as the API sent it.
    """
    blocks: list[ContentBlock] = []
    for item in output:
        if item.type == "reasoning":
            summary = "\n\n".join(s.text for s in item.summary)
            raw = "".join(c.text for c in item.content or [])
            blocks.append(
                ThinkingBlock(
                    thinking=summary + raw,
                    signature=item.encrypted_content,
                    provider="openai",
                    item_id=item.id,
                )
            )
        elif item.type == "message":
            text = "".join(c.text if c.type == "output_text" else c.refusal for c in item.content)
            if text:
                blocks.append(TextBlock(text=text, phase=item.phase))
        elif item.type == "function_call":
            blocks.append(
                ToolUseBlock(id=item.call_id, name=item.name, input=json.loads(item.arguments))
            )
        else:
            data = item.to_dict(warnings=False)  # see responses_theirs
            blocks.append(NativeBlock(provider="openai-responses", data=data))
    return blocks


def responses_expected(response: Any) -> Final:
    blocks = responses_blocks(response.output)
    refused = any(
        c.type == "refusal" for i in response.output if i.type == "message" for c in i.content
    )
    if response.status == "incomplete":
        details = response.incomplete_details
        stop = "refusal" if details and details.reason == "content_filter" else "max_tokens"
    elif refused:
        stop = "refusal"
    elif any(i.type == "function_call" for i in response.output):
        stop = "tool_use"
    else:
        stop = "end_turn"
    usage = response.usage
    return Final(
        assistant(blocks),
        stop,
        (
            usage.input_tokens,
            usage.output_tokens,
            usage.input_tokens_details.cached_tokens or 0,
            getattr(usage.input_tokens_details, "cache_write_tokens", None) or 0,
            usage.output_tokens_details.reasoning_tokens or 0,
        ),
        response.id,
        response.model,
    )


def responses_theirs(case: Case, url: str, shared: Shared) -> Final | Failure:
    client = openai.OpenAI(api_key="test", base_url=url, max_retries=0, http_client=shared.httpx2)
    final = None
    try:
        with (
            warnings.catch_warnings(),
            client.responses.stream(model=case.model, input="hi") as stream,
        ):
            # The SDK's own union serializer complains about its web_search_call model.
            warnings.simplefilter("ignore", UserWarning)
            for event in stream:
                if event.type == "error":
                    return Failure(event.message, None)
                if event.type in ("response.completed", "response.incomplete"):
                    final = event.response
        assert final is not None, "no terminal event"
        return responses_expected(final)
    except openai.APIError as error:
        return Failure(error.message, None)


# --- Gemini ------------------------------------------------------------------------------

GEMINI_STOP = {
    "STOP": "end_turn",
    "MAX_TOKENS": "max_tokens",
    "SAFETY": "refusal",
    "RECITATION": "refusal",
    "PROHIBITED_CONTENT": "refusal",
    "BLOCKLIST": "refusal",
    "SPII": "refusal",
    "MALFORMED_FUNCTION_CALL": "error",
}


def _signature(part: genai_types.Part) -> str | None:
    raw = part.thought_signature
    return base64.b64encode(raw).decode() if raw else None


def gemini_blocks(parts: list[genai_types.Part]) -> list[ContentBlock]:
    """The parts of the SDK's recorded model turn (its chat history keeps each chunk's
    parts as they came) in our model, by Google's rule for replaying them: a part
    with a thought signature stands alone; consecutive unsigned text parts join, as do
    consecutive unsigned thought parts; an unsigned empty text part adds nothing.
    Function calls keep Gemini's id (ours synthesizes one when Gemini sent none, see
    ``gemini_same_ids``); executable code, code results, server tool calls and their
    responses are ``NativeBlock`` parts exactly as the API sent them.
    """
    blocks: list[ContentBlock] = []
    joinable = False  # the last block is unsigned text/thought that a part may extend
    for part in parts:
        signature = _signature(part)
        if part.function_call is not None:
            call = part.function_call
            call_id, name, args = call.id or "", call.name or "", call.args or {}
            blocks.append(ToolUseBlock(id=call_id, name=name, input=args, signature=signature))
            joinable = False
        elif part.text is not None or (signature and not _native_fields(part)):
            text = part.text or ""
            last = blocks[-1] if blocks else None
            extend = joinable and signature is None
            if extend and part.thought and isinstance(last, ThinkingBlock):
                blocks[-1] = last.model_copy(update={"thinking": last.thinking + text})
            elif extend and not part.thought and isinstance(last, TextBlock):
                blocks[-1] = last.model_copy(update={"text": last.text + text})
            elif text or signature:
                blocks.append(
                    ThinkingBlock(thinking=text, signature=signature, provider="google")
                    if part.thought
                    else TextBlock(text=text, signature=signature)
                )
                joinable = signature is None
        elif _native_fields(part):
            data = part.model_dump(mode="json", by_alias=True, exclude_none=True)
            if signature:
                data["thoughtSignature"] = signature
            blocks.append(NativeBlock(provider="google", data=data))
            joinable = False
    return blocks


def _native_fields(part: genai_types.Part) -> list[str]:
    return [
        name
        for name in (
            "executable_code",
            "code_execution_result",
            "tool_call",
            "tool_response",
            "inline_data",
            "file_data",
        )
        if getattr(part, name, None) is not None
    ]


def gemini_theirs(case: Case, url: str, shared: Shared) -> Final | Failure:
    client = genai.Client(
        api_key="test",
        http_options=genai_types.HttpOptions(
            base_url=url,
            api_version="v1beta",
            httpx_client=shared.httpx,
            httpx_async_client=shared.httpx_async,
        ),
    )
    chat = client.chats.create(model=case.model)
    chunks: list[genai_types.GenerateContentResponse] = []
    try:
        chunks.extend(chat.send_message_stream("hi"))
    except genai.errors.APIError as error:
        return Failure(error.message or "", None)
    history = chat.get_history()
    parts = [p for content in history[1:] for p in content.parts or []]
    blocks = gemini_blocks(parts)
    finish = next(
        (
            c.candidates[0].finish_reason
            for c in reversed(chunks)
            if c.candidates and c.candidates[0].finish_reason
        ),
        None,
    )
    assert finish is not None
    stop = GEMINI_STOP[finish.value]
    if stop == "end_turn" and any(isinstance(b, ToolUseBlock) for b in blocks):
        stop = "tool_use"
    meta = chunks[-1].usage_metadata
    assert meta is not None
    thoughts = meta.thoughts_token_count or 0
    ids = [c.response_id for c in chunks if c.response_id]
    models = [c.model_version for c in chunks if c.model_version]
    return Final(
        assistant(blocks),
        stop,
        (
            (meta.prompt_token_count or 0) + (meta.tool_use_prompt_token_count or 0),
            (meta.candidates_token_count or 0) + thoughts,
            meta.cached_content_token_count or 0,
            0,
            thoughts,
        ),
        ids[-1] if ids else None,
        models[-1] if models else case.model,
    )


def gemini_same_ids(ours: Message, theirs: Message) -> Message:
    """Our message with each synthesized call id replaced by the SDK's (empty) one,
    after checking that ids were synthesized exactly where Gemini sent none."""
    content: list[ContentBlock] = []
    for mine, expected in zip(ours.content, theirs.content, strict=False):
        if isinstance(mine, ToolUseBlock) and isinstance(expected, ToolUseBlock):
            assert is_synthesized_id(mine.id) == (expected.id == ""), (mine.id, expected.id)
            if expected.id == "":
                mine = mine.model_copy(update={"id": ""})
        content.append(mine)
    content.extend(ours.content[len(content) :])
    return ours.model_copy(update={"content": content})


# --- the test ----------------------------------------------------------------------------


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def without_nulls(final: Final) -> Final:
    """``final`` with null fields left out of native blocks' data, on both sides: the
    SDKs' models cannot tell a null field from an absent one (Anthropic's compaction
    accumulator sets ``encrypted_content`` to None when the delta has none), and the
    APIs read both the same. Every other value is compared as it is."""
    content = [
        NativeBlock(provider=b.provider, data=_strip(b.data)) if isinstance(b, NativeBlock) else b
        for b in final.message.content
    ]
    message = final.message.model_copy(update={"content": content})
    return Final(message, final.stop_reason, final.usage, final.response_id, final.model)


THEIRS = {
    "anthropic": anthropic_theirs,
    "openai_chat": chat_theirs,
    "openai_responses": responses_theirs,
    "gemini": gemini_theirs,
}


@pytest.mark.anyio
@pytest.mark.parametrize("case", CASES)
async def test_same_final_message_as_the_sdk(
    case: Case, replay: ReplayServer, shared: Shared
) -> None:
    assert hashlib.sha256(case.body).hexdigest() == case.sha256, "the recording changed"
    url = replay.url(case.key)
    theirs = THEIRS[case.api](case, url, shared)
    mine = await ours(case, url)
    # Both asked the same endpoint (the SDK's path is the API's).
    paths = [path for key, path, _ in replay.requests if key == case.key]
    assert len(paths) == 2 and paths[0] == paths[1], paths
    if isinstance(theirs, Failure) or isinstance(mine, Failure):
        assert isinstance(mine, Failure), mine
        assert isinstance(theirs, Failure), theirs
        assert mine.error == theirs.error
        if theirs.partial is not None:  # what had streamed, where the SDK keeps it
            assert mine.partial == theirs.partial
        return
    if case.api == "gemini":
        mine = Final(
            gemini_same_ids(mine.message, theirs.message),
            mine.stop_reason,
            mine.usage,
            mine.response_id,
            mine.model,
        )
    assert without_nulls(mine) == without_nulls(theirs)


# --- the mappings, pinned down (these run without the recordings) ---------------------


def test_mapping_anthropic() -> None:
    search = {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": [
            {
                "type": "web_search_result",
                "url": "u",
                "title": "t",
                "page_age": None,
                "encrypted_content": "e",
            }
        ],
    }
    message = anthropic.types.beta.BetaMessage.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "stop_reason": "pause_turn",
            "stop_sequence": None,
            "content": [
                {"type": "text", "text": ""},
                {"type": "thinking", "thinking": "hm", "signature": ""},
                {"type": "redacted_thinking", "data": "opaque"},
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_1",
                    "name": "web_search",
                    "input": {"query": "q"},
                },
                search,
                {
                    "type": "text",
                    "text": "cited",
                    "citations": [
                        {
                            "type": "web_search_result_location",
                            "url": "u",
                            "title": "t",
                            "encrypted_index": "i",
                            "cited_text": "c",
                        }
                    ],
                },
                {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}},
            ],
            "usage": {
                "input_tokens": 10,
                "output_tokens": 20,
                "cache_read_input_tokens": 3,
                "cache_creation_input_tokens": None,
                "output_tokens_details": {"thinking_tokens": 7},
            },
        }
    )
    final = anthropic_expected(message)
    assert final.message.content == [
        ThinkingBlock(thinking="hm", provider="anthropic"),  # "" is no signature
        RedactedThinkingBlock(data="opaque"),
        NativeBlock(
            provider="anthropic",
            data={
                "type": "server_tool_use",
                "id": "srvtoolu_1",
                "name": "web_search",
                "input": {"query": "q"},
            },
        ),
        NativeBlock(provider="anthropic", data=search),  # the null as sent
        TextBlock(text="cited"),  # citations are not carried
        ToolUseBlock(id="toolu_1", name="f", input={"a": 1}),
    ]
    assert final.stop_reason == "end_turn"
    assert final.usage == (13, 20, 3, 0, 7)
    assert (final.response_id, final.model) == ("msg_1", "claude-x")


def test_without_nulls_leaves_out_null_fields_of_native_data_only() -> None:
    def final(*blocks: ContentBlock) -> Final:
        return Final(assistant(list(blocks)), "end_turn", (0, 0, 0, 0, 0), None, "m")

    sent = NativeBlock(provider="anthropic", data={"a": None, "b": [{"c": None, "d": 1}]})
    modeled = NativeBlock(provider="anthropic", data={"b": [{"d": 1}]})
    call = ToolUseBlock(id="t", name="f", input={"x": None})
    assert without_nulls(final(sent, call)) == without_nulls(final(modeled, call))
    assert without_nulls(final(sent)) != without_nulls(
        final(NativeBlock(provider="anthropic", data={"b": [{"d": 2}]}))
    )
    # Nulls elsewhere (a tool call's input) still count.
    assert without_nulls(final(call)) != without_nulls(
        final(ToolUseBlock(id="t", name="f", input={}))
    )


def test_mapping_chat() -> None:
    def chunk(delta: dict[str, Any], **extra: Any) -> Any:
        return openai.types.chat.ChatCompletionChunk.model_validate(
            {
                "id": "c1",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "m",
                "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
                **extra,
            }
        )

    piece = {"type": "reasoning.text", "format": "anthropic-claude-v1", "index": 0}
    chunks = [
        chunk({"reasoning": "Two", "reasoning_details": [{**piece, "text": "Two"}]}),
        chunk(
            {
                "reasoning": " fours",
                "reasoning_details": [{**piece, "text": " fours", "signature": "s"}],
            }
        ),
        chunk({"content": "4", "refusal": None}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "f", "arguments": '{"n": 4}'},
                    }
                ]
            }
        ),
        openai.types.chat.ChatCompletionChunk.model_validate(
            {
                "id": "c1",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "m",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            }
        ),
        chunk(
            {},
            usage={
                "prompt_tokens": 5,
                "completion_tokens": 6,
                "total_tokens": 11,
                "prompt_tokens_details": {"cached_tokens": 2, "cache_write_tokens": 1},
                "completion_tokens_details": {"reasoning_tokens": 3},
            },
        ),
        chunk({}),  # after the usage: the SDK's snapshot forgets it
    ]
    state: Any = ChatCompletionStreamState()
    for c in chunks:
        state.handle_chunk(c)
    snapshot = state.current_completion_snapshot
    assert snapshot.usage is None
    theirs = (snapshot.choices[0].message.model_extra or {})["reasoning_details"]
    assert theirs[0]["format"] == "anthropic-claude-v1" * 2  # what details_fields undoes
    final = chat_expected(chunks, snapshot)
    assert final.message.content == [
        ThinkingBlock(thinking="Two fours", provider="openai"),
        TextBlock(text="4"),
        ToolUseBlock(id="call_1", name="f", input={"n": 4}),
        NativeBlock(
            provider="openai",
            data={"reasoning_details": [{**piece, "text": "Two fours", "signature": "s"}]},
        ),
    ]
    assert final.stop_reason == "tool_use"  # "stop" after tool calls: the calls decide
    assert final.usage == (5, 6, 2, 1, 3)


def test_mapping_responses() -> None:
    response = openai.types.responses.Response.model_validate(
        {
            "id": "resp_1",
            "object": "response",
            "created_at": 1,
            "model": "gpt-x",
            "status": "completed",
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "output": [
                {
                    "id": "rs_1",
                    "type": "reasoning",
                    "encrypted_content": "enc",
                    "summary": [
                        {"type": "summary_text", "text": "a"},
                        {"type": "summary_text", "text": "b"},
                    ],
                },
                {
                    "id": "rs_2",
                    "type": "reasoning",
                    "summary": [],
                    "content": [{"type": "reasoning_text", "text": "raw"}],
                },
                {
                    "id": "msg_0",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [],
                },
                {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "phase": "final_answer",
                    "content": [
                        {
                            "type": "output_text",
                            "text": "hi",
                            "annotations": [
                                {
                                    "type": "url_citation",
                                    "url": "u",
                                    "title": "t",
                                    "start_index": 0,
                                    "end_index": 1,
                                }
                            ],
                        }
                    ],
                },
                {
                    "id": "ws_1",
                    "type": "web_search_call",
                    "status": "completed",
                    "action": {"type": "search", "query": "q"},
                },
                {
                    "id": "fc_1",
                    "type": "function_call",
                    "call_id": "call_1",
                    "name": "f",
                    "arguments": '{"n": 1}',
                },
            ],
            "usage": {
                "input_tokens": 9,
                "output_tokens": 8,
                "total_tokens": 17,
                "input_tokens_details": {"cached_tokens": 4, "cache_write_tokens": 2},
                "output_tokens_details": {"reasoning_tokens": 5},
            },
        }
    )
    final = responses_expected(response)
    assert final.message.content == [
        ThinkingBlock(thinking="a\n\nb", signature="enc", provider="openai", item_id="rs_1"),
        ThinkingBlock(thinking="raw", provider="openai", item_id="rs_2"),
        # An empty message is none; annotations are not carried.
        TextBlock(text="hi", phase="final_answer"),
        NativeBlock(
            provider="openai-responses",
            data={
                "id": "ws_1",
                "type": "web_search_call",
                "status": "completed",
                "action": {"type": "search", "query": "q"},
            },
        ),
        ToolUseBlock(id="call_1", name="f", input={"n": 1}),
    ]
    assert (final.stop_reason, final.usage) == ("tool_use", (9, 8, 4, 2, 5))


def test_mapping_gemini() -> None:
    def part(**fields: Any) -> genai_types.Part:
        return genai_types.Part.model_validate(fields)

    code = {"executableCode": {"language": "PYTHON", "code": "1"}, "thoughtSignature": "c2ln"}
    parts = [
        part(text="thinking ", thought=True),
        part(text="on", thought=True),
        part(text="a", thought_signature=b"A"),  # signed: alone
        part(text="b"),
        part(text=""),  # unsigned and empty: adds nothing
        part(text="c"),
        part(function_call={"name": "f", "args": {"x": 1}}),
        part(text="d"),
        part(executable_code={"language": "PYTHON", "code": "1"}, thought_signature=b"sig"),
        part(text="e"),
        part(text="", thought_signature=b"B"),  # signed and empty: kept
    ]
    assert gemini_blocks(parts) == [
        ThinkingBlock(thinking="thinking on", provider="google"),
        TextBlock(text="a", signature="QQ=="),
        TextBlock(text="bc"),
        ToolUseBlock(id="", name="f", input={"x": 1}),
        TextBlock(text="d"),
        NativeBlock(provider="google", data=code),
        TextBlock(text="e"),
        TextBlock(text="", signature="Qg=="),
    ]


def test_gemini_ids_are_compared_where_gemini_sent_them() -> None:
    ours_ = assistant(
        [
            ToolUseBlock(id="gcall_0123abcd_1", name="f", input={}),
            ToolUseBlock(id="g3id", name="f", input={}),
        ]
    )
    theirs_ = assistant(
        [ToolUseBlock(id="", name="f", input={}), ToolUseBlock(id="g3id", name="f", input={})]
    )
    assert gemini_same_ids(ours_, theirs_) == theirs_
    with pytest.raises(AssertionError):  # made up where Gemini sent one
        gemini_same_ids(
            ours_,
            assistant(
                [
                    ToolUseBlock(id="real", name="f", input={}),
                    ToolUseBlock(id="g3id", name="f", input={}),
                ]
            ),
        )
