"""SessionMemory's start check: a session whose start ``at_start`` answered is past it once
its run recorded a turn (that turn's commit holds the message), so the next message reads
nothing to know it; a run that recorded nothing leaves the check to the history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tron_events import AsyncEventStore
from tron_server.agent.session_memory import SessionMemory
from tron_server.agent.subagents import TOP_LEVEL, SessionProfile

pytestmark = pytest.mark.anyio


class Host:
    """The part of the orchestrator ``at_start`` uses; counts the history reads."""

    def __init__(self, store: AsyncEventStore) -> None:
        self.store = store
        self.reads = 0
        original = store.get_ancestors

        async def get_ancestors(event_id: str) -> Any:
            self.reads += 1
            return await original(event_id)

        store.get_ancestors = get_ancestors  # type: ignore[method-assign]

    async def profile(self, session_id: str) -> SessionProfile:
        return TOP_LEVEL


async def test_a_start_its_run_recorded_is_not_read_again(
    astore: AsyncEventStore, tmp_path: Path
) -> None:
    host = Host(astore)
    memory = SessionMemory(host, tmp_path / "home")  # type: ignore[arg-type]
    wd = tmp_path / "work"
    wd.mkdir()
    s = await astore.create_session(working_directory=str(wd), model="m", provider="anthropic")
    other = await astore.create_session(working_directory=str(wd), model="m", provider="p")

    assert await memory.at_start(s.id, wd, "first") == []  # a start, with nothing to put
    assert host.reads == 1 and not memory.started(s.id)
    memory.run_done(s.id, 0)  # its run recorded nothing: the history decides next time
    assert not memory.started(s.id)
    await memory.at_start(s.id, wd, "again")
    assert host.reads == 2

    await astore.append(s.id, "message.user", {"content": "again", "turn": 1})
    memory.run_done(s.id, 1)
    assert memory.started(s.id)
    assert await memory.at_start(s.id, wd, "second") == []
    assert host.reads == 2  # known: nothing read

    memory.run_done(other.id, 3)  # at_start never answered its start: not marked
    assert not memory.started(other.id)
