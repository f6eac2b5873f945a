"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Each line is ``{timestamp, type, payload}``: ``session_meta`` (the thread: id,
cwd, provider, instructions, git), ``turn_context`` (the model, effort and
policies of the next model call), ``response_item`` (what the model saw and
said, in the OpenAI Responses API's item shapes), ``event_msg`` (what the UI
showed, much of it repeating the response items) and ``compacted``. A rollout
has no tree: the conversation is the file order. How the lines become events:

* consecutive model-output items (``reasoning``, assistant ``message``,
  ``function_call``, ``custom_tool_call``, …) are one ``message.assistant``:
  reasoning as a ``thinking`` block (the summary as its text, the encrypted
  content as its signature, ``provider: openai``), text, and a ``tool_use`` per
  call (arguments parsed from their JSON text); then a ``tool.call`` per call.
  The ``token_count`` that follows gives its ``tokenUsage``;
* ``function_call_output``/``custom_tool_call_output`` are ``tool.result``
  events; a user ``message`` is a ``message.user``; a developer ``message`` (the
  instructions Codex sends along) a ``message.system``;
* ``turn_context`` gives the model (``config.model_switch`` when it changes) and
  effort (``config.reasoning_level``); ``turn_aborted`` is a
  ``notification.interrupted``;
* ``compacted`` is a ``compact.summary``; the items of its
  ``replacement_history`` (the context Codex went on with) follow it as events
  marked ``replayed``;
* ``event_msg`` records that repeat a response item (``user_message``,
  ``agent_message``, ``agent_reasoning``, ``token_count``) are not stored twice;
  everything else is kept as ``metadata.import``.

A sub-agent thread (``session_meta.parent_thread_id``) imported with its parent
(a folder import) becomes the parent's child session, linked to the
``spawn_agent`` call whose output names it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..payloads import validate_payload
from ._builder import ImportStream, SessionBuilder
from ._detect import FORMAT_NAMES, guess_format
from ._errors import ImportFormatError
from ._jsonl import JsonlFile, Line, read_jsonl
from ._time import to_millis

__all__ = ["import_codex"]

KIND = "codex"
_TOP_TYPES = {"session_meta", "turn_context", "response_item", "event_msg", "compacted"}
_KNOWN_TOP = _TOP_TYPES | {"world_state", "inter_agent_communication_metadata"}
#: Items the model produces (one API response is a run of these).
_OUTPUT_ITEMS = {
    "reasoning",
    "function_call",
    "custom_tool_call",
    "local_shell_call",
    "tool_search_call",
    "web_search_call",
    "image_generation_call",
}
#: Calls answered by an output item with the same ``call_id``.
_CALLS = {"function_call", "custom_tool_call", "local_shell_call", "tool_search_call"}
_RESULTS = {"function_call_output", "custom_tool_call_output", "tool_search_output"}
_LEVELS = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh"}
_CWD = re.compile(r"<environment_context>.*?<cwd>(.*?)</cwd>", re.DOTALL)
_REDACTED = re.compile(r"\[REDACTED_[A-Z_]+ (len=\d+ sha=[0-9a-f]+)\]")

Record = dict[str, Any]

_REPEATS = {
    "user_message": "an event_msg user_message repeats a user message item: stored once",
    "agent_message": "an event_msg agent_message repeats an assistant message item: stored once",
    "agent_reasoning": "an event_msg agent_reasoning repeats a reasoning item's summary: "
    "stored once",
    "token_count": "an event_msg token_count repeats the usage recorded before: stored once",
    "turn_context": "a turn_context repeats the one before but for its turn_id (which the "
    "task_started event of the turn holds): stored once",
}


def _provider(model_provider: Any) -> str:
    """Tron's provider for Codex's ``model_provider`` (OpenAI's is the Responses API)."""
    if model_provider in (None, "openai", "azure"):
        return "openai-responses"
    return "openai-compatible"


def _norm(text: str) -> str:
    # Sanitised rollouts redact the two copies of a message with different labels.
    return _REDACTED.sub(r"[REDACTED \1]", text).strip()


def _item_text(content: Any, kinds: tuple[str, ...]) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        str(part.get("text", ""))
        for part in content
        if isinstance(part, dict) and part.get("type") in kinds
    )


