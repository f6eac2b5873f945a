"""The store's read models: events, sessions, workspaces and result pages.

These are plain immutable value objects, not pydantic models: the store builds
thousands of them per query and validation already happened on append.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

SessionStatus = Literal["active", "ended"]


class SharedPayload:
    """A payload's JSON text, decoded at most once for every Event sharing it
    (the store's path cache hands these to the events it builds)."""

    __slots__ = ("raw", "value")

    def __init__(self, raw: str | bytes, value: dict[str, Any] | None = None) -> None:
        self.raw = raw
        self.value = value

    def get(self) -> dict[str, Any]:
        value = self.value
        if value is None:
            value = self.value = orjson.loads(self.raw)
        return value


class Event:
    """One immutable event.

    ``payload`` is decoded from JSON on first access. Treat it as read-only:
    the store shares decoded payloads between the events it hands out (events
    never change, so neither do their payloads); copy it before modifying.
    """

    __slots__ = (
        "_payload",
        "_raw",
        "depth",
        "id",
        "parent_id",
        "position",
        "sequence",
        "session_id",
        "timestamp",
        "type",
        "workspace_id",
    )

    id: str
    parent_id: str | None
    session_id: str
    workspace_id: str
    sequence: int
    depth: int
    type: str
    timestamp: str
    position: int

    def __init__(
        self,
        *,
        id: str,
        parent_id: str | None,
        session_id: str,
        workspace_id: str,
        sequence: int,
        depth: int,
        type: str,
        timestamp: str,
        payload: dict[str, Any] | None = None,
        raw_payload: str | bytes | SharedPayload | None = None,
        position: int = 0,
    ) -> None:
        self.id = id
        self.parent_id = parent_id
        self.session_id = session_id
        self.workspace_id = workspace_id
        self.sequence = sequence
        self.depth = depth
        self.type = type
        self.timestamp = timestamp
        self.position = position
        self._payload = payload
        self._raw = raw_payload

    @property
    def payload(self) -> dict[str, Any]:
        if self._payload is None:
            raw = self._raw
            if type(raw) is SharedPayload:
                self._payload = raw.get()
            else:
                self._payload = orjson.loads(raw if raw is not None else b"{}")  # type: ignore[arg-type]
        return self._payload

    def to_dict(self) -> dict[str, Any]:
        """The event as a JSON-ready dict with camelCase keys (what clients receive)."""
        return self._with_payload(self.payload)

    def to_wire(self) -> dict[str, Any]:
        """``to_dict`` for an ``orjson`` encoder: a payload not decoded yet passes through
        as its stored JSON text (an ``orjson.Fragment``), without a decode and re-encode.
        Other encoders need ``to_dict``."""
        raw = self._raw
        payload: Any
        if self._payload is not None:
            payload = self._payload
        elif isinstance(raw, SharedPayload):
            payload = raw.value if raw.value is not None else orjson.Fragment(raw.raw)
        elif raw is not None:
            payload = orjson.Fragment(raw)
        else:
            payload = {}
        return self._with_payload(payload)

    def _with_payload(self, payload: Any) -> dict[str, Any]:
        return {
            "id": self.id,
            "parentId": self.parent_id,
            "sessionId": self.session_id,
            "workspaceId": self.workspace_id,
            "sequence": self.sequence,
            "depth": self.depth,
            "type": self.type,
            "timestamp": self.timestamp,
            "payload": payload,
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Event):
            return NotImplemented
        return (
            self.id == other.id
            and self.parent_id == other.parent_id
            and self.session_id == other.session_id
            and self.workspace_id == other.workspace_id
            and self.sequence == other.sequence
            and self.depth == other.depth
            and self.type == other.type
            and self.timestamp == other.timestamp
            and self.payload == other.payload
        )

    def __hash__(self) -> int:
        return hash(self.id)

    def __repr__(self) -> str:
        return (
            f"Event(id={self.id!r}, type={self.type!r}, session_id={self.session_id!r}, "
            f"sequence={self.sequence}, depth={self.depth}, parent_id={self.parent_id!r})"
        )


@dataclass(frozen=True, slots=True)
class Workspace:
    id: str
    path: str
    name: str | None
    created_at: str
    last_activity_at: str


@dataclass(frozen=True, slots=True)
class Session:
    id: str
    workspace_id: str
    root_event_id: str
    head_event_id: str
    status: SessionStatus
    model: str
    provider: str
    working_directory: str
    title: str | None
    parent_session_id: str | None
    fork_from_event_id: str | None
    created_at: str
    last_activity_at: str
    ended_at: str | None
    event_count: int
    message_count: int
    turn_count: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_creation_tokens: int
    cost: float


@dataclass(frozen=True, slots=True)
class EventPage:
    """A page of a feed. Pass ``next_cursor`` back as ``after_event_id`` for the next page."""

    events: list[Event]
    next_cursor: str | None
    has_more: bool


@dataclass(frozen=True, slots=True)
class EventJsonPage:
    """A page of a feed as JSON text, for servers that forward events unread.

    ``events_json`` is the JSON array of the events' wire form (what
    :meth:`Event.to_wire` gives, key for key), built by the database with the
    stored payload JSON spliced in. ``last_sequence`` / ``last_position`` are
    those of the page's last event (None for an empty page).
    """

    events_json: str
    count: int
    last_sequence: int | None
    last_position: int | None
    next_cursor: str | None
    has_more: bool


@dataclass(frozen=True, slots=True)
class ForkResult:
    session: Session
    fork_event: Event


@dataclass(frozen=True, slots=True)
class SearchHit:
    event_id: str
    session_id: str
    workspace_id: str
    type: str
    timestamp: str
    snippet: str
    score: float
    sequence: int = field(default=0)
