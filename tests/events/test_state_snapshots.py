"""State snapshots: the state at an event computed through a stored projection
equals the state computed from the whole path, on both backends.

The property drives random trees with the reconstruction property's generator
(forks, rewinds, compactions, clears, deletions, truncated tool inputs),
snapshots at random moments (every ``get_state_at`` stores one here), and then
checks every event, in random order, through the store that wrote them and
through a second store with empty in-process caches (the cold path: ranges
read only down to the snapshot). The examples below show that snapshots are
really read (a doctored snapshot is visible), and that the rules reaching back
before a snapshot, an unknown format, a corrupt row, a busy database, deletion
and downgrade all fall back to the whole path.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.events.test_reconstruct_property import STEPS, Run
from tron_events import EventStore, _state_snapshots, migrate
from tron_events.models import Session
from tron_events.reconstruct import build_state

SNAPSHOT_EXAMPLES = 60


@pytest.fixture
def eager(monkeypatch: pytest.MonkeyPatch) -> None:
    """Store a snapshot after every get_state_at that projected any event."""
    monkeypatch.setattr(_state_snapshots, "SNAPSHOT_FRACTION", 10**9)


def rows(store: EventStore, where: str = "1 = 1", params: tuple[Any, ...] = ()) -> list[Any]:
    with store.recorder.read() as cur:
        cur.execute(
            store.recorder.sql(
                f"SELECT event_id, session_id, format FROM state_snapshots WHERE {where}"
            ),
            params,
        )
        return list(cur.fetchall())


def execute(store: EventStore, sql: str, params: tuple[Any, ...] = ()) -> None:
    with store.recorder.write() as cur:
        cur.execute(store.recorder.sql(sql), params)


def from_scratch(store: EventStore, event_id: str) -> Any:
    return build_state(store.get_ancestors(event_id))


# -- the property ----------------------------------------------------------------------


@settings(
    max_examples=SNAPSHOT_EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(data=st.data())
def test_states_through_snapshots_equal_states_from_scratch(
    store: EventStore, eager: None, data: st.DataObject
) -> None:
    store.snapshot_min_events = 1
    store.snapshot_keep = data.draw(st.sampled_from([1, 2, 100]), label="keep")
    run = Run(store, data)
    for _ in range(data.draw(st.integers(1, 25), label="steps")):
        step = data.draw(st.sampled_from([*STEPS, "snapshot", "snapshot"]), label="step")
        if step == "snapshot":
            # Snapshot somewhere on the tree while it keeps growing.
            store.get_state_at(data.draw(st.sampled_from(run.ref.order)))
        else:
            getattr(run, step)()
    order = data.draw(st.permutations(run.ref.order), label="order")
    with EventStore.open(store.url) as cold:  # empty path cache: bounded range reads
        cold.snapshot_min_events = 1
        cold.snapshot_keep = store.snapshot_keep
        for event_id in order:
            expected = from_scratch(store, event_id)
            assert store.get_state_at(event_id) == expected
            assert cold.get_state_at(event_id) == expected
            assert store.get_messages_at(event_id) == expected.messages
        for session_id in run.sessions:
            head = run.ref.heads[session_id]
            assert cold.get_state_at_head(session_id) == from_scratch(store, head)
    stored = len(rows(store))
    event(f"snapshots stored: {min(stored, 10)}{'+' if stored >= 10 else ''}")
    assert stored > 0


# -- examples --------------------------------------------------------------------------


def conversation(store: EventStore, turns: int) -> Session:
    session = store.create_session(
        working_directory="/work/app", model="claude-a", provider="anthropic", system_prompt="v1"
    )
    for turn in range(1, turns + 1):
        store.append(session.id, "message.user", {"content": f"question {turn}", "turn": turn})
        store.append(
            session.id,
            "message.assistant",
            {
                "content": [{"type": "text", "text": f"answer {turn}"}],
                "turn": turn,
                "tokenUsage": {"inputTokens": 10, "outputTokens": 2},
            },
        )
    return store.get_session(session.id)


def doctor(store: EventStore, event_id: str, model: str) -> None:
    """Rewrite the stored snapshot at ``event_id`` with another model (still valid)."""
    with store.recorder.read() as cur:
        data = store.recorder.read_snapshot(cur, event_id, _state_snapshots.FORMAT)
    assert data is not None
    doc = orjson.loads(data)
    doc["state"]["model"] = model
    execute(
        store,
        "UPDATE state_snapshots SET data = ? WHERE event_id = ?",
        (orjson.dumps(doc), event_id),
    )


def test_a_resume_reads_the_snapshot_and_only_the_events_after_it(store: EventStore) -> None:
    store.snapshot_min_events = 10
    s = conversation(store, 20)  # 41 events: the first resume projects all of them
    first = store.get_state_at_head(s.id)
    assert [r[0] for r in rows(store)] == [s.head_event_id]
    doctor(store, s.head_event_id, "from-the-snapshot")
    store.append(s.id, "message.user", {"content": "more", "turn": 21})
    with EventStore.open(store.url) as cold:
        later = cold.get_state_at_head(s.id)
    assert later.model == "from-the-snapshot"  # the doctored row was read ...
    assert later.messages[:-1] == first.messages  # ... and continued
    assert later.messages[-1].content[-1].text == "more"  # type: ignore[union-attr]
    assert store.get_state_at(first.head_event_id).model == "claude-a"  # its live projection
    store.drop_caches([s.id])
    assert store.get_state_at(first.head_event_id).model == "from-the-snapshot"


def test_few_events_are_not_worth_a_snapshot(store: EventStore) -> None:
    s = conversation(store, 3)
    store.get_state_at_head(s.id)
    assert rows(store) == []
    store.snapshot_min_events = 0  # writing turned off
    s2 = conversation(store, 150)
    store.get_state_at_head(s2.id)
    assert rows(store) == []


def test_a_deletion_reaching_before_the_snapshot_projects_the_whole_path(
    store: EventStore,
) -> None:
    store.snapshot_min_events = 10
    s = conversation(store, 10)
    store.get_state_at_head(s.id)
    doctor(store, s.head_event_id, "stale")
    early = store.get_events(s.id, types=["message.assistant"])[0]
    store.append(
        s.id,
        "message.deleted",
        {"targetEventId": early.id, "targetType": "message.assistant"},
    )
    state = store.get_state_at_head(s.id)
    assert state.model == "claude-a"
    assert state == from_scratch(store, state.head_event_id)
    assert early.id not in {i for m in state.messages for i in m.event_ids}


def test_a_tool_call_completing_a_truncated_input_before_the_snapshot(
    store: EventStore, eager: None
) -> None:
    store.snapshot_min_events = 1
    s = conversation(store, 2)
    big = {"content": "x" * 6_000}
    assistant = store.append(
        s.id,
        "message.assistant",
        {
            "content": [{"type": "tool_use", "id": "toolu_big", "name": "write", "input": big}],
            "turn": 2,
        },
    )
    stub = store.get_state_at(assistant.id)  # snapshot here: the input is a stub so far
    assert stub.messages[-2].content[-1].input["_truncated"] is True  # type: ignore[union-attr]
    assert rows(store, "event_id = ?", (assistant.id,))
    store.append(s.id, "tool.call", {"toolCallId": "toolu_big", "name": "write", "arguments": big})
    state = store.get_state_at_head(s.id)
    assert state.messages[-2].content[-1].input == big  # type: ignore[union-attr]
    assert state == from_scratch(store, state.head_event_id)


def test_an_unknown_format_or_a_corrupt_row_is_ignored_and_replaced(store: EventStore) -> None:
    store.snapshot_min_events = 10
    s = conversation(store, 10)
    store.get_state_at_head(s.id)
    doctor(store, s.head_event_id, "stale")
    execute(store, "UPDATE state_snapshots SET format = 'old-format'")
    store.drop_caches([s.id])  # each read below goes to the stored row, not the live projection
    state = store.get_state_at_head(s.id)
    assert state.model == "claude-a"
    assert [r[2] for r in rows(store)] == [_state_snapshots.FORMAT]  # stored again
    execute(store, "UPDATE state_snapshots SET data = ?", (b'{"format": "x", "junk"',))
    store.drop_caches([s.id])
    assert store.get_state_at_head(s.id) == state
    execute(store, "UPDATE state_snapshots SET data = ?", (orjson.dumps({"format": "x"}),))
    store.drop_caches([s.id])
    assert store.get_state_at_head(s.id) == state
    doc = orjson.loads(_state_snapshots.dumps(_projection(store, s.head_event_id)))
    doc["messages"][0][1][0]["type"] = "no-such-block"
    execute(store, "UPDATE state_snapshots SET data = ?", (orjson.dumps(doc),))
    store.drop_caches([s.id])
    assert store.get_state_at_head(s.id) == state


def _projection(store: EventStore, event_id: str) -> Any:
    from tron_events.reconstruct import project

    return project(store.get_ancestors(event_id))


def test_each_session_keeps_its_newest_snapshots(store: EventStore, eager: None) -> None:
    store.snapshot_min_events = 1
    store.snapshot_keep = 2
    s = conversation(store, 5)
    events = store.get_events(s.id)
    for e in events[1:]:
        store.get_state_at(e.id)
    kept = {r[0] for r in rows(store)}
    assert kept == {events[-1].id, events[-2].id}


def test_a_fork_resumes_from_its_source_and_deleting_sessions_removes_snapshots(
    store: EventStore,
) -> None:
    store.snapshot_min_events = 10
    s = conversation(store, 10)
    store.get_state_at_head(s.id)
    doctor(store, s.head_event_id, "from-the-source")
    fork = store.fork(s.head_event_id).session
    store.append(fork.id, "message.user", {"content": "in the fork", "turn": 11})
    with EventStore.open(store.url) as cold:
        assert cold.get_state_at_head(fork.id).model == "from-the-source"
    store.snapshot_min_events = 1
    store.get_state_at_head(fork.id)
    assert len(rows(store, "session_id = ?", (fork.id,))) == 1
    store.delete_session(s.id, cascade=True)
    assert rows(store) == []


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_busy_database_skips_the_snapshot_and_still_answers(store: EventStore) -> None:
    store.snapshot_min_events = 10
    s = conversation(store, 10)
    path = store.url[len("sqlite:///") :]
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        state = store.get_state_at_head(s.id)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert state == from_scratch(store, s.head_event_id)
    assert rows(store) == []
    store.get_state_at_head(s.id)
    assert len(rows(store)) == 1


def test_downgrade_drops_snapshots_and_an_old_schema_works_without_them(
    store: EventStore,
) -> None:
    store.snapshot_min_events = 10
    s = conversation(store, 10)
    expected = store.get_state_at_head(s.id)
    store.close()
    migrate.downgrade(store.url, "0001")
    with EventStore.open(store.url, upgrade=False) as old:
        assert old.get_state_at_head(s.id) == expected  # no table: no snapshots
    migrate.upgrade(store.url)
    with EventStore.open(store.url) as again:
        again.snapshot_min_events = 10
        assert rows(again) == []
        assert again.get_state_at_head(s.id) == expected
        assert len(rows(again)) == 1


def test_a_snapshot_rewritten_at_the_same_event_reads_back_exactly(store: EventStore) -> None:
    # SQLite writes the bytes through blob I/O into a zeroblob of their length: a
    # longer or shorter replacement must come back whole.
    s = conversation(store, 3)
    event = store.get_event(s.head_event_id)
    rec = store.recorder
    for data in (b"a" * 5000, b"b" * 10, b"c" * 300_000, b""):
        with rec.write() as cur:
            rec.write_snapshot(cur, event, "probe", data, 2, "2026-01-01T00:00:00Z")
        with rec.read() as cur:
            assert rec.read_snapshot(cur, event.id, "probe") == data
