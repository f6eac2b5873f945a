"""PostgreSQL-specific behaviour: many processes, commit order, races, migrations.

The shared store suite (test_store.py) already runs on PostgreSQL through the
``store`` fixture; this file covers what only a server with many concurrent
clients can get wrong. Worker functions live at module level so that spawned
processes can import them.
"""

from __future__ import annotations

import multiprocessing
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from sqlalchemy import create_engine, inspect, text

from tests.events._workers import append_shared, assert_linear
from tests.support import pg
from tron_events import EventIdConflict, EventStore, migrate
from tron_events._pg_conninfo import conninfo_from_url
from tron_events._postgres import MAX_INDEXED_CHARS

pytestmark = pytest.mark.postgres

PROCESSES = 8
PER_PROCESS = 40
TRON_DB = shutil.which("tron-db") or "tron-db"


@pytest.fixture
def pg_url(pg_template: str) -> Iterator[str]:
    with pg.fresh_database(template=pg_template) as url:
        yield url


@pytest.fixture
def pg_store(pg_url: str) -> Iterator[EventStore]:
    with EventStore.open(pg_url) as store:
        yield store


# -- workers (run in spawned processes) -----------------------------------


def _append_own(url: str, session_id: str, count: int) -> list[str]:
    """Append to a session only this process writes (single events and batches)."""
    out: list[str] = []
    with EventStore.open(url, upgrade=False) as store:
        for i in range(count):
            if i % 10 == 9:
                batch = [
                    {"type": "message.user", "payload": {"content": f"b{i} {k}"}} for k in range(3)
                ]
                out.extend(e.id for e in store.append_many(session_id, batch))
            else:
                out.append(store.append(session_id, "message.user", {"content": f"n{i}"}).id)
    return out


def _create_workspace(url: str, path: str, barrier: Any) -> str:
    with EventStore.open(url, upgrade=False) as store:
        barrier.wait()
        return store.get_or_create_workspace(path).id


def _append_with_id(url: str, session_id: str, event_id: str, barrier: Any) -> str:
    with EventStore.open(url, upgrade=False) as store:
        barrier.wait()
        try:
            return store.append(
                session_id, "message.user", {"content": "same"}, event_id=event_id
            ).id
        except EventIdConflict:
            return "conflict"


def _open_and_create(url: str, barrier: Any) -> str:
    barrier.wait()
    with EventStore.open(url) as store:
        return store.get_or_create_workspace("/opened").id


def _run_at_once(fn: Callable[..., Any], jobs: list[tuple[Any, ...]]) -> list[Any]:
    """Run ``fn(*job, barrier)`` in one spawned process per job; every process
    passes the barrier at the same moment (after its slow start-up), so the
    calls after it really race. Returns the results in job order."""
    ctx = multiprocessing.get_context("spawn")
    manager = ctx.Manager()
    try:
        barrier = manager.Barrier(len(jobs))
        with ctx.Pool(len(jobs)) as pool:
            return pool.starmap(fn, [(*job, barrier) for job in jobs])
    finally:
        manager.shutdown()


# -- helpers ----------------------------------------------------------------


# -- many processes -----------------------------------------------------------


def test_eight_processes_share_one_session_with_expected_head(pg_store: EventStore) -> None:
    s = pg_store.create_session(working_directory="/p", model="m", provider="p")
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(PROCESSES) as pool:
        results = pool.starmap(
            append_shared, [(pg_store.url, s.id, PER_PROCESS, w) for w in range(PROCESSES)]
        )
    acknowledged = [eid for ids, _ in results for eid in ids]
    assert len(acknowledged) == len(set(acknowledged)) == PROCESSES * PER_PROCESS
    chain = assert_linear(pg_store, s.id)
    assert sorted(chain[1:]) == sorted(acknowledged)
    # Each worker's own events are in its order along the chain.
    for ids, _ in results:
        positions = [chain.index(eid) for eid in ids]
        assert positions == sorted(positions)


def test_eight_processes_on_separate_sessions_and_a_feed_that_never_skips(
    pg_store: EventStore,
) -> None:
    """Writers on different sessions while a reader follows the global position
    feed: the reader sees every event exactly once, in position order, even
    though transactions commit concurrently."""
    sessions = [
        pg_store.create_session(working_directory=f"/p{i}", model="m", provider="p")
        for i in range(PROCESSES)
    ]
    seen: list[int] = []
    seen_ids: list[str] = []
    stop = threading.Event()
    cursor = pg_store.get_since(limit=1_000).next_cursor

    def follow() -> None:
        nonlocal cursor
        while True:
            done = stop.is_set()
            page = pg_store.get_since(after_event_id=cursor, limit=50)
            seen.extend(e.position for e in page.events)
            seen_ids.extend(e.id for e in page.events)
            if page.next_cursor is not None:
                cursor = page.next_cursor
            if done and not page.has_more:
                return

    reader = threading.Thread(target=follow)
    reader.start()
    ctx = multiprocessing.get_context("spawn")
    try:
        with ctx.Pool(PROCESSES) as pool:
            results = pool.starmap(
                _append_own, [(pg_store.url, s.id, PER_PROCESS) for s in sessions]
            )
    finally:
        stop.set()
        reader.join(timeout=120)
    for s, acknowledged in zip(sessions, results, strict=True):
        assert assert_linear(pg_store, s.id)[1:] == acknowledged
    written = {eid for ids in results for eid in ids}
    assert len(seen_ids) == len(set(seen_ids)), "the feed repeated an event"
    assert set(seen_ids) == written, "the feed skipped an event"
    assert seen == sorted(seen)
    feed = pg_store.get_since(limit=100_000).events
    assert len(feed) == len({e.id for e in feed}) == len(written) + PROCESSES


