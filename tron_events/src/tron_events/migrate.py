"""Schema migrations: Alembic driven programmatically (no alembic.ini needed).

The revisions live in ``migrations/`` at the repository root and ship inside
the tron-events wheel as ``tron_events/migrations``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, create_engine, inspect, text
from sqlalchemy.engine import Engine
from sqlalchemy.pool import NullPool

from ._urls import DEFAULT_DATABASE_URL, HEAD_REVISION, normalize_url
from .schema import metadata

__all__ = ["DEFAULT_DATABASE_URL", "HEAD_REVISION", "normalize_url"]


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
    if url.startswith("sqlite:///"):
        Path(url[len("sqlite:///") :]).parent.mkdir(parents=True, exist_ok=True)
    return create_engine(url, poolclass=NullPool)


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
    """Only one process migrates a database at a time."""
    if url.startswith("sqlite:///"):
        lock_path = url[len("sqlite:///") :] + ".migrate.lock"
        with open(lock_path, "a+") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)
    else:
        conn.execute(text("SELECT pg_advisory_lock(7262700001)"))
        conn.commit()
        try:
            yield
        finally:
            conn.execute(text("SELECT pg_advisory_unlock(7262700001)"))
            conn.commit()


def _prepare_sqlite(conn: Connection) -> None:
    # WAL is a property of the file: set it once, before anything else writes.
    conn.exec_driver_sql("PRAGMA journal_mode=WAL")
    conn.exec_driver_sql("PRAGMA foreign_keys=OFF")  # batch migrations recreate tables


def current_revision(url: str) -> str | None:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()


def upgrade(url: str, revision: str = "head") -> None:
    """Create or upgrade the schema to ``revision`` (default: the newest)."""
    _run(url, lambda cfg: command.upgrade(cfg, revision))


def downgrade(url: str, revision: str) -> None:
    _run(url, lambda cfg: command.downgrade(cfg, revision))


def _run(url: str, action: Any) -> None:
    engine = make_engine(url)
    try:
        with engine.connect() as conn, _migration_lock(url, conn):
            if engine.dialect.name == "sqlite":
                _prepare_sqlite(conn)
            action(alembic_config(url, conn))
            conn.commit()
    finally:
        engine.dispose()


def ensure_head(url: str) -> None:
    """Upgrade to head unless already there (cheap when nothing is to do)."""
    if current_revision(url) != head_revision():
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
            diffs = [repr(d) for d in compare_metadata(ctx, metadata)]
            tables = set(inspect(conn).get_table_names())
            search = "events_fts" if engine.dialect.name == "sqlite" else "events_search"
            if current is not None and search not in tables:
                diffs.append(f"missing full-text search table {search}")
    finally:
        engine.dispose()
    return CheckResult(current=current, head=head_revision(), differences=diffs)


def _include_name(name: str | None, type_: str, parent_names: Any) -> bool:
    if type_ == "table" and name is not None:
        return not name.startswith(("events_fts", "events_search")) and name != "alembic_version"
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
