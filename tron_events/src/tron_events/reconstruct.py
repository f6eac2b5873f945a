"""Reconstruction: the messages and state at an event, from its ancestor path.

Pure functions over ``path`` (the events from the root to the target, root first,
as ``EventStore.get_ancestors`` returns them). DESIGN §4 is the specification; the
result must be a history every provider accepts, whatever order or damage the
stored events show:

* first pass: ``tool.call`` arguments by ``toolCallId`` (to restore tool inputs that
  normalization truncated) and the ids hidden by ``message.deleted``;
* second pass: messages. ``tool.result`` events become ``tool_result`` blocks in the
  user message right after the assistant message holding their ``tool_use`` (also
  when they were recorded before it, the legacy order); consecutive same-role
  messages merge; ``compact.summary`` replaces everything before it;
  ``context.cleared`` empties the history; ``hook.context`` (text hooks gave the model)
  and ``memory.loaded`` (the ledger and handoffs put before it) are user text where they
  stand, like a ``message.user``;
* repair, in the projection only: a ``tool_use`` without a result gets a synthetic
  error result; a result whose ``tool_use`` is not in the assistant message right
  before it is dropped; empty text is dropped; leading assistant messages are dropped.

Two structural rules make the output valid by construction:

* an assistant message holding ``tool_use`` blocks is closed: the next assistant
  message starts a new message after the results (real or synthetic), while an
  assistant message without tools merges with the next one;
* the user message after an assistant message starts with exactly one
  ``tool_result`` per ``tool_use`` of that message, in ``tool_use`` order; the
  user's own blocks follow.

Other details: a compaction summary becomes a user message (``SUMMARY_PREFIX`` +
summary), followed by an assistant acknowledgement (``COMPACTION_ACK``) only when
the next message is the user's; a synthetic result says ``INTERRUPTED_RESULT``
with ``is_error``; block types a provider would not take in that role (unknown
types, images from the assistant, tool_use from the user) are left out of the
projection (they stay in the events); ``tool_result`` blocks found inside a
``message.user`` are placed like ``tool.result`` events.

Speed matters (the state at a session's head is read on every resume): one flat
loop over plain dicts and lists, pydantic objects built once each without
re-validation (every field is checked on the way in), and the cyclic garbage
collector paused while they are built.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from ._gc import gc_paused
from .messages import (
    Base64ImageSource,
    ImageBlock,
    Message,
    NativeBlock,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    TokenUsage,
    ToolResultBlock,
    ToolUseBlock,
    UrlImageSource,
)
from .models import Event
from .payloads import ReasoningLevel

__all__ = [
    "COMPACTION_ACK",
    "INTERRUPTED_RESULT",
    "SUMMARY_PREFIX",
    "NeedsFullPath",
    "Projection",
    "SessionState",
    "advance",
    "build_messages",
    "build_state",
    "new_projection",
    "project",
    "state_of",
]

SUMMARY_PREFIX = "Context from earlier in this conversation (summarized):\n\n"
COMPACTION_ACK = "I understand the context from earlier. Let's continue."
INTERRUPTED_RESULT = "Tool execution was interrupted: no result was recorded for this call."

_REASONING_LEVELS = frozenset({"low", "medium", "high", "xhigh"})
# Event types that may carry a ``turn`` number (the turn count is the highest one).
_TURN_TYPES = frozenset(
    {
        "message.user",
        "message.assistant",
        "tool.call",
        "stream.turn_start",
        "stream.turn_end",
        "turn.failed",
    }
)


class SessionState(BaseModel):
    """Everything needed to resume a session at one event, derived from its path."""

    model_config = ConfigDict(frozen=True)

    messages: list[Message]
    model: str
    provider: str
    working_directory: str
    system_prompt: str | None = None
    reasoning_level: ReasoningLevel | None = None
    token_usage: TokenUsage = TokenUsage()
    turn_count: int = 0
    head_event_id: str


# --- building pydantic objects without re-validation ----------------------------------
#
# ``model_construct`` costs about 1.5 µs per object; setting the instance dict and
# pydantic's three slots directly (what model_construct does, minus defaults) costs a
# quarter of that. Each class shares one ``__pydantic_fields_set__`` (every field is
# always set): a fresh set per object doubled the garbage collector's work on large
# histories. Nothing mutates it: the models are frozen and ``model_copy`` copies it.
# Every field is checked on the way in, and a test checks that objects made this way
# equal validated ones.

_new = object.__new__
_setattr = object.__setattr__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


def _constructor(cls: type[BaseModel]) -> Callable[[dict[str, Any]], Any]:
    """A fast, non-validating constructor of ``cls`` from a complete field dict."""
    fields_set = set(cls.model_fields)

    def make(fields: dict[str, Any]) -> Any:
        obj = _new(cls)
        _setattr(obj, "__dict__", fields)
        _set_fields_set(obj, fields_set)
        _set_extra(obj, None)
        _set_private(obj, None)
        return obj

    return make


_new_text = _constructor(TextBlock)
_new_thinking = _constructor(ThinkingBlock)
_new_redacted = _constructor(RedactedThinkingBlock)
_new_native = _constructor(NativeBlock)
_new_tool_use = _constructor(ToolUseBlock)
_new_tool_result = _constructor(ToolResultBlock)
_new_image = _constructor(ImageBlock)
_new_base64 = _constructor(Base64ImageSource)
_new_url = _constructor(UrlImageSource)
_new_message = _constructor(Message)
_new_usage = _constructor(TokenUsage)
_new_state = _constructor(SessionState)


# --- reading blocks out of payloads ---------------------------------------------------
#
# Every shape check happens here: a malformed stored block is dropped instead of
# reaching a provider.


def _opt_str(value: Any) -> str | None:
    return value if type(value) is str else None


def _image(block: dict[str, Any]) -> Any:
    """The image block model of a stored image block, or None if it is not sendable."""
    source = block.get("source")
    if type(source) is not dict:
        return None
    kind = source.get("type")
    if kind == "base64":
        media_type, data = source.get("media_type"), source.get("data")
        if type(media_type) is str and type(data) is str and data:
            return _new_image(
                {
                    "type": "image",
                    "source": _new_base64(
                        {"type": "base64", "media_type": media_type, "data": data}
                    ),
                }
            )
    elif kind == "url":
        url = source.get("url")
        if type(url) is str and url:
            return _new_image({"type": "image", "source": _new_url({"type": "url", "url": url})})
    return None


def _text_or_image(part: Any) -> Any:
    """The text or image block model of a stored part, or None (empty text,
    other kinds, malformed parts)."""
    if type(part) is str:
        return (
            _new_text({"type": "text", "text": part, "signature": None, "phase": None})
            if part.strip()
            else None
        )
    if type(part) is dict:
        kind = part.get("type")
        if kind == "text":
            text = part.get("text")
            if type(text) is str and text.strip():
                return _new_text({"type": "text", "text": text, "signature": None, "phase": None})
        elif kind == "image":
            return _image(part)
    return None


def _result_content(content: Any) -> Any:
    """A tool result's content: a string, or a list of text/image part models."""
    if type(content) is str:
        return content
    if type(content) is not list:
        return "" if content is None else str(content)
    parts = [block for block in map(_text_or_image, content) if block is not None]
    # An empty list would be an empty result either way; a string is accepted everywhere.
    return parts if parts else ""


