"""Benchmarks of the tron-events store against peers measured in the same run.

    uv run --group bench python benchmarks/bench_store.py all          # everything
    uv run --group bench python benchmarks/bench_store.py append       # per-commit append
    uv run --group bench python benchmarks/bench_store.py batch        # append_many of 10,000
    uv run --group bench python benchmarks/bench_store.py ancestors    # get_ancestors, 10,000 chain
    uv run --group bench python benchmarks/bench_store.py search       # search over 1,000,000 events
    uv run --group bench python benchmarks/bench_store.py state        # get_state_at_head, warm + cold

Every figure is a median over several rounds; in each round every contender runs
once, in a rotated order, so the machine's noise spreads over all of them. The
headline numbers are ratios against the peers of the same run. Databases live in
a temporary directory on the same disk as benchmarks/.data/ (the 1M-event search
database is built once and cached there).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import uuid_utils

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _workload import (  # noqa: E402
    collect,
    fmt_ms,
    index_text,
    machine,
    median,
    message_stream,
    percentile,
    rotations,
    timed,
)

from tron_events import EventStore  # noqa: E402
from tron_events._recorder import EVENT_COLUMNS, event_from_row  # noqa: E402
from tron_events.models import Event  # noqa: E402

HERE = Path(__file__).resolve().parent
DATA = HERE / ".data"


def tmpdir() -> Path:
    DATA.mkdir(exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="run-", dir=DATA))


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_store(path: Path) -> tuple[EventStore, str, str]:
    """A fresh store with one session; returns (store, session_id, workspace_id)."""
    store = EventStore.open(f"sqlite:///{path}")
    s = store.create_session(working_directory="/work/project", model="m", provider="p")
    return store, s.id, s.workspace_id


def floor_connection(path: Path) -> sqlite3.Connection:
    """The bare loop's connection: the store's pragmas (WAL is a property of the file)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA busy_timeout = 10000")
    return conn


