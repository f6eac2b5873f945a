"""What a server that takes over a dead server's session records (no processes: the
store alone, on SQLite)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tron_events import AsyncEventStore
from tron_server.cluster import TAKEOVER_REASON, TAKEOVER_RESULT, close_interrupted_turn

pytestmark = pytest.mark.anyio


async def open_turn(store: AsyncEventStore, *, requested: bool = False) -> str:
    """A session whose turn 1 called two tools: the first has its result, the second was
    running (or waiting for an approval) when its server died."""
    session = await store.create_session(working_directory="/w", model="m", provider="anthropic")
    uses = [{"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": "x"}}
            for i in (1, 2)]  # fmt: skip
    drafts: list[dict[str, Any]] = [
        {"type": "message.user", "payload": {"content": "go", "turn": 1}},
        {"type": "stream.turn_start", "payload": {"turn": 1}},
        {
            "type": "message.assistant",
            "payload": {
                "content": uses,
                "turn": 1,
                "tokenUsage": {},
                "stopReason": "tool_use",
                "model": "m",
                "latency": 1,
            },
        },
        {
            "type": "tool.call",
            "payload": {
                "toolCallId": "t1",
                "name": "Bash",
                "arguments": {"command": "x"},
                "turn": 1,
            },
        },
        {
            "type": "tool.call",
            "payload": {
                "toolCallId": "t2",
                "name": "Bash",
                "arguments": {"command": "x"},
                "turn": 1,
            },
        },
        {
            "type": "tool.result",
            "payload": {"toolCallId": "t1", "content": "ok", "isError": False},
        },
    ]
    if requested:
        drafts.append({"type": "interaction.requested", "payload": {
            "requestId": "req_1", "kind": "approval", "toolCallId": "t2", "turn": 1,
            "tool": "Bash", "arguments": {"command": "x"}}})  # fmt: skip
    await store.append_many(session.id, drafts)
    return session.id


async def test_the_running_call_gets_an_interrupted_result_and_the_turn_ends(
    tmp_path: Path,
) -> None:
    store = await AsyncEventStore.open(f"sqlite:///{tmp_path / 'db.sqlite'}")
    try:
        sid = await open_turn(store)
        told: list[tuple[str, dict[str, Any]]] = []
        # two servers take it over at once: one records, by compare-and-append
        results: list[bool] = []

        async def take() -> None:
            results.append(await close_interrupted_turn(
                store, sid, lambda method, _sid, data: told.append((method, data))))  # fmt: skip

        async with anyio.create_task_group() as tg:
            tg.start_soon(take)
            tg.start_soon(take)
        assert sorted(results) == [False, True]
        events = await store.get_events(sid)
        tail = [(e.type, e.payload) for e in events][-3:]
        assert tail[0] == ("tool.result", {"toolCallId": "t2", "content": TAKEOVER_RESULT,
                                           "isError": True, "interrupted": True})  # fmt: skip
        assert tail[1] == ("notification.interrupted", {"turn": 1, "reason": TAKEOVER_REASON})
        assert tail[2][0] == "stream.turn_end" and tail[2][1]["stopReason"] == "aborted"
        assert [m for m, _ in told] == ["agent.tool_end", "agent.turn_end", "agent.complete"]
        assert await close_interrupted_turn(store, sid, lambda *a: None) is False  # closed
    finally:
        await store.aclose()


async def test_a_turn_waiting_for_an_approval_is_left_pending(tmp_path: Path) -> None:
    store = await AsyncEventStore.open(f"sqlite:///{tmp_path / 'db.sqlite'}")
    try:
        sid = await open_turn(store, requested=True)
        before = len(await store.get_events(sid))
        assert await close_interrupted_turn(store, sid, lambda *a: None) is False
        assert len(await store.get_events(sid)) == before
    finally:
        await store.aclose()
