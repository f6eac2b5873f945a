"""AsyncEventStore, and live subscriptions on each backend."""

from __future__ import annotations

import itertools
import os
import sys

import anyio
import orjson
import pytest

from tron_events import AsyncEventStore, EventStore, InvalidCursor, SessionNotFound
from tron_events.models import Event

pytestmark = pytest.mark.anyio


async def take(it: object, n: int, timeout: float = 20.0) -> list[Event]:
    out: list[Event] = []
    with anyio.fail_after(timeout):
        async for e in it:  # type: ignore[attr-defined]
            out.append(e)
            if len(out) == n:
                break
    return out


async def test_async_methods_mirror_the_store(store: EventStore) -> None:
    a = AsyncEventStore(store)
    s = await a.create_session(working_directory="/a", model="m", provider="p")
    e = await a.append(s.id, "message.user", {"content": "async words", "turn": 1})
    [e2] = await a.append_many(s.id, [{"type": "message.user", "payload": {"content": "b"}}])
    assert (await a.get_session(s.id)).head_event_id == e2.id
    assert [x.id for x in await a.get_ancestors(e2.id)] == [s.root_event_id, e.id, e2.id]
    assert [h.event_id for h in await a.search("async")] == [e.id]
    f = await a.fork(e.id)
    assert (await a.rewind(s.id, e.id)).head_event_id == e.id
    assert (await a.get_children(e.id))[0].id in {e2.id, f.fork_event.id}
    page = await a.get_since(session_id=s.id)
    assert [x.sequence for x in page.events] == [0, 1, 2]
    await a.end_session(f.session.id)
    await a.delete_session(s.id, cascade=True)
    with pytest.raises(SessionNotFound):
        await a.get_session(s.id)


async def test_append_many_and_state_is_the_append_then_the_state(store: EventStore) -> None:
    a = AsyncEventStore(store)
    s = await a.create_session(working_directory="/a", model="m", provider="p")
    await a.get_state_at_head(s.id)  # a live projection to go on from
    drafts = [{"type": "message.user", "payload": {"content": "hi", "turn": 1}},
              {"type": "stream.turn_start", "payload": {"turn": 1}}]  # fmt: skip
    events, state = await a.append_many_and_state(s.id, drafts, expected_head=s.root_event_id)
    assert [e.type for e in events] == ["message.user", "stream.turn_start"]
    assert state.head_event_id == events[-1].id
    assert state == await a.get_state_at_head(s.id)
    assert [m.role for m in state.messages] == ["user"]


async def test_session_and_head_and_session_and_state_read_together(store: EventStore) -> None:
    a = AsyncEventStore(store)
    s = await a.create_session(working_directory="/a", model="m", provider="p")
    session, head = await a.get_session_and_head(s.id)
    assert (session, head) == (s, await a.get_event(s.root_event_id))
    reply = await a.append(s.id, "message.user", {"content": "hi", "turn": 1})
    session, head = await a.get_session_and_head(s.id)
    assert session == await a.get_session(s.id)
    assert head == reply and session.head_event_id == reply.id
    session, state = await a.get_session_and_state(s.id)
    assert session.head_event_id == state.head_event_id == reply.id
    assert state == await a.get_state_at_head(s.id)
    session, head, state = await a.get_session_head_and_state(s.id)
    assert session == await a.get_session(s.id) and head == reply
    assert state == await a.get_state_at_head(s.id)
    with pytest.raises(SessionNotFound):
        await a.get_session_head_and_state("sess_missing")
    with pytest.raises(SessionNotFound):
        await a.get_session_and_head("sess_missing")
    with pytest.raises(SessionNotFound):
        await a.get_session_and_state("sess_missing")


async def test_concurrent_async_writers_serialize(store: EventStore) -> None:
    a = AsyncEventStore(store)
    s = await a.create_session(working_directory="/a", model="m", provider="p")

    async def writer(k: int) -> None:
        for i in range(20):
            await a.append(s.id, "message.user", {"content": f"{k}-{i}"})

    async with anyio.create_task_group() as tg:
        for k in range(5):
            tg.start_soon(writer, k)
    events = await a.get_events(s.id)
    assert [e.sequence for e in events] == list(range(101))
    assert all(b.parent_id == a_.id for a_, b in itertools.pairwise(events))


