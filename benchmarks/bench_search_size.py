"""Search time against the size of the largest matching event, on both backends.

    uv run python benchmarks/bench_search_size.py [--backends sqlite,postgres]
        [--sizes 1K,10K,100K,512K,1M,5M,50M] [--kinds message.user,tool.call]
        [--rounds 5] [--timeout 60] [--src CHECKOUT] [--label NAME] [--json]

For each (backend, kind, size) a child process makes a fresh database with
300 small messages (a few of which match the query), appends ONE big event of
``size`` characters that matches it densely (a pasted log: the same line over
and over, ``"… ERROR connection refused by upstream …"``), then runs the
two-word literal search ``connection refused`` (limit 20) ``--rounds`` times.
Reported: the time to append the big event (indexing it) and the median
search time, and the ratio of the search time to the same search in the
1 KB cell of the same run (the floor: what the 300 small events cost).

``--src`` runs another checkout's ``tron_events`` (its ``tron_events/src`` on
PYTHONPATH; its own migrations), e.g. the commit before a change, in the same
session as this one. A child that takes longer than ``--timeout`` seconds is
stopped and reported as such.

PostgreSQL: the local service (``TRON_BENCH_PG_DSN``, default
postgresql://postgres@127.0.0.1:5432/test); a scratch database is created and
dropped per cell.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

PG_DSN = os.environ.get("TRON_BENCH_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
QUERY = "connection refused"
LOG_LINE = (
    "2026-11-24T12:00:01.123Z ERROR [pool-7] connection refused by upstream "
    "db-7.internal:5432 (attempt 3 of 5, backoff 800 ms)\n"
)
VOCABULARY = (
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "for",
    "on",
    "with",
    "that",
    "as",
    "this",
    "by",
    "from",
    "at",
    "be",
    "are",
    "or",
    "an",
    "it",
    "was",
    "session",
    "event",
    "store",
    "search",
    "index",
    "query",
    "token",
    "model",
    "agent",
    "tool",
    "result",
    "file",
    "build",
    "test",
    "deploy",
    "cache",
    "write",
    "read",
    "open",
    "close",
    "commit",
    "branch",
    "merge",
    "review",
)
SMALL_EVENTS = 300


def parse_size(text: str) -> int:
    units = {"K": 1_000, "M": 1_000_000}
    if text[-1].upper() in units:
        return int(float(text[:-1]) * units[text[-1].upper()])
    return int(text)


def show_size(n: int) -> str:
    return f"{n // 1_000_000} MB" if n >= 1_000_000 else f"{n // 1_000} KB"


def big_text(size: int) -> str:
    return (LOG_LINE * (size // len(LOG_LINE) + 1))[:size]


def small_text(rng: random.Random, i: int) -> str:
    words = [rng.choice(VOCABULARY) for _ in range(30)]
    if i % 10 == 0:
        words[5:7] = ["connection", "refused"]
    return " ".join(words)


# -- the child: one cell --------------------------------------------------------


def child(backend: str, kind: str, size: int, rounds: int) -> dict[str, Any]:
    from tron_events import EventStore

    admin = None
    folder = None
    if backend == "sqlite":
        folder = tempfile.TemporaryDirectory(prefix="bench-search-size-")
        url = f"sqlite:///{folder.name}/events.db"
    else:
        import psycopg

        name = f"bench_search_size_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        admin = psycopg.connect(PG_DSN, autocommit=True)
        admin.execute(f'CREATE DATABASE "{name}"')
        url = (
            PG_DSN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://") + "/" + name
        )
    try:
        store = EventStore.open(url)
        session = store.create_session(working_directory="/bench", model="m", provider="p")
        rng = random.Random(7)
        drafts = [
            {"type": "message.user", "payload": {"content": small_text(rng, i)}}
            for i in range(SMALL_EVENTS)
        ]
        store.append_many(session.id, drafts)
        text = big_text(size)
        if kind == "tool.call":
            payload: dict[str, Any] = {
                "toolCallId": "toolu_big",
                "name": "write",
                "arguments": {"path": "/bench/server.log", "content": text},
            }
        else:
            payload = {"content": text}
        started = time.perf_counter()
        big = store.append(session.id, kind, payload)
        append_s = time.perf_counter() - started
        times: list[float] = []
        hits: list[Any] = []
        for _ in range(rounds):
            started = time.perf_counter()
            hits = store.search(QUERY, limit=20)
            times.append(time.perf_counter() - started)
            if sum(times) > 20:  # a slow cell: a few samples say enough
                break
        store.close()
        return {
            "append_s": append_s,
            "search_s": statistics.median(times),
            "samples": len(times),
            "hits": len(hits),
            "big_found": any(h.event_id == big.id for h in hits),
        }
    finally:
        if folder is not None:
            folder.cleanup()
        if admin is not None:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            admin.close()


# -- the parent: the sweep ------------------------------------------------------


def run_cell(args: argparse.Namespace, backend: str, kind: str, size: int) -> dict[str, Any]:
    env = dict(os.environ)
    if args.src:
        src = str(Path(args.src).resolve() / "tron_events" / "src")
        env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    command = [
        sys.executable, __file__, "--child", backend, kind, str(size), str(args.rounds),
    ]  # fmt: skip
    try:
        done = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=args.timeout
        )
    except subprocess.TimeoutExpired:
        return {"stopped_after_s": args.timeout}
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:]}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def machine_line() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
        f"{platform.machine()}, {os.cpu_count()} CPUs, load average {load:.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--kinds", default="message.user,tool.call")
    parser.add_argument("--sizes", default="1K,10K,100K,512K,1M,5M,50M")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per cell")
    parser.add_argument("--src", help="run this checkout's tron_events instead")
    parser.add_argument("--label", default="this checkout")
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        backend, kind, size, rounds = args.child
        print(json.dumps(child(backend, kind, int(size), int(rounds))))
        return

    sizes = [parse_size(s) for s in args.sizes.split(",")]
    print(f"# {args.label}: {machine_line()}", flush=True)
    print("| backend | event | size | append (indexing) | search p50 | vs 1 KB | hits |")
    print("|---|---|---|---|---|---|---|", flush=True)
    results = []
    for backend in args.backends.split(","):
        for kind in args.kinds.split(","):
            floor = None
            for size in sizes:
                r = run_cell(args, backend, kind, size)
                results.append({"backend": backend, "kind": kind, "size": size, **r})
                if "stopped_after_s" in r:
                    cells = ["—", f"not finished in {args.timeout:.0f} s", "—", "—"]
                elif "error" in r:
                    cells = ["error", str(r["error"]), "—", "—"]
                else:
                    if floor is None:
                        floor = r["search_s"]
                    cells = [
                        f"{r['append_s'] * 1000:.0f} ms",
                        f"{r['search_s'] * 1000:.1f} ms",
                        f"{r['search_s'] / floor:.1f}×",
                        f"{r['hits']}{'' if r['big_found'] else ' (big one missing)'}",
                    ]
                print(f"| {backend} | {kind} | {show_size(size)} | " + " | ".join(cells) + " |",
                      flush=True)  # fmt: skip
    if args.json:
        print(json.dumps({"label": args.label, "machine": machine_line(), "results": results}))


if __name__ == "__main__":
    main()