def _interrupted(tool_use_id: str) -> Any:
    return _new_tool_result(
        {
            "type": "tool_result",
            "tool_use_id": tool_use_id,
            "content": INTERRUPTED_RESULT,
            "is_error": True,
        }
    )


class NeedsFullPath(Exception):
    """Resuming a projection hit a rule that reaches back before its start (a
    deletion of an earlier event, or tool arguments recorded before it): the
    state must be projected from the whole path instead."""


def _assistant_blocks(
    content: Any, tool_args: dict[str, Any], seen_uses: set[str], proj: Projection
) -> tuple[list[Any], list[str]]:
    """The sendable blocks of a message.assistant payload, and its tool_use ids."""
    blocks: list[Any] = []
    uses: list[str] = []
    if type(content) is not list:
        if type(content) is str and content.strip():
            blocks.append(
                _new_text({"type": "text", "text": content, "signature": None, "phase": None})
            )
        return blocks, uses
    for block in content:
        if type(block) is not dict:
            continue
        kind = block.get("type")
        if kind == "text":
            text, signature = block.get("text"), _opt_str(block.get("signature"))
            # Gemini may sign an empty part; the signature must go back on that part.
            if type(text) is str and (text.strip() or signature):
                phase = _opt_str(block.get("phase"))
                blocks.append(
                    _new_text(
                        {"type": "text", "text": text, "signature": signature, "phase": phase}
                    )
                )
        elif kind == "tool_use":
            use_id, name, tool_input = block.get("id"), block.get("name"), block.get("input")
            if type(use_id) is not str or not use_id or type(name) is not str:
                continue
            if use_id in seen_uses or use_id in uses:
                continue  # a repeated id would be rejected; the first one stands
            if type(tool_input) is not dict:
                tool_input = {}
            elif tool_input.get("_truncated") is True:
                # Stored truncated by normalization; tool.call has the full arguments.
                proj.truncated.add(use_id)
                full = tool_args.get(use_id)
                if full is not None:
                    tool_input = full
                elif use_id in proj.called_before:
                    raise NeedsFullPath(f"the arguments of {use_id} precede the snapshot")
            uses.append(use_id)
            blocks.append(
                _new_tool_use(
                    {
                        "type": "tool_use",
                        "id": use_id,
                        "name": name,
                        "input": tool_input,
                        "signature": _opt_str(block.get("signature")),
                    }
                )
            )
        elif kind == "thinking":
            thinking, signature = block.get("thinking"), block.get("signature")
            if type(thinking) is str and (signature is None or type(signature) is str):
                blocks.append(
                    _new_thinking(
                        {
                            "type": "thinking",
                            "thinking": thinking,
                            "signature": signature,
                            "provider": _opt_str(block.get("provider")),
                            "item_id": _opt_str(block.get("item_id")),
                        }
                    )
                )
        elif kind == "redacted_thinking":
            data = block.get("data")
            if type(data) is str:
                blocks.append(_new_redacted({"type": "redacted_thinking", "data": data}))
        elif kind == "native":
            # A provider's own content (server tool calls, compaction), replayed to it.
            provider, data = block.get("provider"), block.get("data")
            if type(provider) is str and type(data) is dict:
                blocks.append(_new_native({"type": "native", "provider": provider, "data": data}))
        # Other types (images, results, unknown) are not sendable from the assistant.
    return blocks, uses


