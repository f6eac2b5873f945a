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

``--server``: the goal as the issue states it, on a real ``tron-server`` (a process of
its own on a copy of the database, its Anthropic provider a scripted model in this
process): "fresh" is the server's RSS (``/proc/PID/status``) after it answered one
message on the small session; then, for each big session, a client connects, resumes it
(``session.resume``), sends a message (the server builds the whole history and calls the
model), waits for ``agent.complete`` and leaves; "after" is the RSS once the last client
left (and the background release ran).
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
MODEL = "claude-sonnet-4-5"
WORK = HERE / ".data" / "resume-work"  # the sessions' working directories


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
        s = store.create_session(working_directory=str(WORK / f"p{i}"), model=MODEL,
                                 provider="anthropic")  # fmt: skip
        items = message_stream(2 * turns, seed=100 + i)
        for k in range(0, len(items), 500):
            store.append_many(s.id, [{"type": t, "payload": p} for t, p in items[k : k + 500]])
        print(f"  built session {i + 1}/{sessions}", file=sys.stderr, flush=True)
    store.create_session(working_directory=str(WORK / "small"), model=MODEL, provider="anthropic")
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
        small = [s for s in sessions if s.working_directory == str(WORK / "small")]
        big = [s for s in sessions if s.working_directory != str(WORK / "small")]
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


def _pid_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def server_round(db: Path) -> dict[str, float]:
    """One real server on a copy of ``db`` (see the module docstring, ``--server``)."""
    import shutil
    import signal
    import socket
    import tempfile
    import time
    import urllib.request

    import anyio
    from bench_peers import Model, serve_model

    from tron_server.client import TronClient

    with (
        tempfile.TemporaryDirectory(prefix="bench-resume-") as tmp,
        serve_model(Model(tools=0)) as url,
    ):
        copy = Path(tmp) / "events.db"
        shutil.copyfile(db, copy)
        home = Path(tmp) / "home"
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env = {**os.environ, "TRON_ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "bench"}
        log = Path(tmp) / "server.log"
        server = subprocess.Popen(
            [str(HERE.parent / ".venv" / "bin" / "tron-server"), "--home", str(home),
             "--port", str(port), "--database-url", f"sqlite:///{copy}",
             "--log-level", "warning"],
            env=env, stdout=subprocess.DEVNULL, stderr=log.open("wb"),
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 300
            while True:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
                    break
                except OSError:
                    if server.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(
                            f"tron-server did not start: {log.read_text()}"
                        ) from None
                    time.sleep(0.05)

            async def resume(sid: str) -> None:
                async with TronClient.from_home(home, url=f"ws://127.0.0.1:{port}/rpc") as c:
                    await c.call("session.resume", {"sessionId": sid})
                    ends = ["agent.complete", "agent.error"]
                    async with c.notifications(ends, session_id=sid) as done:
                        await c.call("agent.message", {"sessionId": sid, "content": "Go on."})
                        end = await done.next(timeout=300)
                    if end.method != "agent.complete":
                        raise RuntimeError(f"the run failed: {end.data}")

            async def run() -> dict[str, float]:
                async with TronClient.from_home(home, url=f"ws://127.0.0.1:{port}/rpc") as c:
                    listed = (await c.call("session.list", {"limit": 1000}))["sessions"]
                small = [s["id"] for s in listed if s["workingDirectory"] == str(WORK / "small")]
                big = [s["id"] for s in listed if s["workingDirectory"] != str(WORK / "small")]
                await resume(small[0])
                await anyio.sleep(1.0)
                fresh = _pid_rss_mb(server.pid)
                for sid in big:
                    await resume(sid)
                await anyio.sleep(2.0)  # the last client left: the background release
                after = _pid_rss_mb(server.pid)
                return {"fresh_mb": fresh, "after_mb": after, "ratio": after / fresh}

            return anyio.run(run)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", choices=MODES)
    parser.add_argument("--db", type=Path)
    parser.add_argument("--server", action="store_true", help="a real tron-server instead")
    args = parser.parse_args()
    if args.child:
        child(args.db, args.child)
        return
    db = HERE / ".data" / f"resume2-{args.sessions}x{args.turns}.db"
    for folder in ["small"] + [f"p{i}" for i in range(args.sessions)]:
        (WORK / folder).mkdir(parents=True, exist_ok=True)
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
    loads = [os.getloadavg()[0]]
    if args.server:
        runs = []
        for r in range(args.rounds):
            runs.append(server_round(db))
            print(f"round {r + 1} server: {runs[-1]}", flush=True)
            loads.append(os.getloadavg()[0])
        fresh = statistics.median(x["fresh_mb"] for x in runs)
        after = statistics.median(x["after_mb"] for x in runs)
        ratio = statistics.median(x["ratio"] for x in runs)
        print(f"\ntron-server, {args.sessions} sessions x {args.turns} turns resumed with a "
              f"message each, medians of {args.rounds} rounds "
              f"(load {', '.join(f'{x:.1f}' for x in loads)}):")  # fmt: skip
        print(f"| fresh RSS {fresh:.0f} MB | after {after:.0f} MB | after / fresh {ratio:.2f}× |")
        return
    results: dict[str, list[dict[str, float]]] = {m: [] for m in MODES}
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
