"""Adopting a database of the original (TypeScript) Tron, in place.

The original kept its sessions in SQLite at the same default path
(``~/.tron/database/prod.db``) with the schema of reference documents 000
("Database Schema") and 003 (tables and FTS): ``events`` without a
``position``, ``sessions`` without counters or timestamps, ``workspaces``
without timestamps, and an FTS5 table of another shape under our name.

:func:`adopt` converts such a file without losing an event:

1. it takes the database's write lock (no one writes meanwhile) and writes a
   backup beside it (SQLite's online backup; no more readable than the
   original, nor than the adopted database, which is user-only like every
   database tron-events creates);
2. it builds the new database next to it (``<file>.adopting``) from the
   backup: the schema by our migrations, then every workspace, session and
   event, with ``depth`` recomputed from the tree, ``sequence`` renumbered
   0, 1, 2 … where the original's had gaps, the session counters computed as
   ``append`` would, the search index filled, and the payloads in the
   original's shapes made readable (``toolId`` gains ``toolCallId``, an
   assistant's text content becomes a text block; the original keys stay);
3. it checks the result (every event there, foreign keys hold) and only then
   moves it over the original file. Any failure leaves the original as it was.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from . import _preflight, ids, migrate
from ._recorder import SessionDelta
from ._urls import normalize_url, readonly_uri, sqlite_file
from .errors import (
    InvalidPayload,
    NotATronDatabase,
    StorageIOError,
    StoreBusy,
    UnknownEventType,
    UnsupportedDatabase,
)
from .payloads import get_event_type, validate_payload
from .search_text import search_text
from .store import EventStore, _count, now

__all__ = ["AdoptSummary", "adopt", "convert_payload"]

#: How long to wait for the original's writers to finish before giving up.
LOCK_TIMEOUT_S = 10.0
#: The adopted database's permission bits (as every database tron-events creates);
#: the backup of the original gets no more than these.
ADOPTED_MODE = 0o600


@dataclass
class AdoptSummary:
    path: str
    backup: Path
    workspaces: int = 0
    sessions: int = 0
    events: int = 0
    #: Payloads rewritten into our shapes (their original keys kept).
    payloads_converted: int = 0
    notices: list[str] = field(default_factory=list)

    def describe(self) -> str:
        lines = [
            f"adopted {self.path}: {self.workspaces:,} workspace(s), {self.sessions:,} "
            f"session(s), {self.events:,} event(s); {self.payloads_converted:,} payload(s) "
            "converted from the original's shapes",
            f"the original database is kept as {self.backup}",
        ]
        lines += [f"notice: {n}" for n in self.notices]
        return "\n".join(lines)


def convert_payload(event_type: str, payload: dict[str, Any]) -> dict[str, Any] | None:
    """The payload in our shape, or None when it already is (the original's
    keys are kept beside ours: nothing is dropped)."""
    changed: dict[str, Any] | None = None
    if event_type in ("tool.call", "tool.result"):
        if "toolCallId" not in payload and isinstance(payload.get("toolId"), str):
            changed = {"toolCallId": payload["toolId"], **payload}
        if event_type == "tool.call":
            base = changed or payload
            if "name" not in base and isinstance(base.get("toolName"), str):
                changed = {**base, "name": base["toolName"]}
                base = changed
            if "arguments" not in base and isinstance(base.get("input"), dict):
                changed = {**base, "arguments": base["input"]}
    elif event_type == "message.assistant":
        content = payload.get("content")
        if isinstance(content, str):
            changed = {**payload, "content": [{"type": "text", "text": content}]}
        elif content is None:
            changed = {**payload, "content": []}
    return changed


class _Stats:
    def __init__(self) -> None:
        self.converted = 0
        self.not_json = 0
        self.invalid: dict[str, int] = {}
        self.unknown: dict[str, int] = {}


def _payload_converter(stats: _Stats) -> Callable[[str, Any], str]:
    def convert(event_type: str, text: Any) -> str:
        try:
            data = orjson.loads(text) if text is not None else None
        except orjson.JSONDecodeError:
            data = None
        if not isinstance(data, dict):
            stats.not_json += 1
            return orjson.dumps({"_original": text}).decode()
        new = convert_payload(event_type, data)
        if new is not None:
            stats.converted += 1
            data = new
        try:
            get_event_type(event_type)
        except UnknownEventType:
            stats.unknown[event_type] = stats.unknown.get(event_type, 0) + 1
        else:
            try:
                validate_payload(event_type, data)
            except InvalidPayload:
                stats.invalid[event_type] = stats.invalid.get(event_type, 0) + 1
        return orjson.dumps(data).decode() if new is not None else str(text)

    return convert


def _search_text(event_type: str, text: str) -> str:
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        return ""
    return search_text(event_type, data) if isinstance(data, dict) else ""


def adopt(url: str, *, progress: Callable[[str], None] | None = None) -> AdoptSummary:
    """Convert the original Tron's SQLite database at ``url`` in place (see the
    module's documentation). Raises :class:`NotATronDatabase` for a database
    that is not the original's (ours included), untouched."""
    url = normalize_url(url)
    path = sqlite_file(url)
    if path is None:
        raise UnsupportedDatabase("only SQLite files of the original Tron can be adopted")
    found = _preflight.inspect(url, must_exist=True, writable=True, allow_original=True)
    if found.kind != "original":
        what = (
            f"already a Tron database (revision {found.revision or 'base'})"
            if found.kind == "tron"
            else "empty"
        )
        raise NotATronDatabase(f"{path} is not a database of the original Tron: it is {what}")
    say = progress or (lambda _msg: None)
    lock = sqlite3.connect(path, isolation_level=None, timeout=LOCK_TIMEOUT_S)
    work = Path(path + ".adopting")
    try:
        with contextlib.suppress(sqlite3.Error):  # merge a WAL into the file first
            lock.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        try:
            lock.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise StoreBusy(f"{path} (in use: stop the original Tron server first) {exc}") from None
        backup = _backup(Path(path))  # a reader beside our write lock
        say(f"backup written: {backup}")
        _remove(work)
        summary = AdoptSummary(path=path, backup=backup)
        _build(work, backup, summary, say)
    except BaseException:
        _remove(work)
        lock.close()
        raise
    lock.execute("ROLLBACK")
    lock.close()
    if _has_wal(path):
        _remove(work)
        raise StoreBusy(
            f"{path} (another process has it open: stop the original Tron server, then run "
            "`tron-db adopt` again; nothing was changed)"
        )
    # The original's empty WAL and its SHM index: the adopted file starts without
    # them (SQLite makes new ones with the new file's mode, not the original's).
    for leftover in (path + "-wal", path + "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(leftover)
    os.replace(work, path)
    _remove(work)  # what building it left beside it (its migration lock)
    return summary


def _has_wal(path: str) -> bool:
    wal = Path(path + "-wal")
    return wal.exists() and wal.stat().st_size > 0


def _remove(work: Path) -> None:
    for suffix in ("", "-wal", "-shm", ".migrate.lock"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(str(work) + suffix)


def _backup(path: Path) -> Path:
    """The original, copied beside it as ``<file>.original-<time>``: no more readable
    than the original nor than the adopted database (which is user-only)."""
    original = stat.S_IMODE(path.stat().st_mode)
    return migrate.backup_sqlite(path, "original", mode=original & ADOPTED_MODE)


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f'PRAGMA old.table_info("{table}")')}


