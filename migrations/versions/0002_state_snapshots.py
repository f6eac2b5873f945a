"""State snapshots: persisted projections by event id (a cache for resumes).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23

Rows are a pure cache (see ``tron_events/_state_snapshots.py``): dropping the
table on downgrade loses nothing, and an upgraded store fills it again.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "state_snapshots",
        sa.Column(
            "event_id",
            sa.String(64),
            sa.ForeignKey("events.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("session_id", sa.String(64), nullable=False),
        sa.Column("sequence", sa.Integer, nullable=False),
        sa.Column("format", sa.String(64), nullable=False),
        sa.Column("created_at", sa.String(40), nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
    )
    op.create_index("ix_state_snapshots_session", "state_snapshots", ["session_id", "sequence"])
    if op.get_bind().dialect.name == "postgresql":
        # Read whole on every cold resume: store it uncompressed (no pglz pass).
        op.execute("ALTER TABLE state_snapshots ALTER COLUMN data SET STORAGE EXTERNAL")


def downgrade() -> None:
    op.drop_index("ix_state_snapshots_session", table_name="state_snapshots")
    op.drop_table("state_snapshots")
