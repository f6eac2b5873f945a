"""Benchmarks of sub-agents (the Task tool) over a real tron-server, against floors and
peers measured in the same run.

    uv run python benchmarks/bench_subagents.py all        # both, SQLite and PostgreSQL
    uv run python benchmarks/bench_subagents.py spawn      # Task call → child's first LLM request
    uv run python benchmarks/bench_subagents.py parallel   # 8 children at once, chains checked
    uv run python benchmarks/bench_subagents.py abort      # parent abort → child's processes gone

Every subcommand takes ``--help``. The server is started as a user starts it
(``python -m tron_server --home <temp> --port <free port>``, see ``bench_server.py``),
with the scripted LLM (Anthropic SSE wire format) served in this process; times are
``time.perf_counter`` (``CLOCK_MONOTONIC``: one clock for all processes).

- ``spawn``: each message makes the parent call Task once; the child answers at once.
  Latency = the child's first request reaching the LLM − the parent's reply (with the Task
  call) leaving the LLM: the parent records its reply and the ``tool.call``, runs the
  PreToolUse hooks, creates the child session, records ``subagent.spawned``, and the child
  starts its turn (history, system prompt, rules) and calls the LLM. Peer in the same run
  and server: a user's plain turn, ``agent.message`` sent → its LLM request arriving.
  Floor: the store work a spawn cannot avoid (create the child, append
  ``subagent.spawned`` to the parent, append the child's ``message.user`` +
  ``stream.turn_start``) through ``AsyncEventStore`` in this process.
- ``parallel``: one message makes the parent call Task 8 times; each child runs three
  LLM turns (Bash, then Read, then its report; streamed replies) — 8 sessions appending at
  once. Contenders, alternating per round: a server with ``TRON_SUBAGENT_MAX_PARALLEL=8``
  and one with ``=1`` (the same work one child at a time), on SQLite and on PostgreSQL.
  Afterwards every session's chain is checked whole in the database (sequences 0..n-1,
  each event's parent the one before, the head the last event, a provider-valid history),
  every Task result must be a success, and the server logs must not contain "database is
  locked".
- ``abort``: the child runs a Bash command that starts two ``sleep`` processes (one in a
  subshell); once both are running, the client aborts the **parent**. Time = ``agent.abort``
  sent → the last of those processes gone (polled every 2 ms with ``kill(pid, 0)``; a zombie
  counts as gone). Peer in the same run: the same command in a top-level session, aborted
  directly (the Bash tool's own process-group kill, no sub-agent in between).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
for _p in (str(ROOT), str(BENCH_DIR)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from bench_server import (  # noqa: E402
    git_state,
    llm_env,
    log,
    machine,
    med,
    ms,
    pct,
    rotated,
    timed_llm,
    tron_server,
)

from tests.support.scripted_llm import Response, Text, ToolUse  # noqa: E402
from tron_server.client import TronClient  # noqa: E402

CHILDREN = 8


def first_user_text(body: dict[str, Any]) -> str:
    for message in body.get("messages", []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return " ".join(b.get("text", "") for b in content if b.get("type") == "text")
    return ""


class Router:
    """A scripted-LLM item answering each request by the conversation it belongs to."""

    def __init__(self) -> None:
        self.queues: dict[str, list[Response]] = {}

    def add(self, key: str, *responses: Response) -> int:
        self.queues.setdefault(key, []).extend(responses)
        return len(responses)

    def __call__(self, body: dict[str, Any]) -> Response:
        text = first_user_text(body)
        for key, queue in self.queues.items():
            if text.startswith(key) and queue:
                return queue.pop(0)
        return Response(status=400, error_type="invalid_request_error", message=f"no reply: {text}")


def task(prompt: str, i: int) -> ToolUse:
    return ToolUse("Task", {"description": f"part {i}", "prompt": prompt}, id=f"toolu_task_{i}")


async def new_session(client: TronClient, workdir: Path) -> str:
    workdir.mkdir(parents=True, exist_ok=True)
    s = await client.call("session.create", {"workingDirectory": str(workdir)})
    sid: str = s["id"]
    return sid


# =============================================================================================
# spawn: Task call → the child's first LLM request
# =============================================================================================


async def store_floor(url: str, workdir: Path, n: int) -> list[float]:
    """The appends a spawn needs, through AsyncEventStore in this process."""
    from tron_events import AsyncEventStore

    out: list[float] = []
    async with await AsyncEventStore.open(url) as store:
        parent = await store.create_session(
            working_directory=str(workdir), model="m", provider="anthropic"
        )
        for i in range(n + 3):
            t0 = time.perf_counter()
            child = await store.create_session(
                working_directory=str(workdir), model="m", provider="anthropic",
                parent_session_id=parent.id, spawn={"parentToolCallId": f"t{i}"},
            )  # fmt: skip
            await store.append(
                parent.id,
                "subagent.spawned",
                {"childSessionId": child.id, "toolCallId": f"t{i}", "subagentType": "gp"},
            )
            await store.append_many(
                child.id,
                [
                    {"type": "message.user", "payload": {"content": "go", "turn": 1}},
                    {"type": "stream.turn_start", "payload": {"turn": 1}},
                ],
                expected_head=child.head_event_id,
            )
            if i >= 3:  # warm-up
                out.append(time.perf_counter() - t0)
    return out


async def bench_spawn(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    names = ["spawn", "plain_turn", "store_floor"]
    samples: dict[str, list[list[float]]] = {n: [] for n in names}
    async with (
        timed_llm() as (llm, times),
        tron_server(tmp / "home", env=llm_env(llm)) as server,
        TronClient.connect(server.ws_url, token=server.token) as client,
    ):
        router = Router()

        async def spawns(n: int, label: str) -> list[float]:
            parent = await new_session(client, tmp / f"work-{label}")
            out = []
            for i in range(n):
                llm.add(router, router, router)
                router.add("PARENT", Response([task(f"CHILD {i}: say hi", i)]),
                           Response([Text("done")]))  # fmt: skip
                router.add(f"CHILD {i}:", Response([Text("hi")]))
                before = len(times.spans)
                done = await client.send_message_and_wait(parent, f"PARENT {i}: delegate")
                if done["stopReason"] != "end_turn":
                    raise AssertionError(f"spawn {i} ended with {done}")
                spans = times.spans[before:]
                out.append(spans[1][0] - spans[0][1])  # child request - parent reply end
            return out

        async def plain_turns(n: int, label: str) -> list[float]:
            sid = await new_session(client, tmp / f"plain-{label}")
            out = []
            for _ in range(n):
                llm.add(Response([Text("ok")]))
                before = len(times.spans)
                async with client.notifications(["agent.complete"], session_id=sid) as done:
                    t0 = time.perf_counter()
                    await client.call("agent.message", {"sessionId": sid, "content": "hello"})
                    await done.next(timeout=60)
                out.append(times.spans[before][0] - t0)
            return out

        await spawns(3, "warmup")  # imports, the adapter, the price table
        await plain_turns(3, "warmup")
        for r in range(args.rounds):
            for name in rotated(names, r):
                if name == "spawn":
                    samples[name].append(await spawns(args.spawns, f"r{r}"))
                elif name == "plain_turn":
                    samples[name].append(await plain_turns(args.spawns, f"r{r}"))
                else:
                    url = f"sqlite:///{tmp / f'floor-{r}.db'}"
                    samples[name].append(await store_floor(url, tmp / "floor", args.spawns))
            log(
                f"  round {r + 1}: "
                + ", ".join(f"{n} p50 {ms(pct(x[-1], 0.5))}" for n, x in samples.items())
            )

    def per_round(name: str, p: float) -> list[float]:
        return [pct(xs, p) for xs in samples[name]]

    def ratio(a: str, b: str) -> float:
        return med([x / y for x, y in zip(per_round(a, 0.5), per_round(b, 0.5), strict=True)])

    result = {
        "spawns_per_round": args.spawns,
        "rounds": args.rounds,
        "latency_s": {
            n: {"p50": med(per_round(n, 0.5)), "p90": med(per_round(n, 0.9))} for n in names
        },
        "spawn_all_p50_s": pct([x for xs in samples["spawn"] for x in xs], 0.5),
        "ratio_p50_spawn_to_plain_turn": ratio("spawn", "plain_turn"),
        "ratio_p50_spawn_to_store_floor": ratio("spawn", "store_floor"),
    }
    log("\n  Task call → child's first LLM request (goal ≤ 20 ms p50)")
    for n in names:
        lat = result["latency_s"][n]  # type: ignore[index]
        log(f"  {n:12} p50 {ms(lat['p50'])}  p90 {ms(lat['p90'])}")
    log(f"  spawn / plain turn p50: {result['ratio_p50_spawn_to_plain_turn']:.2f}x")
    log(f"  spawn / store floor p50: {result['ratio_p50_spawn_to_store_floor']:.2f}x")
    return result


# =============================================================================================
# parallel: 8 children at once, every chain whole
# =============================================================================================


def check_chains(url: str, parents: list[str]) -> dict[str, Any]:
    """Every parent and child session's events form one whole chain; histories valid."""
    from tron_events import EventStore
    from tron_events.validate import validate_history

    sessions = events = 0
    with EventStore.open(url) as store:
        for parent in parents:
            family = [store.get_session(parent), *store.get_descendant_sessions(parent)]
            if len(family) != CHILDREN + 1:
                raise AssertionError(f"{parent}: {len(family) - 1} children, not {CHILDREN}")
            for s in family:
                evs = store.get_events(s.id)
                if [e.sequence for e in evs] != list(range(len(evs))):
                    raise AssertionError(f"{s.id}: sequences have a gap")
                for before, after in itertools.pairwise(evs):
                    if after.parent_id != before.id:
                        raise AssertionError(f"{s.id}: {after.id} does not follow {before.id}")
                if s.head_event_id != evs[-1].id:
                    raise AssertionError(f"{s.id}: the head is not the last event")
                if violations := validate_history(store.get_messages_at(s.head_event_id)):
                    raise AssertionError(f"{s.id}: invalid history {violations}")
                sessions += 1
                events += len(evs)
            results = [e for e in store.get_events(parent) if e.type == "tool.result"]
            if len(results) != CHILDREN or any(e.payload["isError"] for e in results):
                raise AssertionError(f"{parent}: Task results {[e.payload for e in results]}")
    return {"sessions": sessions, "events": events}


