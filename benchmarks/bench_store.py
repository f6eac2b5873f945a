"""Benchmarks of the tron-events store against peers measured in the same run.

    uv run --group bench python benchmarks/bench_store.py CMD

    all        everything, each in its own process
    append     per-commit append
    batch      append_many of 10,000 events
    ancestors  get_ancestors of the head of a 10,000-event chain
    search     search over 1,000,000 events
    state      get_state_at_head, warm and cold

Every figure is a median over several rounds; in each round every contender runs
once, in a rotated order, so the machine's noise spreads over all of them. The
headline numbers are ratios against the peers of the same run. Databases live in
a temporary directory on the same disk as benchmarks/.data/ (the 1M-event search
database is built once and cached there).
"""

from __future__ import annotations

import argparse
import json
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

from _naive import CTE_ANCESTORS
from _workload import (
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

from tron_events import EventStore
from tron_events._recorder import EVENT_COLUMNS, event_from_row
from tron_events.models import Event

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
            (
                eid,
                self.head,
                self.session_id,
                self.workspace_id,
                self.seq,
                self.depth,
                type_,
                when,
                orjson.dumps(payload).decode(),
            ),
        )
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
        originator_id=originator,
        originator_version=version,
        topic="tron.events:" + type_,
        state=orjson.dumps(payload),
    )


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

    def tron_bg_checkpoint(path: Path) -> Callable[[], None]:
        """Prototype: the store with checkpoints moved off the append path (its
        connection's wal_autocheckpoint = 0, a thread checkpointing every 20 ms)."""
        import threading

        store, sid, _ = new_store(path)
        store.recorder._connection().execute("PRAGMA wal_autocheckpoint = 0")  # type: ignore[attr-defined]
        stop = threading.Event()

        def checkpointer() -> None:
            c = sqlite3.connect(path, isolation_level=None)
            while not stop.wait(0.02):
                c.execute("PRAGMA wal_checkpoint(PASSIVE)")
            c.close()

        def run() -> None:
            t = threading.Thread(target=checkpointer, daemon=True)
            t.start()
            append = store.append
            for typ, p in items:
                append(sid, typ, p)
            stop.set()
            t.join()
            store.close()

        return run

    contenders = {
        "tron": tron,
        "floor": floor,
        "eventsourcing": es(None),
        "eventsourcing_sync_normal": es("NORMAL"),
    }
    if args.prototypes:
        contenders["proto_tron_bg_checkpoint"] = tron_bg_checkpoint
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
    print(
        ratio_line(
            "tron / eventsourcing (sync=NORMAL)",
            per_round["eventsourcing_sync_normal"],
            1,
            None,
            True,
        )
    )
    print(
        ratio_line(
            "floor / eventsourcing (the most any same-transaction indexer can reach)",
            per_round["eventsourcing"] / per_round["floor"],
            1,
            None,
            True,
        )
    )
    if "proto_tron_bg_checkpoint" in per_round:
        pr = per_round["proto_tron_bg_checkpoint"]
        print(ratio_line("prototype bg-checkpoint / floor", per_round["floor"] / pr, 1, None, True))
        print(
            ratio_line(
                "prototype bg-checkpoint / eventsourcing",
                per_round["eventsourcing"] / pr,
                1,
                None,
                True,
            )
        )
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
    from tron_events._path_cache import PathCache

    def tron_cold_cache() -> list[Event]:
        # As the first call of a new process: the path cache starts empty.
        store.recorder.path_cache = PathCache()
        return store.get_ancestors(head)

    contenders: dict[str, Callable[[], Any]] = {
        "tron": lambda: store.get_ancestors(head),
        "tron_cold_cache": tron_cold_cache,
        "recursive_cte": lambda: cte_ancestors(conn, head),
    }
    if args.prototypes:
        from prototypes import fast_path

        pconn = floor_connection(path)
        pconn.execute("PRAGMA cache_size = -32000")
        cache: dict[str, Event] = {}

        def proto(**kw: Any) -> Callable[[], list[Event]]:
            def run() -> list[Event]:
                pconn.execute("BEGIN")
                try:
                    ev = fast_path._get_event(pconn, head)
                    assert ev is not None
                    return fast_path.get_path(pconn, ev, **kw)
                finally:
                    pconn.execute("COMMIT")

            return run

        contenders["proto_narrow"] = proto()
        contenders["proto_posrange"] = proto(posrange=True)
        contenders["proto_cached"] = proto(cache=cache)
        for name in ("proto_narrow", "proto_posrange", "proto_cached"):
            assert contenders[name]() == got, name
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
    print(
        ratio_line(
            "tron (empty path cache) speed-up over the CTE",
            m["tron_cold_cache"], m["recursive_cte"], 2.0, False,
        )
    )  # fmt: skip
    for k in contenders:
        if k.startswith("proto"):
            print(
                ratio_line(
                    f"{k} (prototype) speed-up over the CTE", m[k], m["recursive_cte"], None, False
                )
            )
    return {"median_s": m}


