"""OpenAI Responses (``POST /responses``, streamed, stateless).

Request mapping:

- ``store: false``: nothing is kept on OpenAI's side, so the whole history is sent
  every time; reasoning survives between calls as ``encrypted_content``, asked for
  with ``include: ["reasoning.encrypted_content"]`` on reasoning models (o-series,
  GPT-5, codex, gpt-oss; or any model when a reasoning level is set). Other models
  reject that include, so it is left out for them;
- ``instructions`` is the system prompt;
- user text and images are ``input_text`` / ``input_image`` parts; assistant text is
  an assistant message (string content: the form the SDK's input types accept
  without the output item's id) with the ``phase`` it came with (``commentary``,
  ``final_answer``: OpenAI asks to have it resent);
- tool calls are ``function_call`` items (``call_id``, ``name``, JSON ``arguments``)
  and results ``function_call_output`` items (text, or text and image parts), ids
  through ``ToolIdMap`` (``is_error`` has no field: the output's text says it);
- a ``ThinkingBlock`` this adapter produced (``provider="openai"`` with an
  ``item_id`` and ``encrypted_content`` in ``signature``) is replayed as the same
  reasoning item (id, summary, encrypted content), in its place before the item that
  followed it. Thinking from another provider is sent as assistant text; OpenAI
  reasoning that cannot be replayed (no encrypted content), or that no message or
  function call follows (an aborted turn, reasoning before a compaction item), is
  dropped;
- the reasoning level becomes ``reasoning: {effort, summary: "auto"}``
  (``xhigh`` → ``high`` except on models documented to accept it);
- stop sequences: the Responses API has none, so they are not sent.

The stream: output items bracket each message, reasoning and function call;
argument deltas name the item (``fc_…``), mapped here to its ``call_id``; the
terminal event is ``response.completed`` (usage), ``response.incomplete``
(``max_output_tokens`` → ``max_tokens``) or ``response.failed``; ``error`` events
come flat or nested and become typed errors. The terminal event's ``output`` is the
final word on every item, matched by position (``output_index``): the encrypted
reasoning content it carries is not the one ``output_item.done`` carried, and
compatible servers rename items between the two.

Items Tron does not model (built-in tool calls such as ``web_search_call``,
``code_interpreter_call``, ``mcp_call``; ``compaction``) are kept as ``NativeBlock``
(provider ``openai-responses``) with the item as sent. Of those, only compaction
items are sent back (their encrypted content, without the id): with ``store: false``
the API rejects the ids of items it did not store, and a built-in tool call cannot
be sent without its id.
"""

from __future__ import annotations

import json
import re
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

__all__ = ["OpenAIResponsesProvider", "is_reasoning_model"]

_REASONING_MODEL = re.compile(r"^(?:openai/)?(?:o\d|gpt-5|gpt-oss|codex)")
_CHAT_MODEL = re.compile(r"-chat(?:-|$)")  # gpt-5-chat-latest does not reason


def is_reasoning_model(model: str) -> bool:
    """Whether ``model`` is an OpenAI reasoning model (returns reasoning items)."""
    return bool(_REASONING_MODEL.match(model)) and not _CHAT_MODEL.search(model)


PROVIDER = "openai-responses"
"""``NativeBlock.provider`` of the items this adapter keeps."""


