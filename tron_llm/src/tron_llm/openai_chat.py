"""OpenAI Chat Completions (``POST /chat/completions``, streamed), for OpenAI itself
and any OpenAI-compatible server through ``base_url`` (Ollama, vLLM, llama.cpp,
OpenRouter, LM Studio...).

Request mapping:

- the system prompt is a ``system`` message (every compatible server knows it; the
  ``developer`` role is not needed);
- tool results become ``role: "tool"`` messages, one per result, in order, right after
  the assistant message that called them; their text parts are joined, and their
  images (a tool message holds text only) go in a ``user`` message after them.
  ``is_error`` has no field here: the result's own text says what failed;
- assistant tool calls carry their input as a JSON string; ids go through
  ``ToolIdMap`` (OpenAI allows at most 40 characters);
- images are ``image_url`` parts (``data:`` URLs for inline bytes);
- thinking: Chat Completions takes no reasoning input, so this adapter's own thinking
  (and OpenAI Responses reasoning) is dropped; thinking made by another provider
  (Anthropic, Gemini) is sent as plain assistant text, so a model switch keeps it;
  redacted thinking is dropped. The exception is OpenRouter's ``reasoning_details``
  (signed Claude thinking, Gemini's encrypted reasoning): kept as a ``NativeBlock``
  and sent back on the assistant message, as OpenRouter requires for tool calls with
  reasoning on (never to api.openai.com, which knows no such field);
- ``max_completion_tokens`` on api.openai.com (reasoning models reject
  ``max_tokens``), ``max_tokens`` elsewhere (what Ollama, llama.cpp and older vLLM
  read);
- the reasoning level becomes ``reasoning_effort``; ``xhigh`` is sent as ``high``
  except to models documented to accept it (see ``_openai_common.reasoning_effort``).
  No level means the parameter is left out (the model's default);
- ``stream_options.include_usage`` asks for the final usage chunk.

The stream parser accepts what compatible servers really send: tool-call fragments
keyed by ``index``, a new call when the ``id`` changes under the same index (Ollama
reuses index 0), whole arguments in one chunk or as an object, missing ids (vLLM),
reasoning as ``reasoning_content`` or ``reasoning`` (and OpenRouter's
``reasoning_details`` fragments, merged by their ``index``), usage in the
``choices: []`` chunk or on the last choice chunk, error objects mid-stream, and
Azure's prompt-filter chunk (empty ``id`` and ``model``, no choices). Only choice 0
is read: a chunk without it adds nothing to the message.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any, ClassVar

from tron_events.messages import (
    ContentBlock,
    ImageBlock,
    Message,
    NativeBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

from ._cost import with_cost
from ._http import HTTPCall, StreamParser
from ._ids import ToolIdMap
from ._openai_common import (
    OPENAI_THINKING_PROVIDER,
    OpenAIHTTPProvider,
    image_url,
    openai_error,
    parse_arguments,
    reasoning_effort,
    tool_id_map,
    tool_result_parts,
    usage_from,
)
from ._schema import for_openai
from ._sse import ServerSentEvent
from ._types import (
    Done,
    LLMRequest,
    StopReason,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from ._wire_cache import WireCache, convert_each
from .errors import NetworkError, ServerError

__all__ = ["OpenAIChatProvider"]

_FINISH: dict[str, StopReason] = {
    "stop": "end_turn",
    "eos": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


PROVIDER = "openai"
"""``NativeBlock.provider`` of what this adapter keeps (OpenRouter's reasoning details)."""

# The fields of a reasoning_details entry that stream in pieces; the others (type,
# format, id, index) are repeated in every piece and keep their first value.
_DETAIL_TEXT = frozenset({"text", "summary", "data", "signature"})


class OpenAIChatProvider(OpenAIHTTPProvider):
    """Chat Completions over raw httpx (see the module docstring for the mapping).

    Without ``base_url`` it talks to OpenAI and needs ``OPENAI_API_KEY``. With another
    ``base_url`` (``http://localhost:11434/v1`` for Ollama) no key is required, and
    cost is left unknown (a local model's price is not OpenAI's).
    """

    name: ClassVar[str] = PROVIDER
    #: Each history message's wire messages, converted once (created on first use).
    _wire_cache: WireCache[list[dict[str, Any]]] | None = None

    def build_call(self, request: LLMRequest) -> HTTPCall:
        """The ``/chat/completions`` request for ``request``."""
        return HTTPCall(path="/chat/completions", body=self.build_body(request))

    def build_body(self, request: LLMRequest, *, cached: bool = True) -> dict[str, Any]:
        """The JSON body (public for tests that validate it against the SDK's types).
        ``cached``: reuse the messages converted for an earlier request (same body)."""
        cache = self._wire_cache
        if cache is None and cached:
            cache = self._wire_cache = WireCache()
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.extend(
            to_chat_messages(
                request.messages,
                # Only written: a sent id is a function of the id (``safe_tool_id``);
                # the parser makes its own map for the ids that come back.
                ToolIdMap(),
                reasoning_details=not self.is_openai,
                cache=cache if cached else None,
            )
        )
        body: dict[str, Any] = {
            "model": request.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        body["max_completion_tokens" if self.is_openai else "max_tokens"] = request.max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.stop_sequences:
            body["stop"] = list(request.stop_sequences)
        if request.reasoning is not None:
            body["reasoning_effort"] = reasoning_effort(request.reasoning, request.model)
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": for_openai(tool.input_schema),
                    },
                }
                for tool in request.tools
            ]
        if request.tool_choice is not None:
            body["tool_choice"] = {"type": "function", "function": {"name": request.tool_choice}}
        return body

    def new_parser(self, request: LLMRequest) -> StreamParser:
        """A parser for one streamed response."""
        return ChatStreamParser(
            request,
            tool_id_map(request),
            provider=self.name,
            price_provider=self.price_provider,
        )


