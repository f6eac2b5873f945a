"""Append throughput with concurrent writer processes, PostgreSQL next to SQLite.

    uv run python benchmarks/bench_postgres.py [--writers 1,2,4,8,16] [--seconds 4] [--rounds 3]
        [--mode processes|threads|async] [--backends postgres,pgbench,sqlite]

Each writer is its own process with its own store and its own session (so on
PostgreSQL writers never wait on each other's session lock); with
``--mode threads`` the writers are threads sharing one store in one process,
with ``--mode async`` asyncio tasks on one ``AsyncEventStore`` (tron-server's
shape). Each writer appends one
~700-byte message per transaction (``store.append``, per-commit durability:
synchronous_commit on PostgreSQL, WAL + synchronous=NORMAL on SQLite) for a
fixed time after all writers passed a barrier. Throughput = appends committed
by all writers / seconds. Every (backend, writers) cell gets a fresh database;
each round runs every cell once, in a rotated order, and the figure is the
median over rounds.

The peer ``pgbench`` is PostgreSQL's own C client running the store's
one-statement append (``PostgresRecorder._APPEND_AT_HEAD``, the same SQL, with
the same payloads and search text) from N client connections on N sessions:
what the server alone does with this append on this machine, with next to no
client CPU. Its writers read their session id and payload by subselects from
two small tables (a few index lookups more per append than the store's).
``pgbench-nosearch`` (not run by default) is the same without the search row,
to show what full-text indexing costs the server.

PostgreSQL: the local service (``TRON_BENCH_PG_DSN``, default
postgresql://postgres@127.0.0.1:5432/test); a scratch database is created and
dropped per cell. Results go to stdout as a Markdown table (and JSON with --json).
"""

from __future__ import annotations

import argparse
import glob
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import anyio
from _workload import machine, median, message_stream

from tron_events import AsyncEventStore, EventStore
from tron_events._postgres import MAX_INDEXED_CHARS, PostgresRecorder
from tron_events.search_text import search_text

HERE = Path(__file__).resolve().parent
ADMIN_DSN = os.environ.get("TRON_BENCH_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")


def _pg_admin() -> Any:
    import psycopg

    return psycopg.connect(ADMIN_DSN, autocommit=True)


@contextmanager
def database(backend: str) -> Iterator[str]:
    """A fresh, migrated database URL for ``backend``; removed afterwards."""
    if backend == "sqlite":
        (HERE / ".data").mkdir(exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix="pgbench-", dir=HERE / ".data"))
        try:
            url = f"sqlite:///{tmp / 'events.db'}"
            EventStore.open(url).close()
            yield url
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    name = f"tron_bench_{uuid.uuid4().hex[:8]}"
    with _pg_admin() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        base = ADMIN_DSN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1)
        url = f"{base}/{name}"
        EventStore.open(url).close()
        yield url
    finally:
        with _pg_admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def writer(
    url: str, session_id: str, seconds: float, seed: int, barrier: Any, general: bool = False
) -> tuple[int, float]:
    """Append to one session until the time is up; (appends, seconds taken).
    ``general``: without the backend's one-statement append (the path every
    append took before it)."""
    stream = message_stream(4_000, seed=seed)
    with EventStore.open(url, upgrade=False) as store:
        if general:
            store.recorder.has_append_at_head = False
        store.append(session_id, *stream[0])  # warm up the connection and caches
        barrier.wait()
        start = time.perf_counter()
        deadline = start + seconds
        n = 0
        while time.perf_counter() < deadline:
            kind, payload = stream[(n + 1) % len(stream)]
            store.append(session_id, kind, payload)
            n += 1
        return n, time.perf_counter() - start