def _build(work: Path, backup: Path, summary: AdoptSummary, say: Callable[[str], None]) -> None:
    EventStore.open(f"sqlite:///{work}").close()  # our schema, by our migrations
    conn = sqlite3.connect(work, isolation_level=None, uri=True)
    stats = _Stats()
    try:
        conn.execute("PRAGMA foreign_keys = OFF")  # rows go in table by table
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.execute("ATTACH DATABASE ? AS old", (readonly_uri(str(backup)),))
        conn.create_function("tron_adopt_payload", 2, _payload_converter(stats))
        conn.create_function("tron_search_text", 2, _search_text, deterministic=True)
        conn.execute("BEGIN")
        _stage_events(conn, summary, say)
        others = [
            name
            for (name,) in conn.execute(
                "SELECT name FROM old.sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'events_fts%' "
                "AND name NOT IN ('events', 'sessions', 'workspaces')"
            )
        ]
        if others:
            summary.notices.append(
                f"tables not carried over (they stay in the backup): {', '.join(sorted(others))}"
            )
        sessions = _sessions(conn, summary)
        _workspaces(conn, sessions, summary)
        say("copying events …")
        conn.execute(
            "INSERT INTO events (id, parent_id, session_id, workspace_id, sequence, depth, type, "
            "timestamp, payload) SELECT ev.id, ev.parent_id, ev.session_id, s.workspace_id, "
            "ev.seq, COALESCE(dep.depth, 0), ev.type, ev.timestamp, "
            "tron_adopt_payload(ev.type, ev.payload) FROM ev "
            "JOIN main.sessions s ON s.id = ev.session_id LEFT JOIN dep ON dep.id = ev.id "
            "ORDER BY ev.timestamp, ev.session_id, ev.seq"
        )
        say("indexing for search …")
        conn.execute(
            "INSERT INTO events_fts (rowid, text) SELECT position, t FROM "
            "(SELECT position, tron_search_text(type, payload) AS t FROM main.events) "
            "WHERE t != ''"
        )
        _counters(conn)
        _verify(conn, summary)
        conn.execute("COMMIT")
        conn.execute("DETACH DATABASE old")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    with open(work, "rb+") as fh:  # durable before it replaces the original
        os.fsync(fh.fileno())
    summary.payloads_converted = stats.converted
    if stats.not_json:
        summary.notices.append(
            f"{stats.not_json} payload(s) were not JSON objects: kept as {{'_original': …}}"
        )
    for type_, n in sorted(stats.unknown.items()):
        summary.notices.append(f"{n} event(s) of type {type_!r}, unknown here, kept as they are")
    for type_, n in sorted(stats.invalid.items()):
        summary.notices.append(
            f"{n} {type_} payload(s) do not match today's model: kept as they are "
            "(reconstruction reads what it can)"
        )