# --- search over 1,000,000 events -----------------------------------------------------

SEARCH_DB_VERSION = 2
#: Terms injected at controlled rates (fraction of events), to query as "rare".
RARE_TERMS = {
    "kubectl": 0.009,
    "flamegraph": 0.005,
    "memoize": 0.002,
    "deadlock": 0.001,
    "segfault": 0.0005,
    "zookeeper": 0.0002,
}
#: Terms of the Zipf vocabulary found in many events ("the": nearly all).
COMMON_TERMS = ["the", "to", "error"]


def _search_events(gen: Any, rng: Any) -> tuple[str, dict[str, Any]]:
    """One event of a realistic mix: 25% user, 35% assistant, 20% tool.call, 20% tool.result."""
    from _workload import assistant_payload, user_payload

    x = rng.random()
    n = int(rng.lognormvariate(6.2, 0.6))  # ~500 characters, long tail
    extra = [w for w, f in RARE_TERMS.items() if rng.random() < f]
    if x < 0.25:
        p = user_payload(gen, 1, n)
        if extra:
            p["content"] += " " + " ".join(extra)
        return "message.user", p
    if x < 0.60:
        p = assistant_payload(gen, 1, n)
        if extra:
            p["content"][0]["text"] += " " + " ".join(extra)
        return "message.assistant", p
    if x < 0.80:
        args = {"command": gen.chars(min(n, 200)) + (" " + " ".join(extra) if extra else "")}
        return "tool.call", {
            "toolCallId": "toolu_" + gen.chars(12),
            "name": "Bash",
            "arguments": args,
        }
    text = gen.chars(n) + (" " + " ".join(extra) if extra else "")
    return "tool.result", {"toolCallId": "toolu_x", "content": text, "isError": False}


def build_search_db(path: Path, n_events: int, sessions: int, workspaces: int) -> dict[str, Any]:
    """Build the search database: schema by the store's migrations (EventStore.open),
    workspaces and sessions through the store, then events by raw SQL matching its
    schema (position assigned explicitly, payload JSON as the store writes it, the
    FTS text from ``tron_events.search_text.search_text``, exactly what append indexes)
    in transactions of ~50,000 events. Sessions are written interleaved, 50 at a time."""
    import random

    from _workload import TextGen

    from tron_events.search_text import search_text

    t0 = time.perf_counter()
    tmp = path.with_suffix(".building")
    for f in DATA.glob(tmp.name + "*"):
        f.unlink()
    store = EventStore.open(f"sqlite:///{tmp}")
    sess = [
        store.create_session(working_directory=f"/work/ws{i % workspaces}", model="m", provider="p")
        for i in range(sessions)
    ]
    store.close()
    conn = sqlite3.connect(tmp, isolation_level=None)
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("PRAGMA cache_size = -512000")
    (pos,) = conn.execute("SELECT max(position) FROM events").fetchone()
    per = n_events // sessions - 1  # events per session after its root
    gen, rng = TextGen(21), random.Random(22)
    when = now()
    group = 50
    for g in range(0, sessions, group):
        chunk = sess[g : g + group]
        heads = {s.id: (s.root_event_id, 0) for s in chunk}
        ev_rows: list[tuple[Any, ...]] = []
        fts_rows: list[tuple[int, str]] = []
        for k in range(per):
            for s in chunk:
                t, p = _search_events(gen, rng)
                pos += 1
                eid = "evt_" + str(uuid_utils.uuid7())
                parent, depth = heads[s.id]
                ev_rows.append(
                    (
                        pos,
                        eid,
                        parent,
                        s.id,
                        s.workspace_id,
                        k + 1,
                        depth + 1,
                        t,
                        when,
                        orjson.dumps(p).decode(),
                    )
                )
                text = search_text(t, p)
                if text:
                    fts_rows.append((pos, text))
                heads[s.id] = (eid, depth + 1)
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO events (position, id, parent_id, session_id, workspace_id, sequence, "
            "depth, type, timestamp, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ev_rows,
        )
        conn.executemany(INSERT_FTS, fts_rows)
        conn.executemany(
            "UPDATE sessions SET head_event_id = ?, event_count = ?, last_activity_at = ? "
            "WHERE id = ?",
            [(h, per + 1, when, sid) for sid, (h, _) in heads.items()],
        )
        conn.execute("COMMIT")
        print(f"  built {pos:,} events ({time.perf_counter() - t0:.0f} s)", flush=True)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    (total,) = conn.execute("SELECT count(*) FROM events").fetchone()
    df = {}
    for term in [*RARE_TERMS, *COMMON_TERMS]:
        (df[term],) = conn.execute(
            "SELECT count(*) FROM events_fts WHERE events_fts MATCH ?", (f'"{term}"',)
        ).fetchone()
    conn.close()
    for suffix in ("", "-wal", "-shm"):
        src = Path(str(tmp) + suffix)
        if src.exists():
            src.rename(str(path) + suffix)
    meta = {
        "version": SEARCH_DB_VERSION,
        "events": total,
        "sessions": sessions,
        "workspaces": workspaces,
        "doc_freq": df,
        "build_s": time.perf_counter() - t0,
        "bytes": path.stat().st_size,
    }
    path.with_suffix(".json").write_text(json.dumps(meta, indent=1))
    return meta


