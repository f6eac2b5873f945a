"""The store's contract, run on every backend through the ``store`` fixture."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tron_events import (
    ConcurrencyConflict,
    EventIdConflict,
    EventNotFound,
    EventStore,
    InvalidCursor,
    InvalidParent,
    InvalidPayload,
    InvalidQuery,
    InvalidRewind,
    SessionHasForks,
    SessionNotActive,
    SessionNotFound,
    UnknownEventType,
    register_event_type,
)
from tron_events.models import Event, Session

ID = re.compile(
    r"^(evt|sess|ws)_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"
)


def new_session(store: EventStore, wd: str = "/work/app", **kw: str) -> Session:
    return store.create_session(
        working_directory=wd,
        model=kw.get("model", "m1"),
        provider="anthropic",
        **{k: v for k, v in kw.items() if k != "model"},
    )


def user(store: EventStore, sid: str, text: str, **kw: object) -> Event:
    return store.append(sid, "message.user", {"content": text, "turn": 1}, **kw)  # type: ignore[arg-type]


def snapshot(store: EventStore) -> tuple[list[tuple[str, str, int, str]], list[Session]]:
    """Everything observable, to prove a failed call changed nothing."""
    sessions = store.list_sessions(limit=1000)
    rows = []
    for s in sessions:
        for e in store.get_events(s.id):
            rows.append((e.id, e.session_id, e.sequence, e.type))
    return sorted(rows), sorted(sessions, key=lambda s: s.id)


# -- sessions ----------------------------------------------------------------


def test_create_session_writes_root_and_workspace(store: EventStore) -> None:
    s = store.create_session(
        working_directory="/work/app", model="claude-x", provider="anthropic",
        title="T", system_prompt="be brief",
    )  # fmt: skip
    assert ID.match(s.id) and s.id.startswith("sess_")
    assert ID.match(s.workspace_id) and ID.match(s.root_event_id)
    assert s.head_event_id == s.root_event_id
    assert (s.status, s.model, s.provider, s.title) == ("active", "claude-x", "anthropic", "T")
    root = store.get_event(s.root_event_id)
    assert root is not None
    assert (root.type, root.sequence, root.depth, root.parent_id) == ("session.start", 0, 0, None)
    assert root.payload == {
        "workingDirectory": "/work/app", "model": "claude-x", "provider": "anthropic",
        "systemPrompt": "be brief", "title": "T",
    }  # fmt: skip
    ws = store.get_or_create_workspace("/work/app")
    assert ws.id == s.workspace_id and ws.name == "app"
    # The same path maps to the same workspace, a new one to a new workspace.
    assert new_session(store).workspace_id == s.workspace_id
    assert new_session(store, "/work/other").workspace_id != s.workspace_id


def test_find_workspace_names_a_folder_as_session_create_does_and_never_writes(
    store: EventStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = tmp_path / "app"
    (app / "sub").mkdir(parents=True)
    (tmp_path / "link").symlink_to(app)
    s = new_session(store, str(app))
    monkeypatch.setenv("HOME", str(tmp_path))
    for spelling in (str(app), f"{app}/", f"{app}/sub/..", f"{tmp_path}/link", "~/app"):
        found = store.find_workspace(spelling)
        assert found is not None and found.id == s.workspace_id, spelling
    # A session created through a symlink (as given): found as given, too.
    linked = new_session(store, f"{tmp_path}/link")
    assert store.find_workspace(f"{tmp_path}/link/").id == linked.workspace_id  # type: ignore[union-attr]

    def count() -> int:
        with store.recorder.read() as cur:
            cur.execute("SELECT count(*) FROM workspaces")
            return int(cur.fetchone()[0])

    before = count()
    for nothing in (f"{tmp_path}/elsewhere", "relative/app", "", "   ", "a\x00b", "\ud800", 42):
        assert store.find_workspace(nothing) is None, nothing  # type: ignore[arg-type]
    assert count() == before


def test_get_and_list_sessions(store: EventStore) -> None:
    a = new_session(store)
    b = new_session(store, "/other")
    with pytest.raises(SessionNotFound):
        store.get_session("sess_nope")
    assert store.get_session(a.id) == a
    assert {s.id for s in store.list_sessions()} == {a.id, b.id}
    assert [s.id for s in store.list_sessions(workspace_id=b.workspace_id)] == [b.id]
    store.end_session(a.id)
    assert [s.id for s in store.list_sessions(status="ended")] == [a.id]
    assert len(store.list_sessions(limit=1)) == 1


# -- append ------------------------------------------------------------------


def test_append_chains_from_head_with_sequence_and_depth(store: EventStore) -> None:
    s = new_session(store)
    e1 = user(store, s.id, "one")
    e2 = store.append(
        s.id, "message.assistant",
        {"content": [{"type": "text", "text": "two"}], "turn": 1,
         "tokenUsage": {"inputTokens": 10, "outputTokens": 5, "cacheReadTokens": 2}},
    )  # fmt: skip
    assert (e1.parent_id, e1.sequence, e1.depth) == (s.root_event_id, 1, 1)
    assert (e2.parent_id, e2.sequence, e2.depth) == (e1.id, 2, 2)
    assert store.get_event(e2.id) == e2
    got = store.get_session(s.id)
    assert got.head_event_id == e2.id
    assert (got.event_count, got.message_count, got.turn_count) == (3, 2, 1)
    assert (got.input_tokens, got.output_tokens, got.cache_read_tokens) == (10, 5, 2)


def test_session_cost_adds_up_the_turns_costs(store: EventStore) -> None:
    s = new_session(store)
    store.append(s.id, "stream.turn_end", {"turn": 1, "cost": 0.25})
    store.append(s.id, "stream.turn_end", {"turn": 2, "cost": None})  # price unknown
    store.append_many(s.id, [{"type": "stream.turn_end", "payload": {"turn": 3, "cost": 0.5}}])
    assert store.get_session(s.id).cost == pytest.approx(0.75)


def test_append_accepts_snake_case_and_stores_camel_case(store: EventStore) -> None:
    s = new_session(store)
    e = store.append(
        s.id, "tool.call", {"tool_call_id": "t1", "name": "bash", "arguments": {"cmd": "ls"}}
    )
    assert e.payload == {"toolCallId": "t1", "name": "bash", "arguments": {"cmd": "ls"}}
    assert store.get_event(e.id) == e


def test_explicit_parent_must_be_on_the_tree(store: EventStore) -> None:
    s = new_session(store)
    other = new_session(store)
    e1 = user(store, s.id, "one")
    user(store, s.id, "two")
    branch = user(store, s.id, "branch", parent_id=e1.id)
    assert branch.parent_id == e1.id and branch.depth == 2 and branch.sequence == 3
    assert store.get_session(s.id).head_event_id == branch.id
    before = snapshot(store)
    with pytest.raises(InvalidParent):
        user(store, s.id, "x", parent_id=other.root_event_id)
    with pytest.raises(InvalidParent):
        user(store, s.id, "x", parent_id="evt_missing")
    assert snapshot(store) == before


def test_fork_may_append_onto_inherited_history(store: EventStore) -> None:
    s = new_session(store)
    e1 = user(store, s.id, "one")
    e2 = user(store, s.id, "two")
    f = store.fork(e2.id)
    # The fork's tree holds the ancestors of its root: e1 is a valid parent.
    e = user(store, f.session.id, "fork branch", parent_id=e1.id)
    assert e.session_id == f.session.id and e.parent_id == e1.id and e.sequence == 1
    assert [a.id for a in store.get_ancestors(e.id)] == [s.root_event_id, e1.id, e.id]
    # ...but not an event of the source that is not an ancestor of the fork root.
    later = user(store, s.id, "later")
    with pytest.raises(InvalidParent):
        user(store, f.session.id, "x", parent_id=later.id)


def test_expected_head_is_compare_and_append(store: EventStore) -> None:
    s = new_session(store)
    e1 = user(store, s.id, "one", expected_head=s.root_event_id)
    before = snapshot(store)
    with pytest.raises(ConcurrencyConflict) as info:
        user(store, s.id, "stale", expected_head=s.root_event_id)
    assert info.value.expected == s.root_event_id and info.value.actual == e1.id
    with pytest.raises(ConcurrencyConflict):
        store.append_many(
            s.id, [{"type": "message.user", "payload": {"content": "x"}}],
            expected_head=s.root_event_id,
        )  # fmt: skip
    assert snapshot(store) == before


def test_client_event_id_makes_retries_idempotent(store: EventStore) -> None:
    s = new_session(store)
    first = user(store, s.id, "hello", event_id="evt_client-1")
    again = user(store, s.id, "hello", event_id="evt_client-1")
    assert again == first
    assert store.get_session(s.id).event_count == 2
    before = snapshot(store)
    with pytest.raises(EventIdConflict):
        user(store, s.id, "different", event_id="evt_client-1")
    with pytest.raises(EventIdConflict):
        store.append(s.id, "message.system", {"content": "hello"}, event_id="evt_client-1")
    other = new_session(store, "/x")
    with pytest.raises(EventIdConflict):
        user(store, other.id, "hello", event_id="evt_client-1")
    for bad in ["client-1", "evt_", "evt_" + "a" * 61, "evt_a b", "evt_ä"]:
        with pytest.raises(InvalidPayload):
            user(store, s.id, "x", event_id=bad)
    assert snapshot(store)[0] == sorted(
        before[0] + [(e.id, e.session_id, e.sequence, e.type) for e in store.get_events(other.id)]
    )
    # A retry that arrives after the session ended still gets its stored event.
    store.end_session(s.id)
    assert user(store, s.id, "hello", event_id="evt_client-1") == first


def test_payload_validation_and_unknown_types(store: EventStore) -> None:
    s = new_session(store)
    before = snapshot(store)
    with pytest.raises(UnknownEventType):
        store.append(s.id, "made.up", {})
    with pytest.raises(InvalidPayload):
        store.append(s.id, "tool.call", {"name": "bash"})  # no toolCallId, no arguments
    with pytest.raises(InvalidPayload):
        store.append(s.id, "message.user", ["not", "an", "object"])  # type: ignore[arg-type]
    with pytest.raises(InvalidPayload):
        store.append(s.id, "config.reasoning_level", {"newLevel": "extreme"})
    for store_only in ("session.start", "session.fork", "session.end"):
        with pytest.raises(InvalidPayload):
            store.append(s.id, store_only, {"reason": "x"})
    with pytest.raises(SessionNotFound):
        user(store, "sess_missing", "x")
    assert snapshot(store) == before
    register_event_type("custom.thing")
    e = store.append(s.id, "custom.thing", {"anything": [1, 2]})
    assert e.payload == {"anything": [1, 2]}


def test_every_design_event_type_is_registered(store: EventStore) -> None:
    from tron_events.payloads import registered_event_types

    design = [
        "session.start",
        "session.end",
        "session.fork",
        "message.user",
        "message.assistant",
        "message.system",
        "message.deleted",
        "tool.call",
        "tool.result",
        "stream.turn_start",
        "stream.turn_end",
        "config.model_switch",
        "config.reasoning_level",
        "config.prompt_update",
        "compact.boundary",
        "compact.summary",
        "context.cleared",
        "error.agent",
        "error.tool",
        "error.provider",
        "turn.failed",
        "notification.interrupted",
        "notification.subagent_result",
        "metadata.update",
        "metadata.tag",
        "file.read",
        "file.write",
        "file.edit",
        "todo.write",
        "hook.triggered",
        "hook.completed",
        "subagent.spawned",
        "subagent.status_update",
        "subagent.completed",
        "subagent.failed",
        "worktree.acquired",
        "worktree.commit",
        "worktree.released",
        "worktree.merged",
        "rules.loaded",
        "skill.added",
        "skill.removed",
    ]
    assert set(design) <= set(registered_event_types())


def test_append_many_is_one_chain_all_or_nothing(store: EventStore) -> None:
    from tron_events import EventDraft

    s = new_session(store)
    events = store.append_many(
        s.id,
        [
            {"type": "message.user", "payload": {"content": "a", "turn": 1}},
            EventDraft(
                "message.assistant", {"content": [{"type": "text", "text": "b"}], "turn": 1}
            ),
            {"type": "message.user", "payload": {"content": "c", "turn": 2}, "event_id": "evt_c"},
        ],
    )
    assert [e.sequence for e in events] == [1, 2, 3]
    assert events[0].parent_id == s.root_event_id
    assert events[1].parent_id == events[0].id and events[2].parent_id == events[1].id
    assert events[2].id == "evt_c"
    assert store.get_session(s.id).head_event_id == "evt_c"
    before = snapshot(store)
    with pytest.raises(InvalidPayload):
        store.append_many(
            s.id,
            [
                {"type": "message.user", "payload": {"content": "ok"}},
                {"type": "tool.call", "payload": {"bad": True}},
            ],
        )
    with pytest.raises(InvalidPayload):
        store.append_many(s.id, [{"payload": {}}])
    assert snapshot(store) == before
    assert store.append_many(s.id, []) == []


def test_append_many_retry_with_ids_returns_stored(store: EventStore) -> None:
    s = new_session(store)
    drafts = [
        {"type": "message.user", "payload": {"content": "a"}, "event_id": "evt_b1"},
        {"type": "message.user", "payload": {"content": "b"}, "event_id": "evt_b2"},
    ]
    first = store.append_many(s.id, drafts)
    assert store.append_many(s.id, drafts) == first
    assert store.get_session(s.id).event_count == 3
    with pytest.raises(EventIdConflict):
        store.append_many(
            s.id,
            [drafts[0], {"type": "message.user", "payload": {"content": "new"},
                         "event_id": "evt_b3"}],
        )  # fmt: skip


def test_ended_session_takes_no_appends_or_rewinds(store: EventStore) -> None:
    s = new_session(store)
    e1 = user(store, s.id, "one")
    end = store.end_session(s.id, reason="done", summary="bye")
    assert end.type == "session.end" and end.payload == {"reason": "done", "summary": "bye"}
    assert end.parent_id == e1.id
    got = store.get_session(s.id)
    assert got.status == "ended" and got.ended_at is not None and got.head_event_id == end.id
    before = snapshot(store)
    with pytest.raises(SessionNotActive):
        user(store, s.id, "more")
    with pytest.raises(SessionNotActive):
        store.rewind(s.id, e1.id)
    with pytest.raises(SessionNotActive):
        store.end_session(s.id)
    assert snapshot(store) == before
    # ...but it can still be read, searched and forked.
    assert store.search("one", session_id=s.id)
    f = store.fork(e1.id)
    assert f.session.status == "active"


# -- ancestors, children ---------------------------------------------------


def test_ancestors_root_first_across_forks(store: EventStore) -> None:
    s = new_session(store)
    e1 = user(store, s.id, "one")
    e2 = user(store, s.id, "two")
    f = store.fork(e2.id, name="fork")
    f1 = user(store, f.session.id, "f1")
    ff = store.fork(f1.id)
    g1 = user(store, ff.session.id, "g1")
    ids = [e.id for e in store.get_ancestors(g1.id)]
    assert ids == [s.root_event_id, e1.id, e2.id, f.fork_event.id, f1.id, ff.fork_event.id, g1.id]
    assert [e.depth for e in store.get_ancestors(g1.id)] == list(range(7))
    assert [e.id for e in store.get_ancestors(s.root_event_id)] == [s.root_event_id]
    with pytest.raises(EventNotFound):
        store.get_ancestors("evt_missing")


def test_children(store: EventStore) -> None:
    s = new_session(store)
    e1 = user(store, s.id, "one")
    a = user(store, s.id, "a")
    b = user(store, s.id, "b", parent_id=e1.id)
    f = store.fork(e1.id)
    assert [c.id for c in store.get_children(e1.id)] == [a.id, b.id, f.fork_event.id]
    assert store.get_children(b.id) == []


def test_get_events_filters(store: EventStore) -> None:
    s = new_session(store)
    user(store, s.id, "one")
    store.append(s.id, "tool.call", {"toolCallId": "t", "name": "n", "arguments": {}})
    user(store, s.id, "two")
    assert [e.sequence for e in store.get_events(s.id)] == [0, 1, 2, 3]
    assert [e.sequence for e in store.get_events(s.id, after_sequence=1)] == [2, 3]
    assert [e.type for e in store.get_events(s.id, types=["tool.call"])] == ["tool.call"]
    assert len(store.get_events(s.id, limit=2)) == 2
    with pytest.raises(SessionNotFound):
        store.get_events("sess_missing")


# -- fork and rewind -------------------------------------------------------


def test_fork_is_copy_on_write(store: EventStore) -> None:
    s = new_session(store, model="m1")
    e1 = user(store, s.id, "one")
    store.append(s.id, "config.model_switch", {"previousModel": "m1", "newModel": "m2"})
    e3 = user(store, s.id, "three")
    f = store.fork(e3.id, name="try")
    fe = f.fork_event
    assert (fe.type, fe.parent_id, fe.sequence, fe.depth) == (
        "session.fork",
        e3.id,
        0,
        e3.depth + 1,
    )
    assert fe.payload == {"sourceSessionId": s.id, "sourceEventId": e3.id, "name": "try"}
    fs = f.session
    assert (fs.root_event_id, fs.head_event_id) == (fe.id, fe.id)
    assert (fs.parent_session_id, fs.fork_from_event_id) == (s.id, e3.id)
    assert (fs.workspace_id, fs.working_directory, fs.model) == (s.workspace_id, "/work/app", "m2")
    assert store.get_events(fs.id) == [fe]  # nothing copied
    assert store.fork(e1.id).session.model == "m1"  # the model at that point
    g = store.fork(e1.id, model="m9")
    assert g.session.model == "m9" and g.fork_event.payload["model"] == "m9"
    with pytest.raises(EventNotFound):
        store.fork("evt_missing")


def test_rewind_moves_head_back_and_keeps_events(store: EventStore) -> None:
    s = new_session(store)
    e1 = user(store, s.id, "one")
    e2 = user(store, s.id, "orphaned words")
    got = store.rewind(s.id, e1.id)
    assert got.head_event_id == e1.id
    e3 = user(store, s.id, "new branch")
    assert e3.parent_id == e1.id and e3.sequence == 3 and e3.depth == 2
    assert store.get_event(e2.id) == e2
    assert [h.event_id for h in store.search("orphaned")] == [e2.id]
    assert store.rewind(s.id, e3.id).head_event_id == e3.id  # to the head itself
    other = new_session(store, "/x")
    before = snapshot(store)
    with pytest.raises(InvalidRewind):
        store.rewind(s.id, e2.id)  # on another branch
    with pytest.raises(InvalidRewind):
        store.rewind(s.id, "evt_missing")
    with pytest.raises(InvalidRewind):
        store.rewind(s.id, other.root_event_id)
    with pytest.raises(SessionNotFound):
        store.rewind("sess_missing", e1.id)
    assert snapshot(store) == before


def test_fork_rewinds_into_inherited_history(store: EventStore) -> None:
    s = new_session(store)
    e1 = user(store, s.id, "one")
    e2 = user(store, s.id, "two")
    f = store.fork(e2.id)
    store.rewind(f.session.id, e1.id)
    e = user(store, f.session.id, "after inherited rewind")
    assert (e.session_id, e.parent_id, e.sequence) == (f.session.id, e1.id, 1)
    assert [a.id for a in store.get_ancestors(e.id)] == [s.root_event_id, e1.id, e.id]
    assert store.get_session(s.id).head_event_id == e2.id  # the source is untouched


# -- delete ------------------------------------------------------------------


def test_delete_session_refuses_with_forks_unless_cascade(store: EventStore) -> None:
    s = new_session(store)
    e1 = user(store, s.id, "needle one")
    f = store.fork(e1.id)
    user(store, f.session.id, "needle fork")
    ff = store.fork(store.get_session(f.session.id).head_event_id)
    keep = new_session(store, "/keep")
    user(store, keep.id, "needle keep")
    before = snapshot(store)
    with pytest.raises(SessionHasForks) as info:
        store.delete_session(s.id)
    assert info.value.fork_ids == [f.session.id]
    assert snapshot(store) == before
    store.delete_session(ff.session.id)  # a leaf fork goes alone
    with pytest.raises(SessionNotFound):
        store.get_session(ff.session.id)
    store.delete_session(s.id, cascade=True)
    for sid in (s.id, f.session.id):
        with pytest.raises(SessionNotFound):
            store.get_session(sid)
    assert store.get_event(e1.id) is None
    assert [h.session_id for h in store.search("needle")] == [keep.id]
    with pytest.raises(SessionNotFound):
        store.delete_session(s.id)


# -- get_since ---------------------------------------------------------------


def test_get_since_session_pages(store: EventStore) -> None:
    s = new_session(store)
    made = [user(store, s.id, f"m{i}") for i in range(5)]
    page = store.get_since(session_id=s.id, limit=2)
    assert [e.sequence for e in page.events] == [0, 1] and page.has_more
    seen = list(page.events)
    while page.has_more:
        page = store.get_since(session_id=s.id, after_event_id=page.next_cursor, limit=2)
        seen.extend(page.events)
    assert [e.id for e in seen] == [s.root_event_id] + [m.id for m in made]
    assert page.next_cursor == made[-1].id and not page.has_more
    by_seq = store.get_since(session_id=s.id, after_sequence=3)
    assert [e.sequence for e in by_seq.events] == [4, 5]
    empty = store.get_since(session_id=s.id, after_event_id=made[-1].id)
    assert empty.events == [] and not empty.has_more and empty.next_cursor is None


def test_get_since_workspace_feed_and_bad_cursors(store: EventStore) -> None:
    a = new_session(store, "/ws/a")
    b = new_session(store, "/ws/b")
    a2 = new_session(store, "/ws/a")
    ea = user(store, a.id, "a")
    user(store, b.id, "b")
    ea2 = user(store, a2.id, "a2")
    feed = store.get_since(workspace_id=a.workspace_id)
    assert [e.id for e in feed.events] == [a.root_event_id, a2.root_event_id, ea.id, ea2.id]
    after = store.get_since(workspace_id=a.workspace_id, after_event_id=ea.id)
    assert [e.id for e in after.events] == [ea2.id]
    everything = store.get_since(limit=1000)
    assert len(everything.events) == 6
    with pytest.raises(InvalidCursor):
        store.get_since(session_id=a.id, after_event_id="evt_unknown")
    with pytest.raises(InvalidCursor):
        store.get_since(workspace_id=a.workspace_id, after_event_id="evt_unknown")
    with pytest.raises(InvalidCursor):
        store.get_since(session_id=a.id, after_event_id=ea2.id)  # another session's event
    with pytest.raises(InvalidCursor):
        store.get_since(workspace_id=b.workspace_id, after_event_id=ea.id)
    with pytest.raises(InvalidCursor):
        store.get_since(session_id=a.id, limit=0)


# -- search ------------------------------------------------------------------


def test_search_finds_text_in_every_indexed_place(store: EventStore) -> None:
    s = new_session(store)
    store.append(s.id, "message.user", {"content": "alpha question", "turn": 1})
    store.append(
        s.id, "message.assistant",
        {"content": [
            {"type": "thinking", "thinking": "bravo thought", "signature": "sig"},
            {"type": "text", "text": "charlie answer"},
            {"type": "tool_use", "id": "t1", "name": "deltatool", "input": {"q": "echo value"}},
        ], "turn": 1},
    )  # fmt: skip
    store.append(
        s.id, "tool.call", {"toolCallId": "t1", "name": "foxtrot", "arguments": {"x": "golf"}}
    )
    result = [{"type": "text", "text": "hotel output"}]
    store.append(s.id, "tool.result", {"toolCallId": "t1", "content": result, "isError": False})
    store.append(s.id, "message.system", {"content": "india notice"})
    store.append(s.id, "compact.summary", {"summary": "juliet summary"})
    store.append(s.id, "metadata.tag", {"tag": "kilo"})
    expect = {
        "alpha": "message.user", "bravo": "message.assistant", "charlie": "message.assistant",
        "deltatool": "message.assistant", "echo": "message.assistant", "foxtrot": "tool.call",
        "golf": "tool.call", "hotel": "tool.result", "india": "message.system",
        "juliet": "compact.summary",
    }  # fmt: skip
    for word, kind in expect.items():
        hits = store.search(word)
        assert [h.type for h in hits] == [kind], word
        assert "«" in hits[0].snippet and "»" in hits[0].snippet
        assert hits[0].session_id == s.id and hits[0].workspace_id == s.workspace_id
    assert store.search("kilo") == []  # metadata is not conversation


def test_search_porter_stemming_ranking_and_filters(store: EventStore) -> None:
    a = new_session(store, "/ws/a")
    b = new_session(store, "/ws/b")
    weak = user(store, a.id, "running once among many many other unrelated words here")
    strong = user(store, a.id, "run run running runs")
    other = user(store, b.id, "runner run")
    store.append(a.id, "tool.call", {"toolCallId": "t", "name": "run", "arguments": {}})
    hits = store.search("run")
    assert hits[0].event_id == strong.id
    assert hits[0].score >= hits[-1].score
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert {h.event_id for h in hits} >= {weak.id, strong.id, other.id}
    assert {h.session_id for h in store.search("run", workspace_id=b.workspace_id)} == {b.id}
    assert {h.event_id for h in store.search("run", session_id=b.id)} == {other.id}
    assert {h.type for h in store.search("run", types=["tool.call"])} == {"tool.call"}
    assert len(store.search("run", limit=1)) == 1
    assert store.search("run", limit=0) == []


@pytest.mark.parametrize(
    "query",
    ['"', "'", "*", "-", "a -b", "NEAR(a b)", "foo:bar", "(((", ")", "AND", "OR NOT", "^x",
     "\\", "a\"b", "", "   ", "🙂", "col:*", "NOT", "{a b}", "'; DROP TABLE events; --"],
)  # fmt: skip
def test_search_any_user_string_is_safe(store: EventStore, query: str) -> None:
    s = new_session(store)
    user(store, s.id, "plain words AND operators NEAR foo bar")
    assert isinstance(store.search(query), list)
    assert store.get_session(s.id).event_count == 2


def test_search_literal_operators_and_raw_mode(store: EventStore) -> None:
    s = new_session(store)
    both = user(store, s.id, "apples and oranges")
    only = user(store, s.id, "apples alone")
    # Literal: "apples OR pears" needs all three words, nothing matches.
    assert store.search("apples OR pears") == []
    assert {h.event_id for h in store.search("apples oranges")} == {both.id}
    assert {h.event_id for h in store.search("apples")} == {both.id, only.id}
    # raw=True speaks the backend's own syntax (FTS5 on SQLite, tsquery on PostgreSQL).
    sqlite = store.url.startswith("sqlite")
    raw = store.search("apples OR pears" if sqlite else "apples | pears", raw=True)
    assert {h.event_id for h in raw} == {both.id, only.id}
    with pytest.raises(InvalidQuery):
        store.search("apples AND (" if sqlite else "apples & (", raw=True)


def test_transient_conflicts_are_retried_then_surface(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A deadlock/serialization abort (fault-injected here) reruns the whole write."""
    from tron_events.errors import TransientConflict
    from tron_events.store import TRANSIENT_ATTEMPTS

    s = new_session(store)
    real_write = store.recorder.write
    failures = {"left": 2}

    def flaky_write():  # type: ignore[no-untyped-def]
        if failures["left"] > 0:
            failures["left"] -= 1
            raise TransientConflict("deadlock detected (injected)")
        return real_write()

    real_append_at_head = store.recorder.append_at_head

    def flaky_append_at_head(*args):  # type: ignore[no-untyped-def]
        # PostgreSQL's one-statement append (no write() transaction) fails alike.
        if failures["left"] > 0:
            failures["left"] -= 1
            raise TransientConflict("deadlock detected (injected)")
        return real_append_at_head(*args)

    real_append_after_head = store.recorder.append_after_head

    def flaky_append_after_head(*args):  # type: ignore[no-untyped-def]
        # SQLite's append to the head the store knows (its own transaction) fails alike.
        if failures["left"] > 0:
            failures["left"] -= 1
            raise TransientConflict("deadlock detected (injected)")
        return real_append_after_head(*args)

    monkeypatch.setattr(store.recorder, "write", flaky_write)
    monkeypatch.setattr(store.recorder, "append_at_head", flaky_append_at_head)
    monkeypatch.setattr(store.recorder, "append_after_head", flaky_append_after_head)
    real_append_one_after_head = store.recorder.append_one_after_head

    def flaky_append_one_after_head(*args):  # type: ignore[no-untyped-def]
        # The same for one event (EventStore.append's).
        if failures["left"] > 0:
            failures["left"] -= 1
            raise TransientConflict("deadlock detected (injected)")
        return real_append_one_after_head(*args)

    monkeypatch.setattr(store.recorder, "append_one_after_head", flaky_append_one_after_head)
    e = user(store, s.id, "retried")
    assert failures["left"] == 0
    assert [x.id for x in store.get_events(s.id)] == [s.root_event_id, e.id]
    failures["left"] = TRANSIENT_ATTEMPTS
    before = snapshot(store)
    with pytest.raises(TransientConflict):
        user(store, s.id, "gives up")
    assert snapshot(store) == before