def _image(url: Any) -> dict[str, Any] | None:
    if not isinstance(url, str):
        return None
    match = re.fullmatch(r"data:([\w.+/-]+);base64,(.+)", url, re.DOTALL)
    if match:
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": match[1], "data": match[2]},
        }
    if url.startswith(("http://", "https://")):
        return {"type": "image", "source": {"type": "url", "url": url}}
    return None


def _blocks(content: Any) -> tuple[list[Any], bool]:
    """Responses content parts as our blocks; True if some part was kept as read."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}], False
    blocks: list[Any] = []
    raw = False
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind in ("input_text", "output_text", "text", "summary_text"):
            blocks.append({"type": "text", "text": str(part.get("text", ""))})
        elif kind == "input_image" and _image(part.get("image_url")) is not None:
            blocks.append(_image(part.get("image_url")))
        else:
            blocks.append(part)  # kept as read (the projection leaves it out)
            raw = True
    return blocks, raw


def _arguments(text: Any) -> tuple[dict[str, Any], bool]:
    """A call's arguments as an object; True when they were not a JSON object."""
    if isinstance(text, dict):
        return text, False
    if isinstance(text, str):
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            return {"arguments": text}, True
        if isinstance(value, dict):
            return value, False
        return {"arguments": value}, True
    return {"arguments": text}, text is not None


def _output(output: Any) -> tuple[str | list[Any], bool]:
    """A call output as tool.result content, and whether it says it failed."""
    if isinstance(output, str):
        return output, False
    if isinstance(output, dict):
        failed = output.get("success") is False
        if "content" in output:
            inner, _ = _output(output["content"])
            return inner, failed
        if output.get("type") in ("input_text", "output_text"):
            return str(output.get("text", "")), failed
        return orjson.dumps(output).decode(), failed
    if isinstance(output, list):
        blocks, _ = _blocks(output)
        return blocks, False
    return "" if output is None else orjson.dumps(output).decode(), False


def _usage(info: Any) -> dict[str, int] | None:
    if not isinstance(info, dict) or not isinstance(info.get("last_token_usage"), dict):
        return None
    last = info["last_token_usage"]

    def number(name: str) -> int:
        value = last.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    return {
        "inputTokens": number("input_tokens"),  # includes cached input, as Tron counts
        "outputTokens": number("output_tokens"),
        "cacheReadTokens": number("cached_input_tokens"),
        "cacheCreationTokens": number("cache_write_input_tokens"),
    }


@dataclass
class _Links:
    """Spawn calls seen so far: child thread id -> (session id, tool.call event id, call id).

    Ids only, never a session's builder: a builder holds its events, and a folder
    import must not keep every earlier session's events alive."""

    spawned: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    #: call id -> (session id, tool.call event id) of spawn_agent-like calls awaiting output
    calls: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: thread id -> session id of the threads imported so far
    sessions: dict[str, str] = field(default_factory=dict)


