"""Prototype of a faster ``Recorder.get_path`` (SQLite), to measure proposed changes
to ``tron_events/_recorder.py`` without editing the store. Same result, same
``Event`` objects, root first.

Changes against the store's ``get_path``:

1. ``narrow``: the per-session range read leaves out ``session_id`` and
   ``workspace_id`` (equal for every row of the range: taken from the parent) and
   the events are built by a positional constructor instead of ``Event(**kw)``.
2. ``posrange``: as 1, and the range is read in ``position`` (rowid) order over
   ``position BETWEEN root AND parent`` (``+session_id`` keeps SQLite from using
   the (session_id, sequence) index), so the table B-tree is walked leaf by leaf
   instead of one descent per row. Worth it when the session's rows are dense in
   that position range (here 50%: two sessions interleaved); a real store would
   choose by density (event_count against the position span).
3. ``cached``: as 1, plus an id → Event cache (events are immutable): the walk
   follows parent ids through the cache and reads the database only below the
   first miss.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from tron_events.models import Event

_new = object.__new__

_COLS = "position, id, parent_id, sequence, depth, type, timestamp, payload"


def _make(row: Any, session_id: str, workspace_id: str) -> Event:
    ev: Event = _new(Event)
    ev.position, ev.id, ev.parent_id, ev.sequence, ev.depth, ev.type, ev.timestamp = row[:7]
    ev._raw = row[7]
    ev._payload = None
    ev.session_id = session_id
    ev.workspace_id = workspace_id
    return ev


def _get_event(conn: sqlite3.Connection, event_id: str) -> Event | None:
    row = conn.execute(
        f"SELECT {_COLS}, session_id, workspace_id FROM events WHERE id = ?", (event_id,)
    ).fetchone()
    return _make(row, row[8], row[9]) if row else None


def get_path(
    conn: sqlite3.Connection,
    event: Event,
    *,
    posrange: bool = False,
    cache: dict[str, Event] | None = None,
) -> list[Event]:
    path: list[Event] = [event]
    seen = {event.id}
    current = event
    while current.parent_id is not None:
        if cache is not None:
            hit = cache.get(current.parent_id)
            while hit is not None and hit.id not in seen:
                seen.add(hit.id)
                path.append(hit)
                current = hit
                if current.parent_id is None:
                    break
                hit = cache.get(current.parent_id)
            if current.parent_id is None:
                break
        parent = _get_event(conn, current.parent_id)
        if parent is None or parent.id in seen:
            break
        sid, wid = parent.session_id, parent.workspace_id
        if posrange:
            rows = conn.execute(
                f"SELECT {_COLS} FROM events WHERE position BETWEEN "
                "(SELECT position FROM events WHERE session_id = ? AND sequence = 0) AND ? "
                "AND +session_id = ? ORDER BY position",
                (sid, parent.position - 1, sid),
            ).fetchall()
        else:
            rows = conn.execute(
                f"SELECT {_COLS} FROM events WHERE session_id = ? AND sequence < ? "
                "ORDER BY sequence",
                (sid, parent.sequence),
            ).fetchall()
        by_id = {row[1]: row for row in rows}
        step = parent
        while True:
            seen.add(step.id)
            path.append(step)
            if cache is not None:
                cache[step.id] = step
            current = step
            row = by_id.get(step.parent_id) if step.parent_id is not None else None
            if row is None or row[1] in seen:
                break
            step = _make(row, sid, wid)
    path.reverse()
    return path