def _user_blocks(content: Any) -> tuple[list[Any], list[tuple[str, Any]]]:
    """The blocks of a message.user payload, and the tool results found in it."""
    if type(content) is str:
        text = _new_text({"type": "text", "text": content, "signature": None, "phase": None})
        return ([text] if content.strip() else []), []
    blocks: list[Any] = []
    results: list[tuple[str, Any]] = []
    if type(content) is not list:
        return blocks, results
    for block in content:
        if type(block) is dict and block.get("type") == "tool_result":
            use_id = block.get("tool_use_id")
            if type(use_id) is str:
                results.append(
                    (use_id, _result(use_id, block.get("content"), block.get("is_error")))
                )
            continue
        part = _text_or_image(block)
        if part is not None:
            blocks.append(part)
    return blocks, results


def _result(use_id: str, content: Any, is_error: Any) -> Any:
    return _new_tool_result(
        {
            "type": "tool_result",
            "tool_use_id": use_id,
            "content": _result_content(content),
            "is_error": is_error is True,
        }
    )


# --- the two passes -------------------------------------------------------------------


def _first_pass(path: Sequence[Event]) -> tuple[dict[str, Any], set[str]]:
    """Full tool arguments by call id, and the ids hidden by message.deleted."""
    tool_args: dict[str, Any] = {}
    deleted: set[str] = set()
    for event in path:
        kind = event.type
        if kind == "tool.call":
            payload = event.payload
            args = payload.get("arguments")
            call_id = payload.get("toolCallId")
            if type(args) is dict and type(call_id) is str:
                tool_args[call_id] = args
        elif kind == "message.deleted":
            target = event.payload.get("targetEventId")
            if type(target) is str:
                deleted.add(target)
    return tool_args, deleted


