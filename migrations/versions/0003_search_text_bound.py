"""Search rows hold at most the first 200,000 characters of an event's text.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24

Search indexes the first ``MAX_INDEXED_CHARS`` characters of an event's text
on both backends (``tron_events/search_text.py``), which bounds what indexing
an event, ranking it and making its snippet cost. PostgreSQL already cut its
search rows there; SQLite indexed everything, and a search matching a 50 MB
message did not finish in ten minutes. This revision cuts the longer SQLite
rows (and any PostgreSQL row, to be sure) to the bound, as the store now
writes them.

Downgrade: SQLite search rows that may have been cut get their whole text
back, extracted again from the events' payloads as revision 0002's code did;
PostgreSQL rows stay as they are (0002 cut them at the same length).
"""

from __future__ import annotations

import orjson
import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

#: The bound as of this revision (``search_text.MAX_INDEXED_CHARS``); written
#: out so that the revision keeps meaning the same if the constant changes.
MAX_INDEXED_CHARS = 200_000


def upgrade() -> None:
    # Characters, not bytes, on both: substr() and left() count code points,
    # as Python's slicing does when the store cuts new rows.
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            f"UPDATE events_fts SET text = substr(text, 1, {MAX_INDEXED_CHARS}) "
            f"WHERE rowid IN (SELECT rowid FROM events_fts WHERE length(text) > {MAX_INDEXED_CHARS})"
        )
    else:
        op.execute(
            f"UPDATE events_search SET text = left(text, {MAX_INDEXED_CHARS}) "
            f"WHERE length(text) > {MAX_INDEXED_CHARS}"
        )


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        return
    from tron_events.search_text import search_text

    rows = bind.execute(
        sa.text(
            "SELECT e.position, e.type, e.payload FROM events_fts f "
            "JOIN events e ON e.position = f.rowid WHERE length(f.text) = :bound"
        ),
        {"bound": MAX_INDEXED_CHARS},
    ).fetchall()
    for position, event_type, payload in rows:
        whole = search_text(event_type, orjson.loads(payload), limit=None)
        if len(whole) > MAX_INDEXED_CHARS:
            bind.execute(
                sa.text("UPDATE events_fts SET text = :text WHERE rowid = :position"),
                {"text": whole, "position": position},
            )
