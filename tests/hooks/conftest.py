"""Fixtures for the hooks/context tests: a session on the real event store (``astore``:
SQLite and PostgreSQL, tests/support/fixtures.py) and a recorder on it."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest

from tests.support.trust import trust_folder
from tron_events import AsyncEventStore, Session


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
async def session(astore: AsyncEventStore, workdir: Path) -> Session:
    return await astore.create_session(working_directory=str(workdir), model="m", provider="p")


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
def recorder(astore: AsyncEventStore) -> StoreRecorder:
    return StoreRecorder(astore)


def write_script(path: Path, body: str) -> Path:
    """Write an executable script (``body`` after a shebang line)."""
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path