def _results_of(uses: list[str], results: dict[str, Any]) -> list[Any]:
    """One result per tool_use, in tool_use order; synthetic where none was recorded."""
    return [results.get(u) or _interrupted(u) for u in uses]


class _State:
    """Mutable state accumulated by the second pass (model, prompt, tokens, turns)."""

    __slots__ = (
        "cache_creation",
        "cache_read",
        "input_tokens",
        "model",
        "output_tokens",
        "provider",
        "reasoning_level",
        "system_prompt",
        "turn_count",
        "working_directory",
    )

    def __init__(self) -> None:
        self.model = ""
        self.provider = ""
        self.working_directory = ""
        self.system_prompt: str | None = None
        self.reasoning_level: str | None = None
        self.input_tokens = 0
        self.output_tokens = 0
        self.cache_read = 0
        self.cache_creation = 0
        self.turn_count = 0

    def other(self, kind: str, payload: dict[str, Any]) -> None:
        """Fold an event that is not a message into the state."""
        if kind in _TURN_TYPES:
            turn = payload.get("turn")
            if type(turn) is int and turn > self.turn_count:
                self.turn_count = turn
        elif kind == "config.model_switch":
            new_model = payload.get("newModel")
            if type(new_model) is str and new_model:
                self.model = new_model
            # Optional: a switch across providers may name the new one.
            new_provider = payload.get("provider")
            if type(new_provider) is str and new_provider:
                self.provider = new_provider
        elif kind == "config.working_directory":
            directory = payload.get("workingDirectory")
            if type(directory) is str and directory:
                self.working_directory = directory
        elif kind == "config.reasoning_level":
            level = payload.get("newLevel")
            self.reasoning_level = level if level in _REASONING_LEVELS else None
        elif kind == "config.prompt_update":
            prompt = payload.get("systemPrompt")
            if type(prompt) is str:
                self.system_prompt = prompt
        elif kind == "session.start":
            for key, attr in (
                ("model", "model"),
                ("provider", "provider"),
                ("workingDirectory", "working_directory"),
            ):
                value = payload.get(key)
                if type(value) is str and value:
                    setattr(self, attr, value)
            prompt = payload.get("systemPrompt")
            if type(prompt) is str:
                self.system_prompt = prompt
        elif kind == "session.fork":
            fork_model = payload.get("model")
            if type(fork_model) is str and fork_model:
                self.model = fork_model
            fork_provider = payload.get("provider")
            if type(fork_provider) is str and fork_provider:
                self.provider = fork_provider
            fork_directory = payload.get("workingDirectory")
            if type(fork_directory) is str and fork_directory:
                self.working_directory = fork_directory


# Event types the second pass reads the payload of, besides messages and results.
_STATE_TYPES = _TURN_TYPES | {
    "config.model_switch",
    "config.working_directory",
    "config.reasoning_level",
    "config.prompt_update",
    "session.start",
    "session.fork",
}


