"""An append re-reads the session row and head event only when something else
moved them: the store keeps what its last append to a session left, and uses it
while the locked row still says the same (head, status, count, model), on both
backends. Every change made elsewhere (another store on the same database, as
another process would, or another method of this store) is seen."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from tron_events import EventStore
from tron_events.errors import ConcurrencyConflict, SessionNotActive, SessionNotFound


def user(n: int) -> dict[str, Any]:
    return {"content": f"m{n}", "turn": n}


def chain_is_whole(store: EventStore, session_id: str) -> None:
    events = store.get_events(session_id)
    assert [e.sequence for e in events] == list(range(len(events)))
    session = store.get_session(session_id)
    assert session.event_count == len(events)
    path = store.get_ancestors(session.head_event_id)
    assert all(b.parent_id == a.id for a, b in itertools.pairwise(path))


# PostgreSQL's common append is one statement that never reads the row into Python.
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_the_row_is_read_once_while_nothing_else_writes(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = store.create_session(working_directory="/w", model="m", provider="p")
    store.append(s.id, "message.user", user(0))
    full_reads: list[str] = []
    original = store.recorder.lock_session

    def lock_session(cur: Any, session_id: str) -> Any:
        full_reads.append(session_id)
        return original(cur, session_id)

    monkeypatch.setattr(store.recorder, "lock_session", lock_session)
    for n in range(1, 6):
        store.append(s.id, "message.user", user(n))
    store.append_many(s.id, [{"type": "message.user", "payload": user(6)}])
    assert full_reads == []
    chain_is_whole(store, s.id)


def test_appends_from_another_store_are_seen(store: EventStore) -> None:
    s = store.create_session(working_directory="/w", model="m", provider="p")
    store.append(s.id, "message.user", user(0))
    with EventStore.open(store.url) as other:  # another process, in effect
        for n in range(1, 4):
            theirs = other.append(s.id, "message.user", user(n))
            ours = store.append(s.id, "message.user", user(10 + n))
            assert ours.parent_id == theirs.id and ours.sequence == theirs.sequence + 1
    chain_is_whole(store, s.id)


def test_a_head_moved_away_and_back_elsewhere_is_not_mistaken(store: EventStore) -> None:
    s = store.create_session(working_directory="/w", model="m", provider="p")
    first = store.append(s.id, "message.user", user(0))
    mine = store.append(s.id, "message.user", user(1))
    with EventStore.open(store.url) as other:
        other.rewind(s.id, first.id)
        other.append(s.id, "message.user", user(2))  # the count grows on another branch
        other.rewind_and_append(s.id, mine.id, [], allow_abandoned=True)  # back to our head
    assert store.get_session(s.id).head_event_id == mine.id
    after = store.append(s.id, "message.user", user(3))
    assert after.parent_id == mine.id and after.sequence == 4
    chain_is_whole(store, s.id)


def test_other_methods_of_this_store_are_seen(store: EventStore) -> None:
    s = store.create_session(working_directory="/w", model="m", provider="p")
    first = store.append(s.id, "message.user", user(0))
    head = store.append(s.id, "message.user", user(1))
    with pytest.raises(ConcurrencyConflict):
        store.append(s.id, "message.user", user(2), expected_head=first.id)
    store.rewind(s.id, first.id)
    branched = store.append(s.id, "message.user", user(3))
    assert branched.parent_id == first.id
    store.append(s.id, "config.model_switch", {"previousModel": "m", "newModel": "n"})
    store.append(s.id, "message.user", user(4))
    assert store.get_session(s.id).model == "n"
    del head
    store.end_session(s.id)
    with pytest.raises(SessionNotActive):
        store.append(s.id, "message.user", user(5))
    chain_is_whole(store, s.id)
    s2 = store.create_session(working_directory="/w", model="m", provider="p")
    store.append(s2.id, "message.user", user(0))
    store.delete_session(s2.id)
    with pytest.raises(SessionNotFound):
        store.append(s2.id, "message.user", user(1))


def test_changes_elsewhere_reach_an_append_to_the_known_head(store: EventStore) -> None:
    """The append to the head this store knows moves the session row on only if it
    still says that head and count, and active: anything another store did since
    (an append, an end, a deletion) sends it to the general path, which says why."""
    s = store.create_session(working_directory="/w", model="m", provider="p")
    mine = store.append(s.id, "message.user", user(0))
    with EventStore.open(store.url) as other:
        theirs = other.append(s.id, "message.user", user(1))
        # Compare-and-append against the head this store knows: the row says otherwise.
        with pytest.raises(ConcurrencyConflict):
            store.append(s.id, "message.user", user(2), expected_head=mine.id)
        with pytest.raises(ConcurrencyConflict):
            store.append_many(
                s.id, [{"type": "message.user", "payload": user(2)}], expected_head=mine.id
            )
        chain = store.append_many(
            s.id,
            [{"type": "message.user", "payload": user(n)} for n in (3, 4)],
            expected_head=theirs.id,
        )
        assert chain[0].parent_id == theirs.id and chain[1].sequence == theirs.sequence + 2
        other.append(s.id, "message.user", user(5))
        other.end_session(s.id)
        with pytest.raises(SessionNotActive):
            store.append(s.id, "message.user", user(6))
        with pytest.raises(SessionNotActive):
            store.append_many(s.id, [{"type": "message.user", "payload": user(6)}])
    chain_is_whole(store, s.id)
    assert store.get_session(s.id).message_count == 5
    s2 = store.create_session(working_directory="/w", model="m", provider="p")
    store.append(s2.id, "message.user", user(0))
    with EventStore.open(store.url) as other:
        other.delete_session(s2.id)
    with pytest.raises(SessionNotFound):
        store.append(s2.id, "message.user", user(1))


def test_the_counters_of_appends_to_the_known_head(store: EventStore) -> None:
    """Messages, turns, tokens and cost add up on the session row as on the general path."""
    s = store.create_session(working_directory="/w", model="m", provider="p")
    store.append(s.id, "message.user", {"content": "q", "turn": 3})
    usage = {"inputTokens": 10, "outputTokens": 5, "cacheReadTokens": 2, "cacheCreationTokens": 1}
    store.append(s.id, "message.assistant", {"content": [], "turn": 2, "tokenUsage": usage})
    store.append_many(
        s.id,
        [
            {"type": "stream.turn_end", "payload": {"turn": 3, "cost": 0.25}},
            {"type": "message.assistant", "payload": {"content": [], "tokenUsage": usage}},
            {"type": "stream.turn_end", "payload": {"cost": 0.5}},
        ],
    )
    row = store.get_session(s.id)
    assert (row.message_count, row.turn_count, row.event_count) == (3, 3, 6)
    assert (row.input_tokens, row.output_tokens) == (20, 10)
    assert (row.cache_read_tokens, row.cache_creation_tokens) == (4, 2)
    assert row.cost == pytest.approx(0.75)
