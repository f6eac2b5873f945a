"""Fresh PostgreSQL databases for tests, on the local service.

Every test that needs PostgreSQL gets a database of its own, created from a
migrated template and dropped afterwards. Without a reachable server the tests
skip, saying why.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator

ADMIN_DSN = os.environ.get("TRON_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")


def _connect(dsn: str = ADMIN_DSN):  # type: ignore[no-untyped-def]
    import psycopg

    return psycopg.connect(dsn, autocommit=True, connect_timeout=3)


def unavailable_reason() -> str | None:
    """Why PostgreSQL tests cannot run here, or None if they can."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install 'tron-events[postgres]')"
    try:
        with _connect() as conn:
            conn.execute("SELECT 1")
    except Exception as exc:  # any connection failure means: skip
        return f"no PostgreSQL at {ADMIN_DSN} ({type(exc).__name__}: {exc}); set TRON_TEST_PG_DSN"
    return None


def url_for(dbname: str) -> str:
    base = ADMIN_DSN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1)
    return f"{base}/{dbname}"


def create_database(prefix: str = "tron_test", template: str | None = None) -> str:
    name = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with _connect() as conn:
        if template:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        else:
            conn.execute(f'CREATE DATABASE "{name}"')
    return name


def drop_database(name: str) -> None:
    with _connect() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def fresh_database(template: str | None = None) -> Iterator[str]:
    """A new empty (or templated) database; yields its SQLAlchemy URL."""
    name = create_database(template=template)
    try:
        yield url_for(name)
    finally:
        drop_database(name)
