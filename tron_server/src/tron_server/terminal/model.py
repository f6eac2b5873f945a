"""What the client knows of one session: stored events and the live turn.

Stored events (``events.sync``, ``session.getTree``, ``events.new``) are kept
once each, by id, whatever order or how often they arrive; the transcript is the
path root → head. The part of a running turn that is not stored yet comes from
the ``agent.*`` notifications (or an ``agent.getState`` snapshot after a
reconnect). Tool calls are merged from both by tool call id, so a card that
started live stays the same card once its message is stored.

This is the same model as the web chat's (``web/static/model.js``), with one
more guard: deltas of a turn whose ``message.assistant`` is already stored are
ignored (``events.new`` and ``agent.*`` are separate streams, either may come
first), so no text is ever shown twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

SessionMode = Literal["meta", "snapshot", "rewind"]

#: Event types that are nodes of the tree view (besides the session's start/fork).
MESSAGE_TYPES = frozenset({"message.user", "message.assistant"})
#: Event types that record a failed turn.
FAILURE_TYPES = frozenset({"error.agent", "error.provider", "turn.failed"})


@dataclass
class ToolState:
    """One tool call as far as the client knows it."""

    id: str
    name: str = ""
    arguments: Any = None
    arguments_full: bool = False
    output: str = ""
    result: Any = None
    is_error: bool = False
    duration_ms: float | None = None
    status: str = "pending"  # pending | running | done | error
    child_session_id: str | None = None
    child_activity: str = ""
    version: int = 0


@dataclass
class LiveTurn:
    """The running turn's text and thinking that are not stored yet."""

    turn: int | None = None
    text: str = ""
    thinking: str = ""
    error: str | None = None
    ignore_until_snapshot: bool = False


@dataclass
class Usage:
    """Totals over a session's turns."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0
    cost_known: bool = True
    turns: int = 0


def normalize_usage(u: Any) -> dict[str, int]:
    """Usage numbers from the shapes the server sends (notifications, stored events)."""
    u = u if isinstance(u, dict) else {}

    def pick(*keys: str) -> int:
        for key in keys:
            value = u.get(key)
            if isinstance(value, int | float):
                return int(value)
        return 0

    return {
        "input": pick("inputTokens", "input_tokens"),
        "output": pick("outputTokens", "output_tokens"),
        "cacheRead": pick("cacheReadTokens", "cache_read_tokens"),
        "cacheWrite": pick("cacheWriteTokens", "cacheCreationTokens", "cache_write_tokens"),
    }


def content_text(content: Any) -> str:
    """Plain text of message content (a string or Anthropic-shaped blocks)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict):
            if block.get("type") == "text":
                parts.append(str(block.get("text") or ""))
            elif block.get("type") == "tool_result":
                parts.append(content_text(block.get("content")))
    return "\n".join(p for p in parts if p)


