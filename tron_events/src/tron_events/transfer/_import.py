"""Import of the export format: every session exactly as exported, or not at all.

Records stream through: a session's events are checked and inserted in
batches inside that session's own transaction, so memory stays bounded by a
batch however long a session is, and a session that fails any check leaves
nothing behind. A dry run does the same inside one transaction (a savepoint
per session, so later forks still find their sources) and rolls it back.

``blob`` records (file contents the file events name) are stored by hash, checked
against it, between sessions in transactions of their own: a content is only ever
a content, whatever session names it, so storing one is never wrong.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from .._changes import ALL_EVENTS
from .._recorder import Cursor, NewEvent, Recorder, SessionDelta
from ..blobs import content_hash
from ..errors import (
    InvalidPayload,
    StorageError,
    StoreBusy,
    StoreClosed,
    TronEventsError,
    UnknownEventType,
)
from ..models import Event, Session, Workspace
from ..payloads import validate_payload
from ..search_text import search_text
from ..store import (
    HEAD_MODEL_TYPES,
    EventStore,
    _count,
    _directory_at,
    _model_and_provider_at,
)
from .format import (
    BlobRecord,
    EventRecord,
    NoticeRecord,
    SessionRecord,
    UnknownKind,
    WorkspaceRecord,
    check_header,
    is_header,
    parse_record,
)

__all__ = ["ImportSummary", "Item", "import_items", "import_records"]

#: Events inserted per statement batch (and ids checked per query).
BATCH = 500
#: Ids (with depths) of the session being imported kept for parent lookups;
#: beyond this the database answers (a parent is nearly always recent). About 150
#: bytes an id: 3 MB of the import's memory at most, however long the session.
DEPTH_WINDOW = 20_000
#: How many skipped records and notices ``describe`` lists one by one.
SHOWN = 20
#: Bytes of file contents stored per transaction.
BLOB_BATCH_BYTES = 16 << 20
#: Bytes of recent contents kept as delta bases for the next versions of their files.
BLOB_BASES_BYTES = 64 << 20


@dataclass
class ImportSummary:
    """What an import did (or, with ``dry_run``, would do)."""

    dry_run: bool = False
    #: The header's ``source`` (an importer names the agent and the file it read).
    source: dict[str, Any] | None = None
    #: Ids of the sessions imported, in file order.
    imported: list[str] = field(default_factory=list)
    events_imported: int = 0
    workspaces_created: int = 0
    #: Sessions already in the database with the same content (nothing done).
    already_present: list[str] = field(default_factory=list)
    #: (session id, events added): stored sessions the input continues (it grew since).
    extended: list[tuple[str, int]] = field(default_factory=list)
    #: (session id, reason): sessions not imported, nothing of them written.
    refused: list[tuple[str, str]] = field(default_factory=list)
    #: (record number, reason): records skipped (the header is record 1).
    skipped: list[tuple[int, str]] = field(default_factory=list)
    #: (session id or None, message): what an importer or this import wants said.
    notices: list[tuple[str | None, str]] = field(default_factory=list)
    #: File contents (``blob`` records) stored that the database did not hold yet.
    blobs_imported: int = 0

    @property
    def sessions_imported(self) -> int:
        return len(self.imported)

    @property
    def changed(self) -> bool:
        """Whether the database was changed."""
        return bool(self.imported or self.extended) and not self.dry_run

    @property
    def ok(self) -> bool:
        """Nothing refused and nothing skipped."""
        return not self.refused and not self.skipped

    def merge(self, other: ImportSummary) -> None:
        """Add another import's figures (a folder of files gives one summary)."""
        self.imported += other.imported
        self.events_imported += other.events_imported
        self.workspaces_created += other.workspaces_created
        self.already_present += other.already_present
        self.extended += other.extended
        self.refused += other.refused
        self.skipped += other.skipped
        self.notices += other.notices
        self.blobs_imported += other.blobs_imported

    def to_dict(self) -> dict[str, Any]:
        return {
            "dryRun": self.dry_run,
            "source": self.source,
            "sessionsImported": self.imported,
            "eventsImported": self.events_imported,
            "workspacesCreated": self.workspaces_created,
            "alreadyPresent": self.already_present,
            "extended": [{"sessionId": s, "eventsAdded": n} for s, n in self.extended],
            "refused": [{"sessionId": s, "reason": r} for s, r in self.refused],
            "skipped": [{"record": n, "reason": r} for n, r in self.skipped],
            "notices": [{"sessionId": s, "message": m} for s, m in self.notices],
            "blobsImported": self.blobs_imported,
        }

    def describe(self) -> str:
        """A readable summary, several lines."""
        would = "would import" if self.dry_run else "imported"
        lines = [
            f"{would} {len(self.imported)} session(s), {self.events_imported} event(s)"
            + (f", {self.workspaces_created} new workspace(s)" if self.workspaces_created else "")
            + (f", {self.blobs_imported} file content(s)" if self.blobs_imported else "")
        ]
        if self.extended:
            added = sum(n for _, n in self.extended)
            lines.append(
                f"{'would extend' if self.dry_run else 'extended'} {len(self.extended)} "
                f"session(s) already here with {added} new event(s) (they grew since): "
                + _some([sid for sid, _ in self.extended])
            )
        if self.already_present:
            lines.append(
                f"{len(self.already_present)} session(s) already present (unchanged): "
                + _some(self.already_present)
            )
        if not self.imported and not self.extended and not self.refused and self.already_present:
            lines.append("nothing to do: the database already holds everything in the input")
        for sid, reason in self.refused[:SHOWN]:
            lines.append(f"refused session {sid}: {reason}")
        if len(self.refused) > SHOWN:
            lines.append(f"… and {len(self.refused) - SHOWN} more refused session(s)")
        for number, reason in self.skipped[:SHOWN]:
            lines.append(f"skipped record {number}: {reason}")
        if len(self.skipped) > SHOWN:
            lines.append(f"… and {len(self.skipped) - SHOWN} more skipped record(s)")
        for about, message in self.notices[:SHOWN]:
            lines.append(f"notice{f' ({about})' if about else ''}: {message}")
        if len(self.notices) > SHOWN:
            lines.append(f"… and {len(self.notices) - SHOWN} more notice(s)")
        return "\n".join(lines)