async def test_subscribe_catches_up_then_goes_live(store: EventStore) -> None:
    a = AsyncEventStore(store)
    s = await a.create_session(working_directory="/a", model="m", provider="p")
    old = [await a.append(s.id, "message.user", {"content": f"old {i}"}) for i in range(3)]
    it = a.subscribe(session_id=s.id, after=old[0].id)
    got = await take(it, 2)
    assert [e.id for e in got] == [o.id for o in old[1:]]
    new = [await a.append(s.id, "message.user", {"content": f"new {i}"}) for i in range(3)]
    got = await take(it, 3)
    assert [e.id for e in got] == [n.id for n in new]


async def test_subscribe_from_now_and_bad_cursors(store: EventStore) -> None:
    a = AsyncEventStore(store)
    s = await a.create_session(working_directory="/a", model="m", provider="p")
    other = await a.create_session(working_directory="/b", model="m", provider="p")
    await a.append(s.id, "message.user", {"content": "before"})
    it = a.subscribe(session_id=s.id)

    async def later() -> None:
        await anyio.sleep(0.05)
        await a.append(s.id, "message.user", {"content": "after"})

    async with anyio.create_task_group() as tg:
        tg.start_soon(later)
        [e] = await take(it, 1)
    assert e.payload["content"] == "after"
    with pytest.raises(InvalidCursor):
        a.subscribe(session_id=s.id, after="evt_unknown")
    with pytest.raises(InvalidCursor):
        a.subscribe(session_id=s.id, after=other.root_event_id)
    with pytest.raises(SessionNotFound):
        a.subscribe(session_id="sess_missing")


async def test_subscribe_seam_under_concurrent_writes(store: EventStore) -> None:
    """Start subscribing at a cursor while a writer keeps appending: every event
    after the cursor arrives exactly once, in order."""
    a = AsyncEventStore(store)
    s = await a.create_session(working_directory="/seam", model="m", provider="p")
    total = 150
    written: list[Event] = []

    async def writer() -> None:
        for i in range(total):
            written.append(await a.append(s.id, "message.user", {"content": f"seam {i}"}))
            if i % 10 == 0:
                await anyio.sleep(0)

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer)
        while len(written) < 20:
            await anyio.sleep(0.001)
        cursor = written[10]
        got = await take(a.subscribe(session_id=s.id, after=cursor.id), total - 11)
    assert [e.id for e in got] == [e.id for e in written[11:]]


async def test_workspace_and_global_subscriptions(store: EventStore) -> None:
    a = AsyncEventStore(store)
    s1 = await a.create_session(working_directory="/w1", model="m", provider="p")
    s2 = await a.create_session(working_directory="/w2", model="m", provider="p")
    ws_it = a.subscribe(workspace_id=s1.workspace_id)
    all_it = a.subscribe()
    e1 = await a.append(s1.id, "message.user", {"content": "one"})
    await a.append(s2.id, "message.user", {"content": "two"})
    s3 = await a.create_session(working_directory="/w1", model="m", provider="p")
    assert [e.id for e in await take(ws_it, 2)] == [e1.id, s3.root_event_id]
    got = await take(all_it, 3)
    assert [e.session_id for e in got] == [s1.id, s2.id, s3.id]
    assert [e.position for e in got] == sorted(e.position for e in got)


async def test_subscribe_sees_another_process(store: EventStore) -> None:
    a = AsyncEventStore(store)
    s = await a.create_session(working_directory="/x", model="m", provider="p")
    count = 30
    # poll_interval=120: only the cross-process listener can wake it in time.
    it = a.subscribe(session_id=s.id, after=s.root_event_id, poll_interval=120)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = await anyio.open_process(
        [sys.executable, "-m", "tests.events._feed_writer", store.url, s.id, str(count), "0.005"],
        env=env,
    )
    try:
        got = await take(it, count, timeout=30)
    finally:
        await proc.wait()
    assert proc.returncode == 0
    assert [e.sequence for e in got] == list(range(1, count + 1))
    assert len({e.id for e in got}) == count


