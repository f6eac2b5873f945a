"""Commit-to-delivery latency of live subscriptions, SQLite next to PostgreSQL.

    uv run python benchmarks/bench_subscribe.py [--events 400] [--pause 0.005]

For each backend, a subscriber (``AsyncEventStore.subscribe(session_id=…)``)
runs in this process while a writer appends ``--events`` events, one per
transaction, ``--pause`` seconds apart:

- in-process: the writer is a thread of this process (the store's in-process
  notifier wakes the subscriber);
- cross-process: the writer is another process (SQLite: the ``data_version``
  poller; PostgreSQL: LISTEN/NOTIFY).

Latency = the subscriber's receive time − the writer's time right after its
commit returned (``time.monotonic``, one clock for all processes on Linux).
Every event must arrive exactly once, in order.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import anyio
from _workload import machine, percentile
from bench_postgres import database

from tron_events import AsyncEventStore, EventStore


def write(url: str, session_id: str, n: int, pause: float, out: Any) -> None:
    """In a new process: append n events through a store of its own."""
    with EventStore.open(url, upgrade=False) as store:
        write_with(store, session_id, n, pause, out)


def write_with(store: EventStore, session_id: str, n: int, pause: float, out: Any) -> None:
    """Append n events; send (event id, monotonic time after commit) for each."""
    for i in range(n):
        e = store.append(session_id, "message.user", {"content": f"latency probe {i}"})
        out.put((e.id, time.monotonic()))
        time.sleep(pause)
    out.put(None)


async def measure(url: str, n: int, pause: float, cross_process: bool) -> list[float]:
    store = EventStore.open(url, upgrade=False)
    astore = AsyncEventStore(store)
    s = store.create_session(working_directory="/bench/subscribe", model="m", provider="p")
    received: dict[str, float] = {}
    order: list[str] = []
    it = astore.subscribe(session_id=s.id, after=s.root_event_id, poll_interval=5.0)
    if cross_process:
        ctx = multiprocessing.get_context("spawn")
        queue: Any = ctx.Queue()
        writer: Any = ctx.Process(target=write, args=(url, s.id, n, pause, queue))
    else:
        import queue as queue_module

        queue = queue_module.Queue()
        # The same store, as a server's request handlers and subscribers share one.
        writer = threading.Thread(target=write_with, args=(store, s.id, n, pause, queue))
    writer.start()
    with anyio.fail_after(120):
        async for event in it:
            received[event.id] = time.monotonic()
            order.append(event.id)
            if len(order) == n:
                break
    writer.join()
    committed: dict[str, float] = {}
    while (item := queue.get()) is not None:
        committed[item[0]] = item[1]
    assert list(committed) == order, "events lost, repeated or out of order"
    await astore.aclose()
    return [received[i] - committed[i] for i in order]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=400)
    parser.add_argument("--pause", type=float, default=0.005)
    args = parser.parse_args()
    print(f"# subscriptions — {machine()}\n")
    print("| backend | writer | events | p50 | p99 | max |")
    print("|---|---|---|---|---|---|")
    for backend in ("sqlite", "postgres"):
        for cross in (False, True):
            with database(backend) as url:
                lat = anyio.run(measure, url, args.events, args.pause, cross)
            where = "another process" if cross else "same process"
            print(
                f"| {backend} | {where} | {len(lat)} | {percentile(lat, 0.50) * 1000:.2f} ms "
                f"| {percentile(lat, 0.99) * 1000:.2f} ms | {max(lat) * 1000:.2f} ms |"
            )


if __name__ == "__main__":
    main()