def test_concurrent_workspace_creators_get_one_workspace(pg_store: EventStore) -> None:
    ids = _run_at_once(_create_workspace, [(pg_store.url, "/same/place")] * PROCESSES)
    assert len(set(ids)) == 1
    assert pg_store.get_or_create_workspace("/same/place").id == ids[0]


def test_racing_client_event_ids(pg_store: EventStore) -> None:
    """Several processes append with one client event id at once: exactly one
    event is stored; the others get it back (a retry) or an EventIdConflict,
    never a database error."""
    s = pg_store.create_session(working_directory="/r", model="m", provider="p")
    other = pg_store.create_session(working_directory="/r", model="m", provider="p")
    jobs = [(pg_store.url, s.id if i % 2 else other.id, "evt_client-1") for i in range(8)]
    outcomes = _run_at_once(_append_with_id, jobs)
    stored = pg_store.get_event("evt_client-1")
    assert stored is not None
    assert set(outcomes) <= {"evt_client-1", "conflict"}
    assert "conflict" in outcomes  # the other session's writers must be refused
    total = len(pg_store.get_events(s.id)) + len(pg_store.get_events(other.id))
    assert total == 3  # two roots and the one event
    assert_linear(pg_store, stored.session_id)


# -- backend details ------------------------------------------------------------