INSERT_EVENT = (
    "INSERT INTO events (id, parent_id, session_id, workspace_id, sequence, depth, type, "
    "timestamp, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
INSERT_FTS = "INSERT INTO events_fts (rowid, text) VALUES (?, ?)"
UPDATE_SESSION = (
    "UPDATE sessions SET head_event_id = ?, event_count = event_count + ?, "
    "last_activity_at = ? WHERE id = ?"
)


class FloorWriter:
    """A bare sqlite3 loop doing the store's writes: event row, FTS5 row, session row.

    It serializes the payload (orjson) and extracts the text to index, as any
    writer given a dict must, but validates nothing and reads nothing.
    """

    def __init__(self, path: Path, session_id: str, workspace_id: str, head: str) -> None:
        self.conn = floor_connection(path)
        self.session_id, self.workspace_id = session_id, workspace_id
        self.head, self.seq, self.depth = head, 1, 0

    def _write(self, cur: sqlite3.Cursor, type_: str, payload: dict[str, Any], when: str) -> None:
        eid = "evt_" + str(uuid_utils.uuid7())
        self.depth += 1
        cur.execute(
            INSERT_EVENT,
            (eid, self.head, self.session_id, self.workspace_id, self.seq, self.depth, type_,
             when, orjson.dumps(payload).decode()),
        )  # fmt: skip
        cur.execute(INSERT_FTS, (cur.lastrowid, index_text(type_, payload)))
        self.head = eid
        self.seq += 1

    def append(self, type_: str, payload: dict[str, Any]) -> None:
        cur = self.conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        when = now()
        self._write(cur, type_, payload, when)
        cur.execute(UPDATE_SESSION, (self.head, 1, when, self.session_id))
        cur.execute("COMMIT")

    def append_many(self, items: list[tuple[str, dict[str, Any]]]) -> None:
        cur = self.conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        when = now()
        for type_, payload in items:
            self._write(cur, type_, payload, when)
        cur.execute(UPDATE_SESSION, (self.head, len(items), when, self.session_id))
        cur.execute("COMMIT")


def eventsourcing_recorder(path: Path, synchronous: str | None) -> Any:
    """eventsourcing's SQLite application recorder on a fresh file (its defaults:
    WAL, and SQLite's default synchronous=FULL unless ``synchronous`` is given)."""
    from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteDatastore

    datastore = SQLiteDatastore(db_name=str(path))
    if synchronous is not None:
        pool = datastore.pool
        create = pool._create_connection

        def _create() -> Any:
            conn = create()
            conn._sqlite_conn.execute(f"PRAGMA synchronous = {synchronous}")
            return conn

        pool._create_connection = _create  # type: ignore[method-assign]
    recorder = SQLiteApplicationRecorder(datastore)
    recorder.create_table()
    return recorder


def es_stored_event(originator: uuid.UUID, version: int, type_: str, payload: Any) -> Any:
    from eventsourcing.persistence import StoredEvent

    return StoredEvent(
        originator_id=originator, originator_version=version,
        topic="tron.events:" + type_, state=orjson.dumps(payload),
    )  # fmt: skip


def ratio_line(name: str, mine: float, other: float, target: float | None, higher: bool) -> str:
    r = mine / other if higher else other / mine
    ok = "" if target is None else ("  ✅" if r >= target else "  ❌")
    t = "" if target is None else f" (target ≥ {target}×)"
    return f"  {name}: {r:.2f}×{t}{ok}"


# --- per-commit append ----------------------------------------------------------------


def bench_append(args: argparse.Namespace) -> dict[str, Any]:
    n, rounds = args.n, args.rounds
    items = message_stream(n, seed=11)
    size = median([len(orjson.dumps(p)) for _, p in items])
    work = tmpdir()
    contenders: dict[str, Callable[[Path], Callable[[], None]]] = {}

    def tron(path: Path) -> Callable[[], None]:
        store, sid, _ = new_store(path)

        def run() -> None:
            append = store.append
            for t, p in items:
                append(sid, t, p)
            store.close()

        return run

    def floor(path: Path) -> Callable[[], None]:
        store, sid, ws = new_store(path)
        head = store.get_session(sid).head_event_id
        store.close()
        w = FloorWriter(path, sid, ws, head)

        def run() -> None:
            for t, p in items:
                w.append(t, p)
            w.conn.close()

        return run

    def es(sync: str | None) -> Callable[[Path], Callable[[], None]]:
        def setup(path: Path) -> Callable[[], None]:
            rec = eventsourcing_recorder(path, sync)
            originator = uuid.uuid4()

            def run() -> None:
                insert = rec.insert_events
                for i, (t, p) in enumerate(items, 1):
                    insert([es_stored_event(originator, i, t, p)])
                rec.datastore.close()

            return run

        return setup

    contenders = {
        "tron": tron,
        "floor": floor,
        "eventsourcing": es(None),
        "eventsourcing_sync_normal": es("NORMAL"),
    }
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for r, order in rotations(list(contenders), rounds):
        for name in order:
            path = work / f"append-{name}-{r}.db"
            run = contenders[name](path)
            collect()
            times[name].append(timed(run))
    shutil.rmtree(work, ignore_errors=True)
    rate = {k: n / median(v) for k, v in times.items()}
    per_round = {
        k: median([times[k][i] / times["tron"][i] for i in range(rounds)]) for k in contenders
    }
    print(f"\n## Per-commit append: {n} events/round, {rounds} rounds, payload ~{size:.0f} B")
    for k in contenders:
        print(f"  {k:28s} {rate[k]:8,.0f} appends/s  ({median(times[k]) / n * 1e6:6.0f} µs each)")
    print(ratio_line("tron / floor", per_round["floor"], 1, 0.7, True))
    print(ratio_line("tron / eventsourcing", per_round["eventsourcing"], 1, 1.5, True))
    print(ratio_line("tron / eventsourcing (sync=NORMAL)",
                     per_round["eventsourcing_sync_normal"], 1, None, True))  # fmt: skip
    return {"rate": rate, "ratio_vs": per_round, "payload_bytes": size}


# --- batched append -------------------------------------------------------------------


def bench_batch(args: argparse.Namespace) -> dict[str, Any]:
    n, rounds = args.n, args.rounds
    items = message_stream(n, seed=12)
    work = tmpdir()

    def tron(path: Path) -> Callable[[], None]:
        store, sid, _ = new_store(path)
        drafts = [{"type": t, "payload": p} for t, p in items]

        def run() -> None:
            store.append_many(sid, drafts)
            store.close()

        return run

    def floor(path: Path) -> Callable[[], None]:
        store, sid, ws = new_store(path)
        head = store.get_session(sid).head_event_id
        store.close()
        w = FloorWriter(path, sid, ws, head)

        def run() -> None:
            w.append_many(items)
            w.conn.close()

        return run

    def es(path: Path) -> Callable[[], None]:
        rec = eventsourcing_recorder(path, None)
        originator = uuid.uuid4()

        def run() -> None:
            rec.insert_events(
                [es_stored_event(originator, i, t, p) for i, (t, p) in enumerate(items, 1)]
            )
            rec.datastore.close()

        return run

    contenders = {"tron": tron, "floor": floor, "eventsourcing": es}
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for r, order in rotations(list(contenders), rounds):
        for name in order:
            path = work / f"batch-{name}-{r}.db"
            run = contenders[name](path)
            collect()
            times[name].append(timed(run))
    shutil.rmtree(work, ignore_errors=True)
    per_round = {
        k: median([times[k][i] / times["tron"][i] for i in range(rounds)]) for k in contenders
    }
    print(f"\n## Batched append: {n} events in one call/transaction, {rounds} rounds")
    for k in contenders:
        print(f"  {k:28s} {fmt_ms(median(times[k])):>10s}  ({n / median(times[k]):8,.0f} events/s)")
    print(ratio_line("tron / floor", per_round["floor"], 1, 0.7, True))
    print(ratio_line("tron / eventsourcing (no index)", per_round["eventsourcing"], 1, None, True))
    return {"median_s": {k: median(v) for k, v in times.items()}, "ratio_vs": per_round}


# --- ancestors ------------------------------------------------------------------------

CTE_ANCESTORS = f"""
WITH RECURSIVE anc({EVENT_COLUMNS}) AS (
    SELECT {EVENT_COLUMNS} FROM events WHERE id = ?
    UNION ALL
    SELECT {", ".join("e." + c.strip() for c in EVENT_COLUMNS.split(","))}
    FROM events e JOIN anc ON e.id = anc.parent_id
)
SELECT {EVENT_COLUMNS} FROM anc
"""


def cte_ancestors(conn: sqlite3.Connection, event_id: str) -> list[Event]:
    rows = conn.execute(CTE_ANCESTORS, (event_id,)).fetchall()
    rows.reverse()
    return [event_from_row(r) for r in rows]


def build_chain_db(path: Path, n: int) -> tuple[str, str]:
    """Two sessions of ``n`` events each, written alternately in batches of 100 (so a
    session's rows are interleaved with another's, as on a busy server)."""
    store = EventStore.open(f"sqlite:///{path}")
    a = store.create_session(working_directory="/work/a", model="m", provider="p")
    b = store.create_session(working_directory="/work/b", model="m", provider="p")
    items = message_stream(n - 1, seed=13)
    for i in range(0, len(items), 100):
        chunk = [{"type": t, "payload": p} for t, p in items[i : i + 100]]
        store.append_many(a.id, chunk)
        store.append_many(b.id, chunk)
    head = store.get_session(a.id).head_event_id
    store.close()
    return a.id, head


def bench_ancestors(args: argparse.Namespace) -> dict[str, Any]:
    n, rounds = args.n, args.rounds
    work = tmpdir()
    path = work / "chain.db"
    _, head = build_chain_db(path, n)
    store = EventStore.open(f"sqlite:///{path}")
    conn = floor_connection(path)
    conn.execute("PRAGMA cache_size = -32000")  # the store's cache size
    got = store.get_ancestors(head)
    want = cte_ancestors(conn, head)
    assert [e.id for e in got] == [e.id for e in want] and len(got) == n, (len(got), len(want))
    assert got == want
    contenders: dict[str, Callable[[], Any]] = {
        "tron": lambda: store.get_ancestors(head),
        "recursive_cte": lambda: cte_ancestors(conn, head),
    }
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for fn in contenders.values():
        fn()  # warm the page cache
    for _, order in rotations(list(contenders), rounds):
        for name in order:
            collect()
            times[name].append(timed(contenders[name]))
    store.close()
    conn.close()
    shutil.rmtree(work, ignore_errors=True)
    m = {k: median(v) for k, v in times.items()}
    print(f"\n## get_ancestors of the head of a {n:,}-event chain, {rounds} rounds (warm)")
    for k in contenders:
        print(f"  {k:28s} {fmt_ms(m[k]):>10s}")
    print(ratio_line("tron speed-up over the CTE", m["tron"], m["recursive_cte"], 2.0, False))
    return {"median_s": m}


# --- entry point ----------------------------------------------------------------------


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("append")
    sp.add_argument("--n", type=int, default=2000)
    sp.add_argument("--rounds", type=int, default=7)
    sp = sub.add_parser("batch")
    sp.add_argument("--n", type=int, default=10_000)
    sp.add_argument("--rounds", type=int, default=7)
    sp = sub.add_parser("ancestors")
    sp.add_argument("--n", type=int, default=10_000)
    sp.add_argument("--rounds", type=int, default=21)
    args = p.parse_args()
    print(f"# {args.cmd} — {machine()}")
    {"append": bench_append, "batch": bench_batch, "ancestors": bench_ancestors}[args.cmd](args)


if __name__ == "__main__":
    main()
