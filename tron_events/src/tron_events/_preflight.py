"""What a database URL points at, found out before anything is written.

``inspect`` tells a missing database from an empty one, ours (at which
revision), the original Tron's, and anything else, and checks that it can be
written, raising the typed :class:`~tron_events.errors.StorageError` kinds
with a message that says what to do. It never creates a file or a folder, so
a mistyped path or a file that is not ours is left exactly as it was.
SQLAlchemy and Alembic are not imported here.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ._urls import HEAD_REVISION, REVISIONS, readonly_uri, sqlite_file
from .errors import (
    DatabaseNotFound,
    DatabaseReadOnly,
    DatabaseUnreachable,
    NotATronDatabase,
    OriginalTronDatabase,
    StorageIOError,
    StoreBusy,
    UnsupportedDatabase,
)

Kind = Literal["missing", "empty", "tron", "original", "foreign"]

#: The original Tron's tables (reference documents 000 and 003).
ORIGINAL_TABLES = frozenset({"events", "sessions", "workspaces"})
#: PostgreSQL connection timeout for the first contact, in seconds.
CONNECT_TIMEOUT_S = 5
#: How long to wait for a SQLite database another process holds locked.
BUSY_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class Found:
    url: str
    kind: Kind
    #: Our schema's revision (None: at base, or not ours).
    revision: str | None = None
    tables: tuple[str, ...] = ()

    @property
    def at_head(self) -> bool:
        return self.kind == "tron" and self.revision == HEAD_REVISION


def inspect(
    url: str,
    *,
    must_exist: bool = False,
    writable: bool = True,
    allow_original: bool = False,
) -> Found:
    """Classify the database at ``url`` (already normalized).

    ``must_exist``: a missing SQLite file raises :class:`DatabaseNotFound`
    (else it is ``"missing"``, to be created). ``writable``: a database (or
    folder) that cannot be written raises :class:`DatabaseReadOnly`. A
    database that is not ours raises :class:`NotATronDatabase`, the original
    Tron's :class:`OriginalTronDatabase` (unless ``allow_original``), one of a
    newer tron-events :class:`UnsupportedDatabase`.
    """
    path = sqlite_file(url)
    if path is not None:
        found = _inspect_sqlite(url, path, must_exist, writable)
    elif url.startswith("postgresql"):
        found = _inspect_postgres(url, writable)
    else:
        raise UnsupportedDatabase(f"unsupported database URL {url!r}")
    if found.kind == "original" and not allow_original:
        raise OriginalTronDatabase(
            f"{_where(url)} is a database of the original Tron: convert it once with "
            f"`tron-db adopt --database-url {url}` (it keeps every event and writes a "
            "backup first)"
        )
    return found


def _where(url: str) -> str:
    path = sqlite_file(url)
    return path if path is not None else _safe_url(url)


def _safe_url(url: str) -> str:
    """The URL without its password."""
    if "@" not in url or "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    auth, host = rest.rsplit("@", 1)
    user = auth.split(":", 1)[0]
    return f"{scheme}://{user}@{host}"


def not_found_message(path: str) -> str:
    """ "no database at PATH", with a hint when the path was probably mistyped."""
    message = f"no database at {path}"
    if path.startswith(":memory:"):
        return "an in-memory SQLite database cannot be shared; give a file path"
    p = Path(path)
    if not p.is_absolute():
        absolute = Path("/") / p
        if absolute.exists() or absolute.parent.is_dir():
            message += (
                f" (sqlite:///{path} is the relative path {Path.cwd() / p}; for the absolute "
                f"path {absolute} write sqlite:///{absolute} with four slashes, or just {absolute})"
            )
            return message
    missing = next((a for a in [p.parent, *p.parent.parents] if a.exists()), None)
    if missing is not None and missing != p.parent:
        message += f" (the folder {p.parent} does not exist either)"
    message += ": check the path, or create one with `tron-db upgrade --database-url …`"
    return message


# -- SQLite -------------------------------------------------------------------


def _inspect_sqlite(url: str, path: str, must_exist: bool, writable: bool) -> Found:
    if path in ("", ":memory:") or path.startswith(":memory:"):
        raise UnsupportedDatabase(
            "an in-memory SQLite database cannot be shared by the store's connections; "
            "give a file path"
        )
    p = Path(path)
    try:
        exists = p.exists()
    except OSError as exc:  # a name too long, a loop of links, a folder it cannot search
        raise DatabaseNotFound(f"cannot use {path}: {exc.strerror or exc}") from None
    if not exists:
        if must_exist:
            raise DatabaseNotFound(not_found_message(path))
        if writable:
            ancestor = next((a for a in p.parents if a.exists()), Path("/"))
            if not ancestor.is_dir():
                raise DatabaseNotFound(f"cannot create {path}: {ancestor} is not a folder")
            if not os.access(ancestor, os.W_OK | os.X_OK):
                raise DatabaseReadOnly(
                    f"cannot create {path}: the folder {ancestor} is not writable"
                )
        return Found(url, "missing")
    if p.is_dir():
        raise NotATronDatabase(f"{path} is a folder, not a database file")
    if writable:
        _check_writable(p)
    if p.stat().st_size == 0:
        return Found(url, "empty")
    tables, columns, revision = _sqlite_tables(path)
    return _classify(url, tables, columns, revision)


def check_writable(url: str) -> None:
    """Raise :class:`DatabaseReadOnly` if this existing SQLite database (or its
    folder) cannot be written (two ``access`` calls: for every open)."""
    path = sqlite_file(url)
    if path is not None:
        _check_writable(Path(path))


def _check_writable(p: Path) -> None:
    if not os.access(p, os.W_OK):
        raise DatabaseReadOnly(
            f"{p} is read-only (this user cannot write it): fix its permissions, or use a copy"
        )
    folder = p.parent
    if not os.access(folder, os.W_OK | os.X_OK):
        raise DatabaseReadOnly(
            f"the folder {folder} is not writable: SQLite needs to create its journal files "
            f"beside {p.name}"
        )


def _sqlite_tables(path: str) -> tuple[list[str], dict[str, list[str]], str | None]:
    """Table names, the columns of the tables that tell ours from the
    original's, and our revision (read-only; nothing is created)."""
    try:
        # A busy database (another process migrating it) is waited for.
        conn = sqlite3.connect(readonly_uri(path), uri=True, timeout=BUSY_TIMEOUT_S)
        try:
            rows = conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            ).fetchall()
            tables = sorted(r[0] for r in rows)
            columns = {
                t: [c[1] for c in conn.execute(f'PRAGMA table_info("{t}")').fetchall()]
                for t in ("events", "sessions")
                if t in tables
            }
            revision = None
            if "alembic_version" in tables:
                row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
                revision = row[0] if row else None
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        text = str(exc)
        if "not a database" in text or "malformed" in text or "encrypted" in text:
            raise NotATronDatabase(
                f"{path} is not a SQLite database ({text}); nothing was changed. Point "
                "--database-url at a Tron database, or at a new file"
            ) from None
        if "locked" in text or "busy" in text:
            raise StoreBusy(path) from None
        folder = Path(path).parent
        if ("unable to open" in text or "readonly" in text) and not os.access(
            folder, os.W_OK | os.X_OK
        ):
            # A WAL database is read through its -shm file, which SQLite creates
            # beside it: a read-only folder or mount cannot hold it.
            raise DatabaseReadOnly(
                f"cannot read {path}: SQLite needs to create its -shm file beside it, "
                f"and the folder {folder} is not writable (a read-only mount?); copy the "
                "database to a writable folder"
            ) from None
        if "unable to open" in text:
            raise StorageIOError(f"cannot open {path}: {text}") from None
        raise StorageIOError(f"cannot read {path}: {text}") from None
    return tables, columns, revision


