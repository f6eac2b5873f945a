"""Benchmarks of tron-server over real sockets, each against a floor measured in the same run.

    uv run python benchmarks/bench_server.py all          # everything, ~3.5 min
    uv run python benchmarks/bench_server.py sync         # events.sync throughput to one client
    uv run python benchmarks/bench_server.py fanout       # text-delta fan-out to 50 clients
    uv run python benchmarks/bench_server.py turn         # server overhead per turn (no LLM)
    uv run python benchmarks/bench_server.py pressure     # memory and others' ping under
                                                          # clients that never read, and a sync

Every subcommand takes ``--help`` (``--rounds``, sizes, ``--profile DIR``, ``--json PATH``).

The server is the real one, started as a subprocess exactly as a user starts it
(``python -m tron_server --home <temp> --port <free port>``; default log level,
SQLite under the temp home), and stopped with SIGINT. Clients connect with the
token from ``<home>/server-token``. The scripted LLM (``tests/support/scripted_llm.py``,
the Anthropic SSE wire format) runs in this benchmark process; the clients of
``fanout`` and ``turn`` run in a third process so that neither the server's nor
the LLM's event loop queues behind them. Times are ``time.perf_counter``, which
is ``CLOCK_MONOTONIC`` on Linux: one clock for all processes.

In each round every contender runs once, in an order rotated from round to round;
figures are medians over rounds, and a ratio is the median of per-round ratios.

- ``sync``: a session of ``--events`` realistic events (user and assistant messages,
  tool calls and results of realistic sizes) is written with ``tron_events`` into
  the server's database before it starts. One WebSocket client reads it all with
  ``events.sync`` pages of 10,000 (the largest the server allows) and of 1,000 (the
  default, what ``TronClient.sync`` asks for), offering permessage-deflate as
  ``TronClient`` and browsers do, and once more without it. Floor: the same
  ``get_since`` pages straight from ``tron_events.EventStore`` in this process (and,
  for information, the same plus ``Event.to_dict`` and ``orjson.dumps``, or plus
  the stored payload JSON spliced in as an ``orjson.Fragment``).
- ``fanout``: ``--clients`` connections subscribe to one session; one of them sends
  ``agent.message``; the scripted LLM streams ``--chunks`` text deltas ``--delay``
  seconds apart, each carrying its index. Latency = the client's receive time of
  ``agent.text_delta`` i - the time the LLM handed chunk i to its socket. Peer: a
  bare ``websockets`` server (another subprocess) that reads the same LLM stream
  with httpx and sends each delta with ``websockets.broadcast``, as the same
  JSON-RPC frame, to the same client process. Both run with clients that offer
  permessage-deflate (the default everywhere) and with clients that do not.
- ``pressure``: the server's RSS (sampled every 100 ms) and another client's
  ``system.ping`` round trips (from a separate process, every 10 ms) while
  ``--non-readers`` clients send ``events.sync`` requests for 10,000-event pages and
  never read, after they have left, and while one client syncs the whole session.
  ``--server-src DIR`` runs the server from another checkout (e.g. ``git archive``
  of an older commit) to compare before and after in the same session.
- ``turn``: ``--turns`` sequential one-turn messages (a short scripted reply);
  overhead = (``agent.message`` sent -> ``agent.complete`` received) minus the
  LLM's own time (its request -> last byte), split into before and after the LLM.
  Floors: the same four events (``message.user``, ``stream.turn_start``,
  ``message.assistant``, ``stream.turn_end``) appended with ``expected_head``
  through ``AsyncEventStore`` in this process; for information, the store work a
  turn does (the same appends plus the runtime's reads) and the Anthropic adapter
  alone against the same LLM (its time minus the LLM's).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import re
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import (
    AsyncIterator,
    Callable,
    Coroutine,
    Iterator,
    MutableMapping,
    Sequence,
)
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from tron_server.client import SYNC_PAGE, decode_frame

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
for _p in (str(ROOT), str(BENCH_DIR)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

if TYPE_CHECKING:
    from websockets.asyncio.client import ClientConnection

    from tests.support.scripted_llm import ScriptedLLM
    from tron_events import EventStore

SCRIPT = str(Path(__file__).resolve())
MODEL = "claude-sonnet-4-5"
SYNC_MAX_PAGE = 10_000  # EventsSyncParams.limit's maximum (tron_server/methods/events.py)
SYNC_DEFAULT_PAGE = 1_000  # EventsSyncParams.limit's default
START_TIMEOUT = 60.0
TEXT_DELTA_INDEX = re.compile(rb'"text_delta","text":"\s*w(\d+)')

Scope = MutableMapping[str, Any]
Receive = Callable[[], Any]
Send = Callable[[MutableMapping[str, Any]], Any]


# -- statistics and output ------------------------------------------------------------------


def pct(xs: Sequence[float], p: float) -> float:
    """The ``p`` quantile (0..1) with linear interpolation."""
    s = sorted(xs)
    if not s:
        return float("nan")
    k = (len(s) - 1) * p
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def med(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def rotated(names: list[str], r: int) -> list[str]:
    """Round ``r``'s order: rotated so a noisy stretch does not always hit one contender."""
    k = r % len(names)
    return names[k:] + names[:k]


def ms(seconds: float) -> str:
    value = seconds * 1000
    return f"{value:,.1f} ms" if value >= 10 else f"{value:.2f} ms"


def machine() -> str:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"Python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}, "
        f"{platform.machine()}, {os.cpu_count()} CPUs, load average {load}"
    )


def log(*parts: object) -> None:
    print(*parts, flush=True)


# -- the server and free ports ----------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Server:
    """A tron-server subprocess."""

    home: Path
    port: int
    token: str
    proc: asyncio.subprocess.Process

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/rpc"


@contextlib.asynccontextmanager
async def tron_server(
    home: Path, *, env: dict[str, str] | None = None, profile: Path | None = None
) -> AsyncIterator[Server]:
    """``python -m tron_server --home HOME --port PORT`` until the block ends (SIGINT).

    With ``profile`` the server runs under cProfile and writes its stats there on exit."""
    import httpx

    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    cmd = [sys.executable]
    if profile is not None:
        cmd += ["-m", "cProfile", "-o", str(profile)]
    cmd += ["-m", "tron_server", "--home", str(home), "--port", str(port)]
    with open(home / "server.log", "wb") as out:
        proc = await asyncio.create_subprocess_exec(
            *cmd, stdout=out, stderr=out, env={**os.environ, **(env or {})}
        )
        try:
            deadline = time.monotonic() + START_TIMEOUT
            async with httpx.AsyncClient() as http:
                while True:
                    if proc.returncode is not None:
                        raise RuntimeError(
                            f"tron-server exited with {proc.returncode}; see {home / 'server.log'}"
                        )
                    with contextlib.suppress(httpx.HTTPError):
                        r = await http.get(f"http://127.0.0.1:{port}/health", timeout=2)
                        if r.status_code == 200:
                            break
                    if time.monotonic() > deadline:
                        raise TimeoutError("tron-server did not answer /health in time")
                    await asyncio.sleep(0.05)
            token = (home / "server-token").read_text().strip()
            yield Server(home, port, token, proc)
        finally:
            if proc.returncode is None:
                proc.send_signal(signal.SIGINT)
                try:
                    await asyncio.wait_for(proc.wait(), 30)
                except TimeoutError:
                    proc.kill()
                    await proc.wait()


async def ws_connect(url: str, token: str | None, *, deflate: bool = True) -> ClientConnection:
    """A raw WebSocket client. ``deflate`` offers permessage-deflate, as ``TronClient``
    (websockets' default) and browsers do; the server accepts it when offered."""
    from websockets.asyncio.client import connect

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return await connect(
        url,
        additional_headers=headers,
        max_size=None,
        open_timeout=30,
        compression="deflate" if deflate else None,
    )


