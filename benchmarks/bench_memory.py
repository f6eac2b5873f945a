"""What memory costs at a session's start: reading the workspace's recent handoffs (one
indexed read per recently active session), counting the lessons and ranking the handoffs
for the first prompt (one full-text search per keyword). It runs once per session, never
per turn.

    uv run python benchmarks/bench_memory.py                        # SQLite in a temp dir
    uv run python benchmarks/bench_memory.py --database-url postgresql+psycopg://postgres@127.0.0.1/bench_memory
    uv run python benchmarks/bench_memory.py --sessions 200 --events 500 --rounds 7

A PostgreSQL database given must exist and be empty (it is filled). Prints the median of
the rounds (interleaved with nothing: one contender), with the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from tron_events import AsyncEventStore, EventStore
from tron_server.memory import collect_lessons, compose, recent_handoffs, relevant_handoffs
from tron_server.memory.loader import MAX_HANDOFFS

PROMPT = "continue the quokka port and fix the numbat tests please"


def build(url: str, sessions: int, events: int) -> None:
    store = EventStore.open(url)
    try:
        for i in range(sessions):
            session = store.create_session(working_directory="/w", model="m", provider="anthropic")
            drafts = [
                {"type": "message.user",
                 "payload": {"content": f"prompt {i} {j} lorem ipsum dolor", "turn": j}}
                for j in range(events)
            ]  # fmt: skip
            store.append_many(session.id, drafts)
            store.append(
                session.id,
                "memory.handoff",
                {"summary": f"handoff {i}: ported part of the quokka parser",
                 "patterns": ["run the tests first", f"lesson {i % 7}"]},
            )  # fmt: skip
        if url.startswith("postgresql"):
            # As autovacuum would have by now: fresh statistics (without them the planner
            # takes a workspace for 174 rows and walks all of it for every search).
            with store.recorder.write() as cur:
                cur.execute("ANALYZE")
    finally:
        store.close()


async def measure(url: str, rounds: int) -> tuple[float, int]:
    store = await AsyncEventStore.open(url)
    try:
        [session] = await store.list_sessions(limit=1)
        times: list[float] = []
        found = 0
        for _ in range(rounds):
            started = time.perf_counter()
            recent = await recent_handoffs(store, session.workspace_id)
            lessons = collect_lessons(recent)
            handoffs = await relevant_handoffs(
                store, session.workspace_id, PROMPT, limit=MAX_HANDOFFS, recent=recent
            )
            compose(working_directory=Path("/w"), lessons=lessons, handoffs=handoffs)
            times.append(time.perf_counter() - started)
            found = len(recent)
        return statistics.median(times), found
    finally:
        await store.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", help="an empty database (default: SQLite in a temp dir)")
    parser.add_argument("--sessions", type=int, default=200, help="sessions in the workspace")
    parser.add_argument("--events", type=int, default=500, help="events in each session")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = args.database_url or f"sqlite:///{folder}/memory.db"
        build(url, args.sessions, args.events)
        median, found = asyncio.run(measure(url, args.rounds))
    load = os.getloadavg()[0]
    print(
        f"memory at session start: {median * 1000:.0f} ms median of {args.rounds} "
        f"({args.sessions} sessions x {args.events} events, {found} handoffs read; "
        f"{url.split(':', 1)[0]}; load average {load:.1f})"
    )


if __name__ == "__main__":
    main()
