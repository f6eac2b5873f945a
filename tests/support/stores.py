"""The event store's backends in tests: SQLite in ``tmp_path`` and a fresh PostgreSQL
database per test, copied from a migrated template. Without a reachable PostgreSQL its
tests skip, saying why (``TRON_REQUIRE_POSTGRES=1`` makes that a failure)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import pg

BACKENDS = ["sqlite", "postgres"]
_pg_reason: list[str | None] = []


def postgres_reason() -> str | None:
    """Why the PostgreSQL tests cannot run here (asked once per process), or None."""
    if not _pg_reason:
        reason = pg.unavailable_reason()
        if reason and os.environ.get("TRON_REQUIRE_POSTGRES"):
            pytest.fail(f"TRON_REQUIRE_POSTGRES is set but {reason}", pytrace=False)
        _pg_reason.append(reason)
    return _pg_reason[0]


def skip_without_postgres() -> None:
    reason = postgres_reason()
    if reason:
        pytest.skip(f"PostgreSQL tests skipped: {reason}")


def make_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh, migrated database on ``backend``: its URL while the iterator is open."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'events.db'}"
        return
    template = request.getfixturevalue("pg_template")
    with pg.fresh_database(template=template) as url:
        yield url