async def rpc(ws: ClientConnection, rid: int, method: str, params: dict[str, Any]) -> Any:
    """Call ``method`` on a raw connection, skipping notifications until its reply."""
    await ws.send(orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}))
    while True:
        msg = orjson.loads(await ws.recv(decode=False))
        if msg.get("id") == rid:
            if "error" in msg:
                raise RuntimeError(f"{method} failed: {msg['error']}")
            return msg["result"]


async def run_child(*args: str, timeout: float = 300) -> None:
    """Run this script's hidden subcommand ``args`` in a new process."""
    proc = await asyncio.create_subprocess_exec(sys.executable, SCRIPT, *args)
    try:
        code = await asyncio.wait_for(proc.wait(), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    if code != 0:
        raise RuntimeError(f"child {args[0]} exited with {code}")


# -- the scripted LLM, timed --------------------------------------------------------------------


@dataclass
class LLMTimes:
    chunk_sent: dict[int, float] = field(default_factory=dict)
    """perf_counter when text delta i was handed to the socket."""
    spans: list[tuple[float, float]] = field(default_factory=list)
    """(request arrived, last byte sent) of each /messages request."""


def timed_llm_class() -> type[ScriptedLLM]:
    from tests.support.scripted_llm import ScriptedLLM

    class TimedLLM(ScriptedLLM):
        """The scripted LLM, noting when each text delta and each request's end went out."""

        def __init__(self) -> None:
            super().__init__()
            self.times = LLMTimes()

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                await super().__call__(scope, receive, send)
                return
            start = time.perf_counter()
            chunk_sent = self.times.chunk_sent

            async def timed_send(message: MutableMapping[str, Any]) -> None:
                body = message.get("body")
                if body:
                    m = TEXT_DELTA_INDEX.search(body)
                    if m is not None:
                        chunk_sent[int(m.group(1))] = time.perf_counter()
                await send(message)

            await super().__call__(scope, receive, timed_send)
            self.times.spans.append((start, time.perf_counter()))

    return TimedLLM


def tcp_listener() -> socket.socket:
    """A listening socket on 127.0.0.1 whose accepted connections get TCP_NODELAY.

    asyncio sets TCP_NODELAY only on sockets whose ``proto`` is IPPROTO_TCP, and an
    accepted socket inherits the listener's: ``socket.socket(AF_INET, SOCK_STREAM)``
    has proto 0, so a server fed such a socket Nagles its small writes and the peer's
    delayed ACK stalls each response by ~40 ms. (uvicorn binding host/port itself, as
    tron-server does, gets proto 6 from getaddrinfo and is not affected.)"""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


@contextlib.asynccontextmanager
async def timed_llm() -> AsyncIterator[tuple[ScriptedLLM, LLMTimes]]:
    """The timed scripted LLM served by uvicorn in this event loop (lifespan off)."""
    import anyio
    import uvicorn

    llm = timed_llm_class()()
    times: LLMTimes = llm.times  # type: ignore[attr-defined]
    sock = tcp_listener()
    llm.base_url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    config = uvicorn.Config(
        llm, log_level="warning", lifespan="off", access_log=False, timeout_graceful_shutdown=1
    )

    class QuietServer(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield  # Ctrl-C belongs to the benchmark, not to its LLM

    server = QuietServer(config)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])
            with anyio.fail_after(START_TIMEOUT):
                while not server.started:
                    await anyio.sleep(0.01)
            try:
                yield llm, times
            finally:
                server.should_exit = True
    finally:
        sock.close()


def numbered_text(n: int) -> str:
    """``w0 w1 ... w{n-1}``: the scripted LLM streams it as one text delta per word."""
    return " ".join(f"w{i}" for i in range(n))


def llm_env(llm: ScriptedLLM) -> dict[str, str]:
    return {
        "TRON_ANTHROPIC_BASE_URL": llm.base_url,
        "ANTHROPIC_API_KEY": "bench-key",
        "TRON_DEFAULT_MODEL": MODEL,
    }


# =============================================================================================
# sync: events.sync throughput to one client
# =============================================================================================


def realistic_events(n: int, seed: int = 11) -> list[tuple[str, dict[str, Any]]]:
    """``n`` events of agent sessions: a user message, 0-3 tool rounds (an assistant
    message with 1-3 tool_use blocks, their tool.call and tool.result events), and a
    final assistant message. Tool results are sized like real ones (log-normal: Read
    a few KB, Bash ~1 KB, Grep ~0.6 KB, Edit short), capped at 32 KB."""
    from _workload import TextGen, assistant_payload, user_payload

    gen = TextGen(seed)
    rng = gen.rng
    out: list[tuple[str, dict[str, Any]]] = []
    turn = 0
    tool_id = 0

    def tool_use() -> tuple[dict[str, Any], int]:
        nonlocal tool_id
        tool_id += 1
        kind = rng.choices(["Read", "Bash", "Grep", "Edit"], weights=[4, 3, 2, 2])[0]
        path = f"/src/app/{gen.words(1)[0]}/{gen.words(1)[0]}.py"
        if kind == "Read":
            args: dict[str, Any] = {"file_path": path}
            size = rng.lognormvariate(8.0, 0.9)  # median ~3 KB
        elif kind == "Bash":
            args = {"command": f"pytest -q tests/test_{gen.words(1)[0]}.py"}
            size = rng.lognormvariate(6.8, 1.0)  # median ~900 B
        elif kind == "Grep":
            args = {"pattern": gen.words(1)[0], "path": "/src/app"}
            size = rng.lognormvariate(6.4, 0.8)
        else:
            args = {"file_path": path, "old_string": gen.chars(80), "new_string": gen.chars(96)}
            size = 60
        block = {"type": "tool_use", "id": f"toolu_{tool_id:08d}", "name": kind, "input": args}
        return block, int(min(size, 32_000))

    while len(out) < n:
        turn += 1
        out.append(("message.user", user_payload(gen, turn, rng.randint(40, 1200))))
        for _ in range(rng.choice([0, 1, 1, 2, 2, 3])):
            uses = [tool_use() for _ in range(rng.choice([1, 1, 1, 2, 3]))]
            blocks = [b for b, _ in uses]
            out.append(
                ("message.assistant", assistant_payload(gen, turn, rng.randint(30, 400), blocks))
            )
            for b, _ in uses:
                out.append(
                    ("tool.call", {"toolCallId": b["id"], "name": b["name"],
                                   "arguments": b["input"], "turn": turn})
                )  # fmt: skip
            for b, size in uses:
                out.append(
                    ("tool.result", {"toolCallId": b["id"], "content": gen.chars(size),
                                     "isError": False, "duration": rng.randint(5, 900)})
                )  # fmt: skip
        out.append(("message.assistant", assistant_payload(gen, turn, rng.randint(60, 1500))))
    return out[:n]


def build_sync_session(db_url: str, n_events: int, workdir: Path) -> tuple[str, int]:
    """A session of ``n_events`` events (``session.start`` included); returns its id and
    the total payload JSON size."""
    from tron_events import EventStore

    drafts = realistic_events(n_events - 1)
    with EventStore.open(db_url) as store:
        session = store.create_session(
            working_directory=str(workdir), model=MODEL, provider="anthropic", title="sync bench"
        )
        for i in range(0, len(drafts), 2_000):
            store.append_many(
                session.id, [{"type": t, "payload": p} for t, p in drafts[i : i + 2_000]]
            )
        assert store.get_session(session.id).event_count == n_events
    return session.id, sum(len(orjson.dumps(p)) for _, p in drafts)


@dataclass
class SyncRun:
    seconds: float
    events: int
    nbytes: int
    pages: int
    ping_max: float = float("nan")
    """The slowest ``system.ping`` round trip of another connection during the read."""


