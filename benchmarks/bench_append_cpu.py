"""CPU time per append: ``EventStore.append`` against the bare-sqlite3 floor writer.

    uv run --group bench python benchmarks/bench_append_cpu.py [--n 2000] [--pairs 3] [--profile]

Wall time on this shared machine moves 2× from minute to minute; the CPU time of
this process (``time.process_time``) moves much less, and the per-commit append is
CPU-bound apart from the WAL write. Each pair writes ``message_stream(n, seed=11)``
through the store and through ``bench_store.FloorWriter`` (same schema, pragmas and
statements, nothing validated or read), each into a fresh file, in alternating
order; the figure is the median of the pairs' floor / tron ratios
(``benchmarks/RESULTS.md`` §11, §12), then the user-mode part of each (§13).
``--profile`` prints a cProfile of the store's appends instead (its own overhead
roughly doubles the Python parts); ``--python-only`` runs both with SQLite stubbed out.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import resource
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _workload import machine, median, message_stream
from bench_store import FloorWriter, new_store, tmpdir


class _StubConnection:
    """A sqlite3 connection (and its cursor) that runs nothing (``--python-only``)."""

    rowcount = 1
    lastrowid = 1
    in_transaction = False

    def cursor(self) -> _StubConnection:
        return self

    def execute(self, *_: Any) -> _StubConnection:
        return self

    def close(self) -> None:
        pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument(
        "--python-only",
        action="store_true",
        help="both sides' SQLite connection replaced by a stub that runs nothing: "
        "the Python of an append alone (the store's against the floor's)",
    )
    args = ap.parse_args()
    items = message_stream(args.n, seed=11)
    work = tmpdir()

    def tron(path: Path) -> Callable[[], None]:
        store, sid, _ = new_store(path)
        if args.python_only:
            stub = _StubConnection()
            rec: Any = store.recorder
            rec._connection = lambda: stub  # this thread's connection, either way
            rec._local.conn = stub
        append = store.append

        def run() -> None:
            for t, p in items:
                append(sid, t, p)

        return run

    def floor(path: Path) -> Callable[[], None]:
        store, sid, ws = new_store(path)
        head = store.get_session(sid).head_event_id
        store.close()
        w = FloorWriter(path, sid, ws, head)
        if args.python_only:
            w.conn = _StubConnection()  # type: ignore[assignment]

        def run() -> None:
            for t, p in items:
                w.append(t, p)

        return run

    user: dict[str, list[float]] = {"tron": [], "floor": []}

    def cpu(name: str, make: Callable[[Path], Callable[[], None]], i: int) -> float:
        run = make(work / f"{name}-{i}.db")
        gc.collect()
        u0 = resource.getrusage(resource.RUSAGE_SELF).ru_utime
        t0 = time.process_time()
        run()
        t1 = time.process_time()
        user[name].append((resource.getrusage(resource.RUSAGE_SELF).ru_utime - u0) / args.n * 1e6)
        return (t1 - t0) / args.n * 1e6

    try:
        if args.profile:
            run = tron(work / "profile.db")
            prof = cProfile.Profile(time.process_time)
            prof.enable()
            run()
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(30)
            return
        print(machine() + (" (--python-only: SQLite stubbed out)" if args.python_only else ""))
        p = 1 if args.python_only else 0  # decimals of µs
        rows = []
        for i in range(args.pairs):
            order = [("tron", tron), ("floor", floor)]
            if i % 2:
                order.reverse()
            got = {name: cpu(name, make, i) for name, make in order}
            rows.append((got["tron"], got["floor"]))
            print(
                f"pair {i + 1}: tron {got['tron']:.{p}f} µs, floor {got['floor']:.{p}f} µs, "
                f"floor/tron {got['floor'] / got['tron']:.2f}×"
            )
        print(
            f"median: tron {median([r[0] for r in rows]):.{p}f} µs, "
            f"floor {median([r[1] for r in rows]):.{p}f} µs, "
            f"floor/tron {median([f / t for t, f in rows]):.2f}×"
            + ("" if args.python_only else " (bar P1: ≥ 0.9×)")
        )
        # The part of it in user mode (the Python and SQLite's own work; the rest is
        # mostly the WAL's writes in the kernel, where a busy disk adds noise to both).
        over = [t - f for t, f in zip(user["tron"], user["floor"], strict=True)]
        print(
            f"user-mode CPU: tron {median(user['tron']):.{p}f} µs, "
            f"floor {median(user['floor']):.{p}f} µs, tron - floor {median(over):.{p}f} µs"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