# --- messages ---------------------------------------------------------------------


def _is_own_thinking(block: ThinkingBlock) -> bool:
    return (block.provider or "anthropic").startswith(OPENAI_THINKING_PROVIDER)


def to_chat_messages(
    messages: list[Message],
    ids: ToolIdMap,
    *,
    reasoning_details: bool = True,
    cache: WireCache[list[dict[str, Any]]] | None = None,
) -> list[dict[str, Any]]:
    """Our messages as Chat Completions messages (without the system message).
    ``reasoning_details``: send back the details a compatible server gave (fixed for
    an adapter, so ``cache``, the adapter's, holds one form per message). With
    ``cache``, the ids of a cached message are not registered in ``ids`` again (a
    reverse map must come from ``tool_id_map``)."""

    def convert(message: Message) -> list[dict[str, Any]]:
        if message.role == "assistant":
            assistant = _assistant_message(message, ids, reasoning_details)
            return [] if assistant is None else [assistant]
        return _user_messages(message, ids)

    return convert_each(messages, convert, cache)


def _assistant_message(
    message: Message, ids: ToolIdMap, reasoning_details: bool
) -> dict[str, Any] | None:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    details: list[Any] = []
    for block in message.content:
        if isinstance(block, NativeBlock) and block.provider == PROVIDER:
            kept = block.data.get("reasoning_details")
            if reasoning_details and isinstance(kept, list):
                details.extend(kept)
        if isinstance(block, TextBlock) and block.text:
            texts.append(block.text)
        elif isinstance(block, ThinkingBlock) and block.thinking and not _is_own_thinking(block):
            texts.append(block.thinking)
        elif isinstance(block, ToolUseBlock):
            calls.append(
                {
                    "id": ids.out(block.id),
                    "type": "function",
                    "function": {
                        "name": block.name,
                        "arguments": json.dumps(block.input, ensure_ascii=False),
                    },
                }
            )
    if not texts and not calls:
        # Only thinking that cannot be sent: nothing to say. An empty assistant
        # message is rejected by some servers.
        return None
    result: dict[str, Any] = {"role": "assistant", "content": "\n\n".join(texts) or None}
    if calls:
        result["tool_calls"] = calls
    if details:
        result["reasoning_details"] = details
    return result


