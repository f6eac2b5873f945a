"""Database URLs, the default location, and a cheap "is the schema current?".

Kept free of SQLAlchemy and Alembic so that opening an up-to-date store (the
common case: every resume) does not pay for importing them.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from .errors import UnsupportedDatabase

DEFAULT_DATABASE_URL = "sqlite:///" + str(Path("~/.tron/database/prod.db").expanduser())

#: The Alembic revisions in ``migrations/versions``, oldest first, and the
#: newest (a test keeps them equal to the files).
REVISIONS = ("0001", "0002", "0003", "0004", "0005")
HEAD_REVISION = "0005"

SQLITE_PREFIX = "sqlite:///"


def default_database_url() -> str:
    """What ``tron-server`` opens by default: ``$TRON_DATABASE_URL``, else
    ``prod.db`` under ``$TRON_HOME`` (default ``~/.tron``) in ``database/``."""
    url = os.environ.get("TRON_DATABASE_URL")
    if url:
        return url
    return SQLITE_PREFIX + str(tron_home() / "database" / "prod.db")


def tron_home() -> Path:
    home = os.environ.get("TRON_HOME")
    return Path(home).expanduser() if home else Path("~/.tron").expanduser()


def normalize_url(url: str) -> str:
    """Accept a bare file path as a SQLite database; expand ``~``; use psycopg.

    Raises :class:`UnsupportedDatabase` for a scheme tron_events cannot use.
    """
    if "://" not in url:
        return SQLITE_PREFIX + str(Path(url).expanduser().resolve())
    scheme = url.split("://", 1)[0].lower()
    if scheme == "sqlite" or scheme.startswith("sqlite+"):
        if not url.startswith(SQLITE_PREFIX):
            raise UnsupportedDatabase(
                f"{url!r} is not a SQLite file URL: write sqlite:///relative/path.db, "
                "sqlite:////absolute/path.db, or just the file's path"
            )
        path = url[len(SQLITE_PREFIX) :]
        if path and not path.startswith(":memory:"):
            return SQLITE_PREFIX + str(Path(path).expanduser())
        return url
    if scheme in ("postgresql", "postgres"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    if scheme == "postgresql+psycopg":
        return url
    if scheme.startswith("postgresql+"):
        raise UnsupportedDatabase(
            f"the PostgreSQL driver {scheme.split('+', 1)[1]!r} is not supported: "
            "use postgresql+psycopg://… (pip install 'tron-events[postgres]')"
        )
    if scheme.startswith(("mysql", "mariadb")):
        raise UnsupportedDatabase(
            "MySQL and MariaDB are not supported: use SQLite (a file path) or "
            "PostgreSQL (postgresql+psycopg://user@host/db)"
        )
    raise UnsupportedDatabase(
        f"unsupported database URL scheme {scheme!r}: use a SQLite file path, "
        "sqlite:///path/to.db, or postgresql+psycopg://user@host/db"
    )


def sqlite_file(url: str) -> str | None:
    """The file path of a ``sqlite:///`` URL (None for another database)."""
    if not url.startswith(SQLITE_PREFIX):
        return None
    return url[len(SQLITE_PREFIX) :].split("?", 1)[0]


def readonly_uri(path: str) -> str:
    """A ``file:`` URI opening ``path`` read-only (any character in the path)."""
    return "file:" + quote(path) + "?mode=ro"


def sqlite_is_current(url: str) -> bool:
    """True if the SQLite database exists and is at HEAD_REVISION."""
    path = sqlite_file(url)
    try:
        if path is None or not Path(path).is_file():
            return False
    except OSError:  # a name too long …: the full check says what is wrong
        return False
    try:
        conn = sqlite3.connect(readonly_uri(path), uri=True)
        try:
            row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return row is not None and row[0] == HEAD_REVISION
