"""Live projections (``_projection_cache.py``): a resume goes on from the last
projection of the session kept in memory, on both backends.

What they must not change: every state equals the state from scratch (the
reconstruction and snapshot properties check that through the writing store);
a state handed out never changes afterwards, although the projection it came
from goes on (the property below keeps every state and compares it at the end);
deletions reaching back still fall back to the whole path. What they change: a
resume after an append reads only the new events; an unchanged head reads none.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.events.test_reconstruct_property import STEPS, Run
from tron_events import EventStore
from tron_events.reconstruct import SessionState, build_state


def dump(state: SessionState) -> Any:
    return state.model_dump(mode="json")


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(data=st.data())
def test_states_handed_out_never_change(store: EventStore, data: st.DataObject) -> None:
    run = Run(store, data)
    handed: list[tuple[SessionState, Any]] = []
    for _ in range(data.draw(st.integers(1, 30), label="steps")):
        step = data.draw(st.sampled_from([*STEPS, "resume", "resume", "resume"]), label="step")
        if step == "resume":
            state = store.get_state_at_head(run.session)
            handed.append((state, dump(state)))
        else:
            getattr(run, step)()
    for state, then in handed:
        assert dump(state) == then
        assert state == build_state(store.get_ancestors(state.head_event_id))


def _spy(store: EventStore, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many events each resume read after its starting point."""
    read: list[int] = []
    original = store.recorder.get_path_after

    def get_path_after(cur: Any, event: Any, stops: Any) -> Any:
        events, stop = original(cur, event, stops)
        read.append(len(events))
        return events, stop

    monkeypatch.setattr(store.recorder, "get_path_after", get_path_after)
    return read


