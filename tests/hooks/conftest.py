"""Fixtures for the hooks/context tests: a real SQLite event store and a recorder on it."""

from __future__ import annotations

import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

# The scripted LLM and a server on it (tests/server's fixtures), for the tests here that
# run a server.
from tests.conftest import trust_folder
from tests.server.conftest import llm, server, server_factory  # noqa: F401
from tron_events import AsyncEventStore, Session


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[AsyncEventStore]:
    s = await AsyncEventStore.open(f"sqlite:///{tmp_path / 'hooks.db'}")
    try:
        yield s
    finally:
        await s.aclose()


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    d = tmp_path / "project"
    d.mkdir()
    return d.resolve()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    d = tmp_path / "tron-home"
    d.mkdir()
    return d.resolve()


@pytest.fixture
def trusted(home: Path, workdir: Path) -> None:
    """The user trusts ``workdir``: its own settings (hooks, guardrails) act."""
    trust_folder(home, workdir)


@pytest.fixture
async def session(store: AsyncEventStore, workdir: Path) -> Session:
    return await store.create_session(working_directory=str(workdir), model="m", provider="p")


class StoreRecorder:
    """The engine's ``record`` callback, appending to the real store."""

    def __init__(self, store: AsyncEventStore) -> None:
        self.store = store

    async def __call__(self, session_id: str, event_type: str, payload: dict[str, Any]) -> None:
        await self.store.append(session_id, event_type, payload)

    async def events(self, session_id: str) -> list[tuple[str, dict[str, Any]]]:
        return [
            (e.type, dict(e.payload))
            for e in await self.store.get_events(session_id)
            if e.type.startswith("hook.")
        ]


@pytest.fixture
def recorder(store: AsyncEventStore) -> StoreRecorder:
    return StoreRecorder(store)


def write_script(path: Path, body: str) -> Path:
    """Write an executable script (``body`` after a shebang line)."""
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path