class OpenAIResponsesProvider(OpenAIHTTPProvider):
    """The Responses API over raw httpx (see the module docstring for the mapping)."""

    name: ClassVar[str] = PROVIDER
    #: Each history message's input items, converted once, by ``replay_reasoning``
    #: (created on first use).
    _wire_caches: dict[bool, WireCache[list[dict[str, Any]]]] | None = None

    def build_call(self, request: LLMRequest) -> HTTPCall:
        """The ``/responses`` request for ``request``."""
        return HTTPCall(path="/responses", body=self.build_body(request))

    def build_body(self, request: LLMRequest, *, cached: bool = True) -> dict[str, Any]:
        """The JSON body (public for tests that validate it against the SDK's types).
        ``cached``: reuse the items converted for an earlier request (same body)."""
        reasoning = request.reasoning is not None or is_reasoning_model(request.model)
        cache = None
        if cached:
            caches = self._wire_caches
            if caches is None:
                caches = self._wire_caches = {}
            cache = caches.get(reasoning)
            if cache is None:
                cache = caches[reasoning] = WireCache()
        body: dict[str, Any] = {
            "model": request.model,
            "input": to_input_items(
                # ToolIdMap(): only written (a sent id is a function of the id); the
                # parser makes its own map for the ids that come back.
                request.messages,
                ToolIdMap(),
                replay_reasoning=reasoning,
                cache=cache,
            ),
            "stream": True,
            "store": False,
            "max_output_tokens": request.max_tokens,
        }
        if reasoning:
            body["include"] = ["reasoning.encrypted_content"]
        if request.system:
            body["instructions"] = request.system
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.reasoning is not None:
            body["reasoning"] = {
                "effort": reasoning_effort(request.reasoning, request.model),
                "summary": "auto",
            }
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": for_openai(tool.input_schema),
                    # Responses defaults to strict schemas, which most tool schemas
                    # (optional fields, free-form objects) do not satisfy.
                    "strict": False,
                }
                for tool in request.tools
            ]
        if request.tool_choice is not None:
            body["tool_choice"] = {"type": "function", "name": request.tool_choice}
        return body

    def new_parser(self, request: LLMRequest) -> StreamParser:
        """A parser for one streamed response."""
        return ResponsesStreamParser(
            request, tool_id_map(request), provider=self.name, price_provider=self.price_provider
        )


# --- input items ------------------------------------------------------------------


def _replayable(block: ThinkingBlock) -> bool:
    return block.provider == OPENAI_THINKING_PROVIDER and bool(block.item_id and block.signature)


def to_input_items(
    messages: list[Message],
    ids: ToolIdMap,
    *,
    replay_reasoning: bool = True,
    cache: WireCache[list[dict[str, Any]]] | None = None,
) -> list[dict[str, Any]]:
    """Our messages as Responses input items. ``cache`` (one per ``replay_reasoning``):
    the items of messages converted before; the ids of a cached message are then not
    registered in ``ids`` again (a reverse map must come from ``tool_id_map``)."""

    def convert(message: Message) -> list[dict[str, Any]]:
        if message.role == "assistant":
            return _assistant_items(message, ids, replay_reasoning)
        return _user_items(message, ids)

    return convert_each(messages, convert, cache)


def _assistant_items(
    message: Message, ids: ToolIdMap, replay_reasoning: bool
) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    texts: list[str] = []
    phase: str | None = None  # of the texts pending: texts of two phases are two messages

    def flush_text() -> None:
        if texts:
            item = {"type": "message", "role": "assistant", "content": "\n\n".join(texts)}
            if phase is not None:
                item["phase"] = phase
            items.append(item)
            texts.clear()

    def add_text(text: str, text_phase: str | None) -> None:
        nonlocal phase
        if texts and text_phase != phase:
            flush_text()
        phase = text_phase
        texts.append(text)

    for block in message.content:
        if isinstance(block, TextBlock):
            if block.text:
                add_text(block.text, block.phase)
        elif isinstance(block, ThinkingBlock):
            if block.provider == OPENAI_THINKING_PROVIDER:
                if replay_reasoning and _replayable(block):
                    flush_text()
                    items.append(
                        {
                            "type": "reasoning",
                            "id": block.item_id,
                            "summary": (
                                [{"type": "summary_text", "text": block.thinking}]
                                if block.thinking
                                else []
                            ),
                            "encrypted_content": block.signature,
                        }
                    )
                # else: OpenAI reasoning without its encrypted content cannot be
                # replayed (store is false), and as text it would read as an answer.
            elif block.thinking:
                add_text(block.thinking, None)
        elif isinstance(block, ToolUseBlock):
            flush_text()
            items.append(
                {
                    "type": "function_call",
                    "call_id": ids.out(block.id),
                    "name": block.name,
                    "arguments": json.dumps(block.input, ensure_ascii=False),
                }
            )
        elif isinstance(block, NativeBlock):
            item = _replayable_native(block)
            if item is not None:
                flush_text()
                items.append(item)
    flush_text()
    return _answered_reasoning(items)


#: The output items reasoning leads to: what the API wants after a reasoning item.
_REASONING_LEADS_TO = frozenset({"message", "function_call"})