def test_text_postgres_cannot_hold_is_handled(pg_store: EventStore) -> None:
    s = pg_store.create_session(working_directory="/n", model="m", provider="p")
    e = pg_store.append(s.id, "message.user", {"content": "nul\x00inside words"})
    assert pg_store.get_event(e.id) == e  # JSON escapes it in the payload
    assert [h.event_id for h in pg_store.search("inside")] == [e.id]
    assert pg_store.search("\x00") == []
    assert pg_store.search("inside\x00") != []
    # Huge tool arguments are stored whole; only the first part is indexed.
    big = {"blob": "filler " * (MAX_INDEXED_CHARS // 7 + 10) + "needleword"}
    call = pg_store.append(s.id, "tool.call", {"toolCallId": "t", "name": "w", "arguments": big})
    assert pg_store.get_event(call.id) == call
    assert [h.event_id for h in pg_store.search("filler")] == [call.id]


def test_conninfo_from_url() -> None:
    info = conninfo_from_url("postgresql+psycopg://u:p%40ss@db.example:6543/tron?sslmode=require")
    parsed = psycopg.conninfo.conninfo_to_dict(info)
    assert parsed["host"] == "db.example" and parsed["port"] == "6543"
    assert parsed["user"] == "u" and parsed["password"] == "p@ss"
    assert parsed["dbname"] == "tron" and parsed["sslmode"] == "require"


# -- migrations -------------------------------------------------------------------


def _tron_db(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TRON_DB, *args], capture_output=True, text=True, timeout=120)


def _pg_objects(url: str) -> tuple[set[str], set[str]]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            tables = set(inspect(conn).get_table_names())
            indexes = {
                row[0]
                for row in conn.execute(
                    text("SELECT indexname FROM pg_indexes WHERE schemaname = 'public'")
                )
            }
        return tables, indexes
    finally:
        engine.dispose()


def test_upgrade_downgrade_with_data_and_tron_db_check(pg_template: str) -> None:
    with pg.fresh_database() as url:
        up = _tron_db("upgrade", "--database-url", url)
        assert up.returncode == 0, up.stderr
        tables, indexes = _pg_objects(url)
        assert {"events", "sessions", "workspaces", "events_search"} <= tables
        assert "ix_events_search_tsv" in indexes
        check = _tron_db("check", "--database-url", url)
        assert check.returncode == 0 and check.stdout.startswith("ok"), check.stdout

        with EventStore.open(url) as store:
            s = store.create_session(working_directory="/m", model="m", provider="p")
            store.append(s.id, "message.user", {"content": "migration survivor words"})
            fork = store.fork(store.get_session(s.id).head_event_id)
            store.append(fork.session.id, "message.user", {"content": "forked words"})
        down = _tron_db("downgrade", "base", "--yes", "--database-url", url)
        assert down.returncode == 0, down.stderr
        tables, _ = _pg_objects(url)
        assert not tables & {"events", "sessions", "workspaces", "events_search"}
        assert migrate.current_revision(url) is None
        failing = _tron_db("check", "--database-url", url)
        assert failing.returncode == 1 and "tron-db upgrade" in failing.stdout

        assert _tron_db("upgrade", "--database-url", url).returncode == 0
        with EventStore.open(url) as store:
            assert store.list_sessions() == []
            s = store.create_session(working_directory="/m", model="m", provider="p")
            e = store.append(s.id, "message.user", {"content": "survivor again"})
            assert [h.event_id for h in store.search("survivor")] == [e.id]
        check = _tron_db("check", "--database-url", url)
        assert check.returncode == 0 and check.stdout.startswith("ok"), check.stdout
        current = _tron_db("current", "--database-url", url)
        assert current.stdout.strip().endswith("(head)")


def test_concurrent_openers_migrate_once(pg_template: str) -> None:
    """Several processes opening an empty database at once: one migrates, the
    others wait on the migration lock and find it at head."""
    with pg.fresh_database() as url:
        ids = _run_at_once(_open_and_create, [(url,)] * 4)
        assert len(set(ids)) == 1
        assert migrate.check(url).ok


# -- the one-statement append ---------------------------------------------


def _rows(store: EventStore, session_id: str) -> tuple[Any, list[Any]]:
    """The session row and its events and search rows, without ids and times."""
    with store.recorder.read() as cur:
        cur.execute(
            "SELECT status, event_count, message_count, turn_count, input_tokens, "
            "output_tokens, cache_read_tokens, cache_creation_tokens, "
            "head_event_id = (SELECT id FROM events WHERE session_id = %s "
            "ORDER BY sequence DESC LIMIT 1) FROM sessions WHERE id = %s",
            (session_id, session_id),
        )
        session = cur.fetchone()
        cur.execute(
            "SELECT e.sequence, e.depth, e.type, e.payload, "
            "p.sequence, e.timestamp = s.last_activity_at OR e.sequence < s.event_count - 1, "
            "x.text FROM events e JOIN sessions s ON s.id = e.session_id "
            "LEFT JOIN events p ON p.id = e.parent_id "
            "LEFT JOIN events_search x ON x.position = e.position "
            "WHERE e.session_id = %s ORDER BY e.sequence",
            (session_id,),
        )
        return session, cur.fetchall()


def test_the_one_statement_append_writes_what_the_general_path_writes(
    pg_store: EventStore,
) -> None:
    appends: list[tuple[str, dict[str, Any]]] = [
        ("message.user", {"content": "hello there", "turn": 1}),
        (
            "message.assistant",
            {
                "content": [{"type": "text", "text": "hi"}],
                "turn": 1,
                "tokenUsage": {"inputTokens": 7, "outputTokens": 3, "cacheReadTokens": 2},
            },
        ),
        ("tool.call", {"toolCallId": "t1", "name": "Bash", "arguments": {"cmd": "ls"}}),
        ("config.reasoning_level", {"newLevel": "high"}),
        ("message.user", {"content": "again \x00 with a NUL", "turn": 3}),
    ]
    fast = pg_store.create_session(working_directory="/w", model="m", provider="p")
    general = pg_store.create_session(working_directory="/w", model="m", provider="p")
    fast_events = [pg_store.append(fast.id, t, p) for t, p in appends]
    pg_store.recorder.has_append_at_head = False
    try:
        general_events = [pg_store.append(general.id, t, p) for t, p in appends]
    finally:
        pg_store.recorder.has_append_at_head = True
    assert _rows(pg_store, fast.id) == _rows(pg_store, general.id)
    for a, b in zip(fast_events, general_events, strict=True):
        assert (a.sequence, a.depth, a.type, a.payload) == (b.sequence, b.depth, b.type, b.payload)
        assert pg_store.get_event(a.id) == a
    assert [e.parent_id for e in fast_events[1:]] == [e.id for e in fast_events[:-1]]
    assert pg_store.get_state_at_head(fast.id).token_usage.input_tokens == 7


def test_appends_survive_dead_pooled_connections(pg_store: EventStore, pg_url: str) -> None:
    """A server-side disconnect of idle pooled connections: the one-statement
    append learns from its own event id whether it committed, and never
    appends twice."""
    s = pg_store.create_session(working_directory="/w", model="m", provider="p")
    pg_store.append(s.id, "message.user", {"content": "before"})
    dbname = pg_url.rsplit("/", 1)[1]
    with psycopg.connect(pg.ADMIN_DSN, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (dbname,),
        )
    after = pg_store.append(s.id, "message.user", {"content": "after"})
    events = pg_store.get_events(s.id)
    assert [e.payload.get("content") for e in events[1:]] == ["before", "after"]
    assert events[-1] == after
