"""The schema as SQLAlchemy Core tables: the model Alembic revisions must match.

Tables are created only by the revisions in ``migrations/``; ``tron-db check``
compares a database against these definitions. Full-text search is
backend-specific (an FTS5 virtual table on SQLite, a generated tsvector column
on PostgreSQL) and is created by the revisions, not declared here.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

metadata = MetaData()

# Identity on PostgreSQL; INTEGER PRIMARY KEY AUTOINCREMENT on SQLite, so a
# deleted maximum position is never handed out again (feed cursors stay valid).
Position = BigInteger().with_variant(Integer(), "sqlite")

workspaces = Table(
    "workspaces",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("path", Text, nullable=False, unique=True),
    Column("name", Text),
    Column("created_at", String(40), nullable=False),
    Column("last_activity_at", String(40), nullable=False),
)

sessions = Table(
    "sessions",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("workspace_id", String(64), ForeignKey("workspaces.id"), nullable=False),
    Column("root_event_id", String(64), nullable=False),
    Column("head_event_id", String(64), nullable=False),
    Column("status", String(16), nullable=False),
    Column("model", Text, nullable=False),
    Column("provider", Text, nullable=False),
    Column("working_directory", Text, nullable=False),
    Column("title", Text),
    Column("parent_session_id", String(64), ForeignKey("sessions.id")),
    Column("fork_from_event_id", String(64)),
    Column("created_at", String(40), nullable=False),
    Column("last_activity_at", String(40), nullable=False),
    Column("ended_at", String(40)),
    Column("event_count", Integer, nullable=False),
    Column("message_count", Integer, nullable=False),
    Column("turn_count", Integer, nullable=False),
    Column("input_tokens", BigInteger, nullable=False),
    Column("output_tokens", BigInteger, nullable=False),
    Column("cache_read_tokens", BigInteger, nullable=False),
    Column("cache_creation_tokens", BigInteger, nullable=False),
    Column("cost", Float, nullable=False),
    Index("ix_sessions_workspace_activity", "workspace_id", "last_activity_at"),
    Index("ix_sessions_parent", "parent_session_id"),
)

events = Table(
    "events",
    metadata,
    Column("position", Position, primary_key=True, autoincrement=True),
    Column("id", String(64), nullable=False, unique=True),
    Column("session_id", String(64), ForeignKey("sessions.id"), nullable=False),
    Column("parent_id", String(64), ForeignKey("events.id")),
    Column("sequence", Integer, nullable=False),
    Column("depth", Integer, nullable=False),
    Column("type", String(64), nullable=False),
    Column("timestamp", String(40), nullable=False),
    Column("payload", Text, nullable=False),
    Column("workspace_id", String(64), nullable=False),
    UniqueConstraint("session_id", "sequence", name="uq_events_session_sequence"),
    Index("ix_events_parent", "parent_id"),
    Index("ix_events_workspace_position", "workspace_id", "position"),
    sqlite_autoincrement=True,
)

# A cache of projections by event id (see ``_state_snapshots.py``): rows can be
# dropped at any time; revision 0002.
state_snapshots = Table(
    "state_snapshots",
    metadata,
    Column(
        "event_id",
        String(64),
        ForeignKey("events.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("session_id", String(64), nullable=False),
    Column("sequence", Integer, nullable=False),
    Column("format", String(64), nullable=False),
    Column("created_at", String(40), nullable=False),
    Column("data", LargeBinary, nullable=False),
    Index("ix_state_snapshots_session", "session_id", "sequence"),
)

# File contents by hash (see ``blobs.py``): what a rewind with files restores;
# revision 0004.
file_blobs = Table(
    "file_blobs",
    metadata,
    Column("hash", String(64), primary_key=True),
    Column("size", BigInteger, nullable=False),
    Column("encoding", String(16), nullable=False),
    Column("base_hash", String(64), nullable=True),
    Column("depth", Integer, nullable=False),
    Column("created_at", String(40), nullable=False),
    Column("data", LargeBinary, nullable=False),
)
