"""Shared fixtures: ``store`` runs every store test on SQLite and PostgreSQL."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests import pg
from tron_events import EventStore

settings.register_profile(
    "ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "dev", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Claude Code's user folder (~/.claude) is read as home-level configuration: never the
# machine's in tests (servers and clients started by tests inherit this too). A test that
# wants user-level files sets CLAUDE_CONFIG_DIR itself.
_CLAUDE_DIR = tempfile.mkdtemp(prefix="tron-tests-claude-")
atexit.register(shutil.rmtree, _CLAUDE_DIR, True)
os.environ["CLAUDE_CONFIG_DIR"] = _CLAUDE_DIR
# Servers the tests start (in this process or as children) never read the machine's
# ~/.claude.json, whose MCP servers they would start: a test that wants one names its own.
os.environ.setdefault("TRON_CLAUDE_JSON", "/nonexistent/tron-tests/.claude.json")
# The provider SDKs' endpoint variables are honoured (a Claude Code user has
# ANTHROPIC_BASE_URL set): a developer's must not send the tests' requests elsewhere.
for _name in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "GOOGLE_GEMINI_BASE_URL"):
    os.environ.pop(_name, None)

BACKENDS = ["sqlite", "postgres"]
_pg_reason: list[str | None] = []


def _postgres_reason() -> str | None:
    if not _pg_reason:
        reason = pg.unavailable_reason()
        if reason and os.environ.get("TRON_REQUIRE_POSTGRES"):
            pytest.fail(f"TRON_REQUIRE_POSTGRES is set but {reason}", pytrace=False)
        _pg_reason.append(reason)
    return _pg_reason[0]


@pytest.fixture(scope="session")
def pg_template() -> Iterator[str]:
    """A migrated PostgreSQL database that per-test databases are copied from."""
    reason = _postgres_reason()
    if reason:
        pytest.skip(f"PostgreSQL tests skipped: {reason}")
    name = pg.create_database(prefix="tron_template")
    try:
        EventStore.open(pg.url_for(name)).close()
        yield name
    finally:
        pg.drop_database(name)


def make_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'events.db'}"
        return
    template = request.getfixturevalue("pg_template")
    with pg.fresh_database(template=template) as url:
        yield url


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    if name == "postgres":
        reason = _postgres_reason()
        if reason:
            pytest.skip(f"PostgreSQL tests skipped: {reason}")
    return name


@pytest.fixture
def store_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    """A URL of a fresh, migrated database on each backend."""
    yield from make_url(backend, tmp_path, request)


@pytest.fixture
def store(store_url: str) -> Iterator[EventStore]:
    s = EventStore.open(store_url)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def trust_folder(home: Path, folder: Path) -> None:
    """Record that the user trusts ``folder`` in ``home`` (its own configuration acts)."""
    from tron_server.trust import TrustStore

    TrustStore(home).trust(folder)