def _answered_reasoning(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``items`` without the reasoning the model's output does not follow.

    A reasoning item must be followed by the output item it led to (a message or a
    function call; a run of reasoning items by the one their last led to), or the API
    rejects the input ("provided without its required following item"). An aborted
    turn can end in reasoning, and a ``compaction`` item is not an output of the
    reasoning before it: the compaction pass made it and it carries forward the
    state before it, reasoning included (OpenAI's compaction guide: items before the
    latest compaction item may be dropped). Such reasoning is dropped, the rest kept
    in order.
    """
    out: list[dict[str, Any]] = []
    run: list[dict[str, Any]] = []  # reasoning waiting for what follows it
    for item in items:
        if item["type"] == "reasoning":
            run.append(item)
            continue
        if item["type"] in _REASONING_LEADS_TO:
            out.extend(run)
        run = []
        out.append(item)
    return out


def _replayable_native(block: NativeBlock) -> dict[str, Any] | None:
    """The input item for a kept item of ours, or None when it cannot go back."""
    if block.provider != PROVIDER or block.data.get("type") != "compaction":
        return None
    encrypted = block.data.get("encrypted_content")
    if not isinstance(encrypted, str) or not encrypted:
        return None
    return {"type": "compaction", "encrypted_content": encrypted}


def _user_items(message: Message, ids: ToolIdMap) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, ToolResultBlock):
            text, images = tool_result_parts(block)
            output: str | list[dict[str, Any]] = text
            if images:
                output = [{"type": "input_text", "text": text}] if text else []
                output.extend(_image_part(image) for image in images)
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": ids.out(block.tool_use_id),
                    "output": output,
                }
            )
        elif isinstance(block, TextBlock) and block.text:
            parts.append({"type": "input_text", "text": block.text})
        elif isinstance(block, ImageBlock):
            parts.append(_image_part(block))
    if parts:
        items.append({"type": "message", "role": "user", "content": parts})
    return items


def _image_part(block: ImageBlock) -> dict[str, Any]:
    return {"type": "input_image", "image_url": image_url(block), "detail": "auto"}


# --- the stream ---------------------------------------------------------------------


class _Item:
    """One output item being assembled."""

    def __init__(self, kind: str, item_id: str, output_index: int | None = None) -> None:
        self.kind = kind  # "message", "reasoning", "function_call", or another item type
        self.item_id = item_id
        self.output_index = output_index
        self.data: dict[str, Any] | None = None  # an item we do not model, as sent
        self.phase: str | None = None  # a message's commentary / final_answer
        self.block_index = -1  # messages get one with their first text
        self.parts: list[str] = []
        self.summary_index: int | None = None
        self.encrypted: str | None = None
        self.call_id = ""
        self.name = ""
        self.arguments = ""
        self.final_arguments: str | None = None
        self.ended = False
        self.input: dict[str, Any] = {}


class ResponsesStreamParser(StreamParser):
    """Turns Responses stream events into our stream events."""

    def __init__(
        self,
        request: LLMRequest,
        ids: ToolIdMap,
        *,
        provider: str = "openai-responses",
        price_provider: str | None = None,
    ) -> None:
        self.request = request
        self.ids = ids
        self.provider = provider
        self.price_provider = price_provider
        self.items: dict[str, _Item] = {}
        self.blocks: list[_Item] = []
        self.terminal: str | None = None  # completed / incomplete
        self.incomplete_reason: str | None = None
        self.refused = False
        self.response_id: str | None = None
        self.model: str | None = None
        self._usage: Usage | None = None
        self._anonymous = 0

    # --- StreamParser ------------------------------------------------------------

    def feed(self, event: ServerSentEvent) -> list[StreamEvent]:
        """Stream events for one SSE event; raises ``LLMError`` for an error event."""
        data = event.data.strip()
        if not data or data == "[DONE]":
            return []
        try:
            payload = json.loads(data)
        except ValueError as exc:
            raise ServerError(
                f"the server sent an event that is not JSON: {data[:200]!r}",
                provider=self.provider,
            ) from exc
        if not isinstance(payload, dict):
            return []
        kind = payload.get("type") or event.event
        handler = _HANDLERS.get(str(kind))
        if handler is None:
            return []  # built-in tools, content_part/summary_part brackets, ...
        return handler(self, payload)

    def finish(self) -> Done:
        """The final message once the stream ended."""
        if self.terminal is None:
            raise NetworkError(
                "the stream ended before response.completed; the connection may have "
                "dropped: try again",
                provider=self.provider,
            )
        for item in self.blocks:
            if item.kind == "function_call" and not item.ended:
                self._end_call(item)
        return Done(
            message=self._message(include_open_calls=True),
            stop_reason=self._stop_reason(),
            usage=self.usage(),
            model=self.model or self.request.model,
            response_id=self.response_id,
        )

    def partial(self) -> Message | None:
        """Text, reasoning and finished tool calls streamed so far."""
        message = self._message(include_open_calls=False)
        return message if message.content else None

    def usage(self) -> Usage:
        """The usage of the terminal event (zero until then), priced on OpenAI."""
        usage = self._usage or Usage()
        if self.price_provider is None:
            return usage
        return with_cost(self.price_provider, self.model or self.request.model, usage)

    # --- events --------------------------------------------------------------------

    def _response(self, payload: Mapping[str, Any]) -> Mapping[str, Any]:
        response = payload.get("response")
        if not isinstance(response, Mapping):
            return {}
        if isinstance(response.get("id"), str):
            self.response_id = response["id"]
        if isinstance(response.get("model"), str) and response["model"]:
            self.model = response["model"]
        usage = response.get("usage")
        if isinstance(usage, Mapping) and usage:
            self._usage = usage_from(usage)
        return response

    def _on_created(self, payload: Mapping[str, Any]) -> list[StreamEvent]:
        self._response(payload)
        return []

    def _on_completed(self, payload: Mapping[str, Any]) -> list[StreamEvent]:
        response = self._response(payload)
        self.terminal = "completed"
        return self._reconcile(response) + self._end_open_calls()

    def _on_incomplete(self, payload: Mapping[str, Any]) -> list[StreamEvent]:
        response = self._response(payload)
        self.terminal = "incomplete"
        details = response.get("incomplete_details")
        if isinstance(details, Mapping) and isinstance(details.get("reason"), str):
            self.incomplete_reason = details["reason"]
        return self._reconcile(response) + self._end_open_calls()

    def _reconcile(self, response: Mapping[str, Any]) -> list[StreamEvent]:
        """Bring every item up to the terminal event's ``output``, the final word on
        them: matched by position (compatible servers rename items), else by id."""
        output = response.get("output")
        events: list[StreamEvent] = []
        for position, item in enumerate(output if isinstance(output, list) else []):
            if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
                continue
            entry = self._entry_for(position, item)
            if entry is None:
                # An item no event announced: take it as its done event would say it.
                events.extend(self._on_item_done({"item": item, "output_index": position}))
                continue
            entry.item_id = item["id"]
            events.extend(self._take(entry, item))
        return events

    def _entry_for(self, position: int, item: Mapping[str, Any]) -> _Item | None:
        kind = str(item.get("type"))
        at = [e for e in self.items.values() if e.output_index == position and e.kind == kind]
        if at:
            return at[0]
        entry = self.items.get(item["id"])
        return entry if entry is not None and entry.kind == kind else None

    def _on_failed(self, payload: Mapping[str, Any]) -> list[StreamEvent]:
        response = self._response(payload)
        error = response.get("error")
        if not isinstance(error, Mapping):
            error = {"message": "the response failed", "code": "server_error"}
        raise openai_error(error, provider=self.provider)

    def _on_error(self, payload: Mapping[str, Any]) -> list[StreamEvent]:
        # Documented flat ({"type":"error","code","message"}), seen nested too.
        error = payload.get("error")
        if not isinstance(error, Mapping):
            error = payload
        fields = {k: v for k, v in error.items() if k != "type" or error is not payload}
        raise openai_error(fields, provider=self.provider)

    def _item_for(self, payload: Mapping[str, Any], kind: str) -> _Item:
        item_id = payload.get("item_id")
        if isinstance(item_id, str) and item_id in self.items:
            return self.items[item_id]
        # A delta for an item whose output_item.added we never saw (a lenient
        # compatible server): start it now.
        if not isinstance(item_id, str):
            self._anonymous += 1
            item_id = f"{kind}_{self._anonymous}"
        item = _Item(kind, item_id, _output_index(payload))
        self.items[item_id] = item
        if kind not in ("message", "function_call"):
            self._place(item)  # messages are placed with their first text
        return item

    def _place(self, item: _Item) -> int:
        self.blocks.append(item)
        item.block_index = len(self.blocks) - 1
        return item.block_index

    def _on_item_added(self, payload: Mapping[str, Any]) -> list[StreamEvent]:
        item = payload.get("item")
        if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
            return []
        kind = str(item.get("type"))
        entry = _Item(kind, item["id"], _output_index(payload))
        self.items[entry.item_id] = entry
        if kind == "message":
            entry.phase = _phase(item)
            return []  # placed with its first text
        index = self._place(entry)  # reasoning is kept even without text: it is state
        if kind == "function_call":
            entry.call_id = str(item.get("call_id") or entry.item_id)
            entry.name = str(item.get("name") or "")
            events: list[StreamEvent] = [
                ToolCallStart(index=index, id=self.ids.back(entry.call_id), name=entry.name)
            ]
            arguments = item.get("arguments")
            if isinstance(arguments, str) and arguments:
                events.extend(self._arguments(entry, arguments))
            return events
        if kind != "reasoning":
            entry.data = dict(item)
        return []

    def _on_item_done(self, payload: Mapping[str, Any]) -> list[StreamEvent]:
        item = payload.get("item")
        if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
            return []
        entry = self.items.get(item["id"])
        events: list[StreamEvent] = []
        if entry is None:
            events.extend(self._on_item_added(payload))
            entry = self.items[item["id"]]
        events.extend(self._take(entry, item))
        if entry.kind == "function_call" and not entry.ended:
            events.append(self._end_call(entry))
        return events

    def _take(self, entry: _Item, item: Mapping[str, Any]) -> list[StreamEvent]:
        """Update ``entry`` from the whole ``item`` (a done or terminal event's)."""
        events: list[StreamEvent] = []
        if entry.kind == "reasoning":
            if isinstance(item.get("encrypted_content"), str):
                entry.encrypted = item["encrypted_content"]
            if not entry.parts:
                # No text streamed: take the summary (or raw reasoning) the item carries.
                text = "\n\n".join(_texts(item.get("summary"))) or "".join(
                    _texts(item.get("content"))
                )
                if text:
                    entry.parts.append(text)
                    events.append(ThinkingDelta(index=entry.block_index, thinking=text))
        elif entry.kind == "message":
            entry.phase = _phase(item) or entry.phase
            if not entry.parts:
                content = item.get("content")
                text = "".join(
                    c.get("text") or c.get("refusal") or ""
                    for c in (content if isinstance(content, list) else [])
                    if isinstance(c, Mapping)
                )
                if text:
                    events.extend(self._text(entry, text))
        elif entry.kind == "function_call":
            if isinstance(item.get("arguments"), str) and not entry.ended:
                entry.final_arguments = item["arguments"]
        else:
            entry.data = dict(item)
        return events

    def _text(self, item: _Item, text: str) -> list[StreamEvent]:
        if item.block_index < 0:
            self._place(item)
        item.parts.append(text)
        return [TextDelta(index=item.block_index, text=text)]

    def _on_text_delta(self, payload: Mapping[str, Any]) -> list[StreamEvent]:
        delta = payload.get("delta")
        if not isinstance(delta, str) or not delta:
            return []
        return self._text(self._item_for(payload, "message"), delta)

    def _on_refusal_delta(self, payload: Mapping[str, Any]) -> list[StreamEvent]:
        self.refused = True
        return self._on_text_delta(payload)

    def _on_summary_delta(self, payload: Mapping[str, Any]) -> list[StreamEvent]:
        delta = payload.get("delta")
        if not isinstance(delta, str) or not delta:
            return []
        item = self._item_for(payload, "reasoning")
        summary_index = payload.get("summary_index")
        if (
            isinstance(summary_index, int)
            and item.summary_index is not None
            and summary_index != item.summary_index
            and item.parts
        ):
            # A new summary part: keep the parts apart as the item's own summary does.
            delta = "\n\n" + delta
        if isinstance(summary_index, int):
            item.summary_index = summary_index
        item.parts.append(delta)
        return [ThinkingDelta(index=item.block_index, thinking=delta)]

    def _on_arguments_delta(self, payload: Mapping[str, Any]) -> list[StreamEvent]:
        delta = payload.get("delta")
        item_id = payload.get("item_id")
        item = self.items.get(item_id) if isinstance(item_id, str) else None
        if item is None or item.kind != "function_call" or not isinstance(delta, str):
            return []
        return self._arguments(item, delta)

    def _on_arguments_done(self, payload: Mapping[str, Any]) -> list[StreamEvent]:
        item_id = payload.get("item_id")
        item = self.items.get(item_id) if isinstance(item_id, str) else None
        if item is not None and isinstance(payload.get("arguments"), str):
            item.final_arguments = payload["arguments"]
        return []

    def _arguments(self, item: _Item, delta: str) -> list[StreamEvent]:
        if item.ended or not delta:
            return []
        item.arguments += delta
        return [
            ToolCallDelta(
                index=item.block_index, id=self.ids.back(item.call_id), partial_json=delta
            )
        ]

    def _end_call(self, item: _Item) -> ToolCallEnd:
        item.ended = True
        # The done event's full arguments win over the concatenated deltas.
        raw = item.final_arguments if item.final_arguments is not None else item.arguments
        item.arguments = raw
        item.input = parse_arguments(raw, name=item.name, provider=self.provider)
        return ToolCallEnd(
            index=item.block_index, id=self.ids.back(item.call_id), name=item.name, input=item.input
        )

    def _end_open_calls(self) -> list[StreamEvent]:
        return [
            self._end_call(item)
            for item in self.blocks
            if item.kind == "function_call" and not item.ended
        ]

    # --- results -------------------------------------------------------------------

    def _message(self, *, include_open_calls: bool) -> Message:
        content: list[ContentBlock] = []
        for item in self.blocks:
            if item.kind == "function_call":
                if item.ended or include_open_calls:
                    content.append(
                        ToolUseBlock(
                            id=self.ids.back(item.call_id), name=item.name, input=item.input
                        )
                    )
            elif item.kind == "reasoning":
                content.append(
                    ThinkingBlock(
                        thinking="".join(item.parts),
                        signature=item.encrypted,
                        provider=OPENAI_THINKING_PROVIDER,
                        item_id=item.item_id,
                    )
                )
            elif item.kind == "message":
                content.append(TextBlock(text="".join(item.parts), phase=item.phase))
            elif item.data is not None:
                content.append(NativeBlock(provider=PROVIDER, data=item.data))
        return Message(role="assistant", content=content)

    def _stop_reason(self) -> StopReason:
        if self.terminal == "incomplete":
            if self.incomplete_reason == "content_filter":
                return "refusal"
            return "max_tokens"
        if self.refused:
            return "refusal"
        if any(item.kind == "function_call" for item in self.blocks):
            return "tool_use"
        return "end_turn"


def _phase(item: Mapping[str, Any]) -> str | None:
    phase = item.get("phase")
    return phase if isinstance(phase, str) and phase else None


def _output_index(payload: Mapping[str, Any]) -> int | None:
    index = payload.get("output_index")
    return index if type(index) is int else None


def _texts(parts: Any) -> list[str]:
    """The non-empty ``text`` of each part of a summary or content list."""
    return [
        p["text"]
        for p in (parts if isinstance(parts, list) else [])
        if isinstance(p, Mapping) and isinstance(p.get("text"), str) and p["text"]
    ]


_HANDLERS = {
    "response.created": ResponsesStreamParser._on_created,
    "response.in_progress": ResponsesStreamParser._on_created,
    "response.queued": ResponsesStreamParser._on_created,
    "response.completed": ResponsesStreamParser._on_completed,
    "response.incomplete": ResponsesStreamParser._on_incomplete,
    "response.failed": ResponsesStreamParser._on_failed,
    "error": ResponsesStreamParser._on_error,
    "response.output_item.added": ResponsesStreamParser._on_item_added,
    "response.output_item.done": ResponsesStreamParser._on_item_done,
    "response.output_text.delta": ResponsesStreamParser._on_text_delta,
    "response.refusal.delta": ResponsesStreamParser._on_refusal_delta,
    "response.reasoning_summary_text.delta": ResponsesStreamParser._on_summary_delta,
    "response.reasoning_text.delta": ResponsesStreamParser._on_summary_delta,
    "response.function_call_arguments.delta": ResponsesStreamParser._on_arguments_delta,
    "response.function_call_arguments.done": ResponsesStreamParser._on_arguments_done,
}