def _some(ids: list[str], n: int = 5) -> str:
    return ", ".join(ids[:n]) + (f" … (+{len(ids) - n})" if len(ids) > n else "")


@dataclass(frozen=True, slots=True)
class Item:
    """One input record: its number (the line number of a file), the decoded
    record, the payload's JSON text as it appeared (to store the same bytes),
    or why the line could not be decoded."""

    number: int
    data: Any = None
    raw_payload: str | None = None
    error: str | None = None


def import_records(
    store: EventStore, records: Iterable[dict[str, Any]], *, dry_run: bool = False
) -> ImportSummary:
    """Import decoded export records (``docs/export-format.md``): the header
    first, or no header at all. See :func:`import_items`."""
    return import_items(
        store, (Item(n, data) for n, data in enumerate(records, start=1)), dry_run=dry_run
    )


def import_items(
    store: EventStore,
    items: Iterable[Item],
    *,
    dry_run: bool = False,
    header_required: bool = False,
) -> ImportSummary:
    """Import records one session at a time, each in its own transaction.

    A session whose id is already stored with the same events is skipped
    ("already present"); with other content, or failing any check (a payload
    its type's model refuses, a broken tree, an id used elsewhere, a missing
    fork source), it is refused with the reason and nothing of it is written.
    Raises :class:`~tron_events.transfer.ExportFormatError` before writing
    anything when the first record is a header this reader does not accept.
    """
    stream = _Stream(iter(items))
    summary = ImportSummary(dry_run=dry_run)
    first = stream.peek()
    if first is not None and first.error is None and is_header(first.data):
        summary.source = check_header(first.data).source
        stream.next()
    elif header_required:
        check_header(first.data if first is not None else None)
    return _Importer(store, summary).run(stream)


class _Stream:
    """Items with one of lookahead."""

    def __init__(self, items: Iterator[Item]) -> None:
        self._items = items
        self._next: Item | None = None
        self._done = False

    def peek(self) -> Item | None:
        if self._next is None and not self._done:
            self._next = next(self._items, None)
            self._done = self._next is None
        return self._next

    def next(self) -> Item | None:
        item = self.peek()
        self._next = None
        return item


class _Refused(Exception):
    """The current session cannot be imported, for this reason."""


class _Present(Exception):
    """The session is already stored with the same content."""


class _Rollback(Exception):
    pass


def _kind(item: Item) -> str | None:
    data = item.data
    if item.error is not None:
        return "error"
    if isinstance(data, dict):
        kind = data.get("kind")
        return kind if isinstance(kind, str) else None
    return None