PLAIN_BM25 = (
    "SELECT rowid, bm25(events_fts) FROM events_fts WHERE events_fts MATCH ? "
    "ORDER BY bm25(events_fts) LIMIT 20"
)


def bench_search(args: argparse.Namespace) -> dict[str, Any]:
    path = DATA / f"search-{args.events // 1000}k-v{SEARCH_DB_VERSION}.db"
    meta_path = path.with_suffix(".json")
    if args.rebuild or not meta_path.exists():
        print(f"building {path} (once; cached) …", flush=True)
        meta = build_search_db(path, args.events, args.events // 1000, 10)
    else:
        meta = json.loads(meta_path.read_text())
    n = meta["events"]
    print(
        f"\n## Search over {n:,} events ({meta['bytes'] / 1e9:.2f} GB file, "
        f"built in {meta['build_s']:.0f} s; warm page cache)"
    )
    store = EventStore.open(f"sqlite:///{path}")
    conn = floor_connection(path)
    rare = [t for t in RARE_TERMS if meta["doc_freq"][t] / n <= 0.01]
    for t in [*rare, *COMMON_TERMS]:  # warm up
        store.search(t)
    lat: dict[str, list[float]] = {t: [] for t in [*rare, *COMMON_TERMS]}
    plain: dict[str, list[float]] = {t: [] for t in COMMON_TERMS}
    for _ in range(args.reps):
        for t in lat:
            hits: list[Any] = []
            lat[t].append(timed(lambda t=t, hits=hits: hits.extend(store.search(t))))
            assert len(hits) == 20 or meta["doc_freq"][t] < 20, (t, len(hits))
    for _ in range(args.plain_reps):
        for t in COMMON_TERMS:
            plain[t].append(timed(lambda t=t: conn.execute(PLAIN_BM25, (t,)).fetchall()))
    all_rare = [x for t in rare for x in lat[t]]
    print(f"  {'term':12s} {'in events':>14s} {'p50':>9s} {'p90':>9s}   (store.search, limit 20)")
    for t in lat:
        df = meta["doc_freq"][t]
        print(
            f"  {t:12s} {df:>8,} {df / n:6.2%} {fmt_ms(median(lat[t])):>9s} "
            f"{fmt_ms(percentile(lat[t], 0.9)):>9s}"
        )
    print(
        f"  rare terms (≤ 1% of events), all queries: p50 {fmt_ms(median(all_rare))}, "
        f"p90 {fmt_ms(percentile(all_rare, 0.9))}  (target p50 ≤ 10 ms)"
        + ("  ✅" if median(all_rare) <= 0.010 else "  ❌")
    )
    for t in COMMON_TERMS:
        df = meta["doc_freq"][t]
        ok = "  ✅" if median(lat[t]) <= 0.100 else "  ❌"
        print(
            f"  common '{t}' ({df / n:.0%} of events): first page p50 "
            f"{fmt_ms(median(lat[t]))} (target ≤ 100 ms){ok}; plain ORDER BY bm25 LIMIT 20: "
            f"{fmt_ms(median(plain[t]))} ({median(plain[t]) / median(lat[t]):.0f}× slower)"
        )
    proposed: dict[str, float] = {}
    if args.candidates:
        import tron_events._sqlite as backend

        saved, backend.SEARCH_CANDIDATES = backend.SEARCH_CANDIDATES, args.candidates
        try:
            plat: dict[str, list[float]] = {t: [] for t in lat}
            for _ in range(args.reps):
                for t in lat:
                    plat[t].append(timed(lambda t=t: store.search(t)))
        finally:
            backend.SEARCH_CANDIDATES = saved
        prare = [x for t in rare for x in plat[t]]
        proposed = {t: median(v) for t, v in plat.items()}
        print(
            f"  prototype: SEARCH_CANDIDATES = {args.candidates} (store: {saved}): rare p50 "
            f"{fmt_ms(median(prare))}, p90 {fmt_ms(percentile(prare, 0.9))}; "
            + ", ".join(f"'{t}' {fmt_ms(proposed[t])}" for t in plat)
        )
    store.close()
    conn.close()
    return {
        "meta": meta,
        "p50": {t: median(v) for t, v in lat.items()},
        "proposed": proposed,
        "plain_p50": {t: median(v) for t, v in plain.items()},
    }


# --- state at head ---------------------------------------------------------------------

STATE_DB_VERSION = 1
STATE_FLOOR_SQL = (
    f"SELECT {EVENT_COLUMNS} FROM events WHERE position IN (SELECT value FROM json_each(?)) "
    "ORDER BY position"
)


def build_state_db(path: Path, n_events: int, rewinds: int, forks: int) -> dict[str, Any]:
    """A session tree written through the store as the server would: turns of a user
    message, an assistant message with 0-3 tool_use blocks (P = .6/.25/.1/.05), each
    tool's tool.call and tool.result, and the continuation; a model switch or a
    reasoning change now and then; ``rewinds`` rewinds of 5-40 events spread over the
    run; ``forks`` forks, each continuing in the new session (the measured head is
    the last fork's, so its path crosses every fork)."""
    import random

    from _workload import TextGen, assistant_payload, user_payload

    gen, rng = TextGen(31), random.Random(32)
    for f in DATA.glob(path.name + "*"):
        f.unlink()
    store = EventStore.open(f"sqlite:///{path}")
    sid = store.create_session(
        working_directory="/work/project",
        model="claude-sonnet-4-5",
        provider="anthropic",
        system_prompt="You are Tron.",
    ).id
    total, turn, tool_id = 1, 0, 0
    rewind_at = {int(n_events * (i + 0.5) / rewinds) for i in range(rewinds)}
    fork_at = {int(n_events * (i + 1) / (forks + 1)) for i in range(forks)}
    done_rewinds = done_forks = 0
    while total < n_events:
        turn += 1
        k = rng.choices([0, 1, 2, 3], [0.6, 0.25, 0.1, 0.05])[0]
        tools = []
        for _ in range(k):
            tool_id += 1
            tools.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_{tool_id:06d}",
                    "name": "Bash",
                    "input": {"command": gen.chars(rng.randint(20, 300))},
                }
            )
        drafts: list[dict[str, Any]] = [
            {"type": "message.user", "payload": user_payload(gen, turn, rng.randint(50, 800))},
            {
                "type": "message.assistant",
                "payload": assistant_payload(gen, turn, rng.randint(50, 800), tools),
            },
        ]
        for tool in tools:
            drafts.append(
                {
                    "type": "tool.call",
                    "payload": {
                        "toolCallId": tool["id"],
                        "name": "Bash",
                        "arguments": tool["input"],
                        "turn": turn,
                    },
                }
            )
        for tool in tools:
            size = min(int(rng.lognormvariate(6.5, 1.0)), 9000)
            drafts.append(
                {
                    "type": "tool.result",
                    "payload": {
                        "toolCallId": tool["id"],
                        "content": gen.chars(size),
                        "isError": rng.random() < 0.05,
                    },
                }
            )
        if tools:
            drafts.append(
                {
                    "type": "message.assistant",
                    "payload": assistant_payload(gen, turn, rng.randint(50, 600)),
                }
            )
        if rng.random() < 0.01:
            drafts.append(
                {
                    "type": "config.model_switch",
                    "payload": {"previousModel": "a", "newModel": f"model-{turn}"},
                }
            )
        if rng.random() < 0.01:
            level = rng.choice(["low", "medium", "high"])
            drafts.append({"type": "config.reasoning_level", "payload": {"newLevel": level}})
        store.append_many(sid, drafts)
        before, total = total, total + len(drafts)
        if any(before <= x < total for x in rewind_at):
            path_now = store.get_ancestors(store.get_session(sid).head_event_id)
            back = rng.randint(5, 40)
            targets = [
                e
                for e in path_now[-back - 10 : -back]
                if e.type == "message.assistant" and e.payload.get("stopReason") != "tool_use"
            ]
            if targets:
                store.rewind(sid, targets[-1].id)
                done_rewinds += 1
        if any(before <= x < total for x in fork_at):
            sid = store.fork(store.get_session(sid).head_event_id, name="fork").session.id
            done_forks += 1
            total += 1
    session = store.get_session(sid)
    path_events = store.get_ancestors(session.head_event_id)
    with store.recorder.read() as cur:
        cur.execute("SELECT count(*), sum(type IN ('tool.call', 'tool.result')) FROM events")
        stored, tool_events = cur.fetchone()
    store.close()
    meta = {
        "version": STATE_DB_VERSION,
        "session_id": sid,
        "head": session.head_event_id,
        "stored_events": stored,
        "tool_events": tool_events,
        "path_len": len(path_events),
        "sessions_on_path": len({e.session_id for e in path_events}),
        "positions": [e.position for e in path_events],
        "rewinds": done_rewinds,
        "forks": done_forks,
    }
    path.with_suffix(".json").write_text(json.dumps(meta))
    return meta


