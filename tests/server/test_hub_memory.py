"""When the last client of a session leaves, the store forgets what it keeps in memory
for that session (issue 29: a server's memory follows the sessions someone has open)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tron_events import AsyncEventStore
from tron_server.hub import Hub

pytestmark = pytest.mark.anyio


class _Conn:
    """What the hub reads of a connection for subscriptions."""

    def __init__(self) -> None:
        self.subscriptions: set[str] = set()
        self.without_events: set[str] = set()


async def test_the_last_client_leaving_drops_the_sessions_caches(tmp_path: Path) -> None:
    store = await AsyncEventStore.open(f"sqlite:///{tmp_path / 'events.db'}")
    try:
        session = await store.create_session(working_directory="/w", model="m", provider="p")
        for turn in range(1, 6):
            await store.append(session.id, "message.user", {"content": "q", "turn": turn})
        await store.get_state_at_head(session.id)
        live = store.sync._projections
        assert session.id in {e.session_id for e in live._entries.values()}
        async with Hub(store) as hub:
            dropped: list[str] = []
            hub.caches_dropped.append(dropped.append)
            one, two = _Conn(), _Conn()
            await hub.subscribe(one, session.id)
            await hub.subscribe(two, session.id)
            hub.unsubscribe(one, session.id)  # another client is still there: kept
            assert session.id in {e.session_id for e in live._entries.values()}
            assert dropped == []
            hub.detach(two)  # the last one leaves
            assert len(live) == 0
            assert dropped == [session.id]  # and what else keeps its history is told
            assert store.sync.recorder.path_cache.get(session.id) is None
            state = await store.get_state_at_head(session.id)  # and it is built again
            assert state.turn_count == 5
    finally:
        await store.aclose()
