"""Database URLs, the default location, and a cheap "is the schema current?".

Kept free of SQLAlchemy and Alembic so that opening an up-to-date store (the
common case: every resume) does not pay for importing them.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

DEFAULT_DATABASE_URL = "sqlite:///" + str(Path("~/.tron/database/prod.db").expanduser())

#: The newest Alembic revision in ``migrations/versions`` (a test keeps them equal).
HEAD_REVISION = "0004"


def normalize_url(url: str) -> str:
    """Accept a bare file path as a SQLite database; expand ``~``; use psycopg."""
    if "://" not in url:
        return "sqlite:///" + str(Path(url).expanduser().resolve())
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///") :]
        if path and path != ":memory:":
            return "sqlite:///" + str(Path(path).expanduser())
    if url.startswith("postgresql://"):
        return "postgresql+psycopg://" + url[len("postgresql://") :]
    return url


def sqlite_is_current(url: str) -> bool:
    """True if the SQLite database exists and is at HEAD_REVISION."""
    path = url[len("sqlite:///") :]
    if not url.startswith("sqlite:///") or not Path(path).is_file():
        return False
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return row is not None and row[0] == HEAD_REVISION
