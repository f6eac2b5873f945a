"""Export and import of the JSONL format, on each backend: exact restore,
idempotent re-import, refusals with reasons, bad input, importer-style records."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.events._transfer_helpers import rows_of
from tests.support.stores import make_url
from tron_events import EventStore
from tron_events.transfer import (
    ExportFormatError,
    export_jsonl,
    import_jsonl,
    import_records,
    iter_export_records,
)


@pytest.fixture
def other(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[EventStore]:
    """A second fresh database on the same backend."""
    (tmp_path / "other").mkdir()
    gen = make_url(backend, tmp_path / "other", request)
    url = next(gen)
    s = EventStore.open(url)
    try:
        yield s
    finally:
        s.close()
        with pytest.raises(StopIteration):
            next(gen)


def sample(store: EventStore) -> dict[str, str]:
    """A session with a tool call, a rewind, a fork and an ended child fork."""
    s = store.create_session(working_directory="/src/app", model="m1", provider="p", title="t")
    u = store.append(s.id, "message.user", {"content": "find the needle, please", "turn": 1})
    store.append_many(
        s.id,
        [
            {
                "type": "message.assistant",
                "payload": {
                    "content": [
                        {"type": "text", "text": "looking"},
                        {
                            "type": "tool_use",
                            "id": "t1",
                            "name": "bash",
                            "input": {"c": "x" * 6000},
                        },
                    ],
                    "turn": 1,
                    "tokenUsage": {"inputTokens": 10, "outputTokens": 3, "cacheReadTokens": 2},
                },
            },
            {
                "type": "tool.call",
                "payload": {"toolCallId": "t1", "name": "bash", "arguments": {"c": "x" * 6000}},
            },
            {"type": "tool.result", "payload": {"toolCallId": "t1", "content": "ünïcode ✓"}},
            {"type": "stream.turn_end", "payload": {"turn": 1, "cost": 0.25}},
        ],
    )
    store.rewind(s.id, u.id)
    store.append(s.id, "message.user", {"content": "second branch", "turn": 2})
    fork = store.fork(u.id, name="fork")
    store.append(fork.session.id, "message.user", {"content": "in the fork", "turn": 2})
    child = store.fork(fork.session.id and store.get_session(fork.session.id).head_event_id)
    store.end_session(child.session.id, reason="done")
    return {"main": s.id, "fork": fork.session.id, "child": child.session.id}


def export_bytes(store: EventStore, **scope: Any) -> bytes:
    out = io.BytesIO()
    export_jsonl(store, out, **scope)
    return out.getvalue()


def test_round_trip_restores_rows_histories_and_search(
    store: EventStore, other: EventStore
) -> None:
    ids = sample(store)
    data = export_bytes(store, all=True)
    summary = import_jsonl(other, io.BytesIO(data))
    assert summary.ok and summary.sessions_imported == 3 and summary.events_imported == 11
    assert rows_of(other) == rows_of(store)
    for sid in ids.values():
        head = store.get_session(sid).head_event_id
        assert other.get_messages_at(head) == store.get_messages_at(head)
    assert [h.event_id for h in other.search("needle")] == [
        h.event_id for h in store.search("needle")
    ]
    # Exporting the copy gives the same lines (only the header's time differs).
    assert export_bytes(other, all=True).splitlines()[1:] == data.splitlines()[1:]


def test_reimport_changes_nothing_and_says_so(store: EventStore, other: EventStore) -> None:
    sample(store)
    data = export_bytes(store, all=True)
    import_jsonl(other, io.BytesIO(data))
    before = rows_of(other)
    again = import_jsonl(other, io.BytesIO(data))
    assert not again.changed and again.sessions_imported == 0
    assert len(again.already_present) == 3
    assert "nothing to do" in again.describe()
    assert rows_of(other) == before


def test_one_session_stands_alone_with_its_sources(store: EventStore, other: EventStore) -> None:
    ids = sample(store)
    records = list(iter_export_records(store, session_id=ids["child"]))
    sessions = [r["id"] for r in records if r.get("kind") == "session"]
    assert sessions == [ids["main"], ids["fork"], ids["child"]]  # sources first
    assert import_records(other, records).sessions_imported == 3
    head = store.get_session(ids["child"]).head_event_id
    assert other.get_messages_at(head) == store.get_messages_at(head)
    only = [r for r in iter_export_records(store, session_id=ids["main"]) if r.get("kind")]
    assert {r["id"] for r in only if r["kind"] == "session"} == {ids["main"]}
    forks = list(iter_export_records(store, session_id=ids["main"], with_forks=True))
    assert len([r for r in forks if r.get("kind") == "session"]) == 3


def test_conflicting_session_is_refused_with_reason(store: EventStore, other: EventStore) -> None:
    ids = sample(store)
    records = list(iter_export_records(store, all=True))
    changed = [
        {**r, "payload": {"content": "edited", "turn": 2}}
        if r.get("kind") == "event"
        and r["type"] == "message.user"
        and r["sessionId"] == ids["fork"]
        else r
        for r in records
    ]
    import_records(other, records)
    before = rows_of(other)
    summary = import_records(other, changed)
    assert [sid for sid, _ in summary.refused] == [ids["fork"]]
    assert "differs in payload" in summary.refused[0][1]
    assert rows_of(other) == before


def test_event_id_used_by_another_session_refuses_only_that_session(
    store: EventStore, other: EventStore
) -> None:
    ids = sample(store)
    records = list(iter_export_records(store, session_id=ids["main"]))
    taken = next(r["id"] for r in records if r.get("type") == "message.user")
    s = other.create_session(working_directory="/elsewhere", model="m", provider="p")
    other.append(s.id, "message.user", {"content": "x"}, event_id=taken)
    before = rows_of(other)
    summary = import_records(other, records)
    assert (
        summary.refused
        and f"event id {taken} already exists in session {s.id}" in (summary.refused[0][1])
    )
    assert rows_of(other) == before


def test_importer_records_get_counters_as_append_would(store: EventStore) -> None:
    """Minimal records (no header, ids, tree links, sequences or counters) give
    the same session row as the same events appended one by one."""
    s = store.create_session(working_directory="/imp", model="m", provider="p")
    drafts: list[tuple[str, dict[str, Any]]] = [
        ("message.user", {"content": "hi", "turn": 1}),
        (
            "message.assistant",
            {
                "content": [{"type": "text", "text": "yo"}],
                "turn": 1,
                "tokenUsage": {"inputTokens": 7, "outputTokens": 5, "cacheCreationTokens": 1},
            },
        ),
        ("stream.turn_end", {"turn": 1, "cost": 0.5}),
        ("message.user", {"content": "pineapple", "turn": 2}),
    ]
    for t, p in drafts:
        store.append(s.id, t, p)
    appended = store.get_session(s.id)
    records: list[dict[str, Any]] = [
        {"kind": "session", "id": "sess_imported"},
        {
            "kind": "event",
            "id": "evt_root",
            "type": "session.start",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "payload": {"workingDirectory": "/imp2", "model": "m", "provider": "p"},
        },
    ] + [
        {"kind": "event", "id": f"evt_{i}", "type": t, "timestamp": f"2026-01-01T00:00:0{i}Z",
         "payload": p}
        for i, (t, p) in enumerate(drafts, start=1)
    ]  # fmt: skip
    summary = import_records(store, [*records, {"kind": "notice", "message": "kept X as Y"}])
    assert summary.imported == ["sess_imported"] and summary.notices == [(None, "kept X as Y")]
    got = store.get_session("sess_imported")
    counters = ("event_count", "message_count", "turn_count", "input_tokens", "output_tokens",
                "cache_read_tokens", "cache_creation_tokens", "cost")  # fmt: skip
    assert {c: getattr(got, c) for c in counters} == {c: getattr(appended, c) for c in counters}
    assert got.head_event_id == "evt_4" and got.working_directory == "/imp2"
    assert [e.depth for e in store.get_ancestors("evt_4")] == [0, 1, 2, 3, 4]
    assert store.search("pineapple", session_id="sess_imported")


def test_bad_input_is_reported_and_nothing_is_half_written(
    store: EventStore, other: EventStore
) -> None:
    ids = sample(store)
    lines = export_bytes(store, all=True).splitlines(keepends=True)
    # The fork's second event is garbled; an unknown kind sits between sessions.
    fork_at = next(i for i, line in enumerate(lines) if ids["fork"].encode() in line)
    bad = [*lines]
    bad[fork_at + 2] = b'{"kind":"event","id":"evt_x",\n'
    bad.insert(fork_at, b'{"kind":"attachment","id":"a1"}\n')
    summary = import_jsonl(other, io.BytesIO(b"".join(bad)))
    refused = dict(summary.refused)
    assert set(refused) == {ids["fork"], ids["child"]}
    assert "not valid JSON" in refused[ids["fork"]]
    assert f"its source session {ids['fork']} was refused" in refused[ids["child"]]
    assert any("unknown record kind 'attachment'" in r for _, r in summary.skipped)
    assert summary.imported == [ids["main"]]
    assert {s.id for s in other.list_sessions()} == {ids["main"]}


def test_a_truncated_file_refuses_its_last_session(store: EventStore, other: EventStore) -> None:
    ids = sample(store)
    data = export_bytes(store, session_id=ids["main"])
    for cut in (data[: len(data) - 40], data[: data.rindex(b"\n", 0, len(data) - 1) + 1]):
        summary = import_jsonl(other, io.BytesIO(cut))
        [(sid, reason)] = summary.refused
        assert sid == ids["main"]
        assert "truncated" in reason or "the input is incomplete" in reason, reason
        assert other.list_sessions() == []


@pytest.mark.parametrize(
    ("first_line", "message"),
    [
        (b'{"parentUuid":null,"type":"user","uuid":"u1"}\n', "not a Tron export header"),
        (b'{"format":"tron-events-export","version":9}\n', "version 9"),
        (b"not json at all\n", "not a Tron export header"),
        (b"", "not a Tron export header"),
    ],
)
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_file_of_another_format_is_refused_before_writing(
    store: EventStore, first_line: bytes, message: str
) -> None:
    body = first_line + orjson.dumps({"kind": "session", "id": "sess_x"}) + b"\n"
    with pytest.raises(ExportFormatError, match=message):
        import_jsonl(store, io.BytesIO(body))
    assert store.list_sessions() == []


def test_imported_payloads_are_normalized_as_an_append_would(store: EventStore) -> None:
    big = {"text": "y" * 6000}
    t = "2026-01-01T00:00:0{}Z".format
    records: list[dict[str, Any]] = [
        {"kind": "session", "id": "sess_norm"},
        {"kind": "event", "id": "evt_n0", "type": "session.start", "timestamp": t(0),
         "payload": {"workingDirectory": "/n", "model": "m", "provider": "p"}},
        {"kind": "event", "id": "evt_nu", "type": "message.user", "timestamp": t(1),
         "payload": {"content": "write it"}},
        {"kind": "event", "id": "evt_n1", "type": "message.assistant", "timestamp": t(1),
         "payload": {"content": [{"type": "tool_use", "id": "u", "name": "w", "input": big}]}},
        {"kind": "event", "id": "evt_n2", "type": "tool.call", "timestamp": t(2),
         "payload": {"toolCallId": "u", "name": "w", "arguments": big}},
    ]  # fmt: skip
    summary = import_records(store, records)
    assert summary.imported == ["sess_norm"]
    assert any("1 payload(s) stored normalized" in m for _, m in summary.notices)
    stored = store.get_event("evt_n1")
    assert stored is not None and stored.payload["content"][0]["input"]["_truncated"] is True
    message = store.get_messages_at("evt_n2")[1]
    assert message.to_anthropic()["content"][0]["input"] == big  # restored from tool.call


def test_dry_run_reports_everything_and_writes_nothing(
    store: EventStore, other: EventStore
) -> None:
    sample(store)
    data = export_bytes(store, all=True)
    before = rows_of(other)
    summary = import_jsonl(other, io.BytesIO(data), dry_run=True)
    # The forks find their sources inside the dry run's transaction.
    assert summary.ok and summary.sessions_imported == 3 and not summary.changed
    assert "would import 3 session(s), 11 event(s)" in summary.describe()
    assert rows_of(other) == before


def test_a_time_that_is_no_time_refuses_its_session(store: EventStore, other: EventStore) -> None:
    """Timestamps are restored exactly, but only times: one that is not would sort
    and display as nonsense (and become the session's last activity)."""
    ids = sample(store)
    records = [orjson.loads(line) for line in export_bytes(store, all=True).splitlines()]
    fork_events = [r for r in records if r.get("kind") == "event" and r["sessionId"] == ids["fork"]]
    fork_events[1]["timestamp"] = "not a time"
    summary = import_records(other, records)
    refused = dict(summary.refused)
    assert "'not a time' is not an ISO 8601 time" in refused[ids["fork"]]
    assert ids["main"] in summary.imported
    assert ids["fork"] not in {s.id for s in other.list_sessions()}


def test_a_later_export_of_a_session_extends_it(store: EventStore, other: EventStore) -> None:
    """The session went on (here: rewound and went on) after an export was imported
    elsewhere: importing a later export adds the new events, and the session is then
    row for row what the source has. A session rewound on the importing side is not
    moved on under the user."""
    ids = sample(store)
    main = ids["main"]
    first = import_jsonl(other, io.BytesIO(export_bytes(store, session_id=main)))
    assert first.imported == [main]
    user = next(e for e in store.get_events(main) if e.type == "message.user")
    store.rewind(main, user.id)
    store.append(main, "message.user", {"content": "a third branch with a walrus", "turn": 2})
    later = export_bytes(store, session_id=main)
    summary = import_jsonl(other, io.BytesIO(later))
    assert summary.extended == [(main, 1)] and summary.imported == [] and summary.ok
    assert other.get_session(main) == store.get_session(main)
    assert other.get_events(main) == store.get_events(main)
    assert [h.event_id for h in other.search("walrus")] == [store.get_session(main).head_event_id]
    assert import_jsonl(other, io.BytesIO(later)).already_present == [main]

    store.append(main, "message.user", {"content": "and one more", "turn": 3})
    other.rewind(main, user.id)
    refused = dict(import_jsonl(other, io.BytesIO(export_bytes(store, session_id=main))).refused)
    assert "was rewound here" in refused[main]


def test_with_forks_takes_sub_agent_children_at_any_depth(
    store: EventStore, other: EventStore
) -> None:
    """``with_forks`` exports a session with its sub-agent sessions (children and
    theirs), and a child exported alone brings the sessions it was spawned from:
    either file imports with the parent links and spawning events whole."""
    from tests.events.test_child_sessions import parent_with_call, spawn

    parent_id, call_id = parent_with_call(store)
    child_id = spawn(store, parent_id, call_id)
    inner = store.append(
        child_id, "tool.call", {"toolCallId": "toolu_2", "name": "Task", "arguments": {}}
    )
    grandchild_id = spawn(store, child_id, inner.id)
    unrelated = store.create_session(working_directory="/elsewhere", model="m", provider="p")

    def sessions(**scope: Any) -> list[str]:
        records = iter_export_records(store, **scope)
        return [r["id"] for r in records if r.get("kind") == "session"]

    family = [parent_id, child_id, grandchild_id]
    assert sessions(session_id=parent_id) == [parent_id]
    assert sessions(session_id=parent_id, with_forks=True) == family
    assert unrelated.id not in sessions(session_id=parent_id, with_forks=True)
    assert sessions(session_id=grandchild_id) == family  # it stands alone
    summary = import_jsonl(other, io.BytesIO(export_bytes(store, session_id=grandchild_id)))
    assert summary.sessions_imported == 3
    assert other.get_session(grandchild_id).parent_session_id == child_id
    spawning = other.get_spawning_event(grandchild_id)
    assert spawning is not None and spawning.id == inner.id
    assert [s.id for s in other.get_descendant_sessions(parent_id)] == [child_id, grandchild_id]