def test_a_resume_after_a_turn_reads_only_the_turn(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.snapshot_min_events = 0  # no stored snapshots: only the live projection helps
    s = store.create_session(working_directory="/w", model="m", provider="anthropic")
    for turn in range(1, 41):
        store.append(s.id, "message.user", {"content": f"q{turn}", "turn": turn})
        store.append(
            s.id, "message.assistant", {"content": [{"type": "text", "text": "a"}], "turn": turn}
        )
    first = store.get_state_at_head(s.id)
    read = _spy(store, monkeypatch)
    assert store.get_state_at_head(s.id) == first
    assert read == []  # an unchanged head: no path read at all
    store.append(s.id, "message.user", {"content": "q41", "turn": 41})
    store.append(s.id, "message.user", {"content": "more", "turn": 41})  # merges into q41
    later = store.get_state_at_head(s.id)
    assert read == []  # appended here: the path cache has the two, no path read
    assert later == build_state(store.get_ancestors(later.head_event_id))
    assert later.messages[:-1] == first.messages
    assert [b.text for b in later.messages[-1].content] == ["q41", "more"]  # type: ignore[union-attr]
    assert first == build_state(store.get_ancestors(first.head_event_id))  # unchanged
    with EventStore.open(store.url) as other:  # another process's turn: read, only it
        other.append(s.id, "message.assistant", {"content": [{"type": "text", "text": "b"}]})
        other.append(s.id, "message.user", {"content": "q42", "turn": 42})
    read.clear()
    last = store.get_state_at_head(s.id)
    assert read == [2]
    assert last == build_state(store.get_ancestors(last.head_event_id))
    assert last.messages[:-2] == later.messages


def test_a_merge_into_the_last_message_leaves_earlier_states_alone(store: EventStore) -> None:
    s = store.create_session(working_directory="/w", model="m", provider="anthropic")
    store.append(s.id, "message.user", {"content": "one", "turn": 1})
    before = store.get_state_at_head(s.id)
    store.append(s.id, "message.user", {"content": "two", "turn": 1})  # merges into "one"
    after = store.get_state_at_head(s.id)
    assert [b.text for b in after.messages[-1].content] == ["one", "two"]  # type: ignore[union-attr]
    assert [b.text for b in before.messages[-1].content] == ["one"]  # type: ignore[union-attr]
    assert before.messages[-1].event_ids == [before.head_event_id]
    store.append(
        s.id,
        "message.assistant",
        {"content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}]},
    )
    open_use = store.get_state_at_head(s.id)
    store.append(s.id, "tool.result", {"toolCallId": "toolu_1", "content": "ok"})
    store.append(s.id, "message.user", {"content": "three", "turn": 2})
    final = store.get_state_at_head(s.id)
    for state in (before, after, open_use, final):
        assert state == build_state(store.get_ancestors(state.head_event_id))


def test_a_deletion_reaching_back_projects_the_whole_path(store: EventStore) -> None:
    s = store.create_session(working_directory="/w", model="m", provider="anthropic")
    early = store.append(s.id, "message.user", {"content": "delete me", "turn": 1})
    store.append(s.id, "message.assistant", {"content": [{"type": "text", "text": "a"}]})
    store.append(s.id, "message.user", {"content": "keep", "turn": 2})
    store.get_state_at_head(s.id)
    store.append(s.id, "message.deleted", {"targetEventId": early.id})
    state = store.get_state_at_head(s.id)
    assert state == build_state(store.get_ancestors(state.head_event_id))
    assert "delete me" not in str(state.messages)


def test_rewinds_forks_and_other_sessions(store: EventStore) -> None:
    s = store.create_session(working_directory="/w", model="m", provider="anthropic")
    ids = [store.append(s.id, "message.user", {"content": f"m{i}", "turn": i}).id for i in range(6)]
    store.get_state_at_head(s.id)
    # A branch from an earlier event: not a descendant of the live projection's event.
    branch = store.append(s.id, "message.user", {"content": "branch"}, parent_id=ids[2])
    assert store.get_state_at_head(s.id) == build_state(store.get_ancestors(branch.id))
    fork = store.fork(ids[4]).session
    store.append(fork.id, "message.user", {"content": "in the fork"})
    got = store.get_state_at_head(fork.id)
    assert got == build_state(store.get_ancestors(got.head_event_id))
    for event_id in ids:  # any older event, in any order
        assert store.get_state_at(event_id) == build_state(store.get_ancestors(event_id))


def test_the_cache_is_bounded_and_dropped(store: EventStore) -> None:
    sessions = []
    for _ in range(3):
        s = store.create_session(working_directory="/w", model="m", provider="anthropic")
        for i in range(30):
            store.append(s.id, "message.user", {"content": "x" * 1000, "turn": i})
        store.get_state_at_head(s.id)
        sessions.append(s.id)
    live = store._projections
    assert len(live) == 3
    one = live.nbytes // 3
    live.budget_bytes = 2 * one + one // 2
    store.get_state_at_head(sessions[0])  # the newest use: the oldest other goes
    s = store.create_session(working_directory="/w", model="m", provider="anthropic")
    store.append(s.id, "message.user", {"content": "y", "turn": 1})
    store.get_state_at_head(s.id)
    assert live.nbytes <= live.budget_bytes
    assert {e.session_id for e in live._entries.values()} >= {sessions[0], s.id}
    assert sessions[1] not in {e.session_id for e in live._entries.values()}
    store.drop_caches([sessions[0]])
    assert sessions[0] not in {e.session_id for e in live._entries.values()}
    store.delete_session(s.id)
    assert len(live) <= 1 and s.id not in {e.session_id for e in live._entries.values()}
    for sid in sessions:  # still right once rebuilt
        state = store.get_state_at_head(sid)
        assert state == build_state(store.get_ancestors(state.head_event_id))


def test_dropping_a_sessions_caches_releases_the_connections_memory(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What stays of a resumed session once its caches are dropped is the connections'
    page caches: they are shrunk too, off the caller's thread (benchmarks/
    bench_resume_memory.py), and the store reads on as before."""
    import threading

    s = store.create_session(working_directory="/w", model="m", provider="anthropic")
    for i in range(20):
        store.append(s.id, "message.user", {"content": "x" * 1000, "turn": i})
    before = store.get_state_at_head(s.id)
    released = threading.Event()
    shrink = store.recorder.shrink_memory
    callers: list[threading.Thread] = []

    def spy() -> None:
        callers.append(threading.current_thread())
        shrink()
        released.set()

    monkeypatch.setattr(store.recorder, "shrink_memory", spy)
    store.drop_caches([s.id])
    assert released.wait(20)
    assert callers[0] is not threading.current_thread()
    assert store.get_state_at_head(s.id) == before
    store.drop_caches([])  # nothing dropped: nothing to release
    assert len(callers) == 1