async def test_subscribe_seam_with_another_process_writing(store: EventStore) -> None:
    """The subscriber starts at a cursor while another process keeps appending:
    it catches up from the store, then goes live, losing and repeating nothing."""
    a = AsyncEventStore(store)
    s = await a.create_session(working_directory="/seam-x", model="m", provider="p")
    count = 120
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = await anyio.open_process(
        [sys.executable, "-m", "tests.events._feed_writer", store.url, s.id, str(count), "0.002"],
        env=env,
    )
    try:
        with anyio.fail_after(30):
            while len(await a.get_events(s.id)) < 30:  # the writer is mid-stream
                await anyio.sleep(0.01)
        cursor = (await a.get_events(s.id))[10]
        it = a.subscribe(session_id=s.id, after=cursor.id, poll_interval=120)
        got = await take(it, count - cursor.sequence, timeout=30)
    finally:
        await proc.wait()
    assert proc.returncode == 0
    assert [e.sequence for e in got] == list(range(cursor.sequence + 1, count + 1))
    stored = [e.id for e in await a.get_events(s.id)]
    assert [e.id for e in got] == stored[cursor.sequence + 1 :]


async def test_subscribe_sees_this_and_another_process_writing_one_session(
    store: EventStore,
) -> None:
    """This process and another one append to the same session at once: the feed, woken
    only by signals (poll_interval=600), gets every event once, in order. (This process's
    own commits reach it from memory; the listener must still wake it for the others.)
    The writer process's start is slow on a loaded machine: 120 s to take them all, still
    well under the time-out that would wake a feed no signal woke."""
    a = AsyncEventStore(store)
    s = await a.create_session(working_directory="/mixed", model="m", provider="p")
    count = 40
    it = a.subscribe(session_id=s.id, after=s.root_event_id, poll_interval=600)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = await anyio.open_process(
        [sys.executable, "-m", "tests.events._feed_writer", store.url, s.id, str(count), "0.004"],
        env=env,
    )
    try:
        for i in range(count):
            await a.append(s.id, "message.user", {"content": f"local {i}"})
            await anyio.sleep(0.003)
        got = await take(it, 2 * count, timeout=120)
    finally:
        await proc.wait()
    assert proc.returncode == 0
    assert [e.sequence for e in got] == list(range(1, 2 * count + 1))
    assert [e.id for e in got] == [e.id for e in (await a.get_events(s.id))[1:]]


async def test_a_feed_delivers_events_as_stored(store: EventStore) -> None:
    """Events a feed takes from what this process committed are the stored ones: the
    same wire form as a read, whatever the appender does with its payload afterwards."""
    a = AsyncEventStore(store)
    s = await a.create_session(working_directory="/as-stored", model="m", provider="p")
    it = a.subscribe(session_id=s.id)
    payload: dict[str, object] = {"content": "héllo", "turn": 1}
    first = await a.append(s.id, "message.user", payload)
    payload["content"] = "changed after the append"
    drafts = [
        {"type": "stream.turn_start", "payload": {"turn": 1}},
        {"type": "stream.turn_end", "payload": {"turn": 1, "stopReason": "end_turn"}},
    ]
    more = await a.append_many(s.id, drafts, expected_head=first.id)
    got = await take(it, 3)
    stored = (await a.get_events(s.id))[1:]
    assert [e.id for e in got] == [first.id, *(e.id for e in more)]
    assert [e.to_dict() for e in got] == [e.to_dict() for e in stored]
    assert [orjson.dumps(e.to_wire()) for e in got] == [orjson.dumps(e.to_wire()) for e in stored]
    assert got[0].payload["content"] == "héllo"