async def with_pings(
    ws: ClientConnection, work: Coroutine[Any, Any, SyncRun]
) -> tuple[SyncRun, float]:
    """Run ``work`` (a coroutine) while ``ws`` sends ``system.ping`` every 10 ms; returns
    its result and the slowest round trip: how long the server's loop stalled."""
    done = asyncio.Event()
    rtts: list[float] = []

    async def ping() -> None:
        rid = 0
        while not done.is_set():
            rid += 1
            t0 = time.perf_counter()
            await rpc(ws, rid, "system.ping", {})
            rtts.append(time.perf_counter() - t0)
            await asyncio.sleep(0.01)

    task = asyncio.create_task(ping())
    try:
        result = await work
    finally:
        done.set()
        await task
    return result, max(rtts, default=float("nan"))


async def sync_over_ws(ws: ClientConnection, session_id: str, limit: int) -> SyncRun:
    """Page through events.sync as a resuming client does; bytes are the frames' sizes."""
    t0 = time.perf_counter()
    after, count, nbytes, pages = -1, 0, 0, 0
    while True:
        pages += 1
        params = {"sessionId": session_id, "afterSequence": after, "limit": limit}
        await ws.send(
            orjson.dumps({"jsonrpc": "2.0", "id": pages, "method": "events.sync", "params": params})
        )
        raw = await ws.recv(decode=False)
        nbytes += len(raw)
        result = decode_frame(raw)["result"]  # as TronClient decodes
        count += len(result["events"])
        after = result["nextSequence"]
        if not result["hasMore"]:
            break
    return SyncRun(time.perf_counter() - t0, count, nbytes, pages)


def sync_floor(store: EventStore, session_id: str, limit: int, serialize: str) -> SyncRun:
    """The same pages straight from the store; ``serialize``: "" (no), "serialize"
    (``Event.to_dict`` + ``orjson.dumps``: decode and re-encode every payload), "json"
    (``get_since_json``: the page's JSON built by the database, what the server sends)."""
    t0 = time.perf_counter()
    after, count, nbytes, pages = -1, 0, 0, 0
    while True:
        pages += 1
        if serialize == "json":
            raw = store.get_since_json(session_id=session_id, after_sequence=after, limit=limit)
            count += raw.count
            nbytes += len(raw.events_json)
            if not raw.has_more or raw.last_sequence is None:
                break
            after = raw.last_sequence
            continue
        page = store.get_since(session_id=session_id, after_sequence=after, limit=limit)
        count += len(page.events)
        if serialize == "serialize":
            nbytes += len(orjson.dumps({"events": [e.to_dict() for e in page.events]}))
        if not page.has_more or not page.events:
            break
        after = page.events[-1].sequence
    return SyncRun(time.perf_counter() - t0, count, nbytes, pages)


async def bench_sync(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    from tron_events import EventStore

    home = tmp / "sync-home"
    workdir = tmp / "sync-work"
    workdir.mkdir(parents=True)
    db = home / "database" / "prod.db"
    db.parent.mkdir(parents=True)
    url = f"sqlite:///{db}"
    t0 = time.perf_counter()
    session_id, payload_bytes = build_sync_session(url, args.events, workdir)
    log(
        f"sync: built a session of {args.events:,} events ({payload_bytes / 1e6:.1f} MB of "
        f"payload JSON) in {time.perf_counter() - t0:.1f} s"
    )
    names = [
        "server_10k",
        "server_client",
        "server_1k",
        "floor_10k",
        "floor_10k_serialize",
        "floor_10k_json",
    ]
    runs: dict[str, list[SyncRun]] = {n: [] for n in names}
    profile = args.profile / "server-sync.prof" if args.profile else None
    async with tron_server(home, profile=profile) as server:
        ws = await ws_connect(server.ws_url, server.token)
        pinger = await ws_connect(server.ws_url, server.token)
        store = EventStore.open(url, upgrade=False)
        try:
            for r in range(args.rounds):
                for name in rotated(names, r):
                    if name.startswith("server"):
                        limit = {"server_10k": SYNC_MAX_PAGE, "server_client": SYNC_PAGE}.get(
                            name, SYNC_DEFAULT_PAGE
                        )
                        run, stall = await with_pings(pinger, sync_over_ws(ws, session_id, limit))
                        run.ping_max = stall
                    else:
                        mode = name.removeprefix("floor_10k").removeprefix("_")
                        run = sync_floor(store, session_id, SYNC_MAX_PAGE, mode)
                    if run.events != args.events:
                        raise AssertionError(f"{name} read {run.events} events, not {args.events}")
                    runs[name].append(run)
                log(
                    f"  round {r + 1}: "
                    + ", ".join(f"{n} {args.events / runs[n][-1].seconds:,.0f}/s" for n in names)
                )
        finally:
            store.close()
            await ws.close()
            await pinger.close()

    def rate(name: str) -> float:
        return med([args.events / x.seconds for x in runs[name]])

    def ratio(a: str, b: str) -> float:
        return med([runs[b][i].seconds / runs[a][i].seconds for i in range(args.rounds)])

    result = {
        "events": args.events,
        "payload_mb": payload_bytes / 1e6,
        "rounds": args.rounds,
        "events_per_s": {n: rate(n) for n in names},
        "seconds": {n: med([x.seconds for x in runs[n]]) for n in names},
        "bytes_per_s": {
            n: med([x.nbytes / x.seconds for x in runs[n]]) for n in names if n != "floor_10k"
        },
        "json_mb_per_read": med([x.nbytes / 1e6 for x in runs["server_10k"]]),
        "ping_max_s": {n: med([x.ping_max for x in runs[n]]) for n in names if "server" in n},
        "pages": {n: runs[n][0].pages for n in names},
        "ratio_server10k_to_floor": ratio("server_10k", "floor_10k"),
        "ratio_serverclient_to_floor": ratio("server_client", "floor_10k"),
        "ratio_server1k_to_floor": ratio("server_1k", "floor_10k"),
        "ratio_server10k_to_floor_json": ratio("server_10k", "floor_10k_json"),
        "goal_events_per_s": 50_000,
    }
    result["goal_met"] = result["events_per_s"]["server_client"] >= 50_000
    print_sync(result)
    return result


def print_sync(res: dict[str, Any]) -> None:
    e = res["events_per_s"]
    s = res["seconds"]
    b = res["bytes_per_s"]
    pings = res["ping_max_s"]
    log(f"\nsync: {res['events']:,} events, medians over {res['rounds']} rounds")
    log("| contender | pages | events/s | time | JSON MB/s | vs floor | slowest ping meanwhile |")
    log("|---|---|---|---|---|---|---|")
    rows = [
        (
            "server, events.sync limit 10,000 (the maximum)",
            "server_10k",
            res["ratio_server10k_to_floor"],
        ),
        (
            f"server, limit {SYNC_PAGE:,} (TronClient.sync)",
            "server_client",
            res["ratio_serverclient_to_floor"],
        ),
        ("server, limit 1,000 (the default)", "server_1k", res["ratio_server1k_to_floor"]),
        ("floor: get_since pages in-process", "floor_10k", 1.0),
        ("floor + to_dict + orjson.dumps", "floor_10k_serialize", None),
        ("floor: get_since_json pages (the server's read)", "floor_10k_json", None),
    ]
    for label, key, ratio in rows:
        mbs = f"{b[key] / 1e6:,.1f}" if key in b else "-"
        r = f"{ratio:.2f}x" if ratio is not None else "-"
        ping = ms(pings[key]) if key in pings else "-"
        log(
            f"| {label} | {res['pages'][key]} | {e[key]:,.0f} | {ms(s[key])} | {mbs} | {r} "
            f"| {ping} |"
        )
    verdict = "met" if res["goal_met"] else "MISSED"
    log(f"goal >= 50,000 events/s (TronClient.sync's page of {SYNC_PAGE:,}): {verdict}")


# =============================================================================================
# pressure: other clients' latency and the server's memory under clients that misbehave
# =============================================================================================


class NonReader:
    """A WebSocket client that sends requests and never reads a byte of the answers
    (a small fixed receive buffer, so the server's socket buffers fill at once)."""

    def __init__(self, port: int, token: str) -> None:
        from websockets.client import ClientProtocol
        from websockets.protocol import State
        from websockets.uri import parse_uri

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16_384)
        self.sock.settimeout(30)
        self.sock.connect(("127.0.0.1", port))
        self.proto = ClientProtocol(parse_uri(f"ws://127.0.0.1:{port}/rpc"))
        request = self.proto.connect()
        request.headers["Authorization"] = f"Bearer {token}"
        self.proto.send_request(request)
        self._flush()
        while self.proto.state is State.CONNECTING:
            self.proto.receive_data(self.sock.recv(4096))
        if self.proto.state is not State.OPEN:
            raise RuntimeError(f"handshake failed: {self.proto.handshake_exc}")

    def _flush(self) -> None:
        for data in self.proto.data_to_send():
            if data:
                self.sock.sendall(data)

    def send(self, frame: bytes) -> bool:
        """Send one request; False once the server stopped taking them (a full socket)."""
        self.proto.send_text(frame)
        try:
            self.sock.settimeout(2)
            self._flush()
        except (TimeoutError, OSError):
            return False
        return True

    def close(self) -> None:
        self.sock.close()