def test_message_deleted_targets_only_messages_on_the_path(store: EventStore) -> None:
    s = new_session(store)
    u1 = user(store, s.id, "first")
    call = store.append(s.id, "tool.call", {"toolCallId": "t", "name": "n", "arguments": {}})
    result = store.append(s.id, "tool.result", {"toolCallId": "t", "content": "ok"})
    u2 = user(store, s.id, "second")
    store.rewind(s.id, u2.id)
    off_path = user(store, s.id, "off", parent_id=u1.id)
    store.rewind(s.id, u1.id)
    store.append(s.id, "message.user", {"content": "back on track", "turn": 2})
    before = snapshot(store)
    # a tool.call, the session.start, messages on other branches, nothing at all
    for target in [call.id, s.root_event_id, u2.id, off_path.id, "evt_missing"]:
        with pytest.raises(InvalidPayload):
            store.append(s.id, "message.deleted", {"targetEventId": target})
    assert snapshot(store) == before
    target = {"targetEventId": u1.id, "targetType": "message.user"}
    d1 = store.append(s.id, "message.deleted", target)
    d2 = store.append(s.id, "message.deleted", {"targetEventId": u1.id})  # twice: harmless
    assert d2.parent_id == d1.id
    assert all(u1.id not in m.event_ids for m in store.get_messages_at(d2.id))
    assert result.id not in {e.id for e in store.get_ancestors(d2.id)}
