"""Several tron-servers on one PostgreSQL database: run leases and server messages.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-28

PostgreSQL only (SQLite is single-server: a second server on the file refuses to
start). ``session_leases``: which server runs a session's turn (``owner``), since
when, and until when the lease holds unless renewed (``until``; see
``tron_events/cluster.py``). ``cluster_messages``: payloads too large for a NOTIFY
(8000 bytes) and commands for a server, read by id when the notification pointing at
them arrives; unlogged, because a message is worth nothing after a crash.
"""

from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        "CREATE TABLE session_leases ("
        " session_id text PRIMARY KEY,"
        " owner text NOT NULL,"
        " since timestamptz NOT NULL DEFAULT now(),"
        " until timestamptz NOT NULL)"
    )
    op.execute(
        "CREATE UNLOGGED TABLE cluster_messages ("
        " id bigserial PRIMARY KEY,"
        " target text NOT NULL,"
        " body text NOT NULL,"
        " created_at timestamptz NOT NULL DEFAULT now())"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TABLE IF EXISTS cluster_messages")
    op.execute("DROP TABLE IF EXISTS session_leases")
