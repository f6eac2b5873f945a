"""Schema migrations: Alembic driven programmatically (no alembic.ini needed).

The revisions live in ``migrations/`` at the repository root and ship inside
the tron-events wheel as ``tron_events/migrations``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import sqlite3
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError
from sqlalchemy import Connection, create_engine, inspect, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.pool import NullPool

from . import _preflight
from ._urls import (
    DEFAULT_DATABASE_URL,
    HEAD_REVISION,
    REVISIONS,
    normalize_url,
    readonly_uri,
    sqlite_file,
)
from .errors import (
    DatabaseNotFound,
    DatabaseReadOnly,
    DatabaseUnreachable,
    DiskFull,
    MigrationError,
    NotATronDatabase,
    StorageError,
    StorageIOError,
    StoreBusy,
    TronEventsError,
    UnknownRevision,
)
from .schema import metadata

__all__ = ["DEFAULT_DATABASE_URL", "HEAD_REVISION", "REVISIONS", "normalize_url"]

#: Revisions whose downgrade drops what users wrote (not just a cache), and what.
DROPS_DATA = {
    "0001": "every workspace, session and event",
    "0004": "the recorded file contents (rewinds with files can no longer restore them)",
}
_RELATIVE = re.compile(r"(?:[0-9a-f]+)?[+-]\d+")


def migrations_dir() -> Path:
    """Where the Alembic environment is: inside the installed wheel, or the
    repository's ``migrations/`` for an editable (development) install."""
    packaged = Path(__file__).with_name("migrations")
    if (packaged / "env.py").is_file():
        return packaged
    repo = Path(__file__).resolve().parents[3] / "migrations"
    if (repo / "env.py").is_file():
        return repo
    raise RuntimeError(f"tron_events migrations not found (looked in {packaged} and {repo})")


def make_engine(url: str) -> Engine:
    path = sqlite_file(url)  # without the URL's query (?timeout=…)
    if path and not path.startswith(":memory:"):
        create_private_file(Path(path))
    return create_engine(url, poolclass=NullPool)