def cpu_per_append(n: int = 2_000, general: bool = False) -> dict[str, float]:
    """One PostgreSQL writer: wall time and CPU per append, client and server.

    Shows the ceiling of scaling on this machine: with C cores, W writers can
    at best reach C x wall / (client CPU + server CPU) times one writer.
    """
    stream = message_stream(n + 100, seed=3)
    with database("postgres") as url, EventStore.open(url, upgrade=False) as store:
        if general:
            store.recorder.has_append_at_head = False
        s = store.create_session(working_directory="/bench/cpu", model="m", provider="p")
        for kind, payload in stream[:100]:
            store.append(s.id, kind, payload)
        dbname = url.rsplit("/", 1)[1]
        with _pg_admin() as conn:
            pids = [
                row[0]
                for row in conn.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = %s", (dbname,)
                )
            ]

        def server_cpu() -> float:
            total = 0
            for pid in pids:
                with open(f"/proc/{pid}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])
            return total / os.sysconf("SC_CLK_TCK")

        wall0, cpu0, srv0 = time.perf_counter(), time.process_time(), server_cpu()
        for kind, payload in stream[100:]:
            store.append(s.id, kind, payload)
        wall = time.perf_counter() - wall0
        cpu = time.process_time() - cpu0
        srv = server_cpu() - srv0
    return {
        "wall_us": wall / n * 1e6,
        "client_cpu_us": cpu / n * 1e6,
        "server_cpu_us": srv / n * 1e6,
    }


def search_million() -> None:
    """Search latency over 1,000,000 indexed events on PostgreSQL (synthetic text:
    'common' in 90 % of events, 'rareword' in 0.5 %, 'word42' in 0.02 %)."""
    with database("postgres") as url, EventStore.open(url, upgrade=False) as store:
        s = store.create_session(working_directory="/bench/search", model="m", provider="p")
        import psycopg

        with psycopg.connect(store.recorder.conninfo, autocommit=True) as conn:  # type: ignore[attr-defined]
            conn.execute(
                "INSERT INTO events (id, parent_id, session_id, workspace_id, sequence, depth, "
                "type, timestamp, payload) SELECT 'evt_b' || g, NULL, %s, %s, g, g, "
                "'message.user', '2026-01-01T00:00:00.000Z', '{}' "
                "FROM generate_series(1, 1000000) g",
                (s.id, s.workspace_id),
            )
            conn.execute(
                "INSERT INTO events_search (position, text) SELECT position, "
                "(CASE WHEN position %% 10 <> 0 THEN 'common function value ' ELSE '' END) || "
                "(CASE WHEN position %% 200 = 0 THEN 'rareword ' ELSE '' END) || "
                "'word' || (position %% 5000) || ' filler text about code and tests ' "
                "|| md5(position::text) FROM events WHERE session_id = %s AND sequence > 0",
                (s.id,),
            )
            conn.execute("ANALYZE")
        for query, kwargs in [
            ("common", {}), ("common function", {}), ("rareword", {}), ("word42", {}),
            ("nomatchatall", {}), ("common", {"session_id": s.id}),
        ]:  # fmt: skip
            times = []
            for _ in range(11):
                t0 = time.perf_counter()
                hits = store.search(query, **kwargs)  # type: ignore[arg-type]
                times.append(time.perf_counter() - t0)
            label = query + (" (session filter)" if kwargs else "")
            print(f"| {label} | {median(times) * 1e3:.1f} ms | {len(hits)} |")


def in_one_process(url: str, sessions: list[str], seconds: float, use_async: bool) -> float:
    """Appends per second of one writer per session sharing one store: threads,
    or asyncio tasks on an ``AsyncEventStore``."""
    counts = [0] * len(sessions)
    with EventStore.open(url, upgrade=False) as store:
        streams = [message_stream(4_000, seed=i + 1) for i in range(len(sessions))]
        for sid, stream in zip(sessions, streams, strict=True):
            store.append(sid, *stream[0])  # warm up
        if use_async:
            astore = AsyncEventStore(store)

            async def task(i: int) -> None:
                deadline = time.perf_counter() + seconds
                while time.perf_counter() < deadline:
                    counts[i] += 1
                    await astore.append(sessions[i], *streams[i][counts[i] % 4_000])

            async def run() -> None:
                async with anyio.create_task_group() as tg:
                    for i in range(len(sessions)):
                        tg.start_soon(task, i)

            start = time.perf_counter()
            anyio.run(run)
            return sum(counts) / (time.perf_counter() - start)
        barrier = threading.Barrier(len(sessions) + 1)

        def thread(i: int) -> None:
            barrier.wait()
            deadline = time.perf_counter() + seconds
            while time.perf_counter() < deadline:
                counts[i] += 1
                store.append(sessions[i], *streams[i][counts[i] % 4_000])

        threads = [threading.Thread(target=thread, args=(i,)) for i in range(len(sessions))]
        for t in threads:
            t.start()
        barrier.wait()
        start = time.perf_counter()
        for t in threads:
            t.join()
        return sum(counts) / (time.perf_counter() - start)


def pgbench_binary() -> str | None:
    """PostgreSQL's pgbench: on PATH, or where Debian's server packages put it."""
    found = shutil.which("pgbench")
    if found:
        return found
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pgbench"))
    return candidates[-1] if candidates else None


#: What the pgbench peer puts where the store passes a parameter. ``sid``,
#: ``type``, ``payload`` and ``search`` are read from the bench tables by the
#: client's number and a random payload number ``k``; ``id`` is random.
PEER_VALUES = {
    "sid": "(SELECT id FROM bench_writers WHERE n = :client_id)",
    "expected": "NULL",
    "id": "('evt_bench_' || :client_id || '_' || :r)",
    "type": "(SELECT type FROM bench_texts WHERE n = :k)",
    "ts": "'2026-01-01T00:00:00.000Z'",
    "payload": "(SELECT payload FROM bench_texts WHERE n = :k)",
    "search": "(SELECT search FROM bench_texts WHERE n = :k)",
    "messages": "1",
    "turn": "0",
    "input": "0",
    "output": "0",
    "cache_read": "0",
    "cache_creation": "0",
    "cost": "0.0",
}


#: The part of the append that writes the event's search row.
SEARCH_ROW = (
    "srch AS (INSERT INTO events_search (position, text) SELECT ins.position, "
    "%(search)s::text FROM ins WHERE %(search)s::text <> ''), "
)


def peer_script(search: bool = True) -> str:
    """The pgbench script: the store's one-statement append, parameters filled
    in; without its search row (``search=False``) to show what indexing costs."""
    statement = PostgresRecorder._APPEND_AT_HEAD
    if not search:
        if SEARCH_ROW not in statement:
            raise SystemExit("the append no longer has the search row this bench removes")
        statement = statement.replace(SEARCH_ROW, "")
    statement = re.sub(r"%\((\w+)\)s", lambda m: PEER_VALUES[m.group(1)], statement)
    return "\\set k random(1, 4000)\n\\set r random(1, 9000000000000000000)\n" + statement + ";\n"


def run_pgbench(url: str, sessions: list[str], seconds: float, search: bool = True) -> float:
    """Appends per second of pgbench running the store's append on ``sessions``."""
    binary = pgbench_binary()
    if binary is None:  # checked in main(); here for the type checker
        raise SystemExit("pgbench not found")
    dsn = url.replace("postgresql+psycopg://", "postgresql://", 1)
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE bench_writers (n int PRIMARY KEY, id text NOT NULL)")
        conn.execute(
            "CREATE TABLE bench_texts (n int PRIMARY KEY, type text, payload text, search text)"
        )
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO bench_writers VALUES (%s, %s)", list(enumerate(sessions)))
            cur.executemany(
                "INSERT INTO bench_texts VALUES (%s, %s, %s, %s)",
                [
                    (k + 1, kind, json.dumps(payload, separators=(",", ":")),
                     search_text(kind, payload)[:MAX_INDEXED_CHARS])
                    for k, (kind, payload) in enumerate(message_stream(4_000, seed=1))
                ],
            )  # fmt: skip
        conn.execute("ANALYZE bench_writers, bench_texts")
    with tempfile.NamedTemporaryFile("w", suffix=".sql") as script:
        script.write(peer_script(search))
        script.flush()
        n = str(len(sessions))
        out = subprocess.run(
            [binary, "-n", "-M", "prepared", "-f", script.name, "-c", n, "-j", n,
             "-T", str(max(1, round(seconds))), dsn],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
    failed = re.search(r"number of failed transactions: (\d+)", out)
    if failed and int(failed.group(1)):
        raise SystemExit(f"pgbench: {failed.group(1)} appends failed\n{out}")
    found = re.search(r"tps = ([\d.]+)", out)
    if found is None:
        raise SystemExit(f"pgbench printed no tps:\n{out}")
    return float(found.group(1))


def measure(
    backend: str, writers: int, seconds: float, general: bool = False, mode: str = "processes"
) -> float:
    """Appends per second of ``writers`` writers on separate sessions."""
    ctx = multiprocessing.get_context("spawn")
    peer = backend.startswith("pgbench")
    with database("postgres" if peer else backend) as url:
        with EventStore.open(url, upgrade=False) as store:
            sessions = [
                store.create_session(working_directory=f"/bench/{i}", model="m", provider="p").id
                for i in range(writers)
            ]
        if peer:
            return run_pgbench(url, sessions, seconds, search=backend == "pgbench")
        if mode != "processes":
            return in_one_process(url, sessions, seconds, use_async=mode == "async")
        manager = ctx.Manager()
        try:
            barrier = manager.Barrier(writers)
            with ctx.Pool(writers) as pool:
                results = pool.starmap(
                    writer,
                    [
                        (url, sid, seconds, i + 1, barrier, general)
                        for i, sid in enumerate(sessions)
                    ],
                )
        finally:
            manager.shutdown()
    total = sum(n for n, _ in results)
    elapsed = max(t for _, t in results)
    return total / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writers", default="1,2,4,8,16")
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--backends",
        default="postgres,pgbench,sqlite",
        help="postgres, sqlite, pgbench (the store's append from PostgreSQL's C "
        "client; left out with a note when pgbench is not installed) and "
        "pgbench-nosearch (the same without the search row)",
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--mode",
        choices=["processes", "threads", "async"],
        default="processes",
        help="writers as processes (default), threads on one store, or asyncio tasks "
        "on one AsyncEventStore",
    )
    parser.add_argument(
        "--cpu", action="store_true", help="only: CPU per append of one PostgreSQL writer"
    )
    parser.add_argument("--search", action="store_true", help="only: search latency over 1M events")
    parser.add_argument(
        "--general-path",
        action="store_true",
        help="also measure PostgreSQL without the one-statement append ('postgres-general')",
    )
    args = parser.parse_args()
    if args.search:
        search_million()
        return
    if args.cpu:
        variants = [False, True] if args.general_path else [False]
        figures: dict[bool, list[dict[str, float]]] = {v: [] for v in variants}
        for _ in range(args.rounds):  # interleaved, so load changes hit both alike
            for v in variants:
                figures[v].append(cpu_per_append(general=v))
        for v in variants:
            print("general path (5 statements):" if v else "one-statement append:")
            for key in figures[v][0]:
                print(f"  {key}: {median([f[key] for f in figures[v]]):.0f}")
        return
    counts = [int(x) for x in args.writers.split(",")]
    backends = args.backends.split(",")
    if pgbench_binary() is None and any(b.startswith("pgbench") for b in backends):
        print("pgbench not found: the peer columns are left out", file=sys.stderr)
        backends = [b for b in backends if not b.startswith("pgbench")]
    if args.general_path and "postgres" in backends:
        backends.insert(backends.index("postgres") + 1, "postgres-general")
    cells = [(b, n) for n in counts for b in backends]
    results: dict[tuple[str, int], list[float]] = {cell: [] for cell in cells}
    for r in range(args.rounds):
        order = cells[r % len(cells) :] + cells[: r % len(cells)]
        for backend, n in order:
            general = backend == "postgres-general"
            rate = measure("postgres" if general else backend, n, args.seconds, general, args.mode)
            results[(backend, n)].append(rate)
            print(
                f"round {r + 1}: {backend:8} {n:2} writers {rate:8.0f} appends/s", file=sys.stderr
            )
    pg_version = ""
    if "postgres" in backends:
        with _pg_admin() as conn:
            pg_version = conn.execute("SHOW server_version").fetchone()[0]
    print(
        f"\n{machine()}, PostgreSQL {pg_version}; {args.rounds} rounds x {args.seconds:g} s; "
        f"writers as {args.mode}\n"
    )
    header = "| writers | " + " | ".join(f"{b} appends/s" for b in backends)
    header += " | " + " | ".join(f"{b} vs 1 writer" for b in backends) + " |"
    print(header)
    print("|" + "---|" * (1 + 2 * len(backends)))
    for n in counts:
        rates = [median(results[(b, n)]) for b in backends]
        scale = [median(results[(b, n)]) / median(results[(b, counts[0])]) for b in backends]
        print(
            f"| {n} | "
            + " | ".join(f"{x:,.0f}" for x in rates)
            + " | "
            + " | ".join(f"{x:.2f}x" for x in scale)
            + " |"
        )
    if args.json:
        print(json.dumps({f"{b}:{n}": v for (b, n), v in results.items()}))


if __name__ == "__main__":
    main()