def _classify(
    url: str, tables: list[str], columns: dict[str, list[str]], revision: str | None
) -> Found:
    names = tuple(tables)
    user_tables = [t for t in tables if not t.startswith(("events_fts", "events_search"))]
    if "alembic_version" in tables:
        if revision is not None and revision not in REVISIONS:
            if not {"events", "sessions"} <= set(tables):
                raise NotATronDatabase(
                    f"{_where(url)} is another application's database (schema revision "
                    f"{revision}, no Tron tables); nothing was changed"
                )
            raise UnsupportedDatabase(
                f"{_where(url)} is at schema revision {revision}, which this tron-events does "
                f"not know (it knows {', '.join(REVISIONS)}): it was written by a newer "
                "tron-events; upgrade tron-events to use it"
            )
        return Found(url, "tron", revision, names)
    if set(tables) >= ORIGINAL_TABLES and "position" not in columns.get("events", []):
        return Found(url, "original", None, names)
    if not user_tables:
        return Found(url, "empty", None, names)
    shown = ", ".join(user_tables[:6]) + (" …" if len(user_tables) > 6 else "")
    raise NotATronDatabase(
        f"{_where(url)} is a database but not a Tron event database (its tables: {shown}); "
        "nothing was changed. Point --database-url at a Tron database, or at a new file"
    )