class _Importer:
    def __init__(self, store: EventStore, summary: ImportSummary) -> None:
        self.store = store
        self.rec: Recorder = store.recorder
        self.summary = summary
        self.workspaces: dict[str, WorkspaceRecord] = {}
        #: Workspace ids of the input -> the database's (after a session committed).
        self.ws_map: dict[str, str] = {}
        self.unknown_types: dict[str, int] = {}
        #: Workspaces this import created from the input's records (their
        #: lastActivityAt is the input's; sessions do not touch it).
        self.from_records: set[str] = set()
        #: Sessions refused so far (their dependents are refused for that reason).
        self.refused: set[str] = set()
        #: File contents read, not stored yet (stored before the next session).
        self.blobs: list[tuple[str, bytes, str | None]] = []
        self.blob_bytes = 0
        #: Recent contents by hash: delta bases for later versions of their files.
        self.bases: dict[str, bytes] = {}
        self.bases_bytes = 0

    def run(self, stream: _Stream) -> ImportSummary:
        if self.summary.dry_run:
            with contextlib.suppress(_Rollback), self.rec.write() as cur:
                self._loop(stream, cur)
                raise _Rollback  # a dry run writes nothing
        else:
            self._loop(stream, None)
            self._store_blobs()
        for type_, count in sorted(self.unknown_types.items()):
            self.summary.notices.append(
                (
                    None,
                    f"{count} event(s) of type {type_!r}, which is not registered here, "
                    "kept as they are (not validated)",
                )
            )
        return self.summary

    def _loop(self, stream: _Stream, outer: Cursor | None) -> None:
        while (item := stream.next()) is not None:
            record = self._record(item)
            if isinstance(record, BlobRecord):
                self._blob(item, record, outer)
            elif isinstance(record, WorkspaceRecord):
                self.workspaces[record.id] = record
            elif isinstance(record, SessionRecord):
                if outer is None:
                    self._store_blobs()  # not while a session's transaction is open
                self._session(record, stream, outer)
            elif isinstance(record, EventRecord):
                self.summary.skipped.append(
                    (item.number, f"event {record.id} does not follow its session's record")
                )

    def _blob(self, item: Item, record: BlobRecord, dry_run: Cursor | None) -> None:
        """Check a file content against its hash, and keep it to be stored (``dry_run``:
        the dry run's transaction; what would be stored is only counted)."""
        try:
            data = base64.b64decode(record.data, validate=True)
        except (binascii.Error, ValueError):
            self.summary.skipped.append((item.number, f"blob {record.hash}: data is not base64"))
            return
        if content_hash(data) != record.hash or (
            record.size is not None and record.size != len(data)
        ):
            self.summary.skipped.append(
                (item.number, f"blob {record.hash}: its data does not have that hash (damaged)")
            )
            return
        if dry_run is not None:
            if record.hash not in self.bases and not self.rec.blob_depths(dry_run, [record.hash]):
                self.summary.blobs_imported += 1
            self.bases[record.hash] = b""  # counted once
            return
        self.blobs.append((record.hash, data, record.base))
        self.blob_bytes += len(data)
        if self.blob_bytes >= BLOB_BATCH_BYTES:
            self._store_blobs()

    def _store_blobs(self) -> None:
        """Store the contents read so far (one transaction), each as the difference
        from its ``base`` when that was a recent content of this import."""
        pending, self.blobs, self.blob_bytes = self.blobs, [], 0
        if not pending:
            return
        new = self.store.missing_blobs(h for h, _, _ in pending)
        items: list[bytes | tuple[bytes, bytes | None]] = []
        for h, data, base in pending:
            if h in new:
                base_data = self.bases.get(base) if base is not None else None
                items.append((data, base_data) if base_data is not None else data)
                new.discard(h)  # the same content twice in a batch: stored once
            if h not in self.bases:
                self.bases[h] = data
                self.bases_bytes += len(data)
        self.store.put_blobs(items)
        self.summary.blobs_imported += len(items)
        while self.bases_bytes > BLOB_BASES_BYTES and self.bases:
            oldest = next(iter(self.bases))
            self.bases_bytes -= len(self.bases.pop(oldest))

    def _record(
        self, item: Item
    ) -> WorkspaceRecord | SessionRecord | EventRecord | BlobRecord | None:
        """The record of an item; notices, headers and bad or unknown records
        are dealt with here (None)."""
        if item.error is not None:
            self.summary.skipped.append((item.number, item.error))
            return None
        if is_header(item.data):
            try:
                check_header(item.data, where=f"record {item.number}")
            except TronEventsError as exc:
                self.summary.skipped.append((item.number, str(exc)))
            return None  # several exports concatenated: fine
        try:
            record = parse_record(item.data)
        except UnknownKind as exc:
            self.summary.skipped.append((item.number, f"{exc} (skipped)"))
            return None
        except ValueError as exc:
            self.summary.skipped.append((item.number, str(exc)))
            return None
        if isinstance(record, NoticeRecord):
            self.summary.notices.append((record.session_id, record.message))
            return None
        return record

    def _events(self, stream: _Stream, session_id: str) -> Iterator[tuple[Item, EventRecord]]:
        """The session's run of events (notices and unknown kinds in between
        are handled on the way). A line that could not be read, or an invalid
        event, makes the session incomplete: refused."""
        while (item := stream.peek()) is not None:
            kind = _kind(item)
            if kind in ("session", "workspace", "blob") or (kind is None and is_header(item.data)):
                return
            stream.next()
            if kind == "error":
                raise _Refused(f"record {item.number}: {item.error}; the session is incomplete")
            if kind != "event":
                self._record(item)
                continue
            try:
                record = parse_record(item.data)
            except ValueError as exc:
                raise _Refused(f"record {item.number}: {exc}") from None
            assert isinstance(record, EventRecord)
            yield item, record

    def _drain(self, stream: _Stream) -> int:
        dropped = 0
        while (item := stream.peek()) is not None:
            kind = _kind(item)
            if kind not in ("event", "error"):
                if kind in ("session", "workspace", "blob") or is_header(item.data):
                    break
                stream.next()
                self._record(item)
                continue
            stream.next()
            dropped += 1
        return dropped

    def _session(self, srec: SessionRecord, stream: _Stream, outer: Cursor | None) -> None:
        events = self._events(stream, srec.id)
        job = _SessionImport(self, srec, events)
        try:
            if outer is None:
                with self.rec.write() as cur:
                    job.run(cur)
            else:
                outer.execute("SAVEPOINT tron_import")
                try:
                    job.run(outer)
                except BaseException:
                    outer.execute("ROLLBACK TO SAVEPOINT tron_import")
                    outer.execute("RELEASE SAVEPOINT tron_import")
                    raise
                outer.execute("RELEASE SAVEPOINT tron_import")
        except _Present:
            self.summary.already_present.append(srec.id)
        except _Refused as exc:
            self.summary.refused.append((srec.id, str(exc)))
            self.refused.add(srec.id)
        except (StorageError, StoreBusy, StoreClosed):
            raise  # the database itself failed: stop, nothing more will work
        except TronEventsError as exc:
            self.summary.refused.append((srec.id, str(exc)))
            self.refused.add(srec.id)
        else:
            if job.stored:
                self.summary.extended.append((srec.id, job.count - job.stored))
            else:
                self.summary.imported.append(srec.id)
            self.summary.events_imported += job.count - job.stored
            self.summary.workspaces_created += job.workspaces_created
            self.ws_map.update(job.ws_map)
            if job.workspace_from_record and job.workspace_id is not None:
                self.from_records.add(job.workspace_id)
            self.summary.notices.extend(job.notices)
            if job.normalized:
                self.summary.notices.append(
                    (
                        srec.id,
                        f"{job.normalized} payload(s) stored normalized as an append stores "
                        "them (large tool inputs stubbed, long tool results cut)",
                    )
                )
            for type_, n in job.unknown_types.items():
                self.unknown_types[type_] = self.unknown_types.get(type_, 0) + n
            if outer is None and job.workspace_id is not None:
                self.rec.changes.bump(srec.id, job.workspace_id, ALL_EVENTS)
        finally:
            self._drain(stream)


