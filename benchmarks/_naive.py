"""The naive way to resume a session, for comparison: a recursive CTE over
``parent_id`` from the head, every payload validated by its pydantic model on
read, then the same reconstruction as the store (``build_state``)."""

from __future__ import annotations

import sqlite3
from typing import Any

import orjson

from tron_events._recorder import EVENT_COLUMNS
from tron_events.models import Event
from tron_events.payloads import validate_payload
from tron_events.reconstruct import SessionState, build_state

#: The plain recursive CTE over ``parent_id``: the event, then its ancestors
#: (head first). The ancestors benchmark measures the store against it too.
CTE_ANCESTORS = f"""
WITH RECURSIVE anc({EVENT_COLUMNS}) AS (
    SELECT {EVENT_COLUMNS} FROM events WHERE id = ?
    UNION ALL
    SELECT {", ".join("e." + c.strip() for c in EVENT_COLUMNS.split(","))}
    FROM events e JOIN anc ON e.id = anc.parent_id
)
SELECT {EVENT_COLUMNS} FROM anc
"""


def naive_path(conn: sqlite3.Connection, head_id: str) -> list[Event]:
    rows: list[Any] = conn.execute(CTE_ANCESTORS, (head_id,)).fetchall()
    rows.reverse()
    return [
        Event(
            position=r[0],
            id=r[1],
            parent_id=r[2],
            session_id=r[3],
            workspace_id=r[4],
            sequence=r[5],
            depth=r[6],
            type=r[7],
            timestamp=r[8],
            payload=validate_payload(r[7], orjson.loads(r[9])),
        )
        for r in rows
    ]


def naive_state(conn: sqlite3.Connection, head_id: str) -> SessionState:
    return build_state(naive_path(conn, head_id))
