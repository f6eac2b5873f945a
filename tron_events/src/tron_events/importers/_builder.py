"""Building the export-format records of imported sessions (docs/export-format.md).

:class:`ImportStream` hands out the header, workspaces (each once) and sessions;
a :class:`SessionBuilder` appends events one after another the way the store
would (``sequence`` +1, ``depth`` = parent's + 1, parent = the previous event),
validates and normalizes every payload through the payload registry, tracks the
model and turn like the agent loop does, and yields its records: the session,
its events in ``sequence`` order, then its notices. Forks start from a
:class:`Point` of another builder (a ``session.fork`` root whose parent is that
event), sub-agents as sessions whose ``parentSessionId`` names their parent.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import PurePath
from typing import IO, Any

import orjson

from ..errors import InvalidPayload, UnknownEventType
from ..payloads import validate_payload
from ._ids import stable_uuid7
from ._intmap import IntSet, stable_hash
from ._time import format_millis, to_millis

__all__ = ["ImportStream", "Point", "SessionBuilder"]

Record = dict[str, Any]

#: Events a spilling builder keeps in memory before it moves them to a file.
SPILL_AFTER = 1_000


def _generator() -> str:
    try:
        return f"tron-events {version('tron-events')}"
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "tron-events"


@dataclass(frozen=True, slots=True)
class Point:
    """A session's state after one of its events: where a fork can start."""

    session: SessionBuilder
    event_id: str
    depth: int
    turn: int
    model: str | None
    provider: str | None
    millis: int


class ImportStream:
    """Records for one import: one header, each workspace once, then sessions."""

    def __init__(self, kind: str, path: str) -> None:
        self.kind = kind
        self.path = path
        self._workspaces: dict[str, str] = {}
        self._header_sent = False
        self._session_keys: set[str] = set()

    def unique_key(self, key: str) -> str:
        """``key``, or ``key#n`` if a session of this import already has it (a source
        id used twice in a hand-made file)."""
        unique, n = key, 1
        while unique in self._session_keys:
            n += 1
            unique = f"{key}#{n}"
        self._session_keys.add(unique)
        return unique

    def header(self) -> Iterator[Record]:
        if not self._header_sent:
            self._header_sent = True
            yield {
                "format": "tron-events-export",
                "version": 1,
                "exportedAt": format_millis(_now_millis()),
                "generator": f"{_generator()} ({self.kind} importer)",
                "source": {"kind": self.kind, "path": self.path},
            }

    def workspace_id(self, path: str) -> str:
        return "ws_" + stable_uuid7(f"workspace:{path}")

    def _workspace(self, path: str, created: str, last: str) -> Iterator[Record]:
        if path in self._workspaces:
            return
        self._workspaces[path] = self.workspace_id(path)
        yield {
            "kind": "workspace",
            "id": self._workspaces[path],
            "path": path,
            "name": PurePath(path).name or path,
            "createdAt": created,
            "lastActivityAt": last,
        }

    def notice(self, message: str, session_id: str | None = None) -> Record:
        record: Record = {"kind": "notice", "message": message}
        if session_id is not None:
            record["sessionId"] = session_id
        return record


def _now_millis() -> int:
    return int(time.time() * 1000)