def _stage_events(
    conn: sqlite3.Connection, summary: AdoptSummary, say: Callable[[str], None]
) -> None:
    """Temp tables: ``ev`` (the events with their new sequence and mended
    parents) and ``dep`` (each event's depth in the tree)."""
    say("reading events …")
    conn.execute(
        "CREATE TEMP TABLE ev AS SELECT id, session_id, parent_id, type, timestamp, payload, "
        "sequence AS old_seq, ROW_NUMBER() OVER (PARTITION BY session_id "
        "ORDER BY sequence, rowid) - 1 AS seq FROM old.events"
    )
    conn.execute("CREATE UNIQUE INDEX temp.ev_id ON ev (id)")
    conn.execute("CREATE INDEX temp.ev_session ON ev (session_id, seq)")
    conn.execute("CREATE INDEX temp.ev_parent ON ev (parent_id)")
    renumbered = conn.execute(
        "SELECT count(DISTINCT session_id) FROM ev WHERE seq != old_seq"
    ).fetchone()[0]
    if renumbered:
        summary.notices.append(
            f"{renumbered} session(s) had gaps or duplicates in their sequence numbers: "
            "renumbered 0, 1, 2 … in the same order"
        )
    dangling = conn.execute(
        "UPDATE ev SET parent_id = (SELECT p.id FROM ev p WHERE p.session_id = ev.session_id "
        "AND p.seq < ev.seq ORDER BY p.seq DESC LIMIT 1) WHERE parent_id IS NOT NULL "
        "AND parent_id NOT IN (SELECT id FROM ev)"
    ).rowcount
    if dangling:
        summary.notices.append(
            f"{dangling} event(s) pointed at a parent that does not exist: attached to the "
            "event before them in their session"
        )
    say("computing the tree …")
    conn.execute(
        "CREATE TEMP TABLE dep AS WITH RECURSIVE d(id, depth) AS "
        "(SELECT id, 0 FROM ev WHERE parent_id IS NULL UNION ALL "
        "SELECT ev.id, d.depth + 1 FROM ev JOIN d ON ev.parent_id = d.id) "
        "SELECT id, depth FROM d"
    )
    conn.execute("CREATE UNIQUE INDEX temp.dep_id ON dep (id)")
    (unreached,) = conn.execute(
        "SELECT count(*) FROM ev WHERE id NOT IN (SELECT id FROM dep)"
    ).fetchone()
    if unreached:
        summary.notices.append(
            f"{unreached} event(s) are not reachable from a root (a cycle of parents): "
            "kept at depth 0"
        )


@dataclass
class _Session:
    id: str
    workspace_id: str
    root: str
    head: str
    status: str
    model: str
    provider: str
    working_directory: str
    title: str | None
    parent_session_id: str | None
    fork_from_event_id: str | None
    created_at: str
    last_activity_at: str
    ended_at: str | None


def _opt(row: dict[str, Any], *names: str) -> Any:
    for name in names:
        value = row.get(name)
        if value not in (None, ""):
            return value
    return None