def _user_messages(message: Message, ids: ToolIdMap) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, ToolResultBlock):
            text, images = tool_result_parts(block)
            tool_id = ids.out(block.tool_use_id)
            out.append({"role": "tool", "tool_call_id": tool_id, "content": text})
            if images:
                parts.append({"type": "text", "text": f"Images returned by tool call {tool_id}:"})
                parts.extend(_image_part(image) for image in images)
        elif isinstance(block, TextBlock) and block.text:
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageBlock):
            parts.append(_image_part(block))
    if parts:
        if all(part["type"] == "text" for part in parts):
            # A plain string is what every compatible server accepts.
            out.append({"role": "user", "content": "\n\n".join(p["text"] for p in parts)})
        else:
            out.append({"role": "user", "content": parts})
    return out


def _image_part(block: ImageBlock) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": image_url(block)}}


# --- the stream ---------------------------------------------------------------------


class _ToolSlot:
    """One tool call being assembled from fragments."""

    def __init__(self, key: int | None, tool_id: str | None) -> None:
        self.key = key
        self.id = tool_id
        self.name = ""
        self.arguments = ""
        self.block_index = -1  # assigned when the call starts (its name is known)
        self.ended = False
        self.input: dict[str, Any] = {}

    @property
    def started(self) -> bool:
        return self.block_index >= 0


def _is_first_choice(choice: Any) -> bool:
    if not isinstance(choice, Mapping):
        return False
    index = choice.get("index")
    return index is None or (type(index) is int and index == 0)