def state_floor(conn: sqlite3.Connection, positions_json: str) -> list[Any]:
    rows = conn.execute(STATE_FLOOR_SQL, (positions_json,)).fetchall()
    return [orjson.loads(r[9]) for r in rows]


def cold(mode: str, path: Path, meta: dict[str, Any], positions_json: str) -> dict[str, float]:
    """One cold resume in a new process. tron_* modes run the store on their
    own copy of the database (see ``snapshot_variants``)."""
    if mode.startswith("tron"):
        path = path.with_name(f"{path.stem}-{mode}.db")
        if mode == "tron_no_snapshot":  # the first resume ever: nothing stored yet
            with sqlite3.connect(path) as c:
                c.execute("DELETE FROM state_snapshots")
    t0 = time.perf_counter()
    out = subprocess.run(
        [
            sys.executable,
            str(HERE / "_cold_state.py"),
            "floor" if mode == "floor" else "naive" if mode == "naive" else "tron",
            str(path),
            meta["session_id"],
            meta["head"],
            positions_json,
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    res: dict[str, float] = json.loads(out.stdout)
    res["process"] = wall
    return res


#: How far behind the head the worst steady-state snapshot is: just under the
#: 1/SNAPSHOT_FRACTION of the path after which the store writes a new one.
def snapshot_variants(path: Path, meta: dict[str, Any]) -> dict[str, int]:
    """Copies of the state database for the cold tron modes:

    * ``tron``: a snapshot at the head (a resume with nothing appended since the
      last snapshot);
    * ``tron_behind``: the nearest snapshot as far behind the head as the store
      lets it get (just under an eighth of the path: one more event and a resume
      stores a new one), the worst steady state;
    * ``tron_no_snapshot``: none (the first resume of a session ever, which
      also writes one; its snapshots are deleted before each run).

    Returns how many events each one projects after its snapshot.
    """
    from tron_events import _state_snapshots

    store = EventStore.open(f"sqlite:///{path}")
    with store.recorder.write() as cur:
        cur.execute("DELETE FROM state_snapshots")
    store.close()
    path_len = meta["path_len"]
    behind = min(path_len // _state_snapshots.SNAPSHOT_FRACTION, path_len) - 1
    out = {}
    for mode, back in (("tron", 0), ("tron_behind", behind), ("tron_no_snapshot", path_len)):
        copy = path.with_name(f"{path.stem}-{mode}.db")
        for suffix in ("", "-wal", "-shm"):
            Path(str(copy) + suffix).unlink(missing_ok=True)
        shutil.copyfile(path, copy)
        store = EventStore.open(f"sqlite:///{copy}")
        store.snapshot_min_events = 1
        if back < path_len:
            path_events = store.get_ancestors(meta["head"])
            store.get_state_at(path_events[-1 - back].id)
        store.close()
        out[mode] = back
    return out


def bench_state(args: argparse.Namespace) -> dict[str, Any]:
    from _naive import naive_state

    path = DATA / f"state-{args.events}-v{STATE_DB_VERSION}.db"
    meta_path = path.with_suffix(".json")
    if args.rebuild or not meta_path.exists():
        print(f"building {path} (once; cached) …", flush=True)
        meta = build_state_db(path, args.events, 20, 5)
    else:
        meta = json.loads(meta_path.read_text())
    sid, head = meta["session_id"], meta["head"]
    positions_json = json.dumps(meta["positions"])
    variants = snapshot_variants(path, meta)
    # Warm: the store as a server holds it, with a snapshot at the head (written
    # by the first call) ...
    store = EventStore.open(f"sqlite:///{path}")
    # ... next to the same store projecting the whole path from its path cache
    # (no snapshots: what the store did before them).
    plain = EventStore.open(f"sqlite:///{path}")
    plain._snapshots_usable = False
    conn = floor_connection(path)
    conn.execute("PRAGMA cache_size = -32000")
    state = store.get_state_at_head(sid)
    assert state == naive_state(conn, head) == plain.get_state_at_head(sid)
    assert store.get_state_at_head(sid) == state  # now from the snapshot
    assert len(state_floor(conn, positions_json)) == meta["path_len"]
    contenders: dict[str, Callable[[], Any]] = {
        "tron": lambda: store.get_state_at_head(sid),
        "floor": lambda: state_floor(conn, positions_json),
        "naive": lambda: naive_state(conn, head),
        "tron_without_snapshots": lambda: plain.get_state_at_head(sid),
        "tron_get_ancestors_only": lambda: store.get_ancestors(head),
    }
    if args.prototypes:
        from prototypes import fast_path

        from tron_events.reconstruct import build_state

        pconn = floor_connection(path)
        pconn.execute("PRAGMA cache_size = -32000")
        cache: dict[str, Event] = {}

        def proto(**kw: Any) -> Callable[[], Any]:
            def run() -> Any:
                pconn.execute("BEGIN")
                try:
                    (h,) = pconn.execute(
                        "SELECT head_event_id FROM sessions WHERE id = ?", (sid,)
                    ).fetchone()
                    ev = fast_path._get_event(pconn, h)
                    assert ev is not None
                    p = fast_path.get_path(pconn, ev, **kw)
                finally:
                    pconn.execute("COMMIT")
                return build_state(p)

            return run

        contenders["proto_narrow_path"] = proto()
        contenders["proto_cached_events"] = proto(cache=cache)
        for name in ("proto_narrow_path", "proto_cached_events"):
            assert contenders[name]() == state, name
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for _, order in rotations(list(contenders), args.rounds):
        for name in order:
            collect()
            times[name].append(timed(contenders[name]))
    m = {k: median(v) for k, v in times.items()}
    ratio = {
        k: median([times[k][i] / times["floor"][i] for i in range(args.rounds)]) for k in contenders
    }
    print(
        f"\n## get_state_at_head: {meta['stored_events']:,} stored events "
        f"({meta['tool_events'] / meta['stored_events']:.0%} tool events, {meta['rewinds']} "
        f"rewinds, {meta['forks']} forks); path of {meta['path_len']:,} events over "
        f"{meta['sessions_on_path']} sessions → {len(state.messages):,} messages"
    )
    print(f"  warm, {args.rounds} rounds (median; × = time / floor time, same round)")
    for k in contenders:
        print(f"  {k:28s} {fmt_ms(m[k]):>10s}  {ratio[k]:5.2f}× the floor")
    print(
        f"  tron within 1.5× the floor: {ratio['tron']:.2f}×"
        + ("  ✅" if ratio["tron"] <= 1.5 else "  ❌")
    )
    store.close()
    plain.close()
    conn.close()
    print(f"  cold: a new process (`python _cold_state.py`), {args.cold_rounds} rounds, median")
    print(
        "  tron: snapshot at the head; tron_behind: the nearest snapshot "
        f"{variants['tron_behind']:,} events back (the worst steady state); "
        "tron_no_snapshot: none stored yet (the call also stores one)"
    )
    cold_t: dict[str, list[dict[str, float]]] = {
        k: [] for k in ("tron", "tron_behind", "tron_no_snapshot", "floor", "naive")
    }
    for _, order in rotations(list(cold_t), args.cold_rounds):
        for name in order:
            cold_t[name].append(cold(name, path, meta, positions_json))
    print(
        f"  {'':16s} {'imports':>9s} {'open':>9s} {'1st call':>9s} {'2nd call':>9s} "
        f"{'open+1st':>9s} {'process':>9s}  ×floor"
    )
    cm = {}
    for k, runs in cold_t.items():
        c = {
            f: median([r[f] for r in runs])
            for f in ("import", "open", "first", "second", "process")
        }
        c["open_first"] = median([r["open"] + r["first"] for r in runs])
        cm[k] = c
        c["ratio_open_first"] = median(
            [
                (r["open"] + r["first"]) / (f["open"] + f["first"])
                for r, f in zip(runs, cold_t["floor"], strict=True)
            ]
        )
        print(
            f"  {k:16s} {fmt_ms(c['import']):>9s} {fmt_ms(c['open']):>9s} "
            f"{fmt_ms(c['first']):>9s} {fmt_ms(c['second']):>9s} {fmt_ms(c['open_first']):>9s} "
            f"{fmt_ms(c['process']):>9s}  {c['ratio_open_first']:5.2f}×"
        )
    print("  (× = open + 1st call / the floor's connect + 1st call, same round, median)")
    for k in ("tron", "tron_behind", "tron_no_snapshot"):
        r1 = cm[k]["ratio_open_first"]
        print(f"  cold {k} within 1.5× the floor: {r1:.2f}×" + ("  ✅" if r1 <= 1.5 else "  ❌"))
    return {
        "warm": m,
        "ratio": ratio,
        "cold": cm,
        "meta": {k: v for k, v in meta.items() if k != "positions"},
    }


# --- entry point ----------------------------------------------------------------------


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("append")
    sp.add_argument("--n", type=int, default=2000)
    sp.add_argument("--rounds", type=int, default=7)
    sp.add_argument("--no-prototypes", dest="prototypes", action="store_false")
    sp = sub.add_parser("batch")
    sp.add_argument("--n", type=int, default=10_000)
    sp.add_argument("--rounds", type=int, default=7)
    sp = sub.add_parser("ancestors")
    sp.add_argument("--n", type=int, default=10_000)
    sp.add_argument("--rounds", type=int, default=21)
    sp.add_argument("--no-prototypes", dest="prototypes", action="store_false")
    sp = sub.add_parser("search")
    sp.add_argument("--events", type=int, default=1_000_000)
    sp.add_argument("--reps", type=int, default=30)
    sp.add_argument("--plain-reps", type=int, default=5)
    sp.add_argument(
        "--candidates",
        type=int,
        default=1000,
        help="also measure the store with this SEARCH_CANDIDATES (0: skip)",
    )
    sp.add_argument("--rebuild", action="store_true")
    sp = sub.add_parser("state")
    sp.add_argument("--events", type=int, default=10_000)
    sp.add_argument("--rounds", type=int, default=21)
    sp.add_argument("--cold-rounds", type=int, default=7)
    sp.add_argument("--no-prototypes", dest="prototypes", action="store_false")
    sp.add_argument("--rebuild", action="store_true")
    sub.add_parser("all", help="every benchmark above, each in its own process")
    args = p.parse_args()
    if args.cmd == "all":
        for cmd in ("append", "batch", "ancestors", "search", "state"):
            subprocess.run([sys.executable, __file__, cmd], check=True)
        return
    print(f"# {args.cmd} — {machine()}")
    {
        "append": bench_append,
        "batch": bench_batch,
        "ancestors": bench_ancestors,
        "search": bench_search,
        "state": bench_state,
    }[args.cmd](args)


if __name__ == "__main__":
    main()