async def bench_parallel_on(
    args: argparse.Namespace, tmp: Path, backend: str, url: str
) -> dict[str, Any]:
    names = ["parallel_8", "serial_1"]
    walls: dict[str, list[float]] = {n: [] for n in names}
    parents: list[str] = []
    env_base = {"TRON_DATABASE_URL": url}
    workdir = tmp / f"work-{backend}"
    workdir.mkdir()
    (workdir / "notes.txt").write_text("some notes for the children to read\n" * 20)
    async with timed_llm() as (llm, _times):
        router = Router()
        env = {**llm_env(llm), **env_base}
        async with (
            tron_server(tmp / f"home-{backend}-8", env={**env, "TRON_SUBAGENT_MAX_PARALLEL": "8"})
            as fast,
            tron_server(tmp / f"home-{backend}-1", env={**env, "TRON_SUBAGENT_MAX_PARALLEL": "1"})
            as slow,
            TronClient.connect(fast.ws_url, token=fast.token) as c8,
            TronClient.connect(slow.ws_url, token=slow.token) as c1,
        ):  # fmt: skip

            async def family(client: TronClient, tag: str) -> float:
                parent = await new_session(client, workdir)
                parents.append(parent)
                calls = [task(f"KID {tag}-{i}: look around", i) for i in range(CHILDREN)]
                n = router.add(f"BOSS {tag}", Response(calls),
                               Response([Text("All eight reported.")]))  # fmt: skip
                for i in range(CHILDREN):
                    n += router.add(
                        f"KID {tag}-{i}:",
                        Response([ToolUse("Bash", {"command": f"echo child {i}; ls"})],
                                 delay=0.005),
                        Response([ToolUse("Read", {"file_path": "notes.txt"})], delay=0.005),
                        Response([Text(f"Child {i} reports: " + "fine " * 40)], delay=0.002),
                    )  # fmt: skip
                llm.add(*[router] * n)
                t0 = time.perf_counter()
                done = await client.send_message_and_wait(parent, f"BOSS {tag}: split it up")
                wall = time.perf_counter() - t0
                if done["stopReason"] != "end_turn":
                    raise AssertionError(f"{tag}: {done}")
                return wall

            await family(c8, "warm8")
            await family(c1, "warm1")
            for r in range(args.rounds):
                for name in rotated(names, r):
                    client = c8 if name == "parallel_8" else c1
                    walls[name].append(await family(client, f"{name}-{r}"))
                log(
                    f"  {backend} round {r + 1}: "
                    + ", ".join(f"{n} {ms(w[-1])}" for n, w in walls.items())
                )
    locked = [
        p.name
        for p in tmp.glob(f"home-{backend}-*/server.log")
        if "database is locked" in p.read_text(errors="replace")
    ]
    if locked:
        raise AssertionError(f"'database is locked' in {locked}")
    checked = check_chains(url, parents)
    ratio = med([s / p for p, s in zip(walls["parallel_8"], walls["serial_1"], strict=True)])
    result = {
        "wall_s": {n: med(w) for n, w in walls.items()},
        "speedup_parallel_over_serial": ratio,
        "chains_checked": checked,
        "database_is_locked": 0,
    }
    log(
        f"  {backend}: 8 children in parallel {ms(result['wall_s']['parallel_8'])}, "  # type: ignore[index]
        f"one at a time {ms(result['wall_s']['serial_1'])} → {ratio:.2f}x faster; "  # type: ignore[index]
        f"{checked['sessions']} sessions / {checked['events']} events whole; "
        "no 'database is locked'"
    )
    return result


