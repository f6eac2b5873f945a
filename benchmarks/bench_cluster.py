"""Several tron-servers on one PostgreSQL database: notification latency (relayed next to
local, in the same run), turns per second, and failover time.

    uv run python benchmarks/bench_cluster.py [--servers 1,2,3] [--clients 30] [--sessions 10]
        [--seconds 20] [--kills 20] [--lease 6]

For each server count N: a fresh database, N ``tron-server`` processes (the same
token), one scripted model (Anthropic's wire format, served from this process) whose
replies stream 12 text deltas ~20 ms apart. ``--clients`` clients per server, each
subscribed to every one of ``--sessions`` sessions; session k's messages go through
server k mod N, which runs it. For ``--seconds`` every session runs turn after turn.

- **latency**: for every ``agent.text_delta`` a client receives, now minus the
  notification's ``timestamp`` (set by the owner when it published, millisecond
  resolution, one clock: one machine); *local* when the client is connected to the
  owner, *relayed* when it goes through PostgreSQL to another server first.
- **turns/s**: turns completed by all sessions / seconds.
- **failover** (with 3 servers, ``--kills`` times): a session's turn hangs on its owner;
  kill -9 of the owner; time until a client of another server gets ``agent.complete``
  (interrupted) — the lease time (``--lease``) plus a sweep plus the recording. The
  killed server is started again in the background while the next kill is measured.

Prints a Markdown table (and the raw figures with ``--json``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.cluster.conftest import TOKEN, Server, start_servers  # noqa: E402
from tests.support import pg  # noqa: E402
from tests.support.scripted_llm import Response, Text, scripted_llm_thread  # noqa: E402
from tron_server.client import TronClient  # noqa: E402

REPLY = " ".join(f"word{i}" for i in range(12))


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def received_ms(timestamp: str) -> float:
    sent = datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
    return (time.time() - sent) * 1000


async def measure(
    servers: list[Server], clients_per: int, sessions: int, seconds: float
) -> dict[str, Any]:
    n = len(servers)
    owner_of: dict[str, str] = {}
    latency: dict[str, list[float]] = {"local": [], "relayed": []}
    completes = 0
    async with contextlib.AsyncExitStack() as stack:
        clients: list[tuple[str, TronClient]] = []
        for server in servers:
            for _ in range(clients_per):
                client = await stack.enter_async_context(
                    TronClient.connect(server.url, token=TOKEN)
                )
                clients.append((server.name, client))
        work = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
        sids: list[str] = []
        first = clients[0][1]
        for k in range(sessions):
            created = await first.call("session.create", {"workingDirectory": str(work)})
            sids.append(created["id"])
            owner_of[created["id"]] = servers[k % n].name
        await asyncio.gather(*(c.subscribe(sid) for _, c in clients for sid in sids))
        senders = {s.name: c for s_name, c in clients for s in servers if s.name == s_name}
        stop = time.monotonic() + seconds
        done_events: dict[str, asyncio.Event] = {sid: asyncio.Event() for sid in sids}

        async def listen(name: str, client: TronClient) -> None:
            nonlocal completes
            stream = client.notifications()
            while True:
                note = await stream.next()
                if note.method == "agent.text_delta":
                    kind = "local" if owner_of.get(note.session_id or "") == name else "relayed"
                    latency[kind].append(received_ms(note.timestamp))
                elif (
                    note.method == "agent.complete"
                    and name == owner_of.get(note.session_id or "")
                    and client is senders[name]
                ):
                    completes += 1
                    done_events[note.session_id or ""].set()

        listeners = [asyncio.create_task(listen(name, c)) for name, c in clients]

        async def drive(sid: str) -> None:
            sender = senders[owner_of[sid]]
            while time.monotonic() < stop:
                done_events[sid].clear()
                await sender.call("agent.message", {"sessionId": sid, "prompt": "go"})
                await asyncio.wait_for(done_events[sid].wait(), 120)

        started = time.monotonic()
        await asyncio.gather(*(drive(sid) for sid in sids))
        elapsed = time.monotonic() - started
        await asyncio.sleep(1.0)
        for task in listeners:
            task.cancel()
    return {
        "servers": n,
        "clients": clients_per * n,
        "turns_per_s": completes / elapsed,
        "turns": completes,
        "local_p50": percentile(latency["local"], 0.5),
        "local_p99": percentile(latency["local"], 0.99),
        "relayed_p50": percentile(latency["relayed"], 0.5),
        "relayed_p99": percentile(latency["relayed"], 0.99),
        "local_n": len(latency["local"]),
        "relayed_n": len(latency["relayed"]),
    }


async def failover(servers: list[Server], kills: int, llm: Any) -> list[float]:
    times: list[float] = []
    work = Path(tempfile.mkdtemp(prefix="bench-failover-"))
    for i in range(kills):
        victim, watcher = servers[i % 3], servers[(i + 1) % 3]
        for server in (victim, watcher):  # the one killed last may still be starting
            await asyncio.to_thread(server.wait_ready, 120)
        llm.add(Response([Text("hanging")], hang=True))
        async with TronClient.connect(watcher.url, token=TOKEN) as cw:
            created = await cw.call("session.create", {"workingDirectory": str(work)})
            sid = created["id"]
            await cw.subscribe(sid)
            stream = cw.notifications(session_id=sid)
            async with TronClient.connect(victim.url, token=TOKEN) as cv:
                await cv.call("agent.message", {"sessionId": sid, "prompt": "hang"})
                while (await stream.next(timeout=60)).method != "agent.text_delta":
                    pass
                victim.kill()
                killed = time.monotonic()
            while True:
                note = await stream.next(timeout=120)
                if note.method == "agent.complete":
                    times.append(time.monotonic() - killed)
                    break
        victim.start()  # ready again before its next turn
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--servers", default="1,2,3")
    parser.add_argument("--clients", type=int, default=30)
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--lease", type=float, default=6.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    reason = pg.unavailable_reason()
    if reason:
        sys.exit(f"bench_cluster: {reason}")
    from tron_events import migrate

    rows: list[dict[str, Any]] = []
    failovers: list[float] = []
    counts = [int(x) for x in args.servers.split(",")]
    reply = Response([Text(REPLY)], delay=0.02)
    for n in counts:
        with tempfile.TemporaryDirectory() as tmp, pg.fresh_database() as url, \
                scripted_llm_thread() as llm:  # fmt: skip
            llm.add(*[reply] * 100_000)
            migrate.upgrade(url)
            servers = start_servers(Path(tmp), url, llm.base_url, count=n,
                                    TRON_CLUSTER_LEASE_SECONDS=str(args.lease))  # fmt: skip
            try:
                rows.append(asyncio.run(measure(servers, args.clients, args.sessions,
                                                args.seconds)))  # fmt: skip
                print(rows[-1], file=sys.stderr, flush=True)
                if n == 3 and args.kills:
                    with llm._lock:  # the rest of the turns' replies: unused
                        llm._position, llm._served_of_current = len(llm.script), 0
                    failovers = asyncio.run(failover(servers, args.kills, llm))
            finally:
                for server in servers:
                    server.stop()
    load = os.getloadavg()
    print(f"load average at the end: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; "
          f"{os.cpu_count()} CPUs")  # fmt: skip
    print()
    print(
        "| servers | clients | turns/s | local p50 / p99 ms | relayed p50 / p99 ms "
        "| deltas local / relayed |"
    )
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['servers']} | {r['clients']} | {r['turns_per_s']:.1f} | "
              f"{r['local_p50']:.0f} / {r['local_p99']:.0f} | "
              f"{r['relayed_p50']:.0f} / {r['relayed_p99']:.0f} | "
              f"{r['local_n']:,} / {r['relayed_n']:,} |")  # fmt: skip
    if failovers:
        print()
        print(f"failover over {len(failovers)} kills (lease {args.lease:g} s): "
              f"min {min(failovers):.1f} s, p50 {percentile(failovers, 0.5):.1f} s, "
              f"p90 {percentile(failovers, 0.9):.1f} s, max {max(failovers):.1f} s")  # fmt: skip
        print("all: " + ", ".join(f"{t:.1f}" for t in failovers))
    if args.json:
        print(json.dumps({"rows": rows, "failover_s": failovers}))


if __name__ == "__main__":
    main()