class _Rollout:
    """One rollout file turned into one session."""

    def __init__(self, stream: ImportStream, file: JsonlFile, links: _Links) -> None:
        self.stream = stream
        self.file = file
        self.links = links
        self.builder: SessionBuilder | None = None
        self.group: list[tuple[Line, dict[str, Any]]] = []  # open model-output items
        self.last_assistant: Record | None = None  # last message.assistant event record
        self.last_token_info: Any = None
        self.last_context: Any = None
        self.duplicates: Counter[str] = Counter()
        self.level: str | None = None
        self.pending_user: Counter[str] = Counter()
        self.pending_agent: Counter[str] = Counter()
        self.pending_reasoning: Counter[str] = Counter()
        self.thread_id: str | None = None
        self.model: str | None = None
        self.provider: str | None = None
        self.notices: list[str] = []

    # -- set-up -----------------------------------------------------------------------

    def _meta(self) -> tuple[Line | None, dict[str, Any]]:
        for line in self.file.lines:
            if line.value.get("type") == "session_meta" and isinstance(
                line.value.get("payload"), dict
            ):
                return line, line.value["payload"]
        first = self.file.lines[0]
        if first.value.get("type") is None and "id" in first.value:
            return first, first.value  # the legacy layout: the first line is the meta
        return None, {}

    def _context_cwd(self) -> str | None:
        """The ``<cwd>`` of the ``<environment_context>`` Codex sends as a user message
        (older rollouts have no cwd in their meta line)."""
        for line in self.file.lines:
            value = line.value
            item = value.get("payload") if "payload" in value else value
            if isinstance(item, dict) and item.get("type") == "message":
                text = _item_text(item.get("content"), ("input_text",))
                match = _CWD.search(text)
                if match and match[1].strip():
                    return match[1].strip()
        return None

    def _first_model(self) -> str | None:
        for line in self.file.lines:
            payload = line.value.get("payload")
            if (
                line.value.get("type") == "turn_context"
                and isinstance(payload, dict)
                and isinstance(payload.get("model"), str)
            ):
                return str(payload["model"])
        return None

    def _count_copies(self) -> None:
        """The texts the response items hold, to recognise the event_msg copies."""
        for line in self.file.lines:
            item = line.value.get("payload")
            if line.value.get("type") != "response_item" or not isinstance(item, dict):
                continue
            if item.get("type") == "message" and item.get("role") == "user":
                self.pending_user[_norm(_item_text(item.get("content"), ("input_text",)))] += 1
            elif item.get("type") == "message" and item.get("role") == "assistant":
                text = _item_text(item.get("content"), ("output_text",))
                self.pending_agent[_norm(text)] += 1
            elif item.get("type") == "reasoning":
                for part in item.get("summary") or []:
                    if isinstance(part, dict):
                        self.pending_reasoning[_norm(str(part.get("text", "")))] += 1

    def build(self, *, with_parent: bool) -> SessionBuilder:
        meta_line, meta = self._meta()
        self.thread_id = str(meta.get("id")) if meta.get("id") is not None else self.file.path.stem
        cwd = meta.get("cwd")
        if not isinstance(cwd, str) or not cwd:
            cwd = self._context_cwd()
        if cwd is None:
            cwd = str(self.file.path.parent.resolve())
            self.notices.append(
                "the rollout names no working directory: its folder is the session's workspace"
            )
        millis = to_millis(meta.get("timestamp"))
        if millis is None and meta_line is not None:
            millis = to_millis(meta_line.value.get("timestamp"))
        if millis is None:
            millis = next(
                (m for m in (to_millis(x.value.get("timestamp")) for x in self.file.lines) if m),
                0,
            )
        self.provider = _provider(meta.get("model_provider"))
        extra: dict[str, Any] = {"imported": {"sessionMeta": meta}}
        _, parent_thread = _meta_ids(meta)
        parent_session: str | None = None
        if isinstance(parent_thread, str) and with_parent:
            parent_session = self.links.sessions.get(parent_thread)
            link = self.links.spawned.get(self.thread_id)
            if link is not None and link[0] == parent_session:
                extra["parentToolCallId"] = link[2]
                extra["spawnedByEventId"] = link[1]
            for name, key in (("agent_role", "subagentType"), ("agent_nickname", "description")):
                if isinstance(meta.get(name), str):
                    extra[key] = meta[name]
        self.builder = SessionBuilder(
            self.stream,
            key=f"{KIND}:{self.thread_id}",
            working_directory=cwd,
            millis=millis,
            provider=self.provider,
            model=self._first_model(),
            title=None,
            start_extra=extra,
            parent_session_id=parent_session,
        )
        self.links.sessions[self.thread_id] = self.builder.id
        for message in self.notices:
            self.builder.notice(message)
        if self.builder.start_model is None:
            self.builder.notice(
                "the rollout names no model (older Codex versions did not record it): the "
                "session's model is 'unknown'; switch it before continuing the session"
            )
        if isinstance(parent_thread, str) and parent_session is None:
            self.builder.notice(
                f"this is a sub-agent thread of {parent_thread}, which is not part of this "
                "import: imported as a session of its own (parent_thread_id kept in "
                "session.start)"
            )
        self._count_copies()
        for problem in self.file.problems:
            self.builder.notice(problem)
        for line in self.file.lines:
            if line is meta_line:
                continue
            self._line(line)
        self._close()
        for name, count in sorted(self.duplicates.items()):
            if count > 0:
                self.builder.remarks[_REPEATS[name]] += count
        return self.builder

    # -- lines --------------------------------------------------------------------------

    def _line(self, line: Line) -> None:
        assert self.builder is not None
        value = line.value
        kind = value.get("type")
        payload = value.get("payload")
        if value.get("record_type") == "state" and "payload" not in value:
            self._keep(line, "state", record_type="state")  # the legacy layout's state lines
            return
        if "payload" not in value and kind not in _TOP_TYPES and kind is not None:
            kind, payload = "response_item", value  # the legacy layout: items on the line
        if kind == "response_item" and isinstance(payload, dict):
            self._item(line, payload)
        elif kind == "event_msg" and isinstance(payload, dict):
            self._event(line, payload)
        elif kind == "turn_context" and isinstance(payload, dict):
            self._turn_context(line, payload)
        elif kind == "compacted" and isinstance(payload, dict):
            self._compacted(line, payload)
        elif kind == "session_meta":
            self._close()
            self.builder.notice(
                f"{self.file.path.name}:{line.number}: another session_meta in the same file "
                "(a resumed or merged rollout): kept as a metadata.import event"
            )
            self._keep(line, "session_meta")
        else:
            self._keep(line, str(kind) if kind in _KNOWN_TOP else f"unknown record type {kind!r}")

    def _millis(self, line: Line) -> int:
        assert self.builder is not None
        return self.builder.time(line.value.get("timestamp"))

    def _keep(self, line: Line, name: str, *, record_type: str | None = None) -> None:
        assert self.builder is not None
        self.builder.keep(
            record_type or str(line.value.get("type")),
            line.value,
            key=f"line{line.number}:meta",
            millis=self._millis(line),
            line=line.number,
            count_as=name,
        )

    def _item(self, line: Line, item: dict[str, Any]) -> None:
        assert self.builder is not None
        kind = item.get("type")
        role = item.get("role")
        if kind in _OUTPUT_ITEMS or (kind == "message" and role == "assistant"):
            self.group.append((line, item))
            return
        self._close()
        millis = self._millis(line)
        if kind in _RESULTS:
            self._result(line, item, millis)
        elif kind == "message" and role in ("user", "developer", "system"):
            blocks, raw = _blocks(item.get("content"))
            rest = {k: v for k, v in item.items() if k not in ("type", "role", "content")}
            if role == "user":
                self.builder.add(
                    "message.user",
                    {
                        "content": blocks,
                        "turn": self.builder.turn + 1,
                        **({"imported": rest} if rest else {}),
                    },
                    key=f"line{line.number}:user",
                    millis=millis,
                )
            else:
                self.builder.add(
                    "message.system",
                    {"content": blocks, "role": role, **({"imported": rest} if rest else {})},
                    key=f"line{line.number}:{role}",
                    millis=millis,
                )
                self.builder.remarks[
                    "developer messages (Codex's instructions) are kept as message.system "
                    "events; the reconstructed history leaves them out"
                ] += 1
            if raw:
                self.builder.remarks[
                    "message content Tron has no block for (e.g. an image without data) is "
                    "kept in its event; the reconstructed history leaves it out"
                ] += 1
        elif kind == "agent_message":
            # A message from another agent of a collaboration: input to this one.
            blocks, _ = _blocks(item.get("content"))
            text = [b for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
            self.builder.add(
                "message.user",
                {"content": text or "", "turn": self.builder.turn + 1, "imported": item},
                key=f"line{line.number}:agent_message",
                millis=millis,
            )
        else:
            self._keep(line, f"response_item/{kind}")

    def _close(self) -> None:
        """Emit the open run of model-output items as one message.assistant."""
        if not self.group or self.builder is None:
            return
        group, self.group = self.group, []
        builder = self.builder
        first_line = group[0][0]
        millis = self._millis(first_line)
        content: list[Any] = []
        calls: list[dict[str, Any]] = []
        items: list[Any] = []
        raw_kinds: set[str] = set()
        for _line, item in group:
            kind = item.get("type")
            if kind == "reasoning":
                summary = "\n\n".join(
                    str(p.get("text", "")) for p in item.get("summary") or [] if isinstance(p, dict)
                )
                block: dict[str, Any] = {
                    "type": "thinking",
                    "thinking": summary,
                    "provider": "openai",
                }
                if isinstance(item.get("encrypted_content"), str):
                    block["signature"] = item["encrypted_content"]
                if isinstance(item.get("id"), str):
                    block["item_id"] = item["id"]
                if item.get("content"):
                    block["reasoningContent"] = item["content"]
                content.append(block)
            elif kind == "message":
                blocks, raw = _blocks(item.get("content"))
                content.extend(blocks)
                if raw:
                    builder.remarks[
                        "message content Tron has no block for (e.g. an image without data) "
                        "is kept in its event; the reconstructed history leaves it out"
                    ] += 1
            elif kind in _CALLS:
                call_id = str(item.get("call_id") or item.get("id") or f"line{_line.number}")
                name = str(item.get("name") or kind)
                if kind == "custom_tool_call":
                    arguments, odd = {"input": item.get("input")}, False
                elif kind == "local_shell_call":
                    arguments, odd = {"action": item.get("action")}, False
                else:
                    arguments, odd = _arguments(item.get("arguments"))
                if odd:
                    builder.remarks[
                        "call arguments that are not a JSON object are kept as "
                        '{"arguments": <as written>}'
                    ] += 1
                use = {"type": "tool_use", "id": call_id, "name": name, "input": arguments}
                content.append(use)
                calls.append(use)
            else:
                content.append(item)  # a server-side tool (web search, image generation)
                raw_kinds.add(str(kind))
            items.append(
                {
                    k: v
                    for k, v in item.items()
                    if k not in ("content", "summary", "encrypted_content")
                }
            )
        for name in sorted(raw_kinds):
            builder.remarks[
                f"{name} items (run by the provider, no result of their own) are kept in their "
                "message.assistant; the reconstructed history leaves them out"
            ] += 1
        builder.use_model(
            self.model, self.provider, key=f"line{first_line.number}:model", millis=millis
        )
        turn = builder.next_turn()
        payload: dict[str, Any] = {"content": content, "turn": turn, "imported": {"items": items}}
        if self.model:
            payload["model"] = self.model
        payload["stopReason"] = "tool_use" if calls else "end_turn"
        builder.add(
            "message.assistant", payload, key=f"line{first_line.number}:assistant", millis=millis
        )
        self.last_assistant = builder.events[-1]
        for use in calls:
            event_id = builder.add(
                "tool.call",
                {
                    "toolCallId": use["id"],
                    "name": use["name"],
                    "arguments": use["input"],
                    "turn": turn,
                },
                key=f"{use['id']}:call",
                millis=millis,
            )
            self.links.calls[str(use["id"])] = (builder.id, event_id)

    def _result(self, line: Line, item: dict[str, Any], millis: int) -> None:
        assert self.builder is not None
        call_id = str(item.get("call_id") or item.get("id") or f"line{line.number}")
        if item.get("type") == "tool_search_output":
            rest = {k: v for k, v in item.items() if k not in ("type", "call_id")}
            content: str | list[Any] = orjson.dumps(rest).decode()
            failed = False
        else:
            content, failed = _output(item.get("output"))
        rest = {k: v for k, v in item.items() if k not in ("type", "call_id", "output")}
        payload: dict[str, Any] = {"toolCallId": call_id, "content": content, "isError": failed}
        if rest:
            payload["imported"] = rest
        self.builder.add(
            "tool.result", payload, key=f"{call_id}:result:{line.number}", millis=millis
        )
        # A spawn call's output names the thread it started.
        call = self.links.calls.get(call_id)
        if call is not None and isinstance(item.get("output"), str):
            try:
                named = orjson.loads(item["output"])
            except orjson.JSONDecodeError:
                return
            if isinstance(named, dict) and isinstance(named.get("agent_id"), str):
                self.links.spawned.setdefault(named["agent_id"], (call[0], call[1], call_id))

    def _event(self, line: Line, event: dict[str, Any]) -> None:
        assert self.builder is not None
        kind = event.get("type")
        text = event.get("message") if kind != "agent_reasoning" else event.get("text")
        norm = _norm(text) if isinstance(text, str) else None
        if kind == "token_count":
            info = event.get("info")
            if self.group:
                self._close()
                self._attach_usage(event)
            elif info is None and event.get("rate_limits") is not None:
                self._keep(line, "event_msg/token_count (rate limits only)")
            elif info == self.last_token_info or info is None:
                self.duplicates["token_count"] += 1
            elif (
                self.last_assistant is not None
                and "tokenUsage" not in self.last_assistant["payload"]
            ):
                self._attach_usage(event)
            else:
                self._keep(line, "event_msg/token_count")
            if info is not None:
                self.last_token_info = info
            return
        if kind == "user_message" and norm is not None:
            if self.pending_user[norm] > 0:
                self.pending_user[norm] -= 1
                self.duplicates["user_message"] += 1
                return
            self._close()
            content: Any = text
            images = [_image(u) for u in event.get("images") or []]
            if any(images):
                content = [{"type": "text", "text": text}, *[i for i in images if i]]
            self.builder.add(
                "message.user",
                {"content": content, "turn": self.builder.turn + 1, "imported": event},
                key=f"line{line.number}:user_message",
                millis=self._millis(line),
            )
            return
        if kind == "agent_message" and norm is not None:
            if self.pending_agent[norm] > 0:
                self.pending_agent[norm] -= 1
                self.duplicates["agent_message"] += 1
                return
            # The only copy (older rollouts): an assistant message of its own.
            self.group.append(
                (
                    line,
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": text}],
                    },
                )
            )
            return
        if kind == "agent_reasoning" and norm is not None and self.pending_reasoning[norm] > 0:
            self.pending_reasoning[norm] -= 1
            self.duplicates["agent_reasoning"] += 1
            return
        if kind == "turn_aborted":
            self._close()
            self.builder.add(
                "notification.interrupted",
                {
                    "turn": self.builder.turn,
                    "reason": str(event.get("reason") or "aborted"),
                    "imported": event,
                },
                key=f"line{line.number}:aborted",
                millis=self._millis(line),
            )
            return
        if kind == "thread_name_updated" and isinstance(event.get("thread_name"), str):
            self.builder.title = event["thread_name"]
        self._keep(line, f"event_msg/{kind}")

    def _attach_usage(self, event: dict[str, Any]) -> None:
        assert self.builder is not None
        record = self.last_assistant
        usage = _usage(event.get("info"))
        if record is None:
            return
        payload = dict(record["payload"])
        if usage is not None:
            payload["tokenUsage"] = usage
        imported = dict(payload.get("imported") or {})
        imported["tokenCount"] = event
        payload["imported"] = imported
        record["payload"] = validate_payload("message.assistant", payload)

    def _turn_context(self, line: Line, context: dict[str, Any]) -> None:
        assert self.builder is not None
        self._close()
        model = context.get("model")
        if isinstance(model, str) and model:
            self.model = model
            self.builder.use_model(
                model, self.provider, key=f"line{line.number}:model", millis=self._millis(line)
            )
        effort = context.get("effort")
        if isinstance(effort, str) and effort != self.level:
            level = _LEVELS.get(effort)
            if self.level is not None or level is not None:
                payload: dict[str, Any] = {"newLevel": level, "sourceLevel": effort}
                if _LEVELS.get(self.level or "") is not None:
                    payload["previousLevel"] = _LEVELS[self.level or ""]
                self.builder.add(
                    "config.reasoning_level",
                    payload,
                    key=f"line{line.number}:level",
                    millis=self._millis(line),
                )
            self.level = effort
        same = {k: v for k, v in context.items() if k != "turn_id"}
        if same == self.last_context:
            self.duplicates["turn_context"] += 1
            return
        self.last_context = same
        self._keep(line, "turn_context")

    def _compacted(self, line: Line, compacted: dict[str, Any]) -> None:
        assert self.builder is not None
        self._close()
        builder = self.builder
        millis = self._millis(line)
        message = compacted.get("message")
        history = compacted.get("replacement_history")
        summary = message.strip() if isinstance(message, str) else ""
        if not summary:
            summary = (
                "Codex compacted the conversation here; its summary is not readable text "
                "(an encrypted compaction item), and the messages it kept follow."
            )
        rest = {k: v for k, v in compacted.items() if k != "message"}
        builder.add(
            "compact.summary",
            {"summary": summary, "imported": rest},
            key=f"line{line.number}:compacted",
            millis=millis,
        )
        if not isinstance(history, list):
            return
        for index, item in enumerate(history):
            if not isinstance(item, dict):
                continue
            kind, role = item.get("type"), item.get("role")
            blocks, _ = _blocks(item.get("content"))
            if kind == "message" and role == "user":
                builder.add(
                    "message.user",
                    {"content": blocks, "turn": builder.turn + 1, "replayed": True},
                    key=f"line{line.number}:replay{index}",
                    millis=millis,
                )
            elif kind == "message" and role == "assistant":
                builder.add(
                    "message.assistant",
                    {"content": blocks, "turn": builder.turn, "replayed": True},
                    key=f"line{line.number}:replay{index}",
                    millis=millis,
                )
            elif kind == "message":
                builder.add(
                    "message.system",
                    {"content": blocks, "role": role, "replayed": True},
                    key=f"line{line.number}:replay{index}",
                    millis=millis,
                )
        builder.remarks[
            "a compaction is a compact.summary followed by the messages Codex kept "
            "(marked replayed; its whole replacement_history is in the summary's payload)"
        ] += 1