def _norm_path(path: str) -> str:
    return path.rstrip("/") or "/"


class _SessionImport:
    """One session: checked and written in the caller's transaction."""

    def __init__(
        self,
        importer: _Importer,
        srec: SessionRecord,
        events: Iterator[tuple[Item, EventRecord]],
    ) -> None:
        self.imp = importer
        self.rec = importer.rec
        self.srec = srec
        self.events = events
        self.count = 0
        #: Events of the session already stored, which the input continues.
        self.stored = 0
        self.workspaces_created = 0
        self.ws_map: dict[str, str] = {}
        self.notices: list[tuple[str | None, str]] = []
        self.unknown_types: dict[str, int] = {}
        #: Payloads stored normalized (not as given), as an append stores them.
        self.normalized = 0
        self.workspace_id: str | None = None
        self.depths: dict[str, int] = {}
        self.inherited: set[str] = set()
        self.rows: list[NewEvent] = []
        self.delta = SessionDelta(head_event_id="")
        self.last_id: str | None = None
        self.last_timestamp = ""
        self.end_timestamp: str | None = None
        self.root_id: str | None = None
        self.root_timestamp = ""
        #: The workspace row was created from the input's workspace record.
        self.workspace_from_record = False
        #: A fork's fork point (the parent of its session.fork root).
        self.fork_parent: Event | None = None
        #: The session has a config.model_switch (its row's model is the head's, see _finish).
        self.switched = False

    def q(self, sql: str) -> str:
        return self.rec.sql(sql)

    # -- the session ---------------------------------------------------------

    def run(self, cur: Cursor) -> None:
        srec = self.srec
        stored = self.rec.get_session(cur, srec.id)
        if stored is not None:
            item, ev = self._continuation(cur, stored)
            self._event(cur, item, ev)
        for item, ev in self.events:
            self._event(cur, item, ev)
        if self.root_id is None:
            raise _Refused("the session has no events (its root event is missing)")
        self._flush(cur)
        self._finish(cur)

    def _finish(self, cur: Cursor) -> None:
        srec, d = self.srec, self.delta
        if srec.event_count is not None and srec.event_count != self.count:
            raise _Refused(
                f"the session record says {srec.event_count} events but the input has "
                f"{self.count}: the input is incomplete"
            )
        if srec.root_event_id is not None and srec.root_event_id != self.root_id:
            raise _Refused(
                f"rootEventId {srec.root_event_id} is not the session's first event "
                f"({self.root_id})"
            )
        head = srec.head_event_id or self.last_id
        assert head is not None
        if head not in self.depths and head not in self.inherited:
            found = self.rec.get_event(cur, head)
            if found is None or (found.session_id != srec.id and head not in self._ancestors(cur)):
                raise _Refused(
                    f"headEventId {head} is neither an event of the session nor an "
                    "ancestor of its root"
                )
        ended = srec.status == "ended" or (srec.status is None and self.end_timestamp is not None)
        ended_at = srec.ended_at or (self.end_timestamp or self.last_timestamp if ended else None)
        counters: tuple[Any, ...]
        if srec.has_counters():
            counters = (
                srec.event_count, srec.message_count, srec.turn_count, srec.input_tokens,
                srec.output_tokens, srec.cache_read_tokens, srec.cache_creation_tokens,
                srec.cost,
            )  # fmt: skip
        else:
            counters = (
                self.count, d.messages, d.max_turn, d.input_tokens, d.output_tokens,
                d.cache_read_tokens, d.cache_creation_tokens, d.cost,
            )  # fmt: skip
        last_activity = srec.last_activity_at or self.last_timestamp
        if self.stored and srec.title:  # the source may have named it since
            cur.execute(self.q("UPDATE sessions SET title = ? WHERE id = ?"), (srec.title, srec.id))
        cur.execute(
            self.q(
                "UPDATE sessions SET head_event_id = ?, status = ?, ended_at = ?, "
                "last_activity_at = ?, event_count = ?, message_count = ?, turn_count = ?, "
                "input_tokens = ?, output_tokens = ?, cache_read_tokens = ?, "
                "cache_creation_tokens = ?, cost = ? WHERE id = ?"
            ),
            (head, "ended" if ended else "active", ended_at, last_activity, *counters, srec.id),
        )
        if self.switched or self.fork_parent is not None:
            self._follow_model(cur, head)
        if not self.workspace_from_record and self.workspace_id not in self.imp.from_records:
            # As create_session does: a new session is activity in its workspace.
            created = srec.created_at or self.root_timestamp
            cur.execute(
                self.q(
                    "UPDATE workspaces SET last_activity_at = ? "
                    "WHERE id = ? AND last_activity_at < ?"
                ),
                (created, self.workspace_id, created),
            )

    def _follow_model(self, cur: Cursor, head: str) -> None:
        """The row's model and provider are its head's, as appends keep them (a
        record may carry the session's first model). Walked one event at a time:
        rows of this uncommitted transaction must not reach the path cache."""
        path: list[Event] = []
        seen: set[str] = set()
        event_id: str | None = head
        while event_id is not None and event_id not in seen:
            seen.add(event_id)
            event = self.rec.get_event(cur, event_id)
            if event is None:
                break
            path.append(event)
            event_id = event.parent_id
        model, provider = _model_and_provider_at(reversed(path))
        if model and provider:
            self.rec.set_session_model(cur, self.srec.id, model, provider)
        directory = _directory_at(reversed(path))
        if directory:
            self.rec.set_session_directory(cur, self.srec.id, directory)

    # -- events --------------------------------------------------------------

    def _event(self, cur: Cursor, item: Item, ev: EventRecord) -> None:
        sid = self.srec.id
        n = self.count
        if ev.session_id is not None and ev.session_id != sid:
            raise _Refused(
                f"record {item.number}: event {ev.id} belongs to session {ev.session_id}, "
                "but it follows this session's record"
            )
        if ev.sequence is not None and ev.sequence != n:
            raise _Refused(
                f"record {item.number}: event {ev.id} has sequence {ev.sequence}, expected {n} "
                "(a session's events come in sequence order, from 0, without gaps)"
            )
        if ev.id in self.depths:
            raise _Refused(f"record {item.number}: event id {ev.id} appears twice")
        parent_id = ev.parent_id if ev.parent_given() else self.last_id
        if n == 0:
            depth = self._root(cur, item, ev, parent_id)
        else:
            if ev.type in ("session.start", "session.fork"):
                raise _Refused(
                    f"record {item.number}: a {ev.type} event can only be a session's first event"
                )
            if parent_id is None:
                raise _Refused(f"record {item.number}: event {ev.id} has no parent")
            depth = self._depth_of(cur, item, parent_id) + 1
        if ev.depth is not None and ev.depth != depth:
            raise _Refused(
                f"record {item.number}: event {ev.id} has depth {ev.depth}, but its parent's "
                f"depth + 1 is {depth}"
            )
        data = self._validated(item, ev)
        if data == ev.payload:  # stored as given: the exported bytes come back
            raw = item.raw_payload if item.raw_payload is not None else _dumps(ev.payload)
        else:  # normalized as an append would (a large tool input stubbed, …)
            raw = _dumps(data)
            self.normalized += 1
        if n == 0:
            self._insert_session(cur, ev, data)
        assert self.workspace_id is not None
        self.rows.append(
            NewEvent(
                id=ev.id, parent_id=parent_id, session_id=sid, workspace_id=self.workspace_id,
                sequence=n, depth=depth, type=ev.type, timestamp=ev.timestamp,
                payload_json=raw, search_text=search_text(ev.type, data),
            )
        )  # fmt: skip
        if len(self.depths) >= DEPTH_WINDOW:
            self._flush(cur)
            self.depths.clear()
        self.depths[ev.id] = depth
        _count(self.delta, ev.type, data)
        if ev.type in HEAD_MODEL_TYPES:
            self.switched = True
        if ev.type == "session.end":
            self.end_timestamp = ev.timestamp
        self.count += 1
        self.last_id = ev.id
        self.last_timestamp = max(self.last_timestamp, ev.timestamp)
        if len(self.rows) >= BATCH:
            self._flush(cur)

    def _validated(self, item: Item, ev: EventRecord) -> dict[str, Any]:
        try:
            return validate_payload(ev.type, ev.payload)
        except UnknownEventType:
            self.unknown_types[ev.type] = self.unknown_types.get(ev.type, 0) + 1
            return ev.payload
        except InvalidPayload as exc:
            raise _Refused(f"record {item.number}: event {ev.id}: {exc}") from None

    def _root(self, cur: Cursor, item: Item, ev: EventRecord, parent_id: str | None) -> int:
        self.root_id = ev.id
        self.root_timestamp = ev.timestamp
        if ev.type == "session.start":
            if parent_id is not None:
                raise _Refused(f"record {item.number}: the root session.start has a parent")
            return 0
        if ev.type != "session.fork":
            raise _Refused(
                f"record {item.number}: a session's first event must be session.start or "
                f"session.fork, not {ev.type}"
            )
        if parent_id is None:
            raise _Refused(f"record {item.number}: the session.fork root has no parent")
        parent = self.rec.get_event(cur, parent_id)
        if parent is None:
            source = self.srec.parent_session_id
            if source is not None and source in self.imp.refused:
                raise _Refused(f"its source session {source} was refused")
            raise _Refused(
                f"its fork point {parent_id} is neither in the database nor earlier in the input "
                "(the source session must come first)"
            )
        self.fork_parent = parent
        return parent.depth + 1

    def _ancestors(self, cur: Cursor) -> set[str]:
        """Ids of the ancestors of the session's root (a fork's inherited history)."""
        parent = self.fork_parent
        if parent is None:
            return set()
        if not self.inherited:
            self.inherited = {e.id for e in self.rec.get_path(cur, parent)}
        return self.inherited

    def _depth_of(self, cur: Cursor, item: Item, parent_id: str) -> int:
        depth = self.depths.get(parent_id)
        if depth is not None:
            return depth
        self._flush(cur)
        parent = self.rec.get_event(cur, parent_id)
        if parent is None:
            raise _Refused(f"record {item.number}: parent {parent_id} does not exist")
        if parent.session_id != self.srec.id and parent_id not in self._ancestors(cur):
            raise _Refused(
                f"record {item.number}: parent {parent_id} is not on the session's tree "
                "(its own events and the ancestors of its root)"
            )
        return parent.depth

    def _flush(self, cur: Cursor) -> None:
        rows, self.rows = self.rows, []
        if not rows:
            return
        marks = ", ".join("?" for _ in rows)
        cur.execute(
            self.q(f"SELECT id, session_id FROM events WHERE id IN ({marks})"),
            [r.id for r in rows],
        )
        taken = cur.fetchall()
        if taken:
            eid, owner = taken[0]
            where = "earlier in this session" if owner == self.srec.id else f"in session {owner}"
            raise _Refused(f"event id {eid} already exists {where}")
        self.rec.insert_events(cur, rows)

    # -- the session row and its workspace -----------------------------------

    def _insert_session(self, cur: Cursor, root: EventRecord, data: dict[str, Any]) -> None:
        srec = self.srec
        source: Session | None = None
        parent_session = srec.parent_session_id
        fork_from = srec.fork_from_event_id
        if root.type == "session.fork":
            parent = self.fork_parent
            assert parent is not None
            parent_session = parent_session or parent.session_id
            fork_from = fork_from or parent.id
        if parent_session is not None:
            source = self.rec.get_session(cur, parent_session)
            if source is None:
                if parent_session in self.imp.refused:
                    raise _Refused(f"its parent session {parent_session} was refused")
                raise _Refused(
                    f"its parent session {parent_session} is neither in the database nor "
                    "earlier in the input (it must come first)"
                )
        start = data if root.type == "session.start" else {}
        working_directory = (
            srec.working_directory
            or start.get("workingDirectory")
            or (source.working_directory if source else None)
        )
        model = srec.model or start.get("model") or data.get("model")
        provider = srec.provider or start.get("provider")
        if source is not None:
            model = model or source.model
            provider = provider or source.provider
        if not working_directory or not model or not provider:
            missing = [
                name
                for name, value in (
                    ("workingDirectory", working_directory),
                    ("model", model),
                    ("provider", provider),
                )
                if not value
            ]
            raise _Refused(
                f"the session record and its root event do not give {', '.join(missing)}"
            )
        self.workspace_id = self._workspace(cur, working_directory, root.timestamp)
        when = srec.created_at or root.timestamp
        self.rec.insert_session(
            cur,
            Session(
                id=srec.id, workspace_id=self.workspace_id, root_event_id=root.id,
                head_event_id=root.id, status="active", model=model, provider=provider,
                working_directory=working_directory, title=srec.title or start.get("title"),
                parent_session_id=parent_session, fork_from_event_id=fork_from,
                created_at=when, last_activity_at=when, ended_at=None, event_count=0,
                message_count=0, turn_count=0, input_tokens=0, output_tokens=0,
                cache_read_tokens=0, cache_creation_tokens=0, cost=0.0,
            ),
        )  # fmt: skip

    def _workspace(self, cur: Cursor, working_directory: str, when: str) -> str:
        """The database's workspace for the session (created if new)."""
        file_id = self.srec.workspace_id
        if file_id is not None and file_id in self.imp.ws_map:
            return self.imp.ws_map[file_id]
        record = self.imp.workspaces.get(file_id) if file_id is not None else None
        path = _norm_path(record.path if record is not None else working_directory)
        if file_id is not None:
            stored = self.rec.get_workspace(cur, file_id)
            if stored is not None:
                if record is not None and stored.path != path:
                    raise _Refused(
                        f"workspace {file_id} is {stored.path!r} in the database but {path!r} "
                        "in the input"
                    )
                return stored.id
        by_path = self.rec.get_workspace_by_path(cur, path)
        if by_path is not None:
            if file_id is not None:
                self.ws_map[file_id] = by_path.id
                self.notices.append(
                    (
                        self.srec.id,
                        f"workspace {path!r} already exists here as {by_path.id} "
                        f"(the input calls it {file_id}): imported into it",
                    )
                )
            return by_path.id
        from .. import ids

        new_id = file_id or ids.new_workspace_id()
        name = record.name if record is not None and record.name else None
        created = (record.created_at if record is not None else None) or when
        self.rec.insert_workspace_if_absent(
            cur,
            Workspace(
                new_id,
                path,
                name or path.rstrip("/").rsplit("/", 1)[-1] or path,
                created,
                (record.last_activity_at if record is not None else None) or created,
            ),
        )
        self.workspaces_created += 1
        self.workspace_from_record = record is not None and record.last_activity_at is not None
        if file_id is not None:
            self.ws_map[file_id] = new_id
        return new_id

    # -- a session already stored ---------------------------------------------

    def _continuation(self, cur: Cursor, stored: Session) -> tuple[Item, EventRecord]:
        """The first input event after the stored ones, when the input continues the
        stored session (the source went on since: a transcript that grew, a later
        export); the stored events are then taken as the start of this import.

        Raises ``_Present`` when the input holds nothing the database lacks, and
        ``_Refused`` when it differs from what is stored (or the stored session moved
        on here: continued under Tron, rewound, ended)."""
        sid = self.srec.id
        n = 0
        for row in self._stored_rows(cur):
            pair = next(self.events, None)
            if pair is None:
                if n == 0:
                    raise _Refused("the session has no events (its root event is missing)")
                raise _Present()  # the input is the stored session, or the start of it
            item, ev = pair
            self._same(n, row, item, ev)
            self._take_stored(cur, row)
            n += 1
        pair = next(self.events, None)
        if pair is None:
            raise _Present()
        item, ev = pair
        if stored.status != "active":
            raise _Refused(
                f"session {sid} has ended here, and the input has more events (from record "
                f"{item.number}): nothing changed"
            )
        if stored.head_event_id not in (self.last_id, self.srec.head_event_id):
            raise _Refused(
                f"session {sid} was rewound here (its head is {stored.head_event_id}, not its "
                f"last event), and the input has more events: nothing changed"
            )
        self.stored = n
        self.workspace_id = stored.workspace_id
        return item, ev

    def _same(self, n: int, row: tuple[Any, ...], item: Item, ev: EventRecord) -> None:
        """Refuse unless input event ``n`` is the stored one."""
        eid, parent_id, sequence, depth, type_, timestamp, payload = row
        expected_parent = ev.parent_id if ev.parent_given() else self.last_id
        same_parent = (n == 0 and not ev.parent_given()) or expected_parent == parent_id
        try:  # what an append would have stored for it
            given = validate_payload(ev.type, ev.payload)
        except (InvalidPayload, UnknownEventType):
            given = ev.payload
        differs = [
            name
            for name, same in (
                ("id", ev.id == eid),
                ("parentId", same_parent),
                ("sequence", ev.sequence is None or ev.sequence == sequence),
                ("depth", ev.depth is None or ev.depth == depth),
                ("type", ev.type == type_),
                ("timestamp", ev.timestamp == timestamp),
                ("payload", given == orjson.loads(payload)),
            )
            if not same
        ]
        if differs:
            raise _Refused(
                f"session {self.srec.id} is already in the database with other content: event "
                f"{n} (record {item.number}) differs in {', '.join(differs)}; the input neither "
                "repeats nor continues what is stored (it went on here, or was read while its "
                "agent was mid-turn): nothing changed"
            )

    def _take_stored(self, cur: Cursor, row: tuple[Any, ...]) -> None:
        """Count a stored event as this import's own (the input goes on after it)."""
        eid, parent_id, _sequence, depth, type_, timestamp, payload = row
        if self.count == 0:
            self.root_id, self.root_timestamp = eid, timestamp
            if type_ == "session.fork" and parent_id is not None:
                self.fork_parent = self.rec.get_event(cur, parent_id)
        if len(self.depths) >= DEPTH_WINDOW:
            self.depths.clear()
        self.depths[eid] = depth
        _count(self.delta, type_, orjson.loads(payload))
        if type_ == "session.end":
            self.end_timestamp = timestamp
        self.count += 1
        self.last_id = eid
        self.last_timestamp = max(self.last_timestamp, timestamp)

    def _stored_rows(self, cur: Cursor) -> Iterator[tuple[Any, ...]]:
        after = -1
        while True:
            cur.execute(
                self.q(
                    "SELECT id, parent_id, sequence, depth, type, timestamp, payload FROM events "
                    "WHERE session_id = ? AND sequence > ? ORDER BY sequence LIMIT ?"
                ),
                (self.srec.id, after, BATCH),
            )
            rows = cur.fetchall()
            if not rows:
                return
            yield from rows
            after = rows[-1][2]


def _dumps(payload: dict[str, Any]) -> str:
    return orjson.dumps(payload).decode()