async def bench_parallel(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    from tests.support import pg

    results: dict[str, Any] = {}
    if "sqlite" in args.backends:
        url = f"sqlite:///{tmp / 'parallel.db'}"
        results["sqlite"] = await bench_parallel_on(args, tmp, "sqlite", url)
    if "postgres" in args.backends:
        reason = pg.unavailable_reason()
        if reason:
            log(f"  postgres skipped: {reason}")
            results["postgres"] = {"skipped": reason}
        else:
            name = pg.create_database(prefix="tron_bench_subagents")
            try:
                results["postgres"] = await bench_parallel_on(
                    args, tmp, "postgres", pg.url_for(name)
                )
            finally:
                pg.drop_database(name)
    return results


# =============================================================================================
# abort: the parent's abort → every process of the child gone
# =============================================================================================


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[-1][:1] != "Z"
    except OSError:
        return False


async def bench_abort(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    names = ["via_parent", "direct"]
    samples: dict[str, list[float]] = {n: [] for n in names}
    async with (
        timed_llm() as (llm, _times),
        tron_server(tmp / "home", env=llm_env(llm)) as server,
        TronClient.connect(server.ws_url, token=server.token) as client,
    ):
        router = Router()

        async def once(name: str, r: int) -> float:
            workdir = tmp / f"abort-{name}-{r}"
            pids = workdir / "pids"
            command = f"sleep 300 & echo $! >> {pids}; (sleep 300 & echo $! >> {pids}; wait) & wait"
            sid = await new_session(client, workdir)
            if name == "via_parent":
                llm.add(router, router)
                router.add(f"BOSS {r}", Response([task(f"KID {r}: run it", 0)]))
                router.add(f"KID {r}:", Response([ToolUse("Bash", {"command": command})]))
                prompt = f"BOSS {r}: go"
            else:
                llm.add(Response([ToolUse("Bash", {"command": command})]))
                prompt = "run it"
            async with client.notifications(["agent.complete"], session_id=sid) as done:
                await client.call("agent.message", {"sessionId": sid, "content": prompt})
                deadline = time.monotonic() + 30
                while not pids.exists() or len(pids.read_text().split()) < 2:
                    if time.monotonic() > deadline:
                        raise TimeoutError("the child's processes did not start")
                    await asyncio.sleep(0.005)
                running = [int(p) for p in pids.read_text().split()]
                t0 = time.perf_counter()
                await client.call("agent.abort", {"sessionId": sid})
                while any(_alive(p) for p in running):
                    if time.perf_counter() - t0 > 30:
                        raise AssertionError(f"processes {running} survived the abort")
                    await asyncio.sleep(0.002)
                elapsed = time.perf_counter() - t0
                await done.next(timeout=30)
            return elapsed

        await once("via_parent", -1)
        await once("direct", -1)
        for r in range(args.rounds):
            for name in rotated(names, r):
                samples[name].append(await once(name, r))
            log(f"  round {r + 1}: " + ", ".join(f"{n} {ms(x[-1])}" for n, x in samples.items()))
    result = {n: {"p50": pct(x, 0.5), "max": max(x), "n": len(x)} for n, x in samples.items()}
    log("\n  abort sent → every process of the child gone (goal ≤ 1 s)")
    for n in names:
        log(f"  {n:11} p50 {ms(result[n]['p50'])}  max {ms(result[n]['max'])}")
    return result


# =============================================================================================


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Sub-agent benchmarks over a real tron-server (see the module docstring)."
    )
    sub = parser.add_subparsers(dest="cmd", required=True, metavar="{spawn,parallel,abort,all}")

    def spawn_opts(p: argparse.ArgumentParser) -> None:
        p.add_argument("--spawns", type=int, default=20, help="Task calls per round (20)")

    def parallel_opts(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--backends", nargs="+", default=["sqlite", "postgres"],
            choices=["sqlite", "postgres"], help="databases to run on (both)",
        )  # fmt: skip

    for name, help_text, rounds in [
        ("spawn", "Task call → the child's first LLM request", 5),
        ("parallel", "8 children at once on SQLite and PostgreSQL", 3),
        ("abort", "the parent's abort → the child's processes gone", 10),
        ("all", "spawn, parallel, abort", 3),
    ]:
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--rounds", type=int, default=rounds, help=f"rounds ({rounds})")
        p.add_argument("--json", type=Path, help="also write the results as JSON here")
        if name in ("spawn", "all"):
            spawn_opts(p)
        if name in ("parallel", "all"):
            parallel_opts(p)
    return parser


async def run(args: argparse.Namespace) -> dict[str, Any]:
    benches = {"spawn": bench_spawn, "parallel": bench_parallel, "abort": bench_abort}
    chosen = list(benches) if args.cmd == "all" else [args.cmd]
    results: dict[str, Any] = {"machine": machine(), "command": " ".join(sys.argv)}
    log(f"{results['machine']}\n{git_state()}")
    for name in chosen:
        with tempfile.TemporaryDirectory(prefix=f"bench-subagents-{name}-") as tmp:
            log(f"\n== {name} ==")
            t0 = time.perf_counter()
            results[name] = await benches[name](args, Path(tmp))
            log(f"({name} took {time.perf_counter() - t0:.0f} s)")
    results["machine_after"] = machine()
    log(f"\n{results['machine_after']}")
    return results


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    results = asyncio.run(run(args))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
