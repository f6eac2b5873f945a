"""The records of the JSONL export format, version 1 (``docs/export-format.md``).

One pydantic model per record ``kind``. Field names are camelCase on the wire
and snake_case here; unknown fields are ignored, so a newer writer's additions
do not stop an older reader. Only ``id`` (and an event's ``type``,
``timestamp`` and ``payload``) are required: an importer may leave the rest
out and the import fills them in exactly as an ``append`` would have.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
)
from pydantic.alias_generators import to_camel

from ..errors import TronEventsError

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "BlobRecord",
    "EventRecord",
    "ExportFormatError",
    "Header",
    "NoticeRecord",
    "Record",
    "SessionRecord",
    "WorkspaceRecord",
    "check_header",
    "header",
    "parse_record",
]

FORMAT_NAME = "tron-events-export"
FORMAT_VERSION = 1

#: Ids are stored in VARCHAR(64) columns.
Id = Annotated[str, StringConstraints(min_length=1, max_length=64)]


def _iso_8601(value: str) -> str:
    """A time as the store writes it (ISO 8601, ``…Z``), kept exactly as given: a string
    that is no time at all would sort and display as nonsense."""
    text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    try:
        datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"{value!r} is not an ISO 8601 time (e.g. 2026-11-24T15:20:00.123Z)"
        ) from None
    return value


Timestamp = Annotated[
    str, StringConstraints(min_length=1, max_length=40), AfterValidator(_iso_8601)
]


class ExportFormatError(TronEventsError):
    """The input is not a Tron export (or of a version this reader does not know)."""


class _Record(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True
    )


class Header(_Record):
    """The first line: ``{"format": "tron-events-export", "version": 1, ...}``."""

    format: Literal["tron-events-export"]
    version: int
    exported_at: str | None = None
    generator: str | None = None
    source: dict[str, Any] | None = None


class WorkspaceRecord(_Record):
    kind: Literal["workspace"] = "workspace"
    id: Id
    path: Annotated[str, StringConstraints(min_length=1)]
    name: str | None = None
    created_at: Timestamp | None = None
    last_activity_at: Timestamp | None = None


class SessionRecord(_Record):
    """A session row. What is left out is derived from the session's events."""

    kind: Literal["session"] = "session"
    id: Id
    workspace_id: Id | None = None
    root_event_id: Id | None = None
    head_event_id: Id | None = None
    status: Literal["active", "ended"] | None = None
    model: str | None = None
    provider: str | None = None
    working_directory: str | None = None
    title: str | None = None
    parent_session_id: Id | None = None
    fork_from_event_id: Id | None = None
    created_at: Timestamp | None = None
    last_activity_at: Timestamp | None = None
    ended_at: Timestamp | None = None
    event_count: int | None = Field(default=None, ge=1)
    message_count: int | None = Field(default=None, ge=0)
    turn_count: int | None = Field(default=None, ge=0)
    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    cache_read_tokens: int | None = Field(default=None, ge=0)
    cache_creation_tokens: int | None = Field(default=None, ge=0)
    cost: float | None = Field(default=None, ge=0)

    COUNTERS: ClassVar[tuple[str, ...]] = (
        "event_count",
        "message_count",
        "turn_count",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_creation_tokens",
        "cost",
    )

    def has_counters(self) -> bool:
        return all(getattr(self, name) is not None for name in self.COUNTERS)


class EventRecord(_Record):
    """An event in its wire form (``Event.to_wire()``), plus ``kind``.

    ``parentId`` left out (not ``null``) means the previous event of the
    session; ``sequence``, ``depth``, ``sessionId`` and ``workspaceId`` left
    out are computed. When given, they are checked.
    """

    kind: Literal["event"] = "event"
    id: Id
    parent_id: Id | None = None
    session_id: Id | None = None
    workspace_id: Id | None = None
    sequence: int | None = Field(default=None, ge=0)
    depth: int | None = Field(default=None, ge=0)
    type: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    timestamp: Timestamp
    payload: dict[str, Any]

    def parent_given(self) -> bool:
        return "parent_id" in self.model_fields_set


class NoticeRecord(_Record):
    """Something an importer could not express exactly, and how it kept it."""

    kind: Literal["notice"] = "notice"
    session_id: str | None = None
    message: str


class BlobRecord(_Record):
    """A file content the file events of the export name (``before``/``after`` hashes
    of ``file.write``, ``file.edit``, ``file.changes``, ``file.restore``), so an
    imported session can still be rewound with its files. ``data`` is the content in
    base64; ``base`` optionally names a content of the same file earlier in the input
    (the importer may store this one as the difference from it)."""

    kind: Literal["blob"] = "blob"
    hash: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
    size: int | None = Field(default=None, ge=0)
    data: str
    base: str | None = None


Record = WorkspaceRecord | SessionRecord | EventRecord | NoticeRecord | BlobRecord

_MODELS: dict[str, type[_Record]] = {
    "workspace": WorkspaceRecord,
    "session": SessionRecord,
    "event": EventRecord,
    "notice": NoticeRecord,
    "blob": BlobRecord,
}
KINDS = frozenset(_MODELS)


class UnknownKind(Exception):
    """A record whose ``kind`` this reader does not know (skipped and reported)."""


def parse_record(data: Any) -> Record:
    """The model of one decoded line. Raises ``UnknownKind`` for a kind this
    version does not know and ``ValueError`` (with a short reason) for a record
    that does not fit its kind."""
    if not isinstance(data, dict):
        raise ValueError(f"a record must be a JSON object, not {type(data).__name__}")
    kind = data.get("kind")
    model = _MODELS.get(kind) if isinstance(kind, str) else None
    if model is None:
        if "format" in data and kind is None:
            raise ValueError("a second header")
        raise UnknownKind(f"unknown record kind {kind!r}" if kind is not None else "no 'kind'")
    try:
        return model.model_validate(data)  # type: ignore[return-value]
    except ValidationError as exc:
        raise ValueError(f"invalid {kind} record: {_short(exc)}") from None


def _short(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        where = ".".join(str(p) for p in err["loc"]) or "record"
        parts.append(f"{where}: {err['msg']}")
    more = len(exc.errors()) - 3
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def is_header(data: Any) -> bool:
    return isinstance(data, dict) and "format" in data and "kind" not in data


def check_header(data: Any, where: str = "the first line") -> Header:
    """The header, or ``ExportFormatError`` saying why this is not one we read."""
    if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
        found = data.get("format") if isinstance(data, dict) else None
        raise ExportFormatError(
            f"{where} is not a Tron export header "
            f'(expected {{"format": "{FORMAT_NAME}", "version": {FORMAT_VERSION}, …}}'
            + (f", found format {found!r}" if found is not None else "")
            + ")"
        )
    try:
        head = Header.model_validate(data)
    except ValidationError as exc:
        raise ExportFormatError(f"{where}: invalid header: {_short(exc)}") from None
    if head.version > FORMAT_VERSION:
        raise ExportFormatError(
            f"the export is format version {head.version}; this tron-events reads up to "
            f"version {FORMAT_VERSION}: upgrade tron-events to import it"
        )
    if head.version < 1:
        raise ExportFormatError(f"invalid export format version {head.version}")
    return head


def header(
    *, exported_at: str, generator: str, source: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The header line as a dict (what ``export`` writes first)."""
    out: dict[str, Any] = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "exportedAt": exported_at,
        "generator": generator,
    }
    if source is not None:
        out["source"] = source
    return out
