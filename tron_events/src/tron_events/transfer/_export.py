"""Export to the JSONL format: streamed from one consistent snapshot.

Everything is read in one read transaction (one snapshot on both backends),
a session's events a page at a time in ``sequence`` order, and each event
line is built by the database itself (the stored payload JSON spliced in
unchanged), so memory stays flat and the payload bytes are the stored ones.

After a session's events come the file contents its file events name (``blob``
records, each once per export), so an imported session can still be rewound with
its files.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from importlib import metadata
from typing import IO, Any, Literal

import orjson

from .._recorder import SESSION_COLUMNS, WORKSPACE_COLUMNS, Cursor, Recorder, session_from_row
from ..blobs import decode_all
from ..errors import MissingContent, SessionNotFound, TronEventsError
from ..files import RECORD_TYPES, changes_of
from ..models import Session, Workspace
from ..store import EventStore, now
from .format import header

__all__ = ["ExportSummary", "NothingToExport", "export_jsonl", "iter_export_records"]

#: Events read per query.
PAGE = 2_000
#: File contents decoded (and held) at a time.
BLOB_PAGE = 32


class NothingToExport(TronEventsError):
    """The scope of an export names nothing (an unknown workspace, say)."""


@dataclass
class ExportSummary:
    workspaces: int = 0
    sessions: int = 0
    events: int = 0
    #: File contents written (``blob`` records).
    blobs: int = 0


@dataclass(frozen=True, slots=True)
class _Plan:
    workspaces: list[Workspace]
    sessions: list[Session]

    @property
    def events(self) -> int:
        return sum(s.event_count for s in self.sessions)


def _generator() -> str:
    try:
        return f"tron-events {metadata.version('tron-events')}"
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a checkout
        return "tron-events"


def _sessions(rec: Recorder, cur: Cursor, where: str, params: list[Any]) -> list[Session]:
    cur.execute(rec.sql(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE {where}"), params)
    return [session_from_row(row) for row in cur.fetchall()]


def _plan(
    rec: Recorder,
    cur: Cursor,
    session_id: str | None,
    workspace: str | None,
    everything: bool,
    with_forks: bool,
) -> _Plan:
    chosen: dict[str, Session] = {}
    if everything:
        chosen = {s.id: s for s in _sessions(rec, cur, "1 = 1", [])}
    elif workspace is not None:
        path = workspace.rstrip("/") or "/"
        cur.execute(
            rec.sql("SELECT id FROM workspaces WHERE path = ? OR id = ?"), (path, workspace)
        )
        found = cur.fetchone()
        if found is None:
            raise NothingToExport(f"no workspace {workspace!r} in this database")
        chosen = {s.id: s for s in _sessions(rec, cur, "workspace_id = ?", [found[0]])}
    elif session_id is not None:
        session = rec.get_session(cur, session_id)
        if session is None:
            raise SessionNotFound(session_id)
        chosen = {session.id: session}
        if with_forks:
            frontier = [session.id]
            while frontier:
                marks = ", ".join("?" for _ in frontier)
                kids = _sessions(rec, cur, f"parent_session_id IN ({marks})", frontier)
                frontier = [k.id for k in kids if k.id not in chosen]
                chosen.update((k.id, k) for k in kids)
    else:
        raise NothingToExport("say what to export: a session, a workspace, or everything")
    # What the chosen sessions need to stand alone: the sessions their forks
    # (and sub-agents) come from, up to the roots.
    missing = {s.parent_session_id for s in chosen.values()} - set(chosen) - {None}
    while missing:
        marks = ", ".join("?" for _ in missing)
        found_rows = _sessions(rec, cur, f"id IN ({marks})", sorted(m for m in missing if m))
        chosen.update((s.id, s) for s in found_rows)
        missing = {s.parent_session_id for s in found_rows} - set(chosen) - {None}
    ordered = _dependency_order(list(chosen.values()))
    ws_ids = list(dict.fromkeys(s.workspace_id for s in ordered))
    workspaces: list[Workspace] = []
    for i in range(0, len(ws_ids), 500):
        part = ws_ids[i : i + 500]
        marks = ", ".join("?" for _ in part)
        cur.execute(
            rec.sql(f"SELECT {WORKSPACE_COLUMNS} FROM workspaces WHERE id IN ({marks})"), part
        )
        workspaces.extend(Workspace(*row) for row in cur.fetchall())
    workspaces.sort(key=lambda w: ws_ids.index(w.id) if len(ws_ids) < 1000 else w.path)
    return _Plan(workspaces, ordered)


def _dependency_order(sessions: list[Session]) -> list[Session]:
    """Sources before their forks and parents before their children, else by
    creation time (a depth-first walk from the sessions without a parent)."""
    by_id = {s.id: s for s in sessions}
    sessions = sorted(sessions, key=lambda s: (s.created_at, s.id))
    children: dict[str, list[Session]] = {}
    roots: list[Session] = []
    for s in sessions:
        if s.parent_session_id is not None and s.parent_session_id in by_id:
            children.setdefault(s.parent_session_id, []).append(s)
        else:
            roots.append(s)
    out: list[Session] = []
    seen: set[str] = set()
    stack = list(reversed(roots))
    while stack:
        s = stack.pop()
        if s.id in seen:
            continue
        seen.add(s.id)
        out.append(s)
        stack.extend(reversed(children.get(s.id, [])))
    out.extend(s for s in sessions if s.id not in seen)  # a cycle: cannot happen
    return out


def _workspace_record(w: Workspace) -> dict[str, Any]:
    return {
        "kind": "workspace",
        "id": w.id,
        "path": w.path,
        "name": w.name,
        "createdAt": w.created_at,
        "lastActivityAt": w.last_activity_at,
    }


def _session_record(s: Session) -> dict[str, Any]:
    return {
        "kind": "session",
        "id": s.id,
        "workspaceId": s.workspace_id,
        "rootEventId": s.root_event_id,
        "headEventId": s.head_event_id,
        "status": s.status,
        "model": s.model,
        "provider": s.provider,
        "workingDirectory": s.working_directory,
        "title": s.title,
        "parentSessionId": s.parent_session_id,
        "forkFromEventId": s.fork_from_event_id,
        "createdAt": s.created_at,
        "lastActivityAt": s.last_activity_at,
        "endedAt": s.ended_at,
        "eventCount": s.event_count,
        "messageCount": s.message_count,
        "turnCount": s.turn_count,
        "inputTokens": s.input_tokens,
        "outputTokens": s.output_tokens,
        "cacheReadTokens": s.cache_read_tokens,
        "cacheCreationTokens": s.cache_creation_tokens,
        "cost": s.cost,
    }


_Kind = Literal["plan", "workspace", "session", "events", "blobs", "notice"]


def _blob_record(h: str, data: bytes, base: str | None) -> dict[str, Any]:
    record: dict[str, Any] = {
        "kind": "blob",
        "hash": h,
        "size": len(data),
        "data": base64.b64encode(data).decode("ascii"),
    }
    if base is not None:
        record["base"] = base
    return record


def _referenced(rec: Recorder, cur: Cursor, session_id: str) -> dict[str, str | None]:
    """The stored contents the session's file events name, in order, each with the
    content it was recorded as a change of (its ``before``: a delta base), or None."""
    marks = ", ".join("?" for _ in RECORD_TYPES)
    cur.execute(
        rec.sql(
            f"SELECT type, payload FROM events WHERE session_id = ? AND type IN ({marks}) "
            "ORDER BY sequence"
        ),
        (session_id, *sorted(RECORD_TYPES)),
    )
    found: dict[str, str | None] = {}
    for type_, payload in cur.fetchall():
        for change in changes_of(type_, orjson.loads(payload)):
            before = change.before.hash if change.before and change.before.stored else None
            if before is not None:
                found.setdefault(before, None)
            if change.after is not None and change.after.stored:
                found.setdefault(change.after.hash, before)
    return found


def _session_blobs(
    rec: Recorder, cur: Cursor, session_id: str, sent: set[str]
) -> Iterator[tuple[_Kind, Any]]:
    """``blobs`` pages (lists of records) of the contents the session names that were
    not written yet; a ``notice`` for those that are not stored intact."""
    wanted = [(h, b) for h, b in _referenced(rec, cur, session_id).items() if h not in sent]
    missing: list[str] = []
    fetch = partial(rec.get_blob_rows, cur)
    for i in range(0, len(wanted), BLOB_PAGE):
        page = wanted[i : i + BLOB_PAGE]
        hashes = [h for h, _ in page]
        try:
            contents = decode_all(hashes, fetch)
        except MissingContent as exc:
            bad = set(exc.hashes)
            missing.extend(h for h in hashes if h in bad)
            contents = decode_all([h for h in hashes if h not in bad], fetch)
        records = []
        for h, base in page:
            if h in contents:
                sent.add(h)
                records.append(_blob_record(h, contents[h], base if base in sent else None))
        if records:
            yield "blobs", records
    if missing:
        yield (
            "notice",
            {
                "kind": "notice",
                "sessionId": session_id,
                "message": f"{len(missing)} recorded file content(s) of this session are missing "
                f"or damaged in the source database and were not exported ({', '.join(missing[:3])}"
                f"{' …' if len(missing) > 3 else ''}): a rewind with files that needs them "
                "will refuse",
            },
        )


def _stream(
    store: EventStore,
    session_id: str | None,
    workspace: str | None,
    everything: bool,
    with_forks: bool,
    files: bool = True,
) -> Iterator[tuple[_Kind, Any]]:
    """The export as (kind, thing): first ``plan`` (the number of events, once the
    scope is known to exist), then workspaces, then each session followed by pages
    of its events as wire-form JSON text (a list of str per page), then pages of the
    file contents (``blobs``: records) its file events name."""
    rec = store.recorder
    wire = rec.wire_json_columns()
    page_sql = rec.sql(
        f"SELECT {wire} FROM events WHERE session_id = ? AND sequence > ? ORDER BY sequence LIMIT ?"
    )
    sent: set[str] = set()
    with rec.read() as cur:
        plan = _plan(rec, cur, session_id, workspace, everything, with_forks)
        yield "plan", plan.events
        for w in plan.workspaces:
            yield "workspace", w
        for s in plan.sessions:
            yield "session", s
            after = -1
            while True:
                cur.execute(page_sql, (s.id, after, PAGE))
                rows = cur.fetchall()
                if not rows:
                    break
                yield "events", [row[3] for row in rows]
                after = rows[-1][1]
                if len(rows) < PAGE:
                    break
            if files:
                yield from _session_blobs(rec, cur, s.id, sent)


def export_jsonl(
    store: EventStore,
    out: IO[bytes],
    *,
    session_id: str | None = None,
    workspace: str | None = None,
    all: bool = False,
    with_forks: bool = False,
    files: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> ExportSummary:
    """Write an export to ``out`` (a binary file object), streaming.

    Exactly one scope: ``session_id`` (with the sessions its forks come from,
    so the file stands alone; ``with_forks`` adds its forks and children,
    recursively), ``workspace`` (a path or a workspace id), or ``all``.
    ``files`` (the default): the file contents the sessions' file events name go
    along (``blob`` records), so the sessions can be rewound with files where they
    are imported. ``progress(done, total)`` is called with event counts as pages
    are written.
    """
    summary = ExportSummary()
    total = 0
    for kind, thing in _stream(store, session_id, workspace, all, with_forks, files):
        if kind == "plan":
            # The header goes out once the scope is known to exist: an unknown
            # workspace or session writes nothing at all.
            total = thing
            out.write(orjson.dumps(header(exported_at=now(), generator=_generator())) + b"\n")
        elif kind == "events":
            # '{"id":…' from the database becomes '{"kind":"event","id":…'.
            out.write(
                b"".join(
                    b'{"kind":"event",' + (row if isinstance(row, bytes) else row.encode())[1:]
                    + b"\n"
                    for row in thing
                )
            )  # fmt: skip
            summary.events += len(thing)
            if progress is not None:
                progress(summary.events, total)
        elif kind == "session":
            summary.sessions += 1
            out.write(orjson.dumps(_session_record(thing)) + b"\n")
        elif kind == "blobs":
            summary.blobs += len(thing)
            out.write(b"".join(orjson.dumps(record) + b"\n" for record in thing))
        elif kind == "notice":
            out.write(orjson.dumps(thing) + b"\n")
        else:
            summary.workspaces += 1
            out.write(orjson.dumps(_workspace_record(thing)) + b"\n")
    return summary


def iter_export_records(
    store: EventStore,
    *,
    session_id: str | None = None,
    workspace: str | None = None,
    all: bool = False,
    with_forks: bool = False,
    files: bool = True,
) -> Iterator[dict[str, Any]]:
    """The export's records as dicts (the header first), what
    :func:`export_jsonl` writes one per line; lazily, page by page."""
    for kind, thing in _stream(store, session_id, workspace, all, with_forks, files):
        if kind == "plan":  # the scope exists
            yield header(exported_at=now(), generator=_generator())
        elif kind == "events":
            for row in thing:
                record = orjson.loads(row)
                yield {"kind": "event", **record}
        elif kind == "session":
            yield _session_record(thing)
        elif kind == "blobs":
            yield from thing
        elif kind == "notice":
            yield thing
        else:
            yield _workspace_record(thing)
