"""The session row's model and provider follow its head (issue 17.5).

``get_state_at_head`` is the truth about the model the next turn uses; the
session row (``get_session``, ``list_sessions``) must say the same after a
``config.model_switch``, a rewind past one, a branch appended before one, and
in a fork. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import io

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tron_events import EventStore, Session
from tron_events.transfer import export_jsonl, import_jsonl


def new_session(store: EventStore) -> Session:
    return store.create_session(
        working_directory="/work/app", model="claude-a", provider="anthropic"
    )


def row_and_state(store: EventStore, session_id: str) -> tuple[tuple[str, str], tuple[str, str]]:
    row = store.get_session(session_id)
    state = store.get_state_at_head(session_id)
    return (row.model, row.provider), (state.model, state.provider)


def test_a_switch_updates_the_row_and_the_list(store: EventStore) -> None:
    s = new_session(store)
    store.append(s.id, "message.user", {"content": "hi", "turn": 1})
    store.append(s.id, "config.model_switch", {"previousModel": "claude-a", "newModel": "claude-b"})
    assert (store.get_session(s.id).model, store.get_session(s.id).provider) == (
        "claude-b",
        "anthropic",
    )
    # Across providers: the switch names the new provider.
    switch = store.append(
        s.id,
        "config.model_switch",
        {"previousModel": "claude-b", "newModel": "gpt-5", "provider": "openai"},
    )
    listed = {x.id: x for x in store.list_sessions()}[s.id]
    assert (listed.model, listed.provider) == ("gpt-5", "openai")
    row, state = row_and_state(store, s.id)
    assert row == state == ("gpt-5", "openai")
    # Later events keep it (the fast append path must not reset it).
    store.append(s.id, "message.user", {"content": "next", "turn": 2})
    assert row_and_state(store, s.id)[0] == ("gpt-5", "openai")
    # append_many with a switch in the middle: the row takes the last one.
    store.append_many(
        s.id,
        [
            {"type": "config.model_switch", "payload": {"previousModel": "gpt-5",
                                                        "newModel": "claude-c",
                                                        "provider": "anthropic"}},
            {"type": "message.user", "payload": {"content": "x", "turn": 3}},
        ],
    )  # fmt: skip
    row, state = row_and_state(store, s.id)
    assert row == state == ("claude-c", "anthropic")
    assert switch.type == "config.model_switch"


def test_rewind_and_branch_past_a_switch_give_the_old_model_back(store: EventStore) -> None:
    s = new_session(store)
    before = store.append(s.id, "message.user", {"content": "hi", "turn": 1})
    store.append(
        s.id,
        "config.model_switch",
        {"previousModel": "claude-a", "newModel": "gemini-x", "provider": "google"},
    )
    after = store.append(s.id, "message.user", {"content": "on gemini", "turn": 2})
    rewound = store.rewind(s.id, before.id)
    assert (rewound.model, rewound.provider) == ("claude-a", "anthropic")
    row, state = row_and_state(store, s.id)
    assert row == state == ("claude-a", "anthropic")

    # Appending on a branch that has the switch again (parent given explicitly)...
    store.append(s.id, "message.user", {"content": "back", "turn": 3}, parent_id=after.id)
    row, state = row_and_state(store, s.id)
    assert row == state == ("gemini-x", "google")
    # ... and on one before it.
    store.append(s.id, "message.user", {"content": "again", "turn": 3}, parent_id=before.id)
    row, state = row_and_state(store, s.id)
    assert row == state == ("claude-a", "anthropic")


def test_a_fork_takes_the_model_and_provider_at_its_fork_point(store: EventStore) -> None:
    s = new_session(store)
    store.append(
        s.id,
        "config.model_switch",
        {"previousModel": "claude-a", "newModel": "gpt-5", "provider": "openai"},
    )
    point = store.append(s.id, "message.user", {"content": "hi", "turn": 1})
    fork = store.fork(point.id).session
    assert (fork.model, fork.provider) == ("gpt-5", "openai")
    row, state = row_and_state(store, fork.id)
    assert row == state == ("gpt-5", "openai")
    # A fork that rewinds into its inherited history, before the switch.
    start = store.get_ancestors(point.id)[0]
    store.rewind(fork.id, start.id)
    row, state = row_and_state(store, fork.id)
    assert row == state == ("claude-a", "anthropic")


MODELS = [("claude-a", None), ("claude-b", None), ("gpt-5", "openai"), ("gemini-x", "google")]
steps = st.lists(
    st.one_of(
        st.tuples(st.just("switch"), st.sampled_from(MODELS)),
        st.tuples(st.just("message"), st.none()),
        st.tuples(st.just("rewind"), st.integers(min_value=0, max_value=50)),
        st.tuples(st.just("branch"), st.integers(min_value=0, max_value=50)),
    ),
    max_size=12,
)


# Each example works on a session of its own, so one store serves them all.
@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=steps)
def test_the_row_always_shows_the_model_of_the_head(store: EventStore, ops: list) -> None:  # type: ignore[type-arg]
    s = new_session(store)
    turn = 0
    for op, arg in ops:
        head = store.get_session(s.id).head_event_id
        path = store.get_ancestors(head)
        if op == "switch":
            model, provider = arg
            payload = {"previousModel": "?", "newModel": model}
            if provider:
                payload["provider"] = provider
            store.append(s.id, "config.model_switch", payload)
        elif op == "message":
            turn += 1
            store.append(s.id, "message.user", {"content": f"m{turn}", "turn": turn})
        elif op == "rewind":
            store.rewind(s.id, path[arg % len(path)].id)
        else:
            turn += 1
            parent = path[arg % len(path)].id
            store.append(s.id, "message.user", {"content": "b", "turn": turn}, parent_id=parent)
        row, state = row_and_state(store, s.id)
        assert row == state, (op, arg)


def test_an_import_takes_the_model_of_the_head(store: EventStore) -> None:
    """A record that carries the session's first model (as the Codex and pi
    importers write it, or an export of a database from before this fix) still
    gives a row with the head's model."""
    s = new_session(store)
    store.append(s.id, "message.user", {"content": "hi", "turn": 1})
    store.append(
        s.id,
        "config.model_switch",
        {"previousModel": "claude-a", "newModel": "gpt-5", "provider": "openai"},
    )
    point = store.append(s.id, "message.user", {"content": "on gpt", "turn": 2})
    fork = store.fork(point.id).session
    out = io.BytesIO()
    export_jsonl(store, out, session_id=s.id, with_forks=True)
    lines = [orjson.loads(line) for line in out.getvalue().splitlines()]
    for record in lines:
        if record.get("kind") == "session":
            record["model"], record["provider"] = "claude-a", "anthropic"  # stale
    store.delete_session(s.id, cascade=True)
    summary = import_jsonl(store, io.BytesIO(b"\n".join(orjson.dumps(r) for r in lines)))
    assert summary is not None
    for sid in (s.id, fork.id):
        row, state = row_and_state(store, sid)
        assert row == state == ("gpt-5", "openai"), sid