class SessionBuilder:
    """One imported session's events, appended in order.

    ``key`` names the session in its source (e.g. ``claude-code:<uuid>``); every
    id derives from it and the keys given to :meth:`add`, so a re-import gives
    the same ids. ``millis`` is the session's start in milliseconds since the epoch.
    With ``spill``, once a session has :data:`SPILL_AFTER` events they are written
    to a temporary file as they are added (``events`` stays empty) and read back by
    :meth:`records`: a session of a million events costs its builder a few bytes
    per event, not its events (and the temporary file about their JSON's size).
    """

    def __init__(
        self,
        stream: ImportStream,
        *,
        key: str,
        working_directory: str,
        millis: int,
        provider: str | None = None,
        model: str | None = None,
        title: str | None = None,
        start_extra: dict[str, Any] | None = None,
        parent_session_id: str | None = None,
        fork_from: Point | None = None,
        spill: bool = False,
    ) -> None:
        self.stream = stream
        self.key = key = stream.unique_key(key)
        self.id = "sess_" + stable_uuid7(f"session:{key}", millis)
        self.working_directory = working_directory
        self.workspace_id = stream.workspace_id(working_directory)
        self.title = title
        self.start_extra = dict(start_extra or {})
        self.parent_session_id = parent_session_id
        self.fork_from = fork_from
        self.created_millis = millis
        self.last_millis = millis
        self.root_id = "evt_" + stable_uuid7(f"{key}:root", millis)
        self.events: list[Record] = []
        self._spills = spill
        #: The events written out so far, once there are more than SPILL_AFTER (closed
        #: when read back by records, or dropped by discard).
        self._spill: IO[bytes] | None = None
        self.event_count = 0
        self._content = False
        self.notices: list[str] = []
        #: Source records kept as metadata.import events, by record type.
        self.kept: Counter[str] = Counter()
        #: Other things the summary should mention, with how often they happened.
        self.remarks: Counter[str] = Counter()
        self.head = self.root_id
        self.turn = 0
        self.model = model
        self.provider = provider
        self.start_model = model
        self.start_provider = provider
        if fork_from is not None:
            self.head_depth = fork_from.depth + 1
            self.turn = fork_from.turn
            self.model = self.start_model = fork_from.model
            self.provider = self.start_provider = fork_from.provider
            self.parent_session_id = fork_from.session.id
            self.working_directory = fork_from.session.working_directory
            self.workspace_id = fork_from.session.workspace_id
        else:
            self.head_depth = 0
        #: Hashes of the event keys used (a source id used twice gets ``#2``).
        self._used_keys = IntSet()

    # -- appending --------------------------------------------------------------

    def time(self, value: Any) -> int:
        """``value`` as milliseconds, or the last time seen when it is not a time."""
        millis = to_millis(value)
        if millis is None:
            if value is not None:
                self.remarks[
                    "a record had no readable timestamp: it got the time of the record before"
                ] += 1
            return self.last_millis
        return millis

    def add(
        self,
        type: str,
        payload: dict[str, Any],
        *,
        key: str,
        millis: int | None = None,
    ) -> str:
        """Append an event after the head; return its id. An invalid payload is kept
        as a ``metadata.import`` event with the reason (and a notice)."""
        if millis is None:
            millis = self.last_millis
        self.last_millis = max(self.last_millis, millis)
        full_key = f"{self.key}:{key}"
        if not self._used_keys.add(stable_hash(full_key)):  # a source id used twice
            n = 2
            while not self._used_keys.add(stable_hash(f"{full_key}#{n}")):
                n += 1
            full_key = f"{full_key}#{n}"
        try:
            data = validate_payload(type, payload)
        except (InvalidPayload, UnknownEventType) as exc:
            self.notices.append(
                f"a {type} event could not be stored as such ({exc}): "
                "kept as a metadata.import event"
            )
            data = validate_payload(
                "metadata.import",
                {
                    "source": self.stream.kind,
                    "recordType": type,
                    "record": payload,
                    "reason": str(exc),
                },
            )
            type = "metadata.import"
        if type == "tool.result" and data.get("truncated") and not payload.get("truncated"):
            # The store caps results at 10,240 characters; the source had them whole.
            data["fullContent"] = payload.get("content")
            self.remarks[
                "a tool result over 10,240 characters was cut in `content` as the store does "
                "for every writer; the whole text is kept in the payload's `fullContent`"
            ] += 1
        event_id = "evt_" + stable_uuid7(full_key, millis)
        parent_id = self.head
        depth = self.head_depth + 1
        self.event_count += 1
        record = {
            "kind": "event",
            "id": event_id,
            "parentId": parent_id,
            "sessionId": self.id,
            "workspaceId": self.workspace_id,
            "sequence": self.event_count,
            "depth": depth,
            "type": type,
            "timestamp": format_millis(millis),
            "payload": data,
        }
        if self._spill is not None:
            self._spill.write(orjson.dumps(record) + b"\n")
        else:
            self.events.append(record)
            if self._spills and len(self.events) >= SPILL_AFTER:
                # Small sessions (most forks) stay in memory: a file each would run
                # out of file descriptors in a transcript with a thousand rewinds.
                self._spill = tempfile.TemporaryFile(prefix="tron-import-")  # noqa: SIM115
                self._spill.writelines(orjson.dumps(e) + b"\n" for e in self.events)
                self.events = []
        self._content = self._content or type != "metadata.import"
        self.head = event_id
        self.head_depth = depth
        return event_id

    def keep(
        self,
        record_type: str,
        record: Any,
        *,
        key: str,
        millis: int | None = None,
        line: int | None = None,
        count_as: str | None = None,
    ) -> str:
        """Keep a source record we have no event type for as ``metadata.import``."""
        payload: dict[str, Any] = {
            "source": self.stream.kind,
            "recordType": record_type,
            "record": record,
        }
        if line is not None:
            payload["line"] = line
        self.kept[count_as or record_type] += 1
        return self.add("metadata.import", payload, key=key, millis=millis)

    def use_model(
        self,
        model: str | None,
        provider: str | None,
        *,
        key: str,
        millis: int | None = None,
        imported: Any = None,
    ) -> bool:
        """The model (and provider) of the next message: a ``config.model_switch``
        (with ``imported``, if given) when it changes; the first one is the
        session's model. True if a switch was recorded."""
        if not model:
            return False
        if self.start_model is None:
            self.model = self.start_model = model
            self.provider = self.start_provider = provider or self.provider
            return False
        if model == self.model and (provider is None or provider == self.provider):
            return False
        payload: dict[str, Any] = {"previousModel": self.model, "newModel": model}
        if provider and provider != self.provider:
            payload["provider"] = provider
            self.provider = provider
        if imported is not None:
            payload["imported"] = imported
        self.model = model
        self.add("config.model_switch", payload, key=key, millis=millis)
        return True

    def next_turn(self) -> int:
        self.turn += 1
        return self.turn

    def point(self) -> Point:
        """Where the session is now (to fork from later)."""
        return Point(
            self, self.head, self.head_depth, self.turn, self.model, self.provider, self.last_millis
        )

    def notice(self, message: str) -> None:
        self.notices.append(message)

    @property
    def has_content(self) -> bool:
        """Whether an event other than ``metadata.import`` was added."""
        return self._content

    # -- output -----------------------------------------------------------------

    def _events(self) -> Iterator[Record]:
        spill, self._spill = self._spill, None
        if spill is not None:
            with spill:
                spill.seek(0)
                for raw in spill:
                    yield orjson.loads(raw)
        yield from self.events

    def discard(self) -> None:
        """Drop the events (a session that will not be imported)."""
        if self._spill is not None:
            self._spill.close()
            self._spill = None
        self.events = []

    def _root(self) -> Record:
        created = format_millis(self.created_millis)
        if self.fork_from is not None:
            source = self.fork_from
            payload = validate_payload(
                "session.fork",
                {
                    "sourceSessionId": source.session.id,
                    "sourceEventId": source.event_id,
                    **self.start_extra,
                },
            )
            return {
                "kind": "event",
                "id": self.root_id,
                "parentId": source.event_id,
                "sessionId": self.id,
                "workspaceId": self.workspace_id,
                "sequence": 0,
                "depth": source.depth + 1,
                "type": "session.fork",
                "timestamp": created,
                "payload": payload,
            }
        start: dict[str, Any] = {
            "workingDirectory": self.working_directory,
            "model": self.start_model or "unknown",
            "provider": self.start_provider or "unknown",
        }
        # The title stays off the root: sources name a session later (an AI title, a
        # rename), and the root must not change when the file grows (see the import's
        # continuation of a stored session). The session record carries it.
        if self.parent_session_id is not None:
            start["parentSessionId"] = self.parent_session_id
        start.update(self.start_extra)
        return {
            "kind": "event",
            "id": self.root_id,
            "parentId": None,
            "sessionId": self.id,
            "workspaceId": self.workspace_id,
            "sequence": 0,
            "depth": 0,
            "type": "session.start",
            "timestamp": created,
            "payload": validate_payload("session.start", start),
        }

    def records(self) -> Iterator[Record]:
        """The workspace (the first time), the session, its events, its notices."""
        created = format_millis(self.created_millis)
        last = format_millis(self.last_millis)
        yield from self.stream._workspace(self.working_directory, created, last)
        yield {
            "kind": "session",
            "id": self.id,
            "workspaceId": self.workspace_id,
            "rootEventId": self.root_id,
            "headEventId": self.head,
            "status": "active",
            "model": self.start_model or "unknown",
            "provider": self.start_provider or "unknown",
            "workingDirectory": self.working_directory,
            "title": self.title,
            "parentSessionId": self.parent_session_id,
            "forkFromEventId": self.fork_from.event_id if self.fork_from else None,
            "createdAt": created,
            "lastActivityAt": last,
            "endedAt": None,
        }
        yield self._root()
        yield from self._events()
        for message in self.notices:
            yield self.stream.notice(message, self.id)
        for remark, count in sorted(self.remarks.items()):
            yield self.stream.notice(f"{remark} (×{count})", self.id)
        if self.kept:
            shown = ", ".join(f"{name} ×{n}" for name, n in sorted(self.kept.items()))
            yield self.stream.notice(
                f"kept as read, with no Tron equivalent (metadata.import events or payload "
                f"fields): {shown}",
                self.id,
            )
