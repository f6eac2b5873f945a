"""The transcript as a list of items, derived from a :class:`SessionModel`.

Each item has a stable ``key`` (an event id and block index, or ``tool:<id>``
for a tool card, or ``live:…`` for the part of a turn that is still streaming)
and a ``signature`` that changes when what it shows changes. The screen keeps
one widget per key and only touches widgets whose signature changed, so a
stream of deltas updates one widget and a rewind rebuilds from where the path
changed.

Notes are the client's own lines in the transcript (what a command printed, "Rewound",
"Aborted", an error): not stored in the session, shown where they were written. A
note floats at the end until the next message is sent, then stays after the event
that was the head then (and is hidden when a rewind or a fork leaves that event
off the path).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .model import SessionModel, ToolState, content_text, user_text

#: What a failed turn offers (after its error), as the web chat's Retry and Edit buttons.
FAILED_HINT = "The turn failed: /retry sends your message again · /edit puts it back in the input"

Kind = Literal["user", "text", "thinking", "tool", "notice", "error", "pending"]


@dataclass(frozen=True)
class Item:
    key: str
    kind: Kind
    text: str = ""
    tool: ToolState | None = None
    event_id: str | None = None
    signature: Any = None


@dataclass
class Note:
    """A line the client writes into the transcript (see the module docstring)."""

    key: str
    text: str
    kind: Literal["notice", "error"] = "notice"
    anchor: str | None = None
    """The event it follows (None: it floats at the end)."""

    def item(self) -> Item:
        return Item(f"note:{self.key}", self.kind, self.text, signature=self.text)


def _event_items(model: SessionModel, ev: dict[str, Any]) -> list[Item]:
    kind = ev.get("type")
    p = ev.get("payload") or {}
    eid = str(ev.get("id"))
    if kind == "message.user":
        text = user_text(p.get("content"))
        return [] if text is None else [Item(eid, "user", text, event_id=eid, signature=text)]
    if kind == "message.assistant":
        out: list[Item] = []
        for i, block in enumerate(p.get("content") or []):
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text" and str(block.get("text") or "").strip():
                text = str(block["text"])
                out.append(Item(f"{eid}:{i}", "text", text, event_id=eid, signature=text))
            elif btype == "thinking" and str(block.get("thinking") or "").strip():
                text = str(block["thinking"])
                out.append(Item(f"{eid}:{i}", "thinking", text, event_id=eid, signature=text))
            elif btype == "tool_use":
                tool = model.tool(str(block.get("id")))
                out.append(_tool_item(tool, eid))
        if p.get("interrupted"):
            out.append(Item(f"{eid}:interrupted", "notice", "(interrupted)", event_id=eid))
        return out
    if kind == "session.fork":
        source = p.get("sourceSessionId") or "?"
        text = f"forked from {source} at {p.get('sourceEventId') or '?'}"
        return [Item(eid, "notice", text, event_id=eid, signature=text)]
    if kind == "compact.summary":
        return [Item(eid, "notice", "── earlier history summarized (compaction) ──", event_id=eid)]
    if kind == "context.cleared":
        return [Item(eid, "notice", "── context cleared ──", event_id=eid)]
    if kind in ("error.agent", "error.provider", "turn.failed"):
        message = p.get("message") or p.get("error") or kind
        text = str(message if isinstance(message, str) else content_text(message))
        return [Item(eid, "error", text, event_id=eid, signature=text)]
    return []


def _tool_item(tool: ToolState, event_id: str | None = None) -> Item:
    return Item(f"tool:{tool.id}", "tool", tool=tool, event_id=event_id, signature=(tool.version,))


def transcript_items(
    model: SessionModel | None, notes: Sequence[Note] = (), pending: Sequence[str] = ()
) -> list[Item]:
    """The items of the path root → head, then the live part of a running turn, with
    the client's ``notes`` where they belong, then the messages ``pending`` (queued,
    not sent yet)."""
    items: list[Item] = []
    errors: set[str] = set()
    pinned: dict[str, list[Note]] = {}
    for note in notes:
        if note.anchor is not None:
            pinned.setdefault(note.anchor, []).append(note)
    if model is None:
        items.extend(n.item() for n in notes if n.anchor is None)
        items.extend(_pending_items(pending))
        return items
    for ev in model.path():
        for item in _event_items(model, ev):
            # A failed turn is recorded twice (error.provider, then turn.failed): once is enough.
            if item.kind == "error":
                last = items[-1] if items else None
                if last is not None and last.kind == "error" and last.text == item.text:
                    continue
                errors.add(item.text)
            items.append(item)
        items.extend(n.item() for n in pinned.get(str(ev.get("id")), ()))
    if not model.busy and model.failed_prompt() is not None:
        items.append(Item("hint:failed", "notice", FAILED_HINT, signature=FAILED_HINT))
    live = model.live
    if live.thinking.strip():
        items.append(Item("live:thinking", "thinking", live.thinking, signature=live.thinking))
    if live.text:
        items.append(Item("live:text", "text", live.text, signature=live.text))
    for tool_id in model.live_tool_ids():
        items.append(_tool_item(model.tools[tool_id]))
    if live.error and live.error not in errors:
        items.append(Item("live:error", "error", live.error, signature=live.error))
    items.extend(n.item() for n in notes if n.anchor is None)
    items.extend(_pending_items(pending))
    return items


def _pending_items(pending: Sequence[str]) -> list[Item]:
    return [
        Item(f"pending:{i}:{text}", "pending", text, signature=text)
        for i, text in enumerate(pending)
    ]


__all__ = ["Item", "Kind", "Note", "transcript_items"]