def _check_format(file: JsonlFile) -> None:
    first = file.lines[0].value
    if any(
        line.value.get("type") in _TOP_TYPES and "payload" in line.value for line in file.lines
    ) or (first.get("type") is None and "id" in first and "timestamp" in first):
        return
    guess = guess_format(file)
    if guess is not None and guess != KIND:
        raise ImportFormatError(
            file.path,
            f"is {FORMAT_NAMES[guess]}, not a Codex rollout: import it with `--from {guess}`",
            line=file.lines[0].number,
        )
    raise ImportFormatError(
        file.path,
        "has no Codex record (session_meta/response_item/event_msg lines with a payload): "
        "not a Codex rollout",
        line=file.lines[0].number,
    )


def _meta_ids(payload: dict[str, Any]) -> tuple[str | None, str | None]:
    """(thread id, parent thread id) of a session_meta payload."""
    parent = payload.get("parent_thread_id")
    source = payload.get("source")
    if parent is None and isinstance(source, dict):
        sub = source.get("subagent")
        spawn = sub.get("thread_spawn") if isinstance(sub, dict) else None
        if isinstance(spawn, dict):
            parent = spawn.get("parent_thread_id")
    thread = payload.get("id")
    return (
        str(thread) if thread is not None else None,
        parent if isinstance(parent, str) else None,
    )


