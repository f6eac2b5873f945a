"""Shared by the transfer tests: a database's rows, comparable across databases."""

from __future__ import annotations

from typing import Any

from tron_events import EventStore


def rows_of(store: EventStore) -> dict[str, list[tuple[Any, ...]]]:
    """Every workspace, session and event row (events without their
    database-specific ``position``), and the indexed search text by event id."""
    rec = store.recorder
    out: dict[str, list[tuple[Any, ...]]] = {}
    with rec.read() as cur:
        cur.execute(
            "SELECT id, path, name, created_at, last_activity_at FROM workspaces ORDER BY id"
        )
        out["workspaces"] = [tuple(r) for r in cur.fetchall()]
        cur.execute("SELECT * FROM sessions ORDER BY id")
        out["sessions"] = [tuple(r) for r in cur.fetchall()]
        cur.execute(
            "SELECT id, parent_id, session_id, workspace_id, sequence, depth, type, timestamp, "
            "payload FROM events ORDER BY id"
        )
        out["events"] = [tuple(r) for r in cur.fetchall()]
        if "sqlite" in store.url:
            cur.execute(
                "SELECT e.id, f.text FROM events_fts f JOIN events e ON e.position = f.rowid "
                "ORDER BY e.id"
            )
        else:
            cur.execute(
                "SELECT e.id, s.text FROM events_search s JOIN events e ON e.position = s.position "
                "ORDER BY e.id"
            )
        out["search"] = [tuple(r) for r in cur.fetchall()]
    return out
