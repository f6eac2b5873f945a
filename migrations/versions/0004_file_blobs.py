"""File contents the agent changed, by hash: what a rewind with files restores.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25

One row per distinct content (``hash`` is the SHA-256 of the content, hex), shared by
every event and session that recorded it. ``encoding`` says how ``data`` holds it:
``raw`` (as is), ``zlib`` (compressed), or ``delta`` (zlib of the bytes that differ
from the content ``base_hash``, which is stored too; ``depth`` counts the chain).
See ``tron_events/blobs.py``. The rows are referenced by hash from event payloads
(``file.*``): dropping the table on downgrade makes recorded changes not restorable,
nothing else.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "file_blobs",
        sa.Column("hash", sa.String(64), primary_key=True),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("encoding", sa.String(16), nullable=False),
        sa.Column("base_hash", sa.String(64), nullable=True),
        sa.Column("depth", sa.Integer, nullable=False),
        sa.Column("created_at", sa.String(40), nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
    )
    if op.get_bind().dialect.name == "postgresql":
        # Compressed (or tiny) already: spare PostgreSQL a pglz pass over it.
        op.execute("ALTER TABLE file_blobs ALTER COLUMN data SET STORAGE EXTERNAL")


def downgrade() -> None:
    op.drop_table("file_blobs")
