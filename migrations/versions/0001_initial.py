"""Initial schema: workspaces, sessions, events and full-text search.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

Position = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "workspaces",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("path", sa.Text, nullable=False, unique=True),
        sa.Column("name", sa.Text),
        sa.Column("created_at", sa.String(40), nullable=False),
        sa.Column("last_activity_at", sa.String(40), nullable=False),
    )
    op.create_table(
        "sessions",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("workspace_id", sa.String(64), sa.ForeignKey("workspaces.id"), nullable=False),
        sa.Column("root_event_id", sa.String(64), nullable=False),
        sa.Column("head_event_id", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("model", sa.Text, nullable=False),
        sa.Column("provider", sa.Text, nullable=False),
        sa.Column("working_directory", sa.Text, nullable=False),
        sa.Column("title", sa.Text),
        sa.Column("parent_session_id", sa.String(64), sa.ForeignKey("sessions.id")),
        sa.Column("fork_from_event_id", sa.String(64)),
        sa.Column("created_at", sa.String(40), nullable=False),
        sa.Column("last_activity_at", sa.String(40), nullable=False),
        sa.Column("ended_at", sa.String(40)),
        sa.Column("event_count", sa.Integer, nullable=False),
        sa.Column("message_count", sa.Integer, nullable=False),
        sa.Column("turn_count", sa.Integer, nullable=False),
        sa.Column("input_tokens", sa.BigInteger, nullable=False),
        sa.Column("output_tokens", sa.BigInteger, nullable=False),
        sa.Column("cache_read_tokens", sa.BigInteger, nullable=False),
        sa.Column("cache_creation_tokens", sa.BigInteger, nullable=False),
        sa.Column("cost", sa.Float, nullable=False),
    )
    op.create_index("ix_sessions_workspace_activity", "sessions", ["workspace_id", "last_activity_at"])
    op.create_index("ix_sessions_parent", "sessions", ["parent_session_id"])
    op.create_table(
        "events",
        sa.Column("position", Position, primary_key=True, autoincrement=True),
        sa.Column("id", sa.String(64), nullable=False, unique=True),
        sa.Column("session_id", sa.String(64), sa.ForeignKey("sessions.id"), nullable=False),
        sa.Column("parent_id", sa.String(64), sa.ForeignKey("events.id")),
        sa.Column("sequence", sa.Integer, nullable=False),
        sa.Column("depth", sa.Integer, nullable=False),
        sa.Column("type", sa.String(64), nullable=False),
        sa.Column("timestamp", sa.String(40), nullable=False),
        sa.Column("payload", sa.Text, nullable=False),
        sa.Column("workspace_id", sa.String(64), nullable=False),
        sa.UniqueConstraint("session_id", "sequence", name="uq_events_session_sequence"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_events_parent", "events", ["parent_id"])
    op.create_index("ix_events_workspace_position", "events", ["workspace_id", "position"])

    if op.get_bind().dialect.name == "sqlite":
        # rowid = events.position; the text is what search_text() extracts.
        op.execute(
            "CREATE VIRTUAL TABLE events_fts USING fts5(text, tokenize='porter unicode61')"
        )
    else:
        op.execute(
            """
            CREATE TABLE events_search (
                position BIGINT PRIMARY KEY REFERENCES events(position) ON DELETE CASCADE,
                text TEXT NOT NULL,
                tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED
            )
            """
        )
        op.execute("CREATE INDEX ix_events_search_tsv ON events_search USING GIN (tsv)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TABLE events_fts")
    else:
        op.execute("DROP TABLE events_search")
    op.drop_index("ix_events_workspace_position", table_name="events")
    op.drop_index("ix_events_parent", table_name="events")
    op.drop_table("events")
    op.drop_index("ix_sessions_parent", table_name="sessions")
    op.drop_index("ix_sessions_workspace_activity", table_name="sessions")
    op.drop_table("sessions")
    op.drop_table("workspaces")