def rss_mb(pid: int) -> float:
    """The resident set size of process ``pid`` in MB (0 once it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.M)
    return int(match.group(1)) / 1024 if match else 0.0


@dataclass
class PhaseStats:
    name: str
    pings: list[float] = field(default_factory=list)
    rss: list[float] = field(default_factory=list)
    note: str = ""

    def summary(self) -> dict[str, Any]:
        return {
            "pings": len(self.pings),
            "ping_p50_ms": pct(self.pings, 0.5) * 1000,
            "ping_p99_ms": pct(self.pings, 0.99) * 1000,
            "ping_max_ms": max(self.pings, default=float("nan")) * 1000,
            "rss_max_mb": max(self.rss, default=float("nan")),
            "rss_end_mb": self.rss[-1] if self.rss else float("nan"),
            "note": self.note,
        }


class Probe:
    """Samples the server's RSS every 100 ms here, and has a child process ping it
    every 10 ms from its own connection (in another process, so that no client's
    own work here — decoding a 13 MB page takes 0.1-0.4 s — delays a ping). Each
    sample goes to the phase during which it was taken (perf_counter is
    CLOCK_MONOTONIC: one clock for both processes)."""

    def __init__(self, server: Server, out: Path) -> None:
        self.server = server
        self.out = out
        self.phases: list[PhaseStats] = []
        self._bounds: list[tuple[float, float]] = []
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._child: asyncio.subprocess.Process | None = None

    @property
    def phase(self) -> PhaseStats:
        return self.phases[-1]

    def begin(self, name: str) -> PhaseStats:
        now = time.perf_counter()
        if self._bounds:
            self._bounds[-1] = (self._bounds[-1][0], now)
        self.phases.append(PhaseStats(name))
        self._bounds.append((now, float("inf")))
        return self.phases[-1]

    async def start(self) -> None:
        self._child = await asyncio.create_subprocess_exec(
            sys.executable, SCRIPT, "_pinger", "--url", self.server.ws_url,
            f"--token={self.server.token}", "--out", str(self.out),
        )  # fmt: skip
        while not self.out.exists() or not self.out.read_text().strip():
            await asyncio.sleep(0.05)
        self._task = asyncio.create_task(self._rss())

    async def stop(self) -> None:
        if self._bounds:
            self._bounds[-1] = (self._bounds[-1][0], time.perf_counter())
        self._stop.set()
        if self._task is not None:
            await self._task
        if self._child is not None and self._child.returncode is None:
            self._child.send_signal(signal.SIGINT)
            await self._child.wait()
        for line in self.out.read_text().splitlines()[1:]:
            t, rtt = (float(x) for x in line.split())
            for stats, (a, b) in zip(self.phases, self._bounds, strict=True):
                if a <= t < b:
                    stats.pings.append(rtt)

    async def _rss(self) -> None:
        while not self._stop.is_set():
            if self.phases:
                self.phase.rss.append(rss_mb(self.server.proc.pid))
            await asyncio.sleep(0.1)


def pinger_main(args: argparse.Namespace) -> None:
    """The probe's child: ``system.ping`` every 10 ms; writes "start-time rtt" lines."""

    async def run() -> None:
        ws = await ws_connect(args.url, args.token, deflate=False)
        with open(args.out, "w") as out:
            out.write("ready\n")
            out.flush()
            rid = 0
            while True:
                rid += 1
                t0 = time.perf_counter()
                await rpc(ws, rid, "system.ping", {})
                out.write(f"{t0} {time.perf_counter() - t0}\n")
                out.flush()
                await asyncio.sleep(0.01)

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())


