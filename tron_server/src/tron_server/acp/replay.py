"""A stored session as the ``session/update`` notifications that show it (``session/load``).

The conversation is the session's **path**: its events from the root to the head (a
rewind's abandoned branch is not shown; a fork shows what it inherited). Along it:

- ``message.user`` → ``user_message_chunk`` (text and images);
- ``message.assistant`` → ``agent_thought_chunk`` (thinking), ``agent_message_chunk``
  (text) and ``tool_call`` for each tool use (kind, title, locations, an Edit's or a
  Write's diff), a TodoWrite's list also as a ``plan``;
- ``tool.result`` (or a ``tool_result`` block inside a ``message.user``) →
  ``tool_call_update`` with the final status (``completed`` / ``failed``) and content
  (a successful edit keeps its diff, anything else shows its result).

Each chunk carries the Tron event id of its message as ``messageId``: the id
``session/fork`` takes (``_meta.messageId``) to fork at that message.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ImageContentBlock,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from .toolcalls import diff_of, kind_of, locations_of, plan_of, result_content, title_of

Update = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | AgentPlanUpdate
)


def head_path(events: list[dict[str, Any]], head_event_id: str) -> list[dict[str, Any]]:
    """The events from the root to ``head_event_id`` (``session.getTree``'s events)."""
    by_id = {e["id"]: e for e in events}
    path: list[dict[str, Any]] = []
    current = by_id.get(head_event_id)
    seen: set[str] = set()
    while current is not None and current["id"] not in seen:
        seen.add(current["id"])
        path.append(current)
        parent = current.get("parentId")
        current = by_id.get(parent) if parent else None
    path.reverse()
    return path


def _image(block: dict[str, Any]) -> ImageContentBlock | None:
    source = block.get("source") or {}
    if source.get("type") != "base64" or not isinstance(source.get("data"), str):
        return None
    return ImageContentBlock.model_construct(
        type="image", data=source["data"], mime_type=str(source.get("media_type") or "image/png")
    )


# Built with model_construct, as in .toolcalls: a long session replays tens of thousands.


def _text(text: str) -> TextContentBlock:
    return TextContentBlock.model_construct(type="text", text=text)


def user_chunk(content: Any, message_id: str) -> UserMessageChunk:
    return UserMessageChunk.model_construct(
        session_update="user_message_chunk", content=content, message_id=message_id
    )


def agent_chunk(text: str, message_id: str | None = None) -> AgentMessageChunk:
    return AgentMessageChunk.model_construct(
        session_update="agent_message_chunk", content=_text(text), message_id=message_id
    )


def thought_chunk(text: str, message_id: str | None = None) -> AgentThoughtChunk:
    return AgentThoughtChunk.model_construct(
        session_update="agent_thought_chunk", content=_text(text), message_id=message_id
    )


class Replay:
    """Turns a path of events into updates, remembering each tool use for its result."""

    def __init__(self, cwd: str) -> None:
        self.cwd = cwd
        self._calls: dict[str, tuple[str, dict[str, Any]]] = {}
        self._ended: set[str] = set()

    def updates(self, events: Iterable[dict[str, Any]]) -> Iterator[Update]:
        for event in events:
            kind = event.get("type")
            payload = event.get("payload") or {}
            if kind == "message.user":
                yield from self._user(event["id"], payload.get("content"))
            elif kind == "message.assistant":
                yield from self._assistant(event["id"], payload.get("content"))
            elif kind == "tool.result":
                update = self._result(payload)
                if update is not None:
                    yield update

    def _user(self, message_id: str, content: Any) -> Iterator[Update]:
        if isinstance(content, str):
            if content:
                yield user_chunk(_text(content), message_id)
            return
        if not isinstance(content, list):
            return
        for block in content:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text" and isinstance(block.get("text"), str) and block["text"]:
                yield user_chunk(_text(block["text"]), message_id)
            elif btype == "image":
                image = _image(block)
                if image is not None:
                    yield user_chunk(image, message_id)
            elif btype == "tool_result":
                update = self._result(
                    {
                        "toolCallId": block.get("tool_use_id"),
                        "content": block.get("content"),
                        "isError": block.get("is_error", False),
                    }
                )
                if update is not None:
                    yield update

    def _assistant(self, message_id: str, content: Any) -> Iterator[Update]:
        if not isinstance(content, list):
            return
        for block in content:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text" and isinstance(block.get("text"), str) and block["text"]:
                yield agent_chunk(block["text"], message_id)
            elif btype == "thinking" and isinstance(block.get("thinking"), str):
                if block["thinking"]:
                    yield thought_chunk(block["thinking"], message_id)
            elif btype == "tool_use" and isinstance(block.get("id"), str):
                yield from self.tool_started(
                    block["id"], str(block.get("name") or "tool"), block.get("input")
                )

    def tool_started(self, call_id: str, name: str, arguments: Any) -> Iterator[Update]:
        """A tool call as it starts (``pending``), and a TodoWrite's list as the plan."""
        args = arguments if isinstance(arguments, dict) else {}
        self._calls[call_id] = (name, args)
        yield ToolCallStart.model_construct(
            session_update="tool_call",
            tool_call_id=call_id,
            title=title_of(name, args, self.cwd),
            kind=kind_of(name, args),
            status="pending",
            locations=locations_of(name, args, self.cwd) or None,
            content=diff_of(name, args, self.cwd) or None,
            raw_input=args,
        )
        if name == "TodoWrite":
            plan = plan_of(args)
            if plan is not None:
                yield plan

    def _result(self, payload: dict[str, Any]) -> ToolCallProgress | None:
        call_id = payload.get("toolCallId")
        if not isinstance(call_id, str) or call_id in self._ended:
            return None
        self._ended.add(call_id)
        name, args = self._calls.get(call_id, ("tool", {}))
        failed = bool(payload.get("isError"))
        return ToolCallProgress.model_construct(
            session_update="tool_call_update",
            tool_call_id=call_id,
            status="failed" if failed else "completed",
            content=result_content(name, args, payload.get("content"), self.cwd, is_error=failed)
            or None,
            raw_output=payload.get("content"),
        )


def replay(events: list[dict[str, Any]], head_event_id: str, cwd: str) -> list[Update]:
    """Every update that shows the session's path, in order."""
    return list(Replay(cwd).updates(head_path(events, head_event_id)))


__all__ = ["Replay", "Update", "head_path", "replay"]