def user_text(content: Any) -> str | None:
    """A user message's text; None for a message of tool results only."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            parts.append(str(block.get("text") or ""))
        elif block.get("type") == "image":
            parts.append("[image]")
    return "\n".join(parts) if parts else None


@dataclass
class SessionModel:
    """Client-side state of one session (see the module docstring)."""

    session: dict[str, Any]
    events: dict[str, dict[str, Any]] = field(default_factory=dict)
    head_id: str | None = None
    live_head: str | None = None
    last_sequence: int = -1
    tools: dict[str, ToolState] = field(default_factory=dict)
    stored_tool_use: set[str] = field(default_factory=set)
    stored_turns: set[int] = field(default_factory=set)
    live: LiveTurn = field(default_factory=LiveTurn)
    busy: bool = False
    live_usage: dict[int, tuple[dict[str, Any], float | None]] = field(default_factory=dict)
    stored_usage_turns: set[int] = field(default_factory=set)
    loaded: bool = False
    version: int = 0

    def __post_init__(self) -> None:
        if self.head_id is None:
            self.head_id = self.session.get("headEventId")

    @property
    def id(self) -> str:
        return str(self.session["id"])

    # -- the session object ---------------------------------------------------------

    def set_session(self, session: dict[str, Any], mode: SessionMode = "snapshot") -> None:
        """Take a Session from the server. ``meta``: counters and title only;
        ``snapshot``: the head too, unless a live event since descends from it;
        ``rewind``: the head, unconditionally."""
        self.session = session
        head = session.get("headEventId")
        if mode != "meta" and head:
            self.head_id = head
            if mode == "rewind":
                self.live_head = None
            elif self.live_head and self.is_ancestor_or_self(head, self.live_head):
                self.head_id = self.live_head
        self.version += 1

    def is_ancestor_or_self(self, a: str, b: str) -> bool:
        """Whether event ``a`` is ``b`` or one of its ancestors."""
        seen: set[str] = set()
        current: str | None = b
        while current and current not in seen:
            if current == a:
                return True
            seen.add(current)
            ev = self.events.get(current)
            current = ev.get("parentId") if ev else None
        return False

    # -- stored events --------------------------------------------------------------

    def add_event(self, ev: dict[str, Any], *, live: bool = False) -> bool:
        """Add a stored event; False when it was already known (each event counts once).
        ``live``: it came as ``events.new``, so it is the session's new head."""
        event_id = ev.get("id")
        if not isinstance(event_id, str) or event_id in self.events:
            return False
        self.events[event_id] = ev
        sequence = ev.get("sequence")
        own = ev.get("sessionId") == self.id
        if own and isinstance(sequence, int) and sequence > self.last_sequence:
            self.last_sequence = sequence
            if live:
                self.head_id = event_id
                self.live_head = event_id
        self._apply_stored(ev)
        self.version += 1
        return True

    def _apply_stored(self, ev: dict[str, Any]) -> None:
        p = ev.get("payload") or {}
        kind = ev.get("type")
        own = ev.get("sessionId") == self.id
        if kind == "message.assistant":
            for block in p.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    t = self.tool(str(block.get("id")))
                    t.name = t.name or str(block.get("name") or "")
                    if not t.arguments_full:
                        t.arguments = block.get("input")
                    self.stored_tool_use.add(t.id)
                    t.version += 1
            turn = p.get("turn")
            if own and isinstance(turn, int):
                self.stored_turns.add(turn)
                if self.live.turn is None or self.live.turn <= turn:
                    # The stored message now holds what was streamed.
                    self.live.text = ""
                    self.live.thinking = ""
        elif kind == "tool.call":
            t = self.tool(str(p.get("toolCallId")))
            t.name = str(p.get("name") or t.name)
            t.arguments = p.get("arguments")
            t.arguments_full = True
            if t.status == "pending":
                t.status = "running"
            t.version += 1
        elif kind == "tool.result":
            t = self.tool(str(p.get("toolCallId")))
            t.result = p.get("content")
            t.is_error = bool(p.get("isError"))
            t.status = "error" if t.is_error else "done"
            duration = p.get("duration", p.get("durationMs"))
            if isinstance(duration, int | float):
                t.duration_ms = float(duration)
            t.version += 1
        elif kind == "stream.turn_end":
            turn = p.get("turn")
            if own and isinstance(turn, int):
                self.stored_usage_turns.add(turn)
                self.live_usage.pop(turn, None)
        elif kind == "subagent.spawned":
            call_id = p.get("toolCallId") or p.get("parentToolCallId")
            child = p.get("childSessionId") or p.get("sessionId") or p.get("subagentSessionId")
            if isinstance(call_id, str) and isinstance(child, str):
                t = self.tool(call_id)
                t.child_session_id = child
                t.version += 1

    def tool(self, tool_id: str) -> ToolState:
        t = self.tools.get(tool_id)
        if t is None:
            t = self.tools[tool_id] = ToolState(tool_id)
        return t

    def path(self) -> list[dict[str, Any]]:
        """The events of the transcript: root → head."""
        out: list[dict[str, Any]] = []
        seen: set[str] = set()
        current = self.head_id
        while current and current not in seen:
            ev = self.events.get(current)
            if ev is None:
                break
            seen.add(current)
            out.append(ev)
            current = ev.get("parentId")
        out.reverse()
        return out

    def failed_prompt(self, *, unanswered: bool = False) -> dict[str, Any] | None:
        """The prompt (``message.user`` with text) of the path's last turn when that
        turn failed (a failure recorded after it); with ``unanswered``, only when the
        model did not answer it at all (nothing of a reply is on the path)."""
        failed = False
        for ev in reversed(self.path()):
            kind = ev.get("type")
            if kind in FAILURE_TYPES:
                failed = True
            elif kind == "message.assistant":
                if unanswered:
                    return None
            elif kind == "message.user":
                if user_text((ev.get("payload") or {}).get("content")) is None:
                    if unanswered:
                        return None  # tool results: the model had answered
                    continue
                return ev if failed else None
        return None

    # -- live notifications ---------------------------------------------------------

    def _turn_stored(self, data: dict[str, Any]) -> bool:
        turn = data.get("turn")
        return isinstance(turn, int) and turn in self.stored_turns

    def apply_notification(self, method: str, data: Any) -> bool:
        """Apply an ``agent.*`` notification of this session; True when something changed."""
        if not isinstance(data, dict):
            return False
        live = self.live
        if method == "agent.turn_start":
            self.busy = True
            live.turn = data.get("turn")
            live.text = ""
            live.thinking = ""
            live.error = None
        elif method == "agent.text_delta":
            if live.ignore_until_snapshot or self._turn_stored(data):
                return False
            live.text += str(data.get("delta") or "")
        elif method == "agent.thinking_delta":
            if live.ignore_until_snapshot or self._turn_stored(data):
                return False
            live.thinking += str(data.get("delta") or "")
        elif method == "agent.tool_start":
            t = self.tool(str(data.get("toolCallId")))
            t.name = str(data.get("name") or t.name)
            if not t.arguments_full and data.get("arguments") is not None:
                t.arguments = data.get("arguments")
            if t.status == "pending":
                t.status = "running"
            t.version += 1
        elif method == "agent.tool_output":
            if live.ignore_until_snapshot:
                return False
            t = self.tool(str(data.get("toolCallId")))
            if t.result is not None:
                return False  # the stored result already holds the whole output
            t.output += str(data.get("chunk") or "")
            t.version += 1
        elif method == "agent.tool_end":
            t = self.tool(str(data.get("toolCallId")))
            t.name = str(data.get("name") or t.name)
            if t.result is None and data.get("content") is not None:
                t.result = data.get("content")
            t.is_error = bool(data.get("isError"))
            t.status = "error" if t.is_error else "done"
            duration = data.get("durationMs")
            if isinstance(duration, int | float):
                t.duration_ms = float(duration)
            t.version += 1
        elif method == "agent.turn_end":
            turn = data.get("turn")
            if isinstance(turn, int) and turn not in self.stored_usage_turns:
                cost = data.get("cost")
                self.live_usage[turn] = (
                    data.get("usage") or {},
                    float(cost) if isinstance(cost, int | float) else None,
                )
        elif method == "agent.complete":
            # The live text stays until its stored message replaces it (events.new
            # may come after agent.complete): nothing vanishes in between.
            self.busy = False
        elif method == "agent.error":
            live.error = str(data.get("message") or "The agent failed")
        else:
            return False
        self.version += 1
        return True

    def apply_child_notification(self, method: str, child_session_id: str, data: Any) -> bool:
        """A sub-agent's progress (``agent.*`` of a child session): the last thing it
        did, shown on the Task card that spawned it."""
        call_id = data.get("parentToolCallId") if isinstance(data, dict) else None
        card = self.tools.get(call_id) if isinstance(call_id, str) else None
        if card is None:
            linked = (t for t in self.tools.values() if t.child_session_id == child_session_id)
            card = next(linked, None)
        if card is None:
            # Not linked yet (subagent.spawned not seen): the running Task card.
            running = [t for t in self.tools.values() if t.name == "Task" and t.status == "running"]
            if len(running) != 1:
                return False
            card = running[0]
        card.child_session_id = child_session_id
        if not isinstance(data, dict):
            return False
        if method == "agent.tool_start":
            card.child_activity = f"▸ {data.get('name', '')}"
        elif method == "agent.text_delta":
            text = card.child_activity if card.child_activity.startswith("✎ ") else "✎ "
            card.child_activity = (text + str(data.get("delta") or ""))[-200:]
        elif method == "agent.complete":
            card.child_activity = f"done ({data.get('stopReason', '')})"
        else:
            return False
        card.version += 1
        self.version += 1
        return True

    def apply_snapshot(self, state: dict[str, Any]) -> None:
        """Seed the live part from ``agent.getState`` (deltas before it are in it)."""
        self.busy = bool(state.get("busy", state.get("isRunning")))
        self.live.ignore_until_snapshot = False
        if self.busy:
            turn = state.get("turn")
            self.live.turn = turn
            stored = isinstance(turn, int) and turn in self.stored_turns
            self.live.text = "" if stored else str(state.get("text") or "")
            self.live.thinking = "" if stored else str(state.get("thinking") or "")
            for tc in state.get("toolCalls") or []:
                t = self.tool(str(tc.get("toolCallId") or tc.get("id")))
                t.name = str(tc.get("name") or t.name)
                if not t.arguments_full and tc.get("arguments") is not None:
                    t.arguments = tc.get("arguments")
                if tc.get("output") is not None and t.result is None:
                    t.output = str(tc.get("output"))
                if t.result is None:
                    status = tc.get("status")
                    t.status = status if status in ("done", "error") else "running"
                t.version += 1
        else:
            self.live.text = ""
            self.live.thinking = ""
        self.version += 1

    # -- derived --------------------------------------------------------------------

    def usage_totals(self) -> Usage:
        """Tokens and cost of every turn this session ran (stored, plus ended live)."""
        total = Usage()

        def add(usage: Any, cost: Any) -> None:
            u = normalize_usage(usage)
            total.input += u["input"]
            total.output += u["output"]
            total.cache_read += u["cacheRead"]
            total.cache_write += u["cacheWrite"]
            if isinstance(cost, int | float):
                total.cost += float(cost)
            else:
                total.cost_known = False
            total.turns += 1

        for ev in self.events.values():
            if ev.get("type") == "stream.turn_end" and ev.get("sessionId") == self.id:
                p = ev.get("payload") or {}
                add(p.get("tokenUsage") or p.get("usage"), p.get("cost"))
        for usage, cost in self.live_usage.values():
            add(usage, cost)
        return total

    def live_tool_ids(self) -> list[str]:
        """Tool calls shown live: started, not yet part of a stored message."""
        return [
            tid
            for tid, t in self.tools.items()
            if tid not in self.stored_tool_use and t.status != "pending"
        ]


__all__ = [
    "FAILURE_TYPES",
    "MESSAGE_TYPES",
    "LiveTurn",
    "SessionModel",
    "ToolState",
    "Usage",
    "content_text",
    "normalize_usage",
    "user_text",
]