class Projection:
    """The second pass's state after a prefix of a path, ready to go on.

    ``messages`` are the history so far, before the repair that ends a path (the
    open assistant message's results are still collecting in ``uses`` /
    ``results``); ``state`` folds model, prompt, tokens and turns (None: messages
    only). Resuming one over the events after its prefix gives exactly what
    projecting the whole path gives, except where a rule reaches back before the
    prefix; :func:`advance` detects those and raises :class:`NeedsFullPath`:

    * a ``message.deleted`` of an event before the prefix's end;
    * a ``tool.call`` for a ``tool_use`` whose stored input was truncated and is
      already projected (``truncated``): its full arguments would replace it;
    * a truncated input after the prefix whose only ``tool.call`` lies before it
      (``called_before``: the legacy order, or an id used twice).

    Everything else in a path only moves forward. ``_state_snapshots.py``
    stores these by event id.
    """

    __slots__ = (
        "ack_event",
        "called",
        "called_before",
        "messages",
        "pending",
        "result_ids",
        "results",
        "seen_uses",
        "state",
        "truncated",
        "uses",
    )

    def __init__(self, state: _State | None) -> None:
        self.messages: list[Message] = []
        self.uses: list[str] = []  # tool_use ids of the open assistant message
        self.results: dict[str, Any] = {}  # tool_use id -> result block
        self.result_ids: list[str] = []  # events the results came from
        self.seen_uses: set[str] = set()  # every tool_use id in the projection
        # Results recorded before their assistant message (the legacy order).
        self.pending: dict[str, tuple[Any, str]] = {}
        self.ack_event: str | None = None  # a compaction summary that may need its ack
        self.state = state
        #: tool_use ids whose stored input was truncated (looked up in tool.call).
        self.truncated: set[str] = set()
        #: toolCallIds of every tool.call projected.
        self.called: set[str] = set()
        #: ``called`` when the current resume started (empty for a whole path).
        self.called_before: set[str] = set()