async def bench_pressure(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """Another client's ping and the server's RSS while (a) ``--non-readers`` clients
    send ``events.sync`` requests for the largest page and never read the answers,
    then leave; (b) one client syncs the whole session in pages of 10,000."""
    home = tmp / "pressure-home"
    workdir = tmp / "pressure-work"
    workdir.mkdir(parents=True)
    db = home / "database" / "prod.db"
    db.parent.mkdir(parents=True)
    session_id, payload_bytes = build_sync_session(f"sqlite:///{db}", args.events, workdir)
    log(f"pressure: a session of {args.events:,} events ({payload_bytes / 1e6:.1f} MB of payload)")
    env = server_src_env(args.server_src)
    async with tron_server(home, env=env) as server:
        probe = Probe(server, tmp / "pings.txt")
        await probe.start()
        try:
            probe.begin("idle")
            await asyncio.sleep(2)
            # (a) clients that never read.
            probe.begin("non-readers connected, requesting")
            readers = [
                await asyncio.to_thread(NonReader, server.port, server.token)
                for _ in range(args.non_readers)
            ]
            sent = [0] * len(readers)

            def flood(i: int) -> None:
                for k in range(args.requests):
                    after = -1 if k % 2 == 0 else args.events // 2 - 1
                    frame = orjson.dumps(
                        {"jsonrpc": "2.0", "id": k, "method": "events.sync",
                         "params": {"sessionId": session_id, "afterSequence": after,
                                    "limit": SYNC_MAX_PAGE}}
                    )  # fmt: skip
                    if not readers[i].send(frame):
                        return
                    sent[i] += 1

            await asyncio.gather(*(asyncio.to_thread(flood, i) for i in range(len(readers))))
            await asyncio.sleep(args.hold)
            probe.phase.note = f"requests taken: {sent}"
            for r in readers:
                r.close()
            probe.begin("after the non-readers left")
            await asyncio.sleep(args.settle)
            # (b) one client syncs the whole session, repeatedly.
            probe.begin(f"one client syncs {args.events:,} events (pages of 10,000)")
            syncer = await ws_connect(server.ws_url, server.token, deflate=False)
            try:
                for _ in range(args.sync_reads):
                    run = await sync_over_ws(syncer, session_id, SYNC_MAX_PAGE)
                    if run.events != args.events:
                        raise AssertionError(f"synced {run.events} events, not {args.events}")
            finally:
                await syncer.close()
            probe.begin("after the sync")
            await asyncio.sleep(2)
        finally:
            await probe.stop()
    phases = probe.phases

    result = {
        "events": args.events,
        "non_readers": args.non_readers,
        "requests": args.requests,
        "server_src": str(args.server_src or ROOT),
        "phases": {p.name: p.summary() for p in phases},
    }
    print_pressure(result)
    return result


def server_src_env(src: Path | None) -> dict[str, str] | None:
    """Run the server from another source tree (e.g. a worktree of an older commit)."""
    if src is None:
        return None
    paths = [str(src / pkg / "src") for pkg in ("tron_events", "tron_llm", "tron_server")]
    return {"PYTHONPATH": os.pathsep.join(paths)}


def print_pressure(res: dict[str, Any]) -> None:
    log(f"\npressure: server from {res['server_src']}")
    log("| phase | pings | ping p50 | ping p99 | ping max | server RSS max | RSS at end |")
    log("|---|---|---|---|---|---|---|")
    for name, p in res["phases"].items():
        log(
            f"| {name} | {p['pings']} | {p['ping_p50_ms']:.1f} ms | {p['ping_p99_ms']:.1f} ms "
            f"| {p['ping_max_ms']:.1f} ms | {p['rss_max_mb']:.0f} MB | {p['rss_end_mb']:.0f} MB |"
            + (f" {p['note']}" if p["note"] else "")
        )


# =============================================================================================
# fanout: text-delta fan-out to N clients
# =============================================================================================


def client_main(args: argparse.Namespace) -> None:
    """Child process: N connections, trigger one stream, note when each delta arrived."""
    asyncio.run(clients(args))


async def clients(args: argparse.Namespace) -> None:
    conns = list(
        await asyncio.gather(
            *(
                ws_connect(args.url, args.token, deflate=not args.no_deflate)
                for _ in range(args.clients)
            )
        )
    )
    if args.mode == "tron":
        for ws in conns:
            await rpc(ws, 1, "events.subscribe", {"sessionId": args.session})
    received: list[list[tuple[float, bytes]]] = [[] for _ in conns]
    end_marker = b'"agent.complete"'

    async def read(i: int, ws: ClientConnection) -> None:
        got = received[i]
        while True:
            raw = await ws.recv(decode=False)
            got.append((time.perf_counter(), raw))  # parse later: stamp first
            if end_marker in raw:
                return

    readers = [asyncio.create_task(read(i, ws)) for i, ws in enumerate(conns)]
    await asyncio.sleep(0.05)  # let every reader block in recv
    if args.mode == "tron":
        message = {"sessionId": args.session, "prompt": "stream the numbered words"}
        await conns[0].send(
            orjson.dumps({"jsonrpc": "2.0", "id": 2, "method": "agent.message", "params": message})
        )
    else:
        await conns[0].send("start")
    await asyncio.wait_for(asyncio.gather(*readers), args.timeout)
    for ws in conns:
        await ws.close()
    times: list[dict[int, float]] = []
    for got in received:
        seen: dict[int, float] = {}
        for t, raw in got:
            msg = orjson.loads(raw)
            if msg.get("method") == "agent.text_delta":
                seen[int(msg["params"]["data"]["delta"].strip()[1:])] = t
        times.append(seen)
    Path(args.out).write_bytes(orjson.dumps([{str(k): v for k, v in s.items()} for s in times]))


def floor_main(args: argparse.Namespace) -> None:
    """Child process: the peer — a bare websockets server that relays the LLM's text
    deltas to every connected client as ``agent.text_delta`` frames."""
    asyncio.run(floor_server(args))


async def floor_server(args: argparse.Namespace) -> None:
    from datetime import UTC, datetime

    import httpx
    from websockets.asyncio.server import ServerConnection, broadcast, serve

    connected: set[ServerConnection] = set()
    tasks: set[asyncio.Task[None]] = set()
    http = httpx.AsyncClient(timeout=60)

    def frame(method: str, data: dict[str, Any]) -> str:
        stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        note = {"sessionId": "floor", "timestamp": stamp, "data": data}
        return orjson.dumps({"jsonrpc": "2.0", "method": method, "params": note}).decode()

    async def relay() -> None:
        body = {
            "model": MODEL, "max_tokens": 1024, "stream": True,
            "messages": [{"role": "user", "content": "stream the numbered words"}],
        }  # fmt: skip
        headers = {"x-api-key": "bench-key", "anthropic-version": "2023-06-01"}
        url = args.llm.rstrip("/") + "/v1/messages"
        async with http.stream("POST", url, json=body, headers=headers) as response:
            async for line in response.aiter_lines():
                if not line.startswith("data: "):
                    continue
                event = orjson.loads(line[6:])
                if event.get("type") == "content_block_delta":
                    delta = event["delta"]
                    if delta.get("type") == "text_delta":
                        data = {"turn": 1, "delta": delta["text"]}
                        broadcast(connected, frame("agent.text_delta", data))
        broadcast(connected, frame("agent.complete", {"turns": 1, "stopReason": "end_turn"}))

    async def handler(ws: ServerConnection) -> None:
        connected.add(ws)
        try:
            async for message in ws:
                if message == "start":
                    task = asyncio.create_task(relay())
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
        finally:
            connected.discard(ws)

    async with serve(handler, "127.0.0.1", 0, max_size=None) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        print(f"ready {port}", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until closed
    await http.aclose()


@contextlib.asynccontextmanager
async def floor_process(llm_url: str) -> AsyncIterator[str]:
    """The peer server in a subprocess; yields its ws:// URL."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, SCRIPT, "_floor", "--llm", llm_url,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stdin is not None
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), START_TIMEOUT)
        if not line.startswith(b"ready "):
            raise RuntimeError(f"floor server did not start: {line!r}")
        yield f"ws://127.0.0.1:{int(line.split()[1])}/"
    finally:
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            proc.kill()
            await proc.wait()


def latencies(times: LLMTimes, path: Path, chunks: int, clients: int) -> list[float]:
    data = orjson.loads(path.read_bytes())
    if len(data) != clients:
        raise AssertionError(f"{len(data)} clients reported, not {clients}")
    out: list[float] = []
    for seen in data:
        if len(seen) != chunks:
            raise AssertionError(f"a client saw {len(seen)} of {chunks} deltas")
        out += [t - times.chunk_sent[int(i)] for i, t in seen.items()]
    if len(times.chunk_sent) != chunks:
        raise AssertionError(f"the LLM noted {len(times.chunk_sent)} of {chunks} chunks")
    return out


async def bench_fanout(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    from tests.support.scripted_llm import Response, Text
    from tron_server.client import TronClient

    rounds = args.fanout_rounds if args.cmd == "all" else args.rounds
    workdir = tmp / "fanout-work"
    workdir.mkdir(parents=True)
    text = numbered_text(args.chunks)
    names = ["tron", "floor", "tron_nodeflate", "floor_nodeflate"]
    profile = args.profile / "server-fanout.prof" if args.profile else None
    results: dict[str, Any] = {}
    async with (
        timed_llm() as (llm, times),
        tron_server(tmp / "fanout-home", env=llm_env(llm), profile=profile) as server,
        floor_process(llm.base_url) as floor_url,
        TronClient.connect(server.ws_url, token=server.token) as control,
    ):
        session = await control.call(
            "session.create", {"workingDirectory": str(workdir), "provider": "anthropic"}
        )
        for delay in args.delay:
            log(f"  {args.chunks} deltas {delay * 1000:g} ms apart:")
            per_round: dict[str, list[dict[str, float]]] = {n: [] for n in names}
            for r in range(rounds):
                for name in rotated(names, r):
                    llm.add(Response([Text(text)], delay=delay))
                    times.chunk_sent.clear()
                    out = tmp / f"fanout-{name}-{delay}-{r}.json"
                    common = ["--clients", str(args.clients), "--out", str(out)]
                    if name.endswith("_nodeflate"):
                        common.append("--no-deflate")
                    if name.startswith("tron"):
                        await run_child(
                            "_clients", "--mode", "tron", "--url", server.ws_url,
                            f"--token={server.token}", "--session", session["id"], *common,
                        )  # fmt: skip
                    else:
                        await run_child("_clients", "--mode", "floor", "--url", floor_url, *common)
                    lat = latencies(times, out, args.chunks, args.clients)
                    per_round[name].append(
                        {"p50": pct(lat, 0.5), "p90": pct(lat, 0.9), "p99": pct(lat, 0.99),
                         "max": max(lat), "n": len(lat)}
                    )  # fmt: skip
                log(
                    f"  round {r + 1}: "
                    + ", ".join(
                        f"{n} p50 {ms(x[-1]['p50'])} p99 {ms(x[-1]['p99'])}"
                        for n, x in per_round.items()
                    )
                )
            result = fanout_summary(per_round, delay, rounds, args.clients, args.chunks)
            print_fanout(result)
            results[f"{delay * 1000:g}ms"] = result
    return results


def fanout_summary(
    per_round: dict[str, list[dict[str, float]]],
    delay: float,
    rounds: int,
    clients: int,
    chunks: int,
) -> dict[str, Any]:
    def stat(name: str, key: str) -> float:
        return med([x[key] for x in per_round[name]])

    def ratio(key: str, name: str = "tron", floor: str = "floor") -> float:
        pairs = zip(per_round[name], per_round[floor], strict=True)
        return med([t[key] / f[key] for t, f in pairs])

    result: dict[str, Any] = {
        "clients": clients,
        "chunks": chunks,
        "delay_s": delay,
        "rounds": rounds,
        "latency_s": {n: {k: stat(n, k) for k in ("p50", "p90", "p99", "max")} for n in per_round},
        "ratio_p50": ratio("p50"),
        "ratio_p99": ratio("p99"),
        "ratio_p50_nodeflate": ratio("p50", "tron_nodeflate", "floor_nodeflate"),
        "ratio_p99_nodeflate": ratio("p99", "tron_nodeflate", "floor_nodeflate"),
        "samples_per_round": per_round["tron"][0]["n"],
        "goal_p99_s": 0.020,
    }
    result["goal_met"] = result["latency_s"]["tron"]["p99"] <= 0.020
    return result


def print_fanout(res: dict[str, Any]) -> None:
    lat = res["latency_s"]
    log(
        f"\nfanout: {res['clients']} clients x {res['chunks']} deltas "
        f"({res['delay_s'] * 1000:g} ms apart), medians over {res['rounds']} rounds"
    )
    log("| contender | p50 | p90 | p99 | max |")
    log("|---|---|---|---|---|")
    rows = (
        ("tron-server", "tron"),
        ("floor: bare websockets relay", "floor"),
        ("tron-server, clients without permessage-deflate", "tron_nodeflate"),
        ("floor, clients without permessage-deflate", "floor_nodeflate"),
    )
    for label, key in rows:
        x = lat[key]
        log(f"| {label} | {ms(x['p50'])} | {ms(x['p90'])} | {ms(x['p99'])} | {ms(x['max'])} |")
    log(
        f"tron/floor: p50 {res['ratio_p50']:.2f}x, p99 {res['ratio_p99']:.2f}x; "
        f"both without deflate p50 {res['ratio_p50_nodeflate']:.2f}x, "
        f"p99 {res['ratio_p99_nodeflate']:.2f}x"
    )
    log(f"goal p99 <= 20 ms: {'met' if res['goal_met'] else 'MISSED'}")


# =============================================================================================
# turn: server overhead per turn
# =============================================================================================


def turns_main(args: argparse.Namespace) -> None:
    """Child process: sequential one-turn messages; (sent, complete received) per turn."""
    asyncio.run(turns_client(args))


async def turns_client(args: argparse.Namespace) -> None:
    from tron_server.client import TronClient

    spans: list[tuple[float, float]] = []
    async with TronClient.connect(args.url, token=args.token) as client:
        await client.subscribe(args.session)
        done = client.notifications(["agent.complete"], session_id=args.session)
        for i in range(args.turns):
            t0 = time.perf_counter()
            await client.call("agent.message", {"sessionId": args.session, "prompt": f"turn {i}"})
            n = await done.next(timeout=60)
            spans.append((t0, time.perf_counter()))
            if n.data["stopReason"] != "end_turn":
                raise AssertionError(f"turn {i} ended with {n.data}")
    Path(args.out).write_bytes(orjson.dumps(spans))


REPLY = "Done: the tests pass now and the change is in place."


def turn_payloads(turn: int) -> list[tuple[str, dict[str, Any]]]:
    """The four events of a text-only turn, shaped as the runtime records them."""
    usage = {"inputTokens": 1200, "outputTokens": 12, "cacheReadTokens": 0,
             "cacheCreationTokens": 0}  # fmt: skip
    return [
        ("message.user", {"content": f"turn {turn}", "turn": turn}),
        ("stream.turn_start", {"turn": turn}),
        ("message.assistant", {"content": [{"type": "text", "text": REPLY}], "turn": turn,
                               "tokenUsage": usage, "stopReason": "end_turn", "model": MODEL,
                               "latency": 4.2}),
        ("stream.turn_end", {"turn": turn, "stopReason": "end_turn", "tokenUsage": usage,
                             "cost": 0.0037}),
    ]  # fmt: skip


async def append_floor(url: str, workdir: Path, turns: int, reads: bool) -> list[float]:
    """Per turn: the four appends with ``expected_head`` (and, with ``reads``, the
    reads the runtime does around them: head state twice, the session once)."""
    from tron_events import AsyncEventStore

    out: list[float] = []
    async with await AsyncEventStore.open(url) as store:
        session = await store.create_session(
            working_directory=str(workdir), model=MODEL, provider="anthropic"
        )
        head = session.head_event_id
        for turn in range(1, turns + 1):
            t0 = time.perf_counter()
            if reads:
                await store.get_state_at_head(session.id)
                await store.get_session(session.id)
            for i, (etype, payload) in enumerate(turn_payloads(turn)):
                if reads and i == 1:
                    await store.get_state_at_head(session.id)
                head = (await store.append(session.id, etype, payload, expected_head=head)).id
            out.append(time.perf_counter() - t0)
    return out


async def adapter_floor(llm: ScriptedLLM, times: LLMTimes, turns: int) -> list[float]:
    """The Anthropic adapter alone against the same LLM: its time minus the LLM's."""
    from tests.support.scripted_llm import Response, Text
    from tron_events.messages import Message, TextBlock
    from tron_llm import Done, LLMRequest
    from tron_llm.registry import create_provider

    provider = create_provider("anthropic", api_key="bench-key", base_url=llm.base_url)
    out: list[float] = []
    try:
        for i in range(turns):
            llm.add(Response([Text(REPLY)]))
            request = LLMRequest(
                model=MODEL,
                messages=[Message(role="user", content=[TextBlock(text=f"turn {i}")])],
                system="You are a benchmark.",
            )
            before = len(times.spans)
            t0 = time.perf_counter()
            done = False
            async for event in provider.stream(request):
                done = done or isinstance(event, Done)
            elapsed = time.perf_counter() - t0
            if not done or len(times.spans) != before + 1:
                raise AssertionError("the adapter's stream did not finish cleanly")
            start, end = times.spans[-1]
            out.append(elapsed - (end - start))
    finally:
        await provider.aclose()
    return out


def tool_specs_times(home: Path, turns: int) -> list[float]:
    """``ToolRegistry.specs()`` of the server's registry (default tools + Skill, as the
    orchestrator builds it), which the runtime calls on the event loop before every LLM call."""
    from tron_server.tools import default_tools
    from tron_server.tools.skill import SkillTool

    tools = default_tools()
    tools.register(SkillTool(home))
    out: list[float] = []
    for _ in range(turns):
        t0 = time.perf_counter()
        tools.specs()
        out.append(time.perf_counter() - t0)
    return out


async def bench_turn(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    from tests.support.scripted_llm import Response, Text
    from tron_server.client import TronClient

    names = ["tron", "append_floor", "store_work", "adapter", "tool_specs"]
    samples: dict[str, list[list[float]]] = {n: [] for n in names}
    parts: dict[str, list[float]] = {"before_llm": [], "llm": [], "after_llm": []}
    profile = args.profile / "server-turn.prof" if args.profile else None
    async with (
        timed_llm() as (llm, times),
        tron_server(tmp / "turn-home", env=llm_env(llm), profile=profile) as server,
        TronClient.connect(server.ws_url, token=server.token) as control,
    ):

        async def new_session(r: int, label: str) -> str:
            workdir = tmp / f"turn-work-{label}-{r}"
            workdir.mkdir(parents=True)
            s = await control.call(
                "session.create", {"workingDirectory": str(workdir), "provider": "anthropic"}
            )
            sid: str = s["id"]
            return sid

        async def tron_turns(
            session_id: str, n: int, out: Path
        ) -> list[tuple[float, float, float, float]]:
            llm.add(*[Response([Text(REPLY)]) for _ in range(n)])
            before = len(times.spans)
            await run_child(
                    "_turns", "--url", server.ws_url, f"--token={server.token}",
                    "--session", session_id, "--turns", str(n), "--out", str(out),
                )  # fmt: skip
            spans: list[list[float]] = orjson.loads(out.read_bytes())
            llm_spans = times.spans[before:]
            if len(llm_spans) != n:
                raise AssertionError(f"{len(llm_spans)} LLM requests for {n} turns")
            return [
                (c[1] - c[0] - (e - s), s - c[0], e - s, c[1] - e)
                for c, (s, e) in zip(spans, llm_spans, strict=True)
            ]

        # Warm-up (not counted): the first turns of a fresh server import and build
        # the adapter, the hooks engine and the rules loader.
        await tron_turns(await new_session(0, "warmup"), 3, tmp / "turn-warmup.json")
        await adapter_floor(llm, times, 3)  # its first Done loads the price table
        for r in range(args.rounds):
            for name in rotated(names, r):
                if name == "tron":
                    sid = await new_session(r, "tron")
                    rows = await tron_turns(sid, args.turns, tmp / f"turn-{r}.json")
                    samples[name].append([x[0] for x in rows])
                    parts["before_llm"] += [x[1] for x in rows]
                    parts["llm"] += [x[2] for x in rows]
                    parts["after_llm"] += [x[3] for x in rows]
                elif name == "adapter":
                    samples[name].append(await adapter_floor(llm, times, args.turns))
                elif name == "tool_specs":
                    samples[name].append(tool_specs_times(tmp, args.turns))
                else:
                    url = f"sqlite:///{tmp / f'floor-{name}-{r}.db'}"
                    workdir = tmp / f"floor-work-{name}-{r}"
                    workdir.mkdir()
                    samples[name].append(
                        await append_floor(url, workdir, args.turns, name == "store_work")
                    )
            log(
                f"  round {r + 1}: "
                + ", ".join(
                    f"{n} p50 {ms(pct(xs[-1], 0.5))} p99 {ms(pct(xs[-1], 0.99))}"
                    for n, xs in samples.items()
                )
            )

    def per_round(name: str, p: float) -> list[float]:
        return [pct(xs, p) for xs in samples[name]]

    def ratio(a: str, b: str, p: float) -> float:
        return med([x / y for x, y in zip(per_round(a, p), per_round(b, p), strict=True)])

    result: dict[str, Any] = {
        "turns_per_round": args.turns,
        "rounds": args.rounds,
        "overhead_s": {
            n: {"p50": med(per_round(n, 0.5)), "p99": med(per_round(n, 0.99))} for n in names
        },
        "tron_all_turns_s": {
            "p50": pct([x for xs in samples["tron"] for x in xs], 0.5),
            "p99": pct([x for xs in samples["tron"] for x in xs], 0.99),
        },
        "tron_parts_p50_s": {k: pct(v, 0.5) for k, v in parts.items()},
        "ratio_p50_to_append_floor": ratio("tron", "append_floor", 0.5),
        "ratio_p99_to_append_floor": ratio("tron", "append_floor", 0.99),
        "ratio_p50_to_store_work": ratio("tron", "store_work", 0.5),
    }
    print_turn(result)
    return result


def print_turn(res: dict[str, Any]) -> None:
    o = res["overhead_s"]
    log(
        f"\nturn: {res['turns_per_round']} turns x {res['rounds']} rounds; per-round p50/p99, "
        "medians over rounds"
    )
    log("| contender | p50 | p99 |")
    log("|---|---|---|")
    rows = [
        ("tron-server: message -> complete, minus the LLM's time", "tron"),
        ("floor: 4 appends via AsyncEventStore", "append_floor"),
        ("store work of a turn (4 appends + the runtime's reads)", "store_work"),
        ("Anthropic adapter alone, minus the LLM's time", "adapter"),
        ("ToolRegistry.specs() alone (JSON schemas rebuilt every turn)", "tool_specs"),
    ]
    for label, key in rows:
        log(f"| {label} | {ms(o[key]['p50'])} | {ms(o[key]['p99'])} |")
    p = res["tron_parts_p50_s"]
    log(
        f"tron/append floor: p50 {res['ratio_p50_to_append_floor']:.2f}x, "
        f"p99 {res['ratio_p99_to_append_floor']:.2f}x; tron/store work p50 "
        f"{res['ratio_p50_to_store_work']:.2f}x"
    )
    log(
        f"tron turn, p50 of each part: before the LLM {ms(p['before_llm'])}, "
        f"LLM {ms(p['llm'])}, after the LLM {ms(p['after_llm'])}"
    )


# =============================================================================================
# breakdown: where a turn's time goes (diagnostic, not part of `all`)
# =============================================================================================


class _Timers:
    """Wall time per label, summed over calls (nested labels overlap)."""

    def __init__(self) -> None:
        self.total: dict[str, float] = {}
        self.calls: dict[str, int] = {}

    def add(self, label: str, seconds: float) -> None:
        self.total[label] = self.total.get(label, 0.0) + seconds
        self.calls[label] = self.calls.get(label, 0) + 1

    def wrap(self, owner: Any, name: str, label: str) -> None:
        """Replace ``owner.name`` (a function or coroutine function) with a timed one."""
        import functools
        import inspect

        fn = getattr(owner, name)
        timers = self
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def timed_async(*a: Any, **k: Any) -> Any:
                t0 = time.perf_counter()
                try:
                    return await fn(*a, **k)
                finally:
                    timers.add(label, time.perf_counter() - t0)

            setattr(owner, name, timed_async)
        else:

            @functools.wraps(fn)
            def timed(*a: Any, **k: Any) -> Any:
                t0 = time.perf_counter()
                try:
                    return fn(*a, **k)
                finally:
                    timers.add(label, time.perf_counter() - t0)

            setattr(owner, name, timed)


def instrument_server() -> _Timers:
    """Wrap the runtime's steps and the store calls with wall-clock timers. Patches
    private names of tron_server (a diagnostic: update it when they change)."""
    import tron_server.agent.compaction as compaction
    import tron_server.agent.rules as rules
    import tron_server.agent.turn as turn
    import tron_server.hooks.base as hooks
    import tron_server.hub as hub
    import tron_server.rpc.dispatch as dispatch
    import tron_server.tools.base as tools
    from tron_events import AsyncEventStore

    t = _Timers()
    for m in ("get_state_at_head", "get_session", "append", "append_many", "get_ancestors"):
        t.wrap(AsyncEventStore, m, f"store.{m}")
    for m in ("execute", "_turn", "_stream", "_record_tool_calls", "_turn_end"):
        t.wrap(turn.AgentRun, m, f"AgentRun.{m}")
    t.wrap(hooks.HookEngine, "run_blocking", "HookEngine.run_blocking")
    t.wrap(rules.SessionRules, "start", "SessionRules.start")
    t.wrap(compaction, "maybe_auto_compact", "maybe_auto_compact (context_usage)")
    t.wrap(tools.ToolRegistry, "specs", "ToolRegistry.specs")
    t.wrap(turn, "build_system_prompt", "build_system_prompt (in a thread)")
    t.wrap(turn, "check_history", "check_history")
    t.wrap(hub.Hub, "publish", "Hub.publish")
    t.wrap(dispatch.Dispatcher, "handle", "Dispatcher.handle")
    return t


async def bench_breakdown(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """Sequential turns against a server in a thread of this process, its steps timed."""
    import threading

    import uvicorn

    from tests.support.scripted_llm import Response, Text
    from tron_server.app import create_app, uvicorn_options
    from tron_server.client import TronClient
    from tron_server.settings import Settings

    timers = instrument_server()
    os.environ.setdefault("ANTHROPIC_API_KEY", "bench-key")
    async with timed_llm() as (llm, times):
        port = free_port()  # uvicorn binds it itself: TCP_NODELAY as in production
        settings = Settings(
            home=tmp / "home", port=port, anthropic_base_url=llm.base_url, log_level="warning"
        )
        app = create_app(settings)
        server = uvicorn.Server(uvicorn.Config(app, **uvicorn_options(settings)))
        thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
        thread.start()
        while not server.started:
            await asyncio.sleep(0.01)
        (tmp / "work").mkdir()
        create = {"workingDirectory": str(tmp / "work"), "provider": "anthropic"}
        total = llm_time = 0.0
        try:
            async with TronClient.connect(f"ws://127.0.0.1:{port}/rpc", token=app.state.token) as c:
                warm = await c.call("session.create", create)
                for _ in range(3):
                    llm.add(Response([Text(REPLY)]))
                    await c.send_message_and_wait(warm["id"], "warm up")
                timers.total.clear()
                timers.calls.clear()
                session = await c.call("session.create", create)
                for i in range(args.turns):
                    llm.add(Response([Text(REPLY)]))
                    t0 = time.perf_counter()
                    await c.send_message_and_wait(session["id"], f"turn {i}")
                    total += time.perf_counter() - t0
                    start, end = times.spans[-1]
                    llm_time += end - start
        finally:
            server.should_exit = True
            thread.join(20)
    n = args.turns
    log(f"\nbreakdown: {n} turns, server in a thread of this process; ms per turn (mean)")
    log(
        f"message -> complete {total / n * 1000:.2f} ms, of which the LLM {llm_time / n * 1000:.2f}"
    )
    log("| step | ms per turn | calls per turn |")
    log("|---|---|---|")
    rows = sorted(timers.total.items(), key=lambda kv: -kv[1])
    for label, seconds in rows:
        log(f"| {label} | {seconds / n * 1000:.2f} | {timers.calls[label] / n:.1f} |")
    return {
        "turns": n,
        "total_ms": total / n * 1000,
        "llm_ms": llm_time / n * 1000,
        "steps_ms": {k: v / n * 1000 for k, v in rows},
    }


# =============================================================================================
# the command line
# =============================================================================================


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="tron-server benchmarks over real sockets, each against a floor measured "
        "in the same run (see the module docstring).",
    )
    sub = parser.add_subparsers(
        dest="cmd", required=True, metavar="{sync,fanout,turn,pressure,all}"
    )

    def common(p: argparse.ArgumentParser, rounds: int) -> None:
        p.add_argument("--rounds", type=int, default=rounds, help=f"rounds (default {rounds})")
        p.add_argument(
            "--profile",
            type=Path,
            help="run the server under cProfile and write server-<bench>.prof into this folder",
        )
        p.add_argument("--json", type=Path, help="also write the results as JSON here")

    def sync_opts(p: argparse.ArgumentParser) -> None:
        p.add_argument("--events", type=int, default=20_000, help="events in the session")

    def fanout_opts(p: argparse.ArgumentParser) -> None:
        p.add_argument("--clients", type=int, default=50, help="subscribed clients (50)")
        p.add_argument("--chunks", type=int, default=500, help="text deltas per stream (500)")
        p.add_argument(
            "--delay",
            type=float,
            nargs="+",
            default=[0.01, 0.005],
            help="seconds between LLM chunks; each value is a separate series (0.01 0.005: "
            "a fast model's pace, then twice that)",
        )

    def turn_opts(p: argparse.ArgumentParser) -> None:
        p.add_argument("--turns", type=int, default=40, help="sequential turns per round (40)")

    p = sub.add_parser("sync", help="events.sync throughput to one client")
    common(p, 5)
    sync_opts(p)
    p = sub.add_parser("fanout", help="text-delta fan-out latency to N clients")
    common(p, 3)
    fanout_opts(p)
    p = sub.add_parser("turn", help="server overhead per turn, excluding the LLM")
    common(p, 5)
    turn_opts(p)
    p = sub.add_parser(
        "pressure", help="another client's ping and the server's RSS under misbehaving clients"
    )
    common(p, 1)
    p.add_argument("--events", type=int, default=20_000, help="events in the session")
    p.add_argument("--non-readers", type=int, default=2, help="clients that never read (2)")
    p.add_argument(
        "--requests", type=int, default=30, help="events.sync requests each non-reader sends"
    )
    p.add_argument("--hold", type=float, default=10, help="seconds the non-readers stay")
    p.add_argument("--settle", type=float, default=5, help="seconds measured after they leave")
    p.add_argument("--sync-reads", type=int, default=10, help="full reads by the syncing client")
    p.add_argument(
        "--server-src",
        type=Path,
        help="run the server from this checkout (e.g. a worktree of the commit to compare)",
    )
    p = sub.add_parser("all", help="sync, fanout and turn, one after the other")
    common(p, 5)
    p.add_argument(
        "--fanout-rounds", type=int, default=3, help="rounds of each fanout series (default 3)"
    )
    sync_opts(p)
    fanout_opts(p)
    turn_opts(p)

    p = sub.add_parser(
        "breakdown",
        help="diagnostic: time the steps of a turn (server in this process, patched timers)",
    )
    common(p, 1)
    turn_opts(p)

    # Internal: the child processes.
    p = sub.add_parser("_clients")
    p.add_argument("--mode", choices=["tron", "floor"], required=True)
    p.add_argument("--url", required=True)
    p.add_argument("--token")
    p.add_argument("--session")
    p.add_argument("--clients", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--timeout", type=float, default=120)
    p.add_argument("--no-deflate", action="store_true")
    p = sub.add_parser("_floor")
    p.add_argument("--llm", required=True)
    p = sub.add_parser("_pinger")
    p.add_argument("--url", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("_turns")
    p.add_argument("--url", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--session", required=True)
    p.add_argument("--turns", type=int, required=True)
    p.add_argument("--out", required=True)
    return parser


async def run(args: argparse.Namespace) -> dict[str, Any]:
    benches: dict[str, Callable[[argparse.Namespace, Path], Any]] = {
        "sync": bench_sync,
        "fanout": bench_fanout,
        "turn": bench_turn,
    }
    extra = {"pressure": bench_pressure}
    chosen = list(benches) if args.cmd == "all" else [args.cmd]
    benches["breakdown"] = bench_breakdown
    benches.update(extra)
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"machine": machine(), "command": " ".join(sys.argv)}
    log(f"{results['machine']}\n{git_state()}")
    for name in chosen:
        with tempfile.TemporaryDirectory(prefix=f"bench-server-{name}-") as tmp:
            log(f"\n== {name} ==")
            t0 = time.perf_counter()
            results[name] = await benches[name](args, Path(tmp))
            log(f"({name} took {time.perf_counter() - t0:.0f} s)")
    results["machine_after"] = machine()
    log(f"\n{results['machine_after']}")
    return results


def git_state() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "tron_events", "tron_llm", "tron_server"],
            cwd=ROOT, capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
    except OSError:
        return "git: unavailable"
    changed = len(dirty.splitlines()) if dirty else 0
    return f"git {head}" + (f" (+{changed} uncommitted files in the packages)" if changed else "")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.cmd == "_clients":
        client_main(args)
        return 0
    if args.cmd == "_floor":
        floor_main(args)
        return 0
    if args.cmd == "_pinger":
        pinger_main(args)
        return 0
    if args.cmd == "_turns":
        turns_main(args)
        return 0
    results = asyncio.run(run(args))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
