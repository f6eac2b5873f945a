"""The memory event types on each backend: ``memory.handoff`` is validated on append and
found by search (every text field, on SQLite and PostgreSQL alike); ``memory.loaded`` is
user text where it stands in ``get_messages_at`` (so a request with memory is reproduced
exactly), is not itself indexed, and both survive export and import unchanged."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.stores import make_url
from tron_events import EventStore, InvalidPayload
from tron_events.messages import TextBlock
from tron_events.transfer import export_jsonl, import_jsonl
from tron_events.validate import validate_history

HANDOFF: dict[str, Any] = {
    "summary": "Ported the tokenizer to the quokka parser",
    "codeChanges": [{"path": "src/parse.py", "description": "wombat lexer rewritten"}],
    "currentState": "tests green except numbat edge cases",
    "nextSteps": ["handle the platypus escapes"],
    "blockers": ["echidna grammar undocumented"],
    "patterns": ["run the bandicoot suite before committing"],
    "trigger": "session_end",
}


@pytest.fixture
def other(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[EventStore]:
    """A second fresh database on the same backend."""
    (tmp_path / "other").mkdir()
    gen = make_url(backend, tmp_path / "other", request)
    s = EventStore.open(next(gen))
    try:
        yield s
    finally:
        s.close()
        with pytest.raises(StopIteration):
            next(gen)


def test_a_handoff_is_validated_and_every_field_is_searchable(store: EventStore) -> None:
    s = store.create_session(working_directory="/w", model="m", provider="anthropic")
    event = store.append(s.id, "memory.handoff", HANDOFF)
    assert event.payload["codeChanges"] == [
        {"path": "src/parse.py", "description": "wombat lexer rewritten"}
    ]
    for word in ("quokka", "wombat", "numbat", "platypus", "echidna", "bandicoot", "lexer"):
        hits = store.search(word, workspace_id=s.workspace_id)
        assert [h.event_id for h in hits] == [event.id], word
        assert hits[0].type == "memory.handoff"
    with pytest.raises(InvalidPayload):
        store.append(s.id, "memory.handoff", {"currentState": "no summary"})
    with pytest.raises(InvalidPayload):
        store.append(s.id, "memory.handoff", {"summary": "x", "nextSteps": "not a list"})


def test_memory_loaded_is_user_text_before_the_prompt_and_not_indexed(store: EventStore) -> None:
    s = store.create_session(working_directory="/w", model="m", provider="anthropic")
    loaded = store.append(
        s.id,
        "memory.loaded",
        {
            "content": "<memory>ledger: goal is the kiwifruit port</memory>",
            "ledger": [{"path": "/w/.tron/ledger.md", "scope": "project", "revision": "ab"}],
            "handoffIds": ["evt_x"],
            "budgetTokens": 4000,
        },
    )
    user = store.append(s.id, "message.user", {"content": "carry on", "turn": 1})
    messages = store.get_messages_at(user.id)
    assert validate_history(messages) == []
    [message] = messages
    assert message.role == "user"
    assert [b.text for b in message.content if isinstance(b, TextBlock)] == [
        "<memory>ledger: goal is the kiwifruit port</memory>",
        "carry on",
    ]
    assert message.event_ids == [loaded.id, user.id]
    assert store.search("kiwifruit") == []
    with pytest.raises(InvalidPayload):
        store.append(s.id, "memory.loaded", {"ledger": []})


def test_memory_events_survive_export_and_import(store: EventStore, other: EventStore) -> None:
    s = store.create_session(working_directory="/w", model="m", provider="anthropic")
    store.append(s.id, "memory.loaded", {"content": "remember the dingo", "handoffIds": []})
    user = store.append(s.id, "message.user", {"content": "go", "turn": 1})
    handoff = store.append(s.id, "memory.handoff", HANDOFF)
    out = io.BytesIO()
    export_jsonl(store, out, all=True)
    summary = import_jsonl(other, io.BytesIO(out.getvalue()))
    assert summary.ok
    assert other.get_messages_at(user.id) == store.get_messages_at(user.id)
    assert other.get_event(handoff.id) == store.get_event(handoff.id)
    assert [h.event_id for h in other.search("wombat")] == [handoff.id]


def test_the_events_of_several_sessions_in_one_read(store: EventStore) -> None:
    a = store.create_session(working_directory="/w", model="m", provider="anthropic")
    b = store.create_session(working_directory="/w", model="m", provider="anthropic")
    first = store.append(a.id, "memory.handoff", {"summary": "one"})
    store.append(a.id, "message.user", {"content": "x", "turn": 1})
    second = store.append(a.id, "memory.handoff", {"summary": "two"})
    store.rewind(a.id, first.id)  # an orphaned event still counts
    third = store.append(b.id, "memory.handoff", {"summary": "three"})
    got = store.get_events_of_sessions(
        [b.id, a.id, a.id, "sess_unknown", "bad\x00id"], types=["memory.handoff"]
    )
    assert sorted(e.id for e in got) == sorted([first.id, second.id, third.id])
    by_session = [e.id for e in got if e.session_id == a.id]
    assert by_session == [first.id, second.id]  # sequence order within a session
    assert store.get_events_of_sessions([a.id], types=[]) == []
    assert store.get_events_of_sessions([], types=["memory.handoff"]) == []
    many = [f"sess_{n}" for n in range(1_200)] + [a.id]  # more than one chunk of ids
    assert len(store.get_events_of_sessions(many, types=["memory.handoff"])) == 2
    with pytest.raises(TypeError):
        store.get_events_of_sessions(a.id, types=["memory.handoff"])
