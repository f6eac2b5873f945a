"""Memory after resuming many long sessions (issue 29, goal 4).

    uv run python benchmarks/bench_resume_memory.py --sessions 20 --turns 2000

Builds ``--sessions`` sessions of ``--turns`` turns (a user and an assistant message of
~700 bytes each per turn) in a SQLite database under benchmarks/.data (kept for the next
run), then, in a fresh child process per mode, opens the store as the server does
(``AsyncEventStore``: worker threads, one SQLite connection each), resumes every session
(``get_state_at_head``, as a client opening it) and lets it go (``drop_caches``, what the
hub does when a session's last client leaves). RSS is read (``/proc/self/status``) fresh
(store open, one small session resumed) and after the last session was let go (after
waiting a moment for the background release).

Modes, interleaved over ``--rounds``:

* ``kept``: the caches are not dropped (only their byte budgets bound them);
* ``dropped``: ``drop_caches`` as the store does now (its caches, then the connections'
  page caches and the allocator's free memory, in a background thread);
* ``dropped-no-release``: ``drop_caches`` with the release switched off (the store before
  issue 29's second pass).

The goal: RSS after the resumes ≤ 1.2× the fresh process's (no session stays open).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

MODES = ("kept", "dropped", "dropped-no-release")


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def build(path: Path, sessions: int, turns: int) -> None:
    from _workload import message_stream

    from tron_events import EventStore

    store = EventStore.open(f"sqlite:///{path}")
    for i in range(sessions):
        s = store.create_session(working_directory=f"/work/p{i}", model="m", provider="p")
        items = message_stream(2 * turns, seed=100 + i)
        for k in range(0, len(items), 500):
            store.append_many(s.id, [{"type": t, "payload": p} for t, p in items[k : k + 500]])
        print(f"  built session {i + 1}/{sessions}", file=sys.stderr, flush=True)
    store.create_session(working_directory="/work/small", model="m", provider="p")
    store.close()


def child(path: Path, mode: str) -> None:
    import anyio

    from tron_events import AsyncEventStore, EventStore

    if mode == "dropped-no-release":
        EventStore._release_memory = lambda self: None  # type: ignore[method-assign]

    async def run() -> dict[str, float]:
        store = AsyncEventStore(
            await anyio.to_thread.run_sync(EventStore.open, f"sqlite:///{path}")
        )
        sessions = await store.list_sessions(limit=1000)
        small = [s for s in sessions if s.working_directory == "/work/small"]
        big = [s for s in sessions if s.working_directory != "/work/small"]
        await store.get_state_at_head(small[0].id)
        fresh = rss_mb()
        for s in big:
            state = await store.get_state_at_head(s.id)
            assert state.messages
            del state
            if mode != "kept":
                store.drop_caches([s.id])
        await anyio.sleep(1.0)  # the background release
        after = rss_mb()
        await store.aclose()
        return {"fresh_mb": fresh, "after_mb": after, "ratio": after / fresh}

    print(json.dumps(anyio.run(run)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", choices=MODES)
    parser.add_argument("--db", type=Path)
    args = parser.parse_args()
    if args.child:
        child(args.db, args.child)
        return
    db = HERE / ".data" / f"resume-{args.sessions}x{args.turns}.db"
    if not db.exists():
        db.parent.mkdir(exist_ok=True)
        tmp = db.with_suffix(".building")
        for p in tmp.parent.glob(tmp.name + "*"):
            p.unlink()
        print(f"building {db.name} ...", file=sys.stderr)
        build(tmp, args.sessions, args.turns)
        for suffix in ("-wal", "-shm"):
            Path(str(tmp) + suffix).unlink(missing_ok=True)
        tmp.rename(db)
    results: dict[str, list[dict[str, float]]] = {m: [] for m in MODES}
    loads = [os.getloadavg()[0]]
    for r in range(args.rounds):
        for mode in MODES[r % 3 :] + MODES[: r % 3]:
            out = subprocess.run(
                [sys.executable, __file__, "--child", mode, "--db", str(db)],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            results[mode].append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(f"round {r + 1} {mode}: {results[mode][-1]}", flush=True)
        loads.append(os.getloadavg()[0])
    print(f"\n{args.sessions} sessions x {args.turns} turns, medians of {args.rounds} rounds "
          f"(load {', '.join(f'{x:.1f}' for x in loads)}):")  # fmt: skip
    print("| mode | fresh RSS | after the resumes | after / fresh |")
    print("|---|---|---|---|")
    for mode in MODES:
        rows = results[mode]
        fresh = statistics.median(x["fresh_mb"] for x in rows)
        after = statistics.median(x["after_mb"] for x in rows)
        ratio = statistics.median(x["ratio"] for x in rows)
        print(f"| {mode} | {fresh:.0f} MB | {after:.0f} MB | {ratio:.2f}× |")


if __name__ == "__main__":
    main()