def _sessions(conn: sqlite3.Connection, summary: AdoptSummary) -> list[_Session]:
    """The sessions to write: the original's rows, completed from their events;
    a session that has no events gets a root; events of a session without a
    row get one."""
    conn.row_factory = sqlite3.Row
    try:
        old_rows = {r["id"]: dict(r) for r in conn.execute("SELECT * FROM old.sessions")}
        stats = {
            r[0]: r
            for r in conn.execute(
                "SELECT session_id, min(timestamp), max(timestamp), max(seq) FROM ev "
                "GROUP BY session_id"
            ).fetchall()
        }
        roots = {
            r["session_id"]: dict(r)
            for r in conn.execute(
                "SELECT session_id, id, type, parent_id, payload, timestamp FROM ev WHERE seq = 0"
            )
        }
        lasts = {
            r[0]: r[1]
            for r in conn.execute(
                "SELECT e.session_id, e.id FROM ev e JOIN (SELECT session_id, max(seq) AS m FROM "
                "ev GROUP BY session_id) l ON l.session_id = e.session_id AND e.seq = l.m"
            )
        }
        ends = dict(
            conn.execute(
                "SELECT session_id, max(timestamp) FROM ev WHERE type = 'session.end' "
                "GROUP BY session_id"
            ).fetchall()
        )
    finally:
        conn.row_factory = None
    orphans = [sid for sid in stats if sid not in old_rows]
    if orphans:
        summary.notices.append(
            f"{len(orphans)} session(s) had events but no session row: rows made from their events"
        )
    out: list[_Session] = []
    empty: list[str] = []
    for sid in [*old_rows, *orphans]:
        row = old_rows.get(sid, {})
        root = roots.get(sid)
        start: dict[str, Any] = {}
        if root is not None and root["type"] == "session.start":
            with contextlib.suppress(orjson.JSONDecodeError):
                loaded = orjson.loads(root["payload"])
                start = loaded if isinstance(loaded, dict) else {}
        wd = _opt(row, "working_directory") or start.get("workingDirectory") or "/"
        model = _opt(row, "model") or start.get("model") or "unknown"
        provider = _opt(row, "provider") or start.get("provider") or "unknown"
        ws = _opt(row, "workspace_id") or ""
        if root is None:  # a session without events: give it its root
            empty.append(sid)
            when = _opt(row, "created_at", "last_activity_at") or now()
            root_id = ids.new_event_id()
            conn.execute(
                "INSERT INTO ev (id, session_id, parent_id, type, timestamp, payload, old_seq, "
                "seq) VALUES (?, ?, NULL, 'session.start', ?, ?, 0, 0)",
                (root_id, sid, when,
                 orjson.dumps({"workingDirectory": wd, "model": model,
                               "provider": provider}).decode()),
            )  # fmt: skip
            conn.execute("INSERT INTO dep (id, depth) VALUES (?, 0)", (root_id,))
            root = {"id": root_id, "type": "session.start", "parent_id": None, "timestamp": when}
            first, last_ts, last_id = when, when, root_id
        else:
            first, last_ts = stats[sid][1], stats[sid][2]
            last_id = lasts[sid]
        given_root = _opt(row, "root_event_id")
        given_head = _opt(row, "head_event_id")
        head = given_head if given_head and _event_exists(conn, given_head) else last_id
        status = "active" if (_opt(row, "status") or "active") == "active" else "ended"
        parent_session = _opt(row, "parent_session_id")
        fork_from = _opt(row, "fork_from_event_id")
        if root["type"] == "session.fork" and root["parent_id"]:
            fork_from = fork_from or root["parent_id"]
            found = conn.execute(
                "SELECT session_id FROM ev WHERE id = ?", (root["parent_id"],)
            ).fetchone()
            parent_session = parent_session or (found[0] if found else None)
        if given_root and given_root != root["id"]:
            summary.notices.append(
                f"session {sid}: its root_event_id {given_root} was not its first event; "
                f"the first event ({root['id']}) is the root"
            )
        out.append(
            _Session(
                id=sid, workspace_id=ws, root=root["id"], head=head, status=status,
                model=model, provider=provider, working_directory=wd,
                title=_opt(row, "title", "name") or start.get("title"),
                parent_session_id=parent_session, fork_from_event_id=fork_from,
                created_at=_opt(row, "created_at") or first,
                last_activity_at=_opt(row, "last_activity_at", "updated_at") or last_ts,
                ended_at=_opt(row, "ended_at")
                or (ends.get(sid) or last_ts if status == "ended" else None),
            )
        )  # fmt: skip
    if empty:
        summary.notices.append(
            f"{len(empty)} session(s) had no events: each was given a session.start root"
        )
    summary.sessions = len(out)
    return out


def _event_exists(conn: sqlite3.Connection, event_id: str) -> bool:
    return conn.execute("SELECT 1 FROM ev WHERE id = ?", (event_id,)).fetchone() is not None