# -- PostgreSQL ---------------------------------------------------------------


def _inspect_postgres(url: str, writable: bool) -> Found:
    try:
        import psycopg

        from ._pg_conninfo import conninfo_from_url
    except ImportError:
        raise UnsupportedDatabase(
            "PostgreSQL needs the psycopg driver: pip install 'tron-events[postgres]'"
        ) from None
    try:
        conn = psycopg.connect(
            conninfo_from_url(url), connect_timeout=CONNECT_TIMEOUT_S, autocommit=True
        )
    except psycopg.OperationalError as exc:
        raise _connect_error(url, exc) from None
    except psycopg.Error as exc:
        raise DatabaseUnreachable(
            f"cannot connect to {_safe_url(url)}: {_first_line(exc)}"
        ) from None
    try:
        with conn:
            rows = conn.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema()"
            ).fetchall()
            tables = sorted(r[0] for r in rows)
            revision = None
            if "alembic_version" in tables:
                row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
                revision = row[0] if row else None
            if writable:
                _postgres_writable(conn, url, tables)
    except psycopg.Error as exc:
        raise DatabaseUnreachable(f"{_safe_url(url)}: {_first_line(exc)}") from None
    columns: dict[str, list[str]] = {"events": ["position"]}  # no original on PostgreSQL
    if "alembic_version" not in tables and ORIGINAL_TABLES & set(tables):
        clash = ", ".join(sorted(ORIGINAL_TABLES & set(tables)))
        raise NotATronDatabase(
            f"{_safe_url(url)} already has tables named {clash} that are not Tron's; "
            "nothing was changed. Use another database (or schema) for Tron"
        )
    if "alembic_version" not in tables:
        return Found(url, "empty", None, tuple(tables))
    return _classify(url, tables, columns, revision)


def _postgres_writable(conn: Any, url: str, tables: list[str]) -> None:
    read_only, in_recovery = conn.execute(
        "SELECT current_setting('transaction_read_only'), pg_is_in_recovery()"
    ).fetchone()
    if in_recovery or read_only == "on":
        raise DatabaseReadOnly(
            f"{_safe_url(url)} is read-only (a standby server, or read-only transactions by "
            "default): point tron at the primary"
        )
    if "events" in tables:
        (may_insert,) = conn.execute(
            "SELECT has_table_privilege(current_user, 'events', 'INSERT')"
        ).fetchone()
        if not may_insert:
            raise DatabaseReadOnly(
                f"{_safe_url(url)}: this user may not write the events table "
                "(GRANT INSERT, UPDATE, DELETE on Tron's tables)"
            )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _connect_error(url: str, exc: BaseException) -> Exception:
    text = str(exc)
    where = _safe_url(url)
    if "does not exist" in text and "database" in text:
        name = url.rsplit("/", 1)[-1].split("?", 1)[0]
        return DatabaseNotFound(
            f"no database {name!r} on the PostgreSQL server of {where}: create it "
            f"(createdb {name}), then `tron-db upgrade --database-url …`"
        )
    if "password authentication failed" in text or "no password supplied" in text:
        return DatabaseUnreachable(f"PostgreSQL refused the login for {where}: {_first_line(exc)}")
    return DatabaseUnreachable(
        f"cannot reach PostgreSQL at {where}: {_first_line(exc)} (is the server running, and "
        "are the host and port right?)"
    )