class ChatStreamParser(StreamParser):
    """Turns Chat Completions chunks into stream events."""

    def __init__(
        self,
        request: LLMRequest,
        ids: ToolIdMap,
        *,
        provider: str = "openai",
        price_provider: str | None = None,
    ) -> None:
        self.request = request
        self.ids = ids
        self.provider = provider
        self.price_provider = price_provider
        # Content in order; each entry is a text, a thinking or a tool slot.
        self.blocks: list[tuple[str, list[str]] | _ToolSlot] = []
        self.slots: list[_ToolSlot] = []
        self.finish_reason: str | None = None
        self.matched_stop: str | None = None
        self.refused = False
        self.done = False
        self.response_id: str | None = None
        self.model: str | None = None
        self._usage: Usage | None = None
        self.details: dict[int, dict[str, Any]] = {}  # OpenRouter's reasoning_details

    # --- StreamParser ------------------------------------------------------------

    def feed(self, event: ServerSentEvent) -> list[StreamEvent]:
        """Stream events for one ``data:`` chunk; raises ``LLMError`` for an error."""
        data = event.data.strip()
        if not data:
            return []
        if data == "[DONE]":
            self.done = True
            return []
        try:
            chunk = json.loads(data)
        except ValueError as exc:
            raise ServerError(
                f"the server sent a chunk that is not JSON: {data[:200]!r}",
                provider=self.provider,
            ) from exc
        if not isinstance(chunk, dict):
            return []
        error = chunk.get("error")
        if error:
            if not isinstance(error, Mapping):
                error = {"message": str(error)}
            raise openai_error(error, provider=self.provider)
        # The first id and model that say something: Azure opens with a prompt-filter
        # chunk whose id and model are empty strings.
        if self.response_id is None and isinstance(chunk.get("id"), str) and chunk["id"]:
            self.response_id = chunk["id"]
        if self.model is None and isinstance(chunk.get("model"), str) and chunk["model"]:
            self.model = chunk["model"]
        usage = chunk.get("usage")
        if isinstance(usage, Mapping) and usage:
            self._usage = usage_from(usage)
        events: list[StreamEvent] = []
        choices = chunk.get("choices")
        if isinstance(choices, list):
            # We ask for one choice, number 0 (a server that leaves the index out means
            # it too). Another choice is never read as ours.
            choice = next((c for c in choices if _is_first_choice(c)), None)
            if choice is not None:
                events.extend(self._choice(choice))
        return events

    def finish(self) -> Done:
        """The final message once the stream ended."""
        if not self.done and self.finish_reason is None:
            raise NetworkError(
                "the stream ended before the response was complete (no finish_reason, no "
                "[DONE]); the connection may have dropped: try again",
                provider=self.provider,
            )
        # Calls still open (a server that never sent finish_reason) end now.
        for slot in self.slots:
            if slot.started and not slot.ended:
                self._end(slot)
        return Done(
            message=self._message(include_open_calls=True),
            stop_reason=self._stop_reason(),
            usage=self.usage(),
            model=self.model or self.request.model,
            response_id=self.response_id,
        )

    def partial(self) -> Message | None:
        """Text, thinking and finished tool calls streamed so far."""
        message = self._message(include_open_calls=False)
        return message if message.content else None

    def usage(self) -> Usage:
        """The usage of the final chunk (zero until it arrives), priced on OpenAI."""
        usage = self._usage or Usage()
        if self.price_provider is None:
            return usage
        return with_cost(self.price_provider, self.model or self.request.model, usage)

    # --- chunks --------------------------------------------------------------------

    def _choice(self, choice: Mapping[str, Any]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        delta = choice.get("delta")
        if isinstance(delta, Mapping):
            # llama.cpp and older vLLM say reasoning_content; Ollama, newer vLLM and
            # OpenRouter say reasoning. Some send both with the same text: read one.
            reasoning = delta.get("reasoning_content")
            if not isinstance(reasoning, str) or not reasoning:
                reasoning = delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                index = self._open("thinking", reasoning)
                events.append(ThinkingDelta(index=index, thinking=reasoning))
            details = delta.get("reasoning_details")
            if isinstance(details, list):
                self._take_details(details)
            content = delta.get("content")
            if isinstance(content, str) and content:
                index = self._open("text", content)
                events.append(TextDelta(index=index, text=content))
            refusal = delta.get("refusal")
            if isinstance(refusal, str) and refusal:
                self.refused = True
                index = self._open("text", refusal)
                events.append(TextDelta(index=index, text=refusal))
            calls = delta.get("tool_calls")
            if isinstance(calls, list):
                for call in calls:
                    if isinstance(call, Mapping):
                        events.extend(self._tool_fragment(call))
            legacy = delta.get("function_call")
            if isinstance(legacy, Mapping):
                events.extend(self._tool_fragment({"index": 0, "function": legacy}))
        reason = choice.get("finish_reason")
        if isinstance(reason, str) and reason:
            self.finish_reason = reason
            # vLLM names the stop string that matched; OpenAI says only "stop".
            matched = choice.get("stop_reason")
            if isinstance(matched, str) and matched in self.request.stop_sequences:
                self.matched_stop = matched
            for slot in self.slots:
                if slot.started and not slot.ended:
                    events.append(self._end(slot))
        return events

    def _take_details(self, pieces: list[Any]) -> None:
        """Merge ``reasoning_details`` pieces into the entries they continue (by
        ``index``): streamed text fields are joined, the rest keeps its first value."""
        for piece in pieces:
            if not isinstance(piece, Mapping):
                continue
            index = piece.get("index")
            key = index if type(index) is int else len(self.details)
            entry = self.details.setdefault(key, {})
            for name, value in piece.items():
                if name in _DETAIL_TEXT and isinstance(value, str):
                    previous = entry.get(name)
                    entry[name] = (previous if isinstance(previous, str) else "") + value
                elif entry.get(name) is None:
                    entry[name] = value

    def _open(self, kind: str, piece: str) -> int:
        """Append ``piece`` to the last block if it is a ``kind`` block, else start one;
        return the block's index."""
        if self.blocks:
            last = self.blocks[-1]
            if isinstance(last, tuple) and last[0] == kind:
                last[1].append(piece)
                return len(self.blocks) - 1
        self.blocks.append((kind, [piece]))
        return len(self.blocks) - 1

    def _slot_for(self, key: int | None, tool_id: str | None) -> _ToolSlot:
        if tool_id:
            for slot in self.slots:
                if slot.id == tool_id:
                    return slot
        same_key = [s for s in self.slots if s.key == key] if key is not None else []
        current = (
            same_key[-1] if same_key else (self.slots[-1] if key is None and self.slots else None)
        )
        # A new id under an index already holding another call: Ollama numbers every
        # parallel call 0. Without an index, an id starts a new call too.
        if current is None or (tool_id and current.id and current.id != tool_id):
            slot = _ToolSlot(key, tool_id)
            self.slots.append(slot)
            return slot
        if tool_id and not current.id:
            current.id = tool_id
        return current

    def _tool_fragment(self, call: Mapping[str, Any]) -> list[StreamEvent]:
        index = call.get("index")
        key = index if isinstance(index, int) else None
        tool_id = call.get("id") if isinstance(call.get("id"), str) else None
        slot = self._slot_for(key, tool_id or None)
        function = call.get("function")
        function = function if isinstance(function, Mapping) else {}
        name = function.get("name")
        if isinstance(name, str) and name and not slot.name:
            slot.name = name
        arguments = function.get("arguments")
        if isinstance(arguments, Mapping):
            # Some proxies pass arguments as an object, whole.
            piece = json.dumps(arguments, ensure_ascii=False)
        elif isinstance(arguments, str):
            piece = arguments
        else:
            piece = ""
        events: list[StreamEvent] = []
        if slot.ended:
            return events
        if not slot.started:
            if not slot.name:
                slot.arguments += piece  # sent once the name arrives
                return events
            if slot.id is None:
                # vLLM streams calls without ids; the result must still pair with it.
                slot.id = f"call_{uuid.uuid4().hex[:24]}"
            self.blocks.append(slot)
            slot.block_index = len(self.blocks) - 1
            tool_id = self.ids.back(slot.id)
            events.append(ToolCallStart(index=slot.block_index, id=tool_id, name=slot.name))
            piece = slot.arguments + piece
            slot.arguments = ""
        if piece:
            slot.arguments += piece
            events.append(
                ToolCallDelta(
                    index=slot.block_index, id=self.ids.back(slot.id or ""), partial_json=piece
                )
            )
        return events

    def _end(self, slot: _ToolSlot) -> ToolCallEnd:
        slot.ended = True
        slot.input = parse_arguments(slot.arguments, name=slot.name, provider=self.provider)
        return ToolCallEnd(
            index=slot.block_index,
            id=self.ids.back(slot.id or ""),
            name=slot.name,
            input=slot.input,
        )

    # --- results -------------------------------------------------------------------

    def _message(self, *, include_open_calls: bool) -> Message:
        content: list[ContentBlock] = []
        for block in self.blocks:
            if isinstance(block, _ToolSlot):
                if block.ended or include_open_calls:
                    content.append(
                        ToolUseBlock(
                            id=self.ids.back(block.id or ""), name=block.name, input=block.input
                        )
                    )
            elif block[0] == "thinking":
                content.append(
                    ThinkingBlock(thinking="".join(block[1]), provider=OPENAI_THINKING_PROVIDER)
                )
            else:
                content.append(TextBlock(text="".join(block[1])))
        if self.details:
            details = [self.details[key] for key in sorted(self.details)]
            content.append(NativeBlock(provider=PROVIDER, data={"reasoning_details": details}))
        return Message(role="assistant", content=content)

    def _stop_reason(self) -> StopReason:
        has_calls = any(slot.started for slot in self.slots)
        reason = self.finish_reason
        if reason == "length":
            return "max_tokens"
        if self.refused or reason == "content_filter":
            return "refusal"
        if has_calls:
            # Some proxies say "stop" after tool calls; the calls decide.
            return "tool_use"
        if self.matched_stop is not None:
            return "stop_sequence"
        return _FINISH.get(reason or "stop", "end_turn")
