"""Child sessions (sub-agents) in the store, on SQLite and PostgreSQL: created with a
parent and the event that spawned them, listed apart from forks, walked back to the
spawning event, and searched together with their parent."""

from __future__ import annotations

import pytest

from tron_events import EventStore, InvalidParent, InvalidPayload, SessionNotFound
from tron_events.errors import SessionHasForks


def spawn(store: EventStore, parent_id: str, call_event_id: str, **extra: object) -> str:
    parent = store.get_session(parent_id)
    child = store.create_session(
        working_directory=parent.working_directory,
        model="claude-haiku-4-5",
        provider="anthropic",
        title="a child",
        parent_session_id=parent_id,
        spawn={"parentToolCallId": "toolu_1", "spawnedByEventId": call_event_id,
               "subagentType": "explorer", "tools": ["Read"], **extra},
    )  # fmt: skip
    return child.id


def parent_with_call(store: EventStore) -> tuple[str, str]:
    parent = store.create_session(working_directory="/src/app", model="m", provider="anthropic")
    store.append(parent.id, "message.user", {"content": "look around", "turn": 1})
    call = store.append(
        parent.id,
        "tool.call",
        {"toolCallId": "toolu_1", "name": "Task", "arguments": {"prompt": "x"}, "turn": 1},
    )
    return parent.id, call.id


def test_a_child_records_its_parent_and_the_spawning_event(store: EventStore) -> None:
    parent_id, call_id = parent_with_call(store)
    child_id = spawn(store, parent_id, call_id)
    child = store.get_session(child_id)
    parent = store.get_session(parent_id)
    assert child.parent_session_id == parent_id and child.fork_from_event_id is None
    assert child.workspace_id == parent.workspace_id and child.model == "claude-haiku-4-5"
    [root] = store.get_events(child_id)
    assert root.type == "session.start" and root.parent_id is None and root.depth == 0
    assert root.payload["parentSessionId"] == parent_id
    assert root.payload["parentToolCallId"] == "toolu_1"
    assert root.payload["spawnedByEventId"] == call_id
    assert root.payload["tools"] == ["Read"]
    spawning = store.get_spawning_event(child_id)
    assert spawning is not None and spawning.id == call_id and spawning.session_id == parent_id
    # Nothing of the parent is inherited: the child's history starts empty.
    assert store.get_state_at_head(child_id).messages == []
    assert store.get_spawning_event(parent_id) is None


def test_children_are_listed_apart_from_forks(store: EventStore) -> None:
    parent_id, call_id = parent_with_call(store)
    first = spawn(store, parent_id, call_id)
    second = spawn(store, parent_id, call_id)
    grandchild = store.create_session(
        working_directory="/src/app", model="m", provider="anthropic", parent_session_id=first
    ).id
    fork = store.fork(call_id).session
    fork_of_child = store.fork(store.get_session(first).root_event_id).session

    assert [s.id for s in store.get_child_sessions(parent_id)] == [first, second]
    assert [s.id for s in store.get_child_sessions(first)] == [grandchild]
    assert [s.id for s in store.get_descendant_sessions(parent_id)] == [first, second, grandchild]
    assert store.get_child_sessions(fork.id) == []
    assert fork.parent_session_id == parent_id and fork.fork_from_event_id == call_id
    assert fork_of_child.id not in {s.id for s in store.get_descendant_sessions(parent_id)}
    assert store.get_spawning_event(fork.id) is None
    assert store.get_spawning_event(grandchild) is None  # created without a spawning event
    with pytest.raises(SessionNotFound):
        store.get_child_sessions("sess_nope")

    # Children depend on their parent like forks do: deleting it needs cascade.
    with pytest.raises(SessionHasForks):
        store.delete_session(parent_id)
    store.delete_session(parent_id, cascade=True)
    with pytest.raises(SessionNotFound):
        store.get_session(grandchild)


def test_bad_spawns_are_refused_and_write_nothing(store: EventStore) -> None:
    parent_id, call_id = parent_with_call(store)
    other_id, other_call = parent_with_call(store)
    before = len(store.list_sessions(limit=100))
    with pytest.raises(SessionNotFound):
        spawn(store, "sess_missing", call_id)
    with pytest.raises(InvalidParent, match="not an event of session"):
        spawn(store, parent_id, other_call)
    with pytest.raises(InvalidPayload, match="parent_session_id"):
        store.create_session(
            working_directory="/x", model="m", provider="p", spawn={"subagentType": "x"}
        )
    with pytest.raises(InvalidPayload):
        spawn(store, parent_id, call_id, tools="Read")  # must be a list
    assert len(store.list_sessions(limit=100)) == before
    assert other_id != parent_id


def test_search_over_a_session_and_its_descendants(store: EventStore) -> None:
    parent_id, call_id = parent_with_call(store)
    child_id = spawn(store, parent_id, call_id)
    grandchild_id = store.create_session(
        working_directory="/src/app", model="m", provider="p", parent_session_id=child_id
    ).id
    stranger, _ = parent_with_call(store)
    for sid in (child_id, grandchild_id, stranger):
        store.append(sid, "message.user", {"content": f"the walrus in {sid}", "turn": 1})

    def sessions(**kwargs: object) -> set[str]:
        return {h.session_id for h in store.search("walrus", **kwargs)}  # type: ignore[arg-type]

    assert sessions(session_id=parent_id) == set()
    assert sessions(session_id=parent_id, include_descendants=True) == {child_id, grandchild_id}
    assert sessions(session_id=child_id, include_descendants=True) == {child_id, grandchild_id}
    assert sessions(session_id=grandchild_id, include_descendants=True) == {grandchild_id}
    assert stranger in sessions()
    with pytest.raises(ValueError, match="needs a session_id"):
        store.search("walrus", include_descendants=True)
    with pytest.raises(SessionNotFound):
        store.search("walrus", session_id="sess_nope", include_descendants=True)