def create_private_file(path: Path) -> None:
    """Create ``path`` empty (SQLite's empty database) readable by its owner only
    (0600), and the folders missing above it 0700, whatever the umask; nothing
    if it exists. Sessions are private: SQLite would make the file 0644, and it
    gives its journal, WAL and SHM files the database's own mode."""
    missing: list[Path] = []
    folder = path.parent
    try:
        while not folder.exists():
            missing.append(folder)
            folder = folder.parent
        for new in reversed(missing):
            with contextlib.suppress(FileExistsError):
                os.mkdir(new, 0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except FileExistsError:  # another process created it first, or it was there
        return
    except OSError as exc:
        # What the preflight's access checks cannot foresee (root on /sys, a name too
        # long, a read-only mount): said as what it is, not as an unexpected error.
        raise cannot_create(path, exc) from None
    os.close(fd)


def cannot_create(path: Path, exc: OSError) -> StorageError:
    """The typed error for a database file (or its folder) the system will not create."""
    reason = exc.strerror or str(exc)
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return DatabaseReadOnly(f"cannot create {path}: {reason}")
    return DatabaseNotFound(f"cannot create {path}: {reason}")


def alembic_config(url: str, connection: Connection | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config("sqlite:///unused")).get_current_head()
    assert head is not None
    return head


@contextlib.contextmanager
def _migration_lock(url: str, conn: Connection) -> Iterator[None]:
    """Only one process migrates a database at a time.

    SQLite: a lock file beside the database, removed when the migration is done (no
    ``.migrate.lock`` is left next to a database). It is removed while still held, and
    a waiter that gets the lock of a file no longer at that path starts again, so two
    processes never both hold "the" lock (the usual unlink-a-flock race)."""
    if url.startswith("sqlite:///"):
        lock_path = (sqlite_file(url) or "") + ".migrate.lock"
        fd = _locked_file(lock_path)
        try:
            yield
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(lock_path)
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
    else:
        conn.execute(text("SELECT pg_advisory_lock(7262700001)"))
        conn.commit()
        try:
            yield
        finally:
            conn.execute(text("SELECT pg_advisory_unlock(7262700001)"))
            conn.commit()


def _locked_file(path: str) -> int:
    """An open descriptor of ``path``, created if need be, exclusively locked, and
    still the file at ``path`` (not one a previous holder removed meanwhile)."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held = os.fstat(fd)
            try:
                here = os.stat(path)
            except FileNotFoundError:
                here = None
        except BaseException:
            os.close(fd)
            raise
        if here is not None and (here.st_dev, here.st_ino) == (held.st_dev, held.st_ino):
            return fd
        os.close(fd)  # the holder before us removed it: lock the file at the path now


def _prepare_sqlite(conn: Connection) -> None:
    # WAL is a property of the file: set it once, before anything else writes.
    conn.exec_driver_sql("PRAGMA journal_mode=WAL")
    conn.exec_driver_sql("PRAGMA foreign_keys=OFF")  # batch migrations recreate tables


def current_revision(url: str) -> str | None:
    """The database's revision (None: empty, or at base). Never creates
    anything: a missing database raises :class:`~tron_events.errors.DatabaseNotFound`."""
    return _preflight.inspect(url, must_exist=True, writable=False).revision


def check_revision(revision: str) -> None:
    """Raise :class:`UnknownRevision` (listing the valid ones) unless ``revision``
    names a revision, ``head``, ``base`` or a relative step such as ``-1``."""
    if revision in ("head", "heads", "base") or revision in REVISIONS:
        return
    if _RELATIVE.fullmatch(revision):
        return
    raise UnknownRevision(
        f"unknown revision {revision!r}: the revisions are {', '.join(REVISIONS)} "
        "(also head, base, or a step such as -1 or +1; see `tron-db history`)"
    )


def upgrade(url: str, revision: str = "head") -> None:
    """Create or upgrade the schema to ``revision`` (default: the newest).

    A database that is not ours (the original Tron's included: see
    ``tron_events.adopt``) is refused untouched.
    """
    check_revision(revision)
    _preflight.inspect(url, writable=True)
    _run(url, lambda cfg: command.upgrade(cfg, revision))


def downgrade(url: str, revision: str) -> None:
    """Downgrade the schema (``base`` drops every table: see :func:`data_dropped`)."""
    check_revision(revision)
    _preflight.inspect(url, must_exist=True, writable=True)
    _run(url, lambda cfg: command.downgrade(cfg, revision))


def data_dropped(url: str, revision: str) -> str | None:
    """What a downgrade to ``revision`` would delete that users wrote (None:
    nothing but caches), from the revision the database is at now."""
    check_revision(revision)
    current = current_revision(url)
    if current is None:
        return None
    at = REVISIONS.index(current)
    if revision == "base":
        target = -1
    elif revision in REVISIONS:
        target = REVISIONS.index(revision)
    elif revision.startswith("-") and revision[1:].isdigit():
        target = at - int(revision[1:])
    else:
        return None
    dropped = [r for r in REVISIONS[target + 1 : at + 1] if r in DROPS_DATA]
    if "0001" in dropped:  # everything goes: that says it all
        dropped = ["0001"]
    elif "0004" in dropped and not _has_rows(url, "file_blobs"):
        dropped.remove("0004")  # no file contents recorded yet: nothing is lost
    return "; ".join(DROPS_DATA[r] for r in dropped) or None


def _has_rows(url: str, table: str) -> bool:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            if table not in inspect(conn).get_table_names():
                return False
            return conn.execute(text(f"SELECT 1 FROM {table} LIMIT 1")).first() is not None
    except DBAPIError as exc:
        raise _translate(url, exc) from None
    finally:
        engine.dispose()


def count_rows(url: str) -> tuple[int, int]:
    """(sessions, events) in the database (0, 0 if the tables are gone)."""
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            names = set(inspect(conn).get_table_names())
            if not {"sessions", "events"} <= names:
                return 0, 0
            sessions = conn.execute(text("SELECT count(*) FROM sessions")).scalar_one()
            events = conn.execute(text("SELECT count(*) FROM events")).scalar_one()
            return int(sessions), int(events)
    except DBAPIError as exc:
        raise _translate(url, exc) from None
    finally:
        engine.dispose()


def backup_sqlite(path: str | Path, label: str = "backup", *, mode: int | None = None) -> Path:
    """A consistent copy of a SQLite database beside it (SQLite's online
    backup: safe while others read or write it); returns its path.

    The copy gets the database's permission bits, or ``mode``: it is never
    readable by more people than the database it copies."""
    source = Path(path)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    target = source.with_name(f"{source.name}.{label}-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = source.with_name(f"{source.name}.{label}-{stamp}-{n}")
    # The copy holds every session: user-only while it is written, then no more
    # readable than the database itself (SQLite would create it 0644).
    if mode is None:
        mode = stat.S_IMODE(source.stat().st_mode)
    os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
    src = sqlite3.connect(readonly_uri(str(source)), uri=True)
    try:
        dst = sqlite3.connect(target)
        try:
            src.backup(dst)
            # One self-contained file: a WAL-mode copy would grow -wal and -shm files
            # beside it whenever it is opened (and keep them when opened read-only).
            dst.execute("PRAGMA journal_mode=DELETE")
        finally:
            dst.close()
        os.chmod(target, mode & 0o7777)
    except (sqlite3.Error, OSError) as exc:
        target.unlink(missing_ok=True)
        raise StorageIOError(f"could not back up {source} to {target}: {exc}") from None
    finally:
        src.close()
    return target


def _run(url: str, action: Callable[[Config], Any]) -> None:
    engine = make_engine(url)
    try:
        with engine.connect() as conn, _migration_lock(url, conn):
            if engine.dialect.name == "sqlite":
                _prepare_sqlite(conn)
            action(alembic_config(url, conn))
            conn.commit()
    except DBAPIError as exc:
        raise _translate(url, exc) from None
    except CommandError as exc:
        raise MigrationError(f"the migration could not run: {exc}") from None
    except SQLAlchemyError as exc:
        raise MigrationError(f"the migration failed: {str(exc).splitlines()[0]}") from None
    finally:
        engine.dispose()


def _translate(url: str, exc: DBAPIError) -> TronEventsError:
    """A typed error for a driver error, in the driver's words only."""
    orig = exc.orig
    text_ = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
    where = sqlite_file(url) or url.split("@")[-1]
    if isinstance(orig, sqlite3.Error):
        if "readonly" in text_ or "read-only" in text_:
            return DatabaseReadOnly(f"{where} is read-only: {text_}")
        if "locked" in text_ or "busy" in text_:
            return StoreBusy(where)
        if "full" in text_:
            return DiskFull(f"{where}: {text_}; free some space and retry")
        if "not a database" in text_ or "malformed" in text_:
            return NotATronDatabase(f"{where} is not a SQLite database ({text_})")
        return StorageIOError(f"{where}: {text_}")
    if type(orig).__name__ in ("OperationalError", "InterfaceError") and not isinstance(
        orig, sqlite3.Error
    ):
        return DatabaseUnreachable(f"{where}: {text_}")
    return MigrationError(f"{where}: {text_}")


def ensure_head(url: str) -> None:
    """Upgrade to head unless already there (cheap when nothing is to do)."""
    if not _preflight.inspect(url, writable=True).at_head:
        upgrade(url)


@dataclass(frozen=True)
class CheckResult:
    current: str | None
    head: str
    differences: list[str]

    @property
    def ok(self) -> bool:
        return self.current == self.head and not self.differences


def check(url: str) -> CheckResult:
    """Compare the database with the models: revision at head, same tables and
    columns and indexes, and the backend's search objects present."""
    _preflight.inspect(url, must_exist=True, writable=False)
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            ctx = MigrationContext.configure(
                conn,
                opts={
                    "include_name": _include_name,
                    "compare_type": True,
                    "target_metadata": metadata,
                },
            )
            current = ctx.get_current_revision()
            diffs = [describe_difference(d) for d in compare_metadata(ctx, metadata)]
            tables = set(inspect(conn).get_table_names())
            search = "events_fts" if engine.dialect.name == "sqlite" else "events_search"
            if current is not None and search not in tables:
                diffs.append(f"missing full-text search table {search}")
    except DBAPIError as exc:
        raise _translate(url, exc) from None
    finally:
        engine.dispose()
    return CheckResult(current=current, head=head_revision(), differences=diffs)


def describe_difference(diff: Any) -> str:
    """One of Alembic's ``compare_metadata`` differences in words (its own form is a
    tuple of SQLAlchemy objects whose reprs no user should have to read)."""
    if isinstance(diff, list):  # the column modifications of one column, grouped
        return "; ".join(describe_difference(d) for d in diff)
    kind = diff[0] if isinstance(diff, tuple) and diff else "?"
    missing, extra = "missing (the models have it)", "not in the models"
    if kind in ("add_table", "remove_table"):
        return f"table {diff[1].name}: {missing if kind == 'add_table' else extra}"
    if kind in ("add_column", "remove_column"):
        where = f"column {diff[2]}.{diff[3].name}"
        return f"{where}: {missing if kind == 'add_column' else extra}"
    if kind in ("add_index", "remove_index"):
        index = diff[1]
        columns = ", ".join(c.name for c in index.columns)
        table = index.table.name if index.table is not None else "?"
        where = f"index {index.name} on {table} ({columns})"
        return f"{where}: {missing if kind == 'add_index' else extra}"
    if kind.startswith("modify_") and len(diff) >= 7:
        what = kind.removeprefix("modify_")
        return f"column {diff[2]}.{diff[3]}: {what} is {diff[5]!s}, the models say {diff[6]!s}"
    obj = diff[1] if isinstance(diff, tuple) and len(diff) > 1 else None
    name = getattr(obj, "name", None) or type(obj).__name__
    table = getattr(getattr(obj, "table", None), "name", None)
    return f"{kind.replace('_', ' ')} {name}" + (f" on {table}" if table else "")


def _include_name(name: str | None, type_: str, parent_names: Any) -> bool:
    if type_ == "table" and name is not None:
        # The search tables and the cluster's (PostgreSQL only, outside the models).
        skipped = ("alembic_version", "session_leases", "cluster_messages")
        return not name.startswith(("events_fts", "events_search")) and name not in skipped
    return True


def history() -> list[tuple[str, str | None, str]]:
    """(revision, down_revision, message) from newest to oldest."""
    script = ScriptDirectory.from_config(alembic_config("sqlite:///unused"))
    out = []
    for rev in script.walk_revisions():
        down = (
            rev.down_revision
            if isinstance(rev.down_revision, str | None)
            else str(rev.down_revision)
        )
        out.append((rev.revision, down, (rev.doc or "").strip()))
    return out


def database_exists_hint(url: str) -> str:
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///") :]
        return "exists" if os.path.exists(path) else "does not exist yet"
    return "server database"