async def test_writers_to_other_sessions_do_not_queue_behind_a_locked_one(
    store: EventStore, backend: str
) -> None:
    """On PostgreSQL an append waiting for one session's row lock leaves the
    async store free to append to other sessions; on SQLite (one writer lock)
    writes queue one at a time in the event loop."""
    a = AsyncEventStore(store)
    busy = await a.create_session(working_directory="/busy", model="m", provider="p")
    free = await a.create_session(working_directory="/free", model="m", provider="p")
    if backend == "sqlite":
        assert store.recorder.concurrent_writers == 1
        return
    import psycopg

    with psycopg.connect(store.recorder.conninfo) as holder:  # type: ignore[attr-defined]
        holder.execute("SELECT 1 FROM sessions WHERE id = %s FOR UPDATE", (busy.id,))
        done: list[str] = []

        async def append(session_id: str) -> None:
            await a.append(session_id, "message.user", {"content": session_id})
            done.append(session_id)

        async with anyio.create_task_group() as tg:
            tg.start_soon(append, busy.id)
            await anyio.sleep(0.2)  # the first append is now waiting for the lock
            try:
                with anyio.fail_after(10):
                    for _ in range(3):
                        await append(free.id)
                assert done == [free.id] * 3  # the locked session is still waiting
            finally:
                holder.rollback()
    assert done == [free.id] * 3 + [busy.id]
    assert (await a.get_session(busy.id)).event_count == 2


async def test_concurrent_async_writers_on_many_sessions(store: EventStore) -> None:
    """Sessions created and written at once (several writes in flight on
    PostgreSQL): every session's chain is whole and unbranched."""
    a = AsyncEventStore(store)
    sessions: list[str] = []

    async def writer(k: int) -> None:
        s = await a.create_session(working_directory="/shared", model="m", provider="p")
        sessions.append(s.id)
        for i in range(10):
            await a.append(s.id, "message.user", {"content": f"{k}-{i}"})

    async with anyio.create_task_group() as tg:
        for k in range(8):
            tg.start_soon(writer, k)
    assert len({(await a.get_session(sid)).workspace_id for sid in sessions}) == 1
    for sid in sessions:
        events = await a.get_events(sid)
        assert [e.sequence for e in events] == list(range(11))
        assert all(b.parent_id == a_.id for a_, b in itertools.pairwise(events))


def test_the_feed_memory_keeps_a_byte_budget_per_session() -> None:
    """What a session's live feed keeps of this process's commits is bounded in bytes as
    well as in events: the oldest go first, and a page that would need them reads the
    store (None); a single event over the budget is not kept at all."""
    from tron_events._recent_feed import RecentEvents

    def event(seq: int, text: str) -> Event:
        return Event(
            id=f"e{seq}", parent_id=None, session_id="s", workspace_id="w", sequence=seq,
            depth=seq, type="message.user", timestamp="t", position=seq,
            raw_payload=orjson.dumps({"content": text}).decode(),
        )  # fmt: skip

    recent = RecentEvents(per_session=64, sessions=4, session_bytes=1000)
    recent.watch("s")
    version = 0

    def bump() -> int:
        nonlocal version
        version += 1
        return version

    for seq in range(1, 6):
        recent.committed("s", [event(seq, "x" * 300)], bump)
    page = recent.page("s", 3, 10, version)  # events 4 and 5 (~620 bytes) are kept
    assert page is not None and [e.sequence for e in page.events] == [4, 5]
    assert recent.page("s", 1, 10, version) is None  # 2 was dropped for the budget
    recent.committed("s", [event(6, "y" * 2000)], bump)
    assert recent.page("s", 5, 10, version) is None  # too big to keep: the store answers
    # The budget counts what is kept now (not what was dropped): three more fit.
    for seq in range(7, 10):
        recent.committed("s", [event(seq, "z" * 300)], bump)
    page = recent.page("s", 6, 10, version)
    assert page is not None and [e.sequence for e in page.events] == [7, 8, 9]
    recent.committed("s", [event(10, "z" * 300)], bump)  # 7 goes for the budget
    assert recent.page("s", 6, 10, version) is None
    page = recent.page("s", 7, 10, version)
    assert page is not None and [e.sequence for e in page.events] == [8, 9, 10]