def _second_pass(
    path: Sequence[Event],
    tool_args: dict[str, Any],
    deleted: set[str],
    proj: Projection,
) -> None:
    """Build the messages (and fold the state, if any) in one walk of the path,
    continuing ``proj`` and leaving it ready for the next events.

    ``messages`` alternate roles by construction. A message's ``content`` and
    ``event_ids`` lists are filled in place while it is the last one (merges
    extend them), so each Message is built once. The last assistant message is
    open while its ``tool_use`` ids (``uses``) collect results; it closes when
    another assistant message starts or when the history is reset; at the end
    of a path (:func:`_finish`) its results (synthetic where missing) go at the
    front of the user message after it, created if there is none.

    Deliberately one flat loop over locals: it runs over every event of a session
    on each resume, and calls and attribute lookups per event add up.
    """
    messages = proj.messages
    if messages:
        last = messages[-1]
        last_role: str = last.role  # role of messages[-1]
        last_content: list[Any] = last.content  # its content and event ids, filled in place
        last_ids: list[str] = last.event_ids
    else:
        last_role, last_content, last_ids = "", [], []
    uses = proj.uses
    results = proj.results
    result_ids = proj.result_ids
    seen_uses = proj.seen_uses
    pending = proj.pending
    ack_event = proj.ack_event
    state = proj.state
    new_message = _new_message

    for event in path:
        kind = event.type
        if kind == "message.assistant":
            payload = event.payload
            event_id = event.id
            if state is not None:
                turn = payload.get("turn")
                if type(turn) is int and turn > state.turn_count:
                    state.turn_count = turn
            if event_id in deleted:
                continue
            if state is not None:
                usage = payload.get("tokenUsage")
                if type(usage) is dict:
                    # ``or 0``: the cache counters are optional and may be null.
                    state.input_tokens += usage.get("inputTokens") or 0
                    state.output_tokens += usage.get("outputTokens") or 0
                    state.cache_read += usage.get("cacheReadTokens") or 0
                    state.cache_creation += usage.get("cacheCreationTokens") or 0
            blocks, new_uses = _assistant_blocks(payload.get("content"), tool_args, seen_uses, proj)
            if not blocks:
                continue
            ack_event = None
            if not messages:
                continue  # a history starts with a user message: leading assistants go
            if last_role == "assistant" and not uses:
                # Consecutive assistant messages merge, unless the earlier one holds
                # tool_use blocks: those are answered before anything else is said.
                last_content.extend(blocks)
                last_ids.append(event_id)
            else:
                if uses:
                    # Close the open assistant message: its results lead the user
                    # message after it (created if it is the last message).
                    if last_role == "assistant":
                        last_content = _results_of(uses, results)
                        last_ids = result_ids
                        messages.append(
                            new_message(
                                {"role": "user", "content": last_content, "event_ids": last_ids}
                            )
                        )
                    else:
                        last_content[0:0] = _results_of(uses, results)
                        last_ids[:] = result_ids + [i for i in last_ids if i not in result_ids]
                    uses, results, result_ids = [], {}, []
                last_role = "assistant"
                last_content = blocks
                last_ids = [event_id]
                messages.append(
                    new_message({"role": "assistant", "content": blocks, "event_ids": last_ids})
                )
            if new_uses:
                uses.extend(new_uses)
                seen_uses.update(new_uses)
                if pending:
                    for use in new_uses:
                        held = pending.pop(use, None)
                        if held is not None:
                            results[use] = held[0]
                            if not result_ids or result_ids[-1] != held[1]:
                                result_ids.append(held[1])

        elif (
            kind == "tool.result"
            or kind == "message.user"
            or kind == "hook.context"
            or kind == "memory.loaded"
        ):
            payload = event.payload
            event_id = event.id
            if kind == "tool.result":
                if event_id in deleted:
                    continue
                use_id = payload.get("toolCallId")
                if type(use_id) is not str:
                    continue
                blocks = []
                found = [(use_id, _result(use_id, payload.get("content"), payload.get("isError")))]
            else:
                # A hook's context and the memory put before the model are user text
                # where they stand, like the user's own words.
                if state is not None and kind == "message.user":
                    turn = payload.get("turn")
                    if type(turn) is int and turn > state.turn_count:
                        state.turn_count = turn
                if event_id in deleted:
                    continue
                blocks, found = _user_blocks(payload.get("content"))
            for use_id, result in found:
                if use_id in results:
                    continue  # a second result for the same call: the first one stands
                if use_id in uses:
                    results[use_id] = result
                    if not result_ids or result_ids[-1] != event_id:
                        result_ids.append(event_id)
                elif use_id not in seen_uses and use_id not in pending:
                    # No tool_use yet: the legacy order, results before their message.
                    pending[use_id] = (result, event_id)
                # Otherwise its tool_use is in an earlier, closed assistant message:
                # an orphan, dropped.
            if not blocks:
                continue
            if ack_event is not None:
                # A user message right after a compaction summary: acknowledge the
                # summary so that it stays a message of its own.
                ack = _new_text(
                    {"type": "text", "text": COMPACTION_ACK, "signature": None, "phase": None}
                )
                messages.append(
                    new_message({"role": "assistant", "content": [ack], "event_ids": [ack_event]})
                )
                last_role = "assistant"
                ack_event = None
            if last_role == "user":
                last_content.extend(blocks)
                last_ids.append(event_id)
            else:
                last_role = "user"
                last_content = blocks
                last_ids = [event_id]
                messages.append(
                    new_message({"role": "user", "content": blocks, "event_ids": last_ids})
                )

        elif kind == "compact.summary" or kind == "context.cleared":
            messages = []
            last_role = ""
            uses, results, result_ids = [], {}, []
            seen_uses = set()
            pending = {}
            ack_event = None
            if kind == "compact.summary":
                summary = event.payload.get("summary")
                if type(summary) is str and summary.strip():
                    last_role = "user"
                    last_content = [
                        _new_text(
                            {
                                "type": "text",
                                "text": SUMMARY_PREFIX + summary,
                                "signature": None,
                                "phase": None,
                            }
                        )
                    ]
                    last_ids = [event.id]
                    messages.append(
                        new_message(
                            {"role": "user", "content": last_content, "event_ids": last_ids}
                        )
                    )
                    ack_event = event.id

        elif state is not None and kind in _STATE_TYPES:
            state.other(kind, event.payload)

    proj.messages = messages
    proj.uses = uses
    proj.results = results
    proj.result_ids = result_ids
    proj.seen_uses = seen_uses
    proj.pending = pending
    proj.ack_event = ack_event