def _workspaces(conn: sqlite3.Connection, sessions: list[_Session], summary: AdoptSummary) -> None:
    """Write the workspaces (with timestamps from their events), then the sessions."""
    old = {
        r[0]: (r[1], r[2])
        for r in conn.execute("SELECT id, path, name FROM old.workspaces").fetchall()
    }
    by_path = {path: wid for wid, (path, _) in old.items()}
    made = 0
    for s in sessions:
        if s.workspace_id in old:
            continue
        path = s.working_directory.rstrip("/") or "/"
        if path in by_path:  # the original's events name a workspace it lost: reuse its path
            s.workspace_id = by_path[path]
            continue
        s.workspace_id = s.workspace_id or ids.new_workspace_id()
        old[s.workspace_id] = (path, Path(path).name or path)
        by_path[path] = s.workspace_id
        made += 1
    if made:
        summary.notices.append(
            f"{made} workspace(s) were missing: made from their sessions' folders"
        )
    span: dict[str, tuple[str, str]] = {}
    for s in sessions:
        lo, hi = span.get(s.workspace_id, (s.created_at, s.last_activity_at))
        span[s.workspace_id] = (min(lo, s.created_at), max(hi, s.last_activity_at))
    when = now()
    conn.executemany(
        "INSERT INTO workspaces (id, path, name, created_at, last_activity_at) "
        "VALUES (?, ?, ?, ?, ?)",
        [
            (wid, path, name or (Path(path).name or path), *span.get(wid, (when, when)))
            for wid, (path, name) in old.items()
        ],
    )
    summary.workspaces = len(old)
    conn.executemany(
        "INSERT INTO sessions (id, workspace_id, root_event_id, head_event_id, status, model, "
        "provider, working_directory, title, parent_session_id, fork_from_event_id, created_at, "
        "last_activity_at, ended_at, event_count, message_count, turn_count, input_tokens, "
        "output_tokens, cache_read_tokens, cache_creation_tokens, cost) VALUES "
        "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, 0, 0, 0, 0, 0, 0)",
        [
            (s.id, s.workspace_id, s.root, s.head, s.status, s.model, s.provider,
             s.working_directory, s.title, s.parent_session_id, s.fork_from_event_id,
             s.created_at, s.last_activity_at, s.ended_at)
            for s in sessions
        ],
    )  # fmt: skip


#: Event types whose payload changes a session's counters (see ``store._count``).
_COUNTED = ("message.user", "message.assistant", "stream.turn_end")


def _counters(conn: sqlite3.Connection) -> None:
    """The session counters, exactly as ``append`` keeps them."""
    deltas: dict[str, SessionDelta] = {}
    for sid, n in conn.execute("SELECT session_id, count(*) FROM main.events GROUP BY session_id"):
        deltas[sid] = SessionDelta(head_event_id="", events=n)
    marks = ", ".join("?" for _ in _COUNTED)
    rows = conn.execute(
        f"SELECT session_id, type, payload FROM main.events WHERE type IN ({marks})", _COUNTED
    )
    for sid, type_, payload in rows:
        data = orjson.loads(payload)
        if isinstance(data, dict):
            _count(deltas[sid], type_, data)
    conn.executemany(
        "UPDATE sessions SET event_count = ?, message_count = ?, turn_count = ?, "
        "input_tokens = ?, output_tokens = ?, cache_read_tokens = ?, "
        "cache_creation_tokens = ?, cost = ? WHERE id = ?",
        [
            (d.events, d.messages, d.max_turn, d.input_tokens, d.output_tokens,
             d.cache_read_tokens, d.cache_creation_tokens, d.cost, sid)
            for sid, d in deltas.items()
        ],
    )  # fmt: skip


def _verify(conn: sqlite3.Connection, summary: AdoptSummary) -> None:
    (old_events,) = conn.execute("SELECT count(*) FROM old.events").fetchone()
    (staged,) = conn.execute("SELECT count(*) FROM ev").fetchone()
    (written,) = conn.execute("SELECT count(*) FROM main.events").fetchone()
    if written != staged or staged < old_events:
        raise StorageIOError(
            f"adoption stopped: {written} of {old_events} events were copied; the original "
            "is unchanged"
        )
    problems = conn.execute("PRAGMA main.foreign_key_check").fetchall()
    if problems:
        table, _, parent, _ = problems[0]
        raise StorageIOError(
            f"adoption stopped: {len(problems)} row(s) of {table} point at missing {parent} "
            "rows; the original is unchanged"
        )
    summary.events = written