def _peek_ids(path: Path) -> tuple[str | None, str | None]:
    """(thread id, parent thread id) from the first lines of a rollout, read
    without parsing the whole file (a folder can hold thousands)."""
    try:
        with path.open("rb") as handle:
            for _ in range(5):
                raw = handle.readline(1 << 22)
                if not raw:
                    break
                try:
                    value = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    continue
                payload = value.get("payload") if isinstance(value, dict) else None
                if value.get("type") == "session_meta" and isinstance(payload, dict):
                    return _meta_ids(payload)
    except OSError:
        pass
    return None, None


def _records(
    stream: ImportStream, file: JsonlFile, links: _Links, *, with_parent: bool
) -> list[Record]:
    builder = _Rollout(stream, file, links).build(with_parent=with_parent)
    return list(builder.records())


def import_codex(path: Path) -> Iterator[Record]:
    """Records for a rollout file, or for every rollout under a folder (parents
    before their sub-agents)."""
    stream = ImportStream(KIND, str(path))
    links = _Links()
    if not path.is_dir():
        file = read_jsonl(path)
        _check_format(file)
        records = _records(stream, file, links, with_parent=False)
        yield from stream.header()
        yield from records
        return
    yield from stream.header()
    paths = sorted(p for p in path.rglob("*.jsonl") if p.is_file())
    ids = {p: _peek_ids(p) for p in paths}
    by_thread = {thread: p for p, (thread, _) in ids.items() if thread is not None}
    done: set[Path] = set()

    def emit(rollout: Path, chain: frozenset[Path]) -> Iterator[Record]:
        # Parents before their sub-agents (a thread's parent may sort after it).
        if rollout in done:
            return
        parent = by_thread.get(ids[rollout][1] or "")
        if parent is not None and parent not in chain:
            yield from emit(parent, chain | {rollout})
        done.add(rollout)
        try:
            file = read_jsonl(rollout)
            _check_format(file)
        except ImportFormatError as exc:
            yield stream.notice(f"skipped: {exc}")
            return
        yield from _records(stream, file, links, with_parent=True)

    for rollout in paths:
        yield from emit(rollout, frozenset())
