"""The Anthropic Messages API (``POST /v1/messages`` with ``"stream": true``).

Three parts: ``build_body`` turns an ``LLMRequest`` into the JSON body (system
prompt top-level, tools, thinking, cache breakpoints); ``convert_messages`` turns a
history into ``messages`` the API accepts; ``AnthropicStreamParser`` turns the SSE
stream into stream events and the final assistant ``Message``.

Rules the API enforces that the converter takes care of:

- thinking blocks go back byte for byte with their signature; thinking another
  provider produced (or thinking without a signature) goes as plain text;
- text blocks must not be empty or whitespace;
- tool ids must match ``[a-zA-Z0-9_-]+`` (ids from other providers are mapped);
- roles alternate, and a user message answering tool calls holds all the
  ``tool_result`` blocks first.

Blocks Tron does not model (server tool calls and results such as ``server_tool_use``
and ``web_search_tool_result``, MCP blocks, compaction) come back as ``NativeBlock``
with the block as the API sent it (a server tool call's streamed ``input`` parsed),
and are replayed as is, in their place: a ``pause_turn`` continuation and a
compacted history need them. Citations on text are not kept: the API accepts the
text without them, and the search results they point into are kept whole.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from tron_events.messages import (
    ContentBlock,
    Message,
    NativeBlock,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

from ._cost import with_cost
from ._http import HTTPCall, HTTPProvider, StreamParser
from ._ids import ToolIdMap
from ._schema import for_anthropic
from ._sse import ServerSentEvent
from ._types import (
    Done,
    LLMRequest,
    ReasoningLevel,
    StopReason,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from ._wire_cache import WireCache
from .catalog import get_model
from .errors import LLMError, NetworkError, ServerError, error_for_status

__all__ = [
    "API_VERSION",
    "THINKING_BUDGETS",
    "AnthropicProvider",
    "AnthropicStreamParser",
    "build_body",
    "convert_messages",
    "thinking_budget",
]

log = logging.getLogger("tron_llm.anthropic")

API_VERSION = "2023-06-01"

THINKING_BUDGETS: dict[ReasoningLevel, int] = {
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "xhigh": 32000,
}
"""``budget_tokens`` per reasoning level."""

MIN_THINKING_BUDGET = 1024  # the API's minimum budget_tokens

_EPHEMERAL: dict[str, str] = {"type": "ephemeral"}

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "refusal": "refusal",
    # Server tools paused a long turn; for us the turn is over (the caller may continue).
    "pause_turn": "end_turn",
    "model_context_window_exceeded": "max_tokens",
}

# The HTTP status each error type stands for (https://docs.claude.com/en/api/errors),
# so an error event inside a 200 stream gets the same typed error as the response would.
_ERROR_STATUS: dict[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


class AnthropicProvider(HTTPProvider):
    """Claude through the Anthropic Messages API.

    The key comes from ``api_key`` or ``ANTHROPIC_API_KEY`` and is sent as
    ``x-api-key``. ``base_url`` (default ``https://api.anthropic.com``) is the root
    that ``/v1/messages`` is appended to, as with the official SDK.
    """

    name = "anthropic"
    default_base_url = "https://api.anthropic.com"
    api_key_env = ("ANTHROPIC_API_KEY",)
    base_url_env = ("ANTHROPIC_BASE_URL",)
    requires_api_key = True
    price_provider = "anthropic"

    def auth_headers(self, api_key: str) -> dict[str, str]:
        """The key in ``x-api-key``."""
        return {"x-api-key": api_key}

    #: Each history message's wire message, converted once (created on first use).
    _wire_cache: WireCache[tuple[dict[str, Any] | None]] | None = None

    def build_call(self, request: LLMRequest) -> HTTPCall:
        """``POST /v1/messages`` with the streaming body of ``request``."""
        cache = self._wire_cache
        if cache is None:
            cache = self._wire_cache = WireCache()
        return HTTPCall(
            path="/v1/messages",
            body=build_body(request, cache),
            headers={"anthropic-version": API_VERSION},
        )

    def new_parser(self, request: LLMRequest) -> AnthropicStreamParser:
        """A parser for one response to ``request``."""
        return AnthropicStreamParser(request.model, price_provider=self.price_provider)


# --- the request -------------------------------------------------------------------


def thinking_budget(model: str, max_tokens: int, level: ReasoningLevel) -> tuple[int, int]:
    """``(max_tokens, budget_tokens)`` for thinking at ``level``.

    The budget counts against ``max_tokens``, so ``max_tokens`` grows by the budget
    to leave the answer the room the caller asked for. For a model in the catalog the
    total is capped at its output limit; the budget then shrinks so that at least
    half the total (or the requested ``max_tokens``, if less) is left for the answer.
    """
    budget = THINKING_BUDGETS[level]
    total = max_tokens + budget
    info = get_model(model)
    if info is not None and total > info.max_output_tokens:
        total = info.max_output_tokens
        budget = min(budget, total - min(max_tokens, total // 2))
    budget = max(MIN_THINKING_BUDGET, budget)
    # budget_tokens must be below max_tokens.
    total = max(total, budget + 1)
    return total, budget


def build_body(
    request: LLMRequest, cache: WireCache[tuple[dict[str, Any] | None]] | None = None
) -> dict[str, Any]:
    """The ``/v1/messages`` JSON body of ``request`` (``stream: true``).

    ``cache``: the wire messages of messages converted before (see ``convert_messages``);
    the body is the same with or without it.

    With ``prompt_caching`` on, cache breakpoints (``cache_control: ephemeral``) go on
    the system prompt, the last tool and the last block of the last user message: the
    stable prefix (system, tools) and the whole history are then read from the cache
    by the next turn.
    """
    messages = convert_messages(request.messages, cache=cache)
    body: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens,
        "messages": messages,
        "stream": True,
    }
    caching = request.prompt_caching
    if request.system and request.system.strip():
        if caching:
            body["system"] = [
                {"type": "text", "text": request.system, "cache_control": dict(_EPHEMERAL)}
            ]
        else:
            body["system"] = request.system
    if request.tools:
        tools: list[dict[str, Any]] = []
        for spec in request.tools:
            tool: dict[str, Any] = {
                "name": spec.name,
                "input_schema": for_anthropic(spec.input_schema),
            }
            if spec.description:
                tool["description"] = spec.description
            tools.append(tool)
        if caching:
            tools[-1]["cache_control"] = dict(_EPHEMERAL)
        body["tools"] = tools
    if request.tool_choice is not None:
        body["tool_choice"] = {"type": "tool", "name": request.tool_choice}
    if request.reasoning is not None and request.tool_choice is not None:
        log.info("thinking off for this request: it forces a tool (the API refuses both)")
    elif request.reasoning is not None and _tool_loop_without_thinking(messages):
        log.info("thinking off for this request: the tool calls it answers came without thinking")
    elif request.reasoning is not None:
        max_tokens, budget = thinking_budget(request.model, request.max_tokens, request.reasoning)
        body["max_tokens"] = max_tokens
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        # The API rejects any temperature but 1 with thinking on: leave it out.
    elif request.temperature is not None:
        body["temperature"] = request.temperature
    if request.stop_sequences:
        body["stop_sequences"] = list(request.stop_sequences)
    if caching:
        for position in range(len(messages) - 1, -1, -1):
            message = messages[position]
            if message["role"] == "user":
                # A copy: the message may be the cache's.
                *rest, last = message["content"]
                last = {**last, "cache_control": dict(_EPHEMERAL)}
                messages[position] = {**message, "content": [*rest, last]}
                break
    return body


def _tool_loop_without_thinking(messages: list[dict[str, Any]]) -> bool:
    """Whether the request continues a tool loop whose assistant turn does not start
    with thinking (made by another provider, or with thinking off).

    With thinking on, the API requires that turn to start with a thinking block
    ("Expected `thinking` or `redacted_thinking`, but found `tool_use`"), and a
    signature cannot be made up: such a request goes without thinking.
    """
    if len(messages) < 2 or messages[-1]["role"] != "user":
        return False
    if not any(b["type"] == "tool_result" for b in messages[-1]["content"]):
        return False
    previous = messages[-2]["content"]
    return previous[0]["type"] not in ("thinking", "redacted_thinking")


def convert_messages(
    messages: list[Message],
    ids: ToolIdMap | None = None,
    *,
    cache: WireCache[tuple[dict[str, Any] | None]] | None = None,
) -> list[dict[str, Any]]:
    """``messages`` as Anthropic ``MessageParam`` dicts.

    Blocks the API would reject are dropped (empty text) or turned into text
    (thinking from another provider or without a signature); messages left empty
    are skipped; consecutive messages of one role are merged, and in a user message
    the ``tool_result`` blocks come first. Tool ids go through ``ids``.

    ``cache`` (used only without ``ids``, whose reverse map would miss the cached
    ids): a message's wire dict is a pure function of the message, so it is made
    once and the same dict is returned again; merged messages are new dicts. The
    dicts returned must not be changed in place (``build_body`` copies the message
    it puts a breakpoint on).
    """
    if ids is not None:
        cache = None
    ids = ids or ToolIdMap()
    out: list[dict[str, Any]] = []
    merged: list[int] = []  # positions in out of merged (new) messages
    for message in messages:
        if cache is None:
            wire = _message_to_wire(message, ids)
        else:
            entry = cache.get(message)
            if entry is None:
                entry = (_message_to_wire(message, ids),)
                cache.put(message, entry)
            wire = entry[0]
        if wire is None:
            continue
        if out and out[-1]["role"] == wire["role"]:
            last = out[-1]
            if not merged or merged[-1] != len(out) - 1:
                last = out[-1] = {"role": last["role"], "content": list(last["content"])}
                merged.append(len(out) - 1)
            last["content"].extend(wire["content"])
        else:
            out.append(wire)
    for position in merged:
        wire_message = out[position]
        if wire_message["role"] == "user":
            wire_message["content"] = _results_first(wire_message["content"])
    return out


def _message_to_wire(message: Message, ids: ToolIdMap) -> dict[str, Any] | None:
    """One message's ``MessageParam`` (tool results first), None when nothing is left."""
    blocks = [wire for block in message.content if (wire := _block_to_wire(block, ids)) is not None]
    if not blocks:
        return None
    if message.role == "user":
        blocks = _results_first(blocks)
    return {"role": message.role, "content": blocks}


def _results_first(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``content`` with its ``tool_result`` blocks first (each part in its order)."""
    results = [b for b in content if b["type"] == "tool_result"]
    if not results:
        return content
    return results + [b for b in content if b["type"] != "tool_result"]


def _block_to_wire(block: ContentBlock, ids: ToolIdMap) -> dict[str, Any] | None:
    if isinstance(block, TextBlock):
        return block.to_wire() if block.text.strip() else None
    if isinstance(block, ThinkingBlock):
        if block.provider in (None, "anthropic") and block.signature:
            return block.to_wire()
        # The API checks signatures: thinking it cannot verify goes as what it is to
        # this model now, text it said earlier.
        return {"type": "text", "text": block.thinking} if block.thinking.strip() else None
    if isinstance(block, RedactedThinkingBlock):
        return block.to_wire()
    if isinstance(block, NativeBlock):
        # Another provider's server tool items mean nothing here.
        return block.to_wire() if block.provider == "anthropic" else None
    if isinstance(block, ToolUseBlock):
        wire = block.to_wire()
        wire["id"] = ids.out(block.id)
        return wire
    if isinstance(block, ToolResultBlock):
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": ids.out(block.tool_use_id)}
        if isinstance(block.content, str):
            if block.content.strip():
                result["content"] = block.content
        else:
            parts = [
                part.to_wire()
                for part in block.content
                if not (isinstance(part, TextBlock) and not part.text.strip())
            ]
            if parts:
                result["content"] = parts
        if block.is_error:
            result["is_error"] = True
        return result
    return block.to_wire()  # an image


# --- the response ------------------------------------------------------------------


@dataclass
class _Slot:
    """One content block being streamed."""

    kind: Literal["text", "thinking", "redacted_thinking", "tool_use", "native"]
    parts: list[str] = field(default_factory=list)
    signature: str | None = None
    data: str = ""
    id: str = ""
    name: str = ""
    start_input: dict[str, Any] | None = None
    input: dict[str, Any] | None = None
    """A tool call's parsed arguments, set once its block stopped with valid JSON."""
    native: dict[str, Any] | None = None
    """A block we do not model, as sent (set once it stopped, if it is complete)."""
    stopped: bool = False


class AnthropicStreamParser(StreamParser):
    """Message events → stream events, the final message and the usage.

    Usage in ``message_delta`` is cumulative and overwrites what ``message_start``
    said (input tokens may arrive only there). A tool call whose JSON arguments were
    cut off (``max_tokens`` before the block ended, or before the JSON did) is not a
    call: it gets no ``ToolCallEnd`` and is left out of the final message, so the
    message never asks for a call with half its arguments nor leaves a ``tool_use``
    without a result in the history. A stream that ends before ``message_delta`` or
    ``message_stop`` is a ``NetworkError``; an ``error`` event raises its typed error.
    """

    def __init__(self, model: str, *, price_provider: str | None = "anthropic") -> None:
        self._model = model
        self._price_provider = price_provider
        self._response_model: str | None = None
        self._response_id: str | None = None
        self._slots: dict[int, _Slot] = {}
        self._raw_usage: dict[str, int] = {}
        self._stop_reason: str | None = None
        self._message_stopped = False

    # feeding

    def feed(self, event: ServerSentEvent) -> list[StreamEvent]:
        """The stream events of one SSE event (ping and unknown events: none)."""
        try:
            data = _loads(event.data)
        except ValueError:
            raise ServerError(
                f"Anthropic sent an event that is not JSON: {event.data[:200]!r}",
                provider="anthropic",
            ) from None
        if not isinstance(data, dict):
            return []
        kind = data.get("type") or event.event
        if kind == "error" or event.event == "error":
            raise _stream_error(data.get("error"))
        if kind == "message_start":
            message = data.get("message") or {}
            self._response_id = message.get("id") or self._response_id
            self._response_model = message.get("model") or self._response_model
            self._take_usage(message.get("usage"))
            return []
        if kind == "content_block_start":
            return self._start(data.get("index", 0), data.get("content_block") or {})
        if kind == "content_block_delta":
            return self._delta(data.get("index", 0), data.get("delta") or {})
        if kind == "content_block_stop":
            return self._stop(data.get("index", 0))
        if kind == "message_delta":
            delta = data.get("delta") or {}
            if delta.get("stop_reason") is not None:
                self._stop_reason = delta["stop_reason"]
            self._take_usage(data.get("usage"))
            return []
        if kind == "message_stop":
            self._message_stopped = True
        return []  # ping, and event types added after this was written

    def _start(self, index: int, block: dict[str, Any]) -> list[StreamEvent]:
        kind = block.get("type")
        if kind == "text":
            slot = self._slots[index] = _Slot("text")
            text = block.get("text") or ""
            if text:
                slot.parts.append(text)
                return [TextDelta(index=index, text=text)]
        elif kind == "thinking":
            slot = self._slots[index] = _Slot("thinking", signature=block.get("signature") or None)
            thinking = block.get("thinking") or ""
            if thinking:
                slot.parts.append(thinking)
                return [ThinkingDelta(index=index, thinking=thinking)]
        elif kind == "redacted_thinking":
            self._slots[index] = _Slot("redacted_thinking", data=block.get("data") or "")
        elif kind == "tool_use":
            start_input = block.get("input")
            slot = self._slots[index] = _Slot(
                "tool_use",
                id=str(block.get("id") or f"toolu_{index}"),
                name=str(block.get("name") or ""),
                start_input=start_input if isinstance(start_input, dict) else None,
            )
            return [ToolCallStart(index=index, id=slot.id, name=slot.name)]
        else:
            # Server tool calls and results, compaction, and whatever comes next:
            # kept as sent, to be replayed to Anthropic.
            self._slots[index] = _Slot("native", start_input=dict(block))
        return []

    def _delta(self, index: int, delta: dict[str, Any]) -> list[StreamEvent]:
        slot = self._slots.get(index)
        if slot is None:
            return []
        kind = delta.get("type")
        if kind == "text_delta" and slot.kind == "text":
            text = delta.get("text") or ""
            if text:
                slot.parts.append(text)
                return [TextDelta(index=index, text=text)]
        elif kind == "thinking_delta" and slot.kind == "thinking":
            thinking = delta.get("thinking") or ""
            if thinking:
                slot.parts.append(thinking)
                return [ThinkingDelta(index=index, thinking=thinking)]
        elif kind == "signature_delta" and slot.kind == "thinking":
            slot.signature = delta.get("signature") or slot.signature
        elif kind == "input_json_delta" and slot.kind == "tool_use":
            partial = delta.get("partial_json") or ""
            if partial:
                slot.parts.append(partial)
                return [ToolCallDelta(index=index, id=slot.id, partial_json=partial)]
        elif slot.kind == "native" and slot.start_input is not None:
            if kind == "input_json_delta":
                slot.parts.append(delta.get("partial_json") or "")
            elif kind:
                # A delta of a block we do not model (compaction_delta...) carries
                # the block's own fields: they replace what the start said.
                slot.start_input.update((k, v) for k, v in delta.items() if k != "type")
        return []

    def _stop(self, index: int) -> list[StreamEvent]:
        slot = self._slots.get(index)
        if slot is None or slot.stopped:
            return []
        slot.stopped = True
        if slot.kind == "native":
            slot.native = _native_block(slot)
            return []
        if slot.kind != "tool_use":
            return []
        slot.input = _parse_arguments(slot)
        if slot.input is None:
            log.warning("tool call %s (%s): arguments are not a JSON object", slot.id, slot.name)
            return []
        return [ToolCallEnd(index=index, id=slot.id, name=slot.name, input=slot.input)]

    def _take_usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        for key in (
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ):
            value = usage.get(key)
            if isinstance(value, int):
                self._raw_usage[key] = value  # cumulative: the latest count wins
        details = usage.get("output_tokens_details")
        if isinstance(details, dict) and isinstance(details.get("thinking_tokens"), int):
            self._raw_usage["thinking_tokens"] = details["thinking_tokens"]

    # results

    def usage(self) -> Usage:
        """The usage so far, normalized (input includes cache reads and writes)."""
        raw = self._raw_usage
        cache_read = raw.get("cache_read_input_tokens", 0)
        cache_write = raw.get("cache_creation_input_tokens", 0)
        usage = Usage(
            input_tokens=raw.get("input_tokens", 0) + cache_read + cache_write,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
            output_tokens=raw.get("output_tokens", 0),
            reasoning_tokens=raw.get("thinking_tokens", 0),
        )
        return with_cost(self._price_provider, self._response_model or self._model, usage)

    def partial(self) -> Message | None:
        """Text and thinking so far and the tool calls that completed, or None."""
        blocks = self._blocks()
        return Message(role="assistant", content=blocks) if blocks else None

    def finish(self) -> Done:
        """The final result; raises when the stream stopped before the message ended."""
        if not self._message_stopped and self._stop_reason is None:
            raise NetworkError(
                "the Anthropic stream ended before the message was complete",
                provider="anthropic",
            )
        unfinished = [s for s in self._slots.values() if s.kind == "tool_use" and s.input is None]
        if unfinished and self._stop_reason != "max_tokens":
            names = ", ".join(s.name for s in unfinished)
            raise LLMError(
                f"Anthropic returned a tool call with invalid JSON arguments ({names})",
                provider="anthropic",
                error_type="invalid_tool_arguments",
            )
        stop_reason = _STOP_REASONS.get(self._stop_reason or "end_turn", "end_turn")
        return Done(
            message=Message(role="assistant", content=self._blocks()),
            stop_reason=stop_reason,
            usage=self.usage(),
            model=self._response_model or self._model,
            response_id=self._response_id,
        )

    def _blocks(self) -> list[ContentBlock]:
        blocks: list[ContentBlock] = []
        for _, slot in sorted(self._slots.items()):
            if slot.kind == "text":
                text = "".join(slot.parts)
                if text:
                    blocks.append(TextBlock(text=text))
            elif slot.kind == "thinking":
                blocks.append(
                    ThinkingBlock(
                        thinking="".join(slot.parts),
                        signature=slot.signature,
                        provider="anthropic",
                    )
                )
            elif slot.kind == "redacted_thinking":
                blocks.append(RedactedThinkingBlock(data=slot.data))
            elif slot.kind == "tool_use" and slot.input is not None:
                blocks.append(ToolUseBlock(id=slot.id, name=slot.name, input=slot.input))
            elif slot.kind == "native" and slot.native is not None:
                blocks.append(NativeBlock(provider="anthropic", data=slot.native))
        return blocks


def _loads(text: str) -> Any:
    """An event's JSON: orjson (3× faster on these small objects), json for what orjson
    refuses and json accepts (NaN, integers beyond 64 bits, lone surrogates)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _parse_arguments(slot: _Slot) -> dict[str, Any] | None:
    text = "".join(slot.parts)
    if not text.strip():
        # No deltas: a tool without arguments, or a server that sent them whole.
        return dict(slot.start_input or {})
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _native_block(slot: _Slot) -> dict[str, Any] | None:
    """The block as sent, its streamed ``input`` parsed; None when that JSON was cut
    off (a server tool call that never ran is not one to replay)."""
    block = dict(slot.start_input or {})
    text = "".join(slot.parts)
    if text.strip():
        try:
            value = json.loads(text)
        except ValueError:
            return None
        if not isinstance(value, dict):
            return None
        block["input"] = value
    return block


def _stream_error(error: Any) -> LLMError:
    error = error if isinstance(error, dict) else {}
    error_type = str(error.get("type") or "api_error")
    message = str(error.get("message") or error_type)
    return error_for_status(
        _ERROR_STATUS.get(error_type, 500),
        message,
        provider="anthropic",
        error_type=error_type,
    )