def _finish(proj: Projection) -> list[Message]:
    """The history at the end of the projected path: the open assistant
    message's results (synthetic where missing) lead the user message after it,
    created if there is none. ``proj`` is left unchanged (it can go on)."""
    messages = proj.messages
    uses = proj.uses
    if not uses:
        return list(messages)
    results = _results_of(uses, proj.results)
    result_ids = proj.result_ids
    last = messages[-1]  # uses are only open after an assistant message was added
    if last.role == "assistant":
        return [
            *messages,
            _new_message({"role": "user", "content": results, "event_ids": list(result_ids)}),
        ]
    ids = result_ids + [i for i in last.event_ids if i not in result_ids]
    merged = _new_message({"role": "user", "content": results + last.content, "event_ids": ids})
    return [*messages[:-1], merged]


def new_projection(*, with_state: bool = True) -> Projection:
    """An empty projection (before a session's root)."""
    return Projection(_State() if with_state else None)


def advance(proj: Projection, events: Sequence[Event], *, resuming: bool = False) -> None:
    """Project ``events`` (the next events of the path, in order) onto ``proj``.

    ``resuming``: ``proj`` came from an earlier prefix of the path (a snapshot),
    and rules that reach back before it raise :class:`NeedsFullPath` (then
    ``proj`` is left half-advanced: discard it and project the whole path).
    """
    tool_args, deleted = _first_pass(events)
    if resuming:
        if deleted and not deleted.issubset(e.id for e in events):
            raise NeedsFullPath("a message.deleted targets an event before the snapshot")
        if proj.truncated and not proj.truncated.isdisjoint(tool_args):
            raise NeedsFullPath("a tool.call completes a truncated input before the snapshot")
        proj.called_before = proj.called
        proj.called = proj.called.union(tool_args)
    else:
        proj.called.update(tool_args)
    _second_pass(events, tool_args, deleted, proj)


def detach_last(proj: Projection) -> None:
    """Give ``proj`` its own copy of its last message before it goes on.

    Advancing changes only the last message in place (merges extend its lists);
    states made earlier from ``proj`` share that Message object, so it is
    replaced by an equal one with fresh lists and what was handed out never
    changes."""
    messages = proj.messages
    if messages:
        last = messages[-1]
        messages[-1] = _new_message(
            {"role": last.role, "content": list(last.content), "event_ids": list(last.event_ids)}
        )


def state_of(proj: Projection, head_event_id: str) -> SessionState:
    """The session state at the end of the projected path (whose last event is
    ``head_event_id``)."""
    state = proj.state
    assert state is not None, "a projection made with with_state=False"
    result: SessionState = _new_state(
        {
            "messages": _finish(proj),
            "model": state.model,
            "provider": state.provider,
            "working_directory": state.working_directory,
            "system_prompt": state.system_prompt,
            "reasoning_level": state.reasoning_level,
            "token_usage": _new_usage(
                {
                    "input_tokens": state.input_tokens,
                    "output_tokens": state.output_tokens,
                    "cache_read_tokens": state.cache_read,
                    "cache_creation_tokens": state.cache_creation,
                }
            ),
            "turn_count": state.turn_count,
            "head_event_id": head_event_id,
        }
    )
    return result


def build_messages(path: Sequence[Event]) -> list[Message]:
    """The provider-ready history at the last event of ``path`` (root first)."""
    with gc_paused():
        proj = new_projection(with_state=False)
        advance(proj, path)
        return _finish(proj)


def project(path: Sequence[Event]) -> Projection:
    """The projection of a whole path (root first)."""
    with gc_paused():
        proj = new_projection()
        advance(proj, path)
        return proj


def build_state(path: Sequence[Event]) -> SessionState:
    """The session state at the last event of ``path`` (root first).

    Everything comes from the events on the path, never from session-row caches,
    so a rewind or a fork yields exactly the state of that point.
    """
    if not path:
        raise ValueError("build_state needs a non-empty ancestor path")
    with gc_paused():
        return state_of(project(path), path[-1].id)
