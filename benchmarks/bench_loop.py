"""The agent loop between a tool's end and the next model request (issue 29, goal 1).

    uv run --group bench python benchmarks/bench_loop.py --steps 40 --rounds 3
    uv run --group bench python benchmarks/bench_loop.py --steps 40 --profile loop.html

A real tron-server (``create_app``, served by uvicorn in a thread of this process, SQLite
under a temporary home, ``bypassPermissions``) runs messages whose scripted model (the
Anthropic SSE wire format, served in this process's main event loop) answers ``--steps``
times with one tool call, then with a short text. Each call is ``--tool``: ``bash``
(``echo hi``, the Bash tool: a process tree) or ``read`` (a small file: no process).

Per step, on one clock (``time.perf_counter``):

* **tool end → stream**: the tool's ``execute`` returned → the runtime calls the
  provider's ``stream`` for the next turn (what the server itself does in between: the
  results' commit, the turn's end and the next turn's start, the state, the request);
* **tool end → request**: the same → the scripted model has the request (adds the
  Anthropic adapter and the HTTP request through the loopback);
* **round trip**: one model request to the next (the whole step, the tool included).

Wall-clock timers around the runtime's steps (summed per step) say where the time goes;
``--profile FILE`` also writes a pyinstrument profile (HTML, or text for ``.txt``) of the
server's thread. Rounds alternate nothing (there is one contender): the spread over
rounds is the machine's noise; the load average is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import inspect
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
for _p in (str(ROOT), str(BENCH_DIR)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from bench_server import free_port, timed_llm  # noqa: E402


class Marks:
    """Times of the loop's landmarks and wall time per wrapped step."""

    def __init__(self) -> None:
        self.tool_end: list[float] = []
        self.stream_start: list[float] = []
        self.tool_end_cpu: list[float] = []
        self.stream_start_cpu: list[float] = []
        self.store_cpu: list[float] = []
        self.commit_start: list[float] = []
        self.commit_end: list[float] = []
        self.steps: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.on = False

    def add(self, label: str, seconds: float) -> None:
        if self.on:
            self.steps[label] = self.steps.get(label, 0.0) + seconds
            self.calls[label] = self.calls.get(label, 0) + 1

    def clear(self) -> None:
        self.tool_end.clear()
        self.stream_start.clear()
        self.tool_end_cpu.clear()
        self.stream_start_cpu.clear()
        self.store_cpu.clear()
        self.commit_start.clear()
        self.commit_end.clear()
        self.steps.clear()
        self.calls.clear()


def wrap(marks: Marks, owner: Any, name: str, label: str, after: Callable[[], None] | None = None,
         before: Callable[[], None] | None = None) -> None:  # fmt: skip
    """Replace ``owner.name`` with a timed version (``before``/``after`` mark landmarks)."""
    fn = getattr(owner, name)
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def timed_async(*a: Any, **k: Any) -> Any:
            if before is not None:
                before()
            t0 = time.perf_counter()
            try:
                return await fn(*a, **k)
            finally:
                marks.add(label, time.perf_counter() - t0)
                if after is not None:
                    after()

        setattr(owner, name, _like(owner, name, timed_async))
    else:

        @functools.wraps(fn)
        def timed(*a: Any, **k: Any) -> Any:
            if before is not None:
                before()
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                marks.add(label, time.perf_counter() - t0)
                if after is not None:
                    after()

        setattr(owner, name, _like(owner, name, timed))


def _like(owner: Any, name: str, fn: Any) -> Any:
    """``fn`` as ``owner.name`` was defined (a staticmethod stays one)."""
    return staticmethod(fn) if isinstance(inspect.getattr_static(owner, name), staticmethod) else fn


def instrument() -> Marks:
    """Wrap the runtime's steps (private names of tron_server: a diagnostic)."""
    import tron_server.agent.compaction as compaction
    import tron_server.agent.turn as turn
    import tron_server.agent.writer as writer
    import tron_server.hub as hub
    import tron_server.tools.base as tools
    from tron_events import AsyncEventStore

    m = Marks()
    for name in ("get_state_at_head", "get_session", "append", "append_many", "get_ancestors",
                 "get_events"):  # fmt: skip
        if hasattr(AsyncEventStore, name):
            wrap(m, AsyncEventStore, name, f"store.{name}")
    for name in ("append", "append_many", "flush"):
        if hasattr(writer.SessionWriter, name):
            wrap(m, writer.SessionWriter, name, f"SessionWriter.{name}")
    if hasattr(AsyncEventStore, "append_many_and_state"):  # the turn start's commit
        wrap(m, AsyncEventStore, "append_many_and_state", "store.append_many_and_state")
        wrap(m, writer.SessionWriter, "append_many_and_state",
             "SessionWriter.append_many_and_state",
             before=lambda: m.commit_start.append(time.perf_counter()),
             after=lambda: m.commit_end.append(time.perf_counter()))  # fmt: skip

    def tool_end() -> None:
        m.tool_end.append(time.perf_counter())
        m.tool_end_cpu.append(time.thread_time())

    def stream_start() -> None:
        m.stream_start.append(time.perf_counter())
        m.stream_start_cpu.append(time.thread_time())

    wrap(m, tools.ToolRegistry, "execute", "ToolRegistry.execute", after=tool_end)
    wrap(m, tools.ToolRegistry, "specs", "ToolRegistry.specs")
    wrap(m, turn.AgentRun, "_stream", "AgentRun._stream (model)", before=stream_start)
    # The store's own CPU in its worker threads (what the loop thread waits for).
    from tron_events import EventStore

    for name in ("append", "append_many", "get_state_at_head", "get_ancestors", "get_session"):
        fn = getattr(EventStore, name)

        def cpu(*a: Any, __fn: Any = fn, **k: Any) -> Any:
            t0 = time.thread_time()
            try:
                return __fn(*a, **k)
            finally:
                if m.on:
                    m.store_cpu.append(time.thread_time() - t0)

        setattr(EventStore, name, functools.wraps(fn)(cpu))
    for name in ("_record_result", "_turn_end", "_system_prompt", "_before_turn"):
        if hasattr(turn.AgentRun, name):
            wrap(m, turn.AgentRun, name, f"AgentRun.{name}")
    wrap(m, compaction, "maybe_auto_compact", "maybe_auto_compact")
    wrap(m, turn, "check_history", "check_history")
    wrap(m, hub.Hub, "publish", "Hub.publish")
    # Inside the Bash tool: the process, its supervision, the file changes' snapshots.
    import tron_server.tools.bash as bash
    from tron_server.tools._proctree import ProcessTree

    wrap(m, bash.Bash, "_run", "Bash._run (process)")
    wrap(m, bash.Bash, "_supervise", "Bash._supervise (output, exit)")
    wrap(m, ProcessTree, "start", "ProcessTree.start")
    recorder = getattr(bash, "FileRecorder", None)
    if recorder is not None and hasattr(recorder, "around_command"):
        wrap(m, recorder, "around_command", "FileRecorder.around_command (enter)")
    import tron_server.hooks.base as hooks

    wrap(m, hooks.HookEngine, "run_blocking", "HookEngine.run_blocking")
    return m


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


async def main(args: argparse.Namespace) -> None:
    import uvicorn

    from tests.support.scripted_llm import Response, Text, ToolUse
    from tron_server.app import create_app, uvicorn_options
    from tron_server.client import TronClient
    from tron_server.settings import Settings

    if args.inline:  # an experiment: the turn start's commit and state without the hop
        from tron_events import AsyncEventStore

        async def inline(self: Any, sid: str, drafts: Any, *, expected_head: Any = None) -> Any:
            async with self._writer:
                events = self.sync.append_many(sid, list(drafts), expected_head=expected_head)
                return events, self.sync.get_state_at_head(sid)

        AsyncEventStore.append_many_and_state = inline  # type: ignore[method-assign]
    marks = instrument()
    os.environ.setdefault("ANTHROPIC_API_KEY", "bench-key")
    tmp = Path(tempfile.mkdtemp(prefix="bench-loop-"))
    work = tmp / "work"
    work.mkdir()
    (work / "small.txt").write_text("hello\n" * 20)
    if args.tool == "bash":
        call = ToolUse("Bash", {"command": "echo hi", "description": "echo"})
    else:
        call = ToolUse("Read", {"file_path": str(work / "small.txt")})
    profiler = None
    if args.profile is not None:
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.0005, async_mode="disabled")
    async with timed_llm() as (llm, times):
        port = free_port()
        settings = Settings(
            home=tmp / "home", port=port, anthropic_base_url=llm.base_url, log_level="warning",
            allow_bypass_permissions=True,
        )  # fmt: skip
        app = create_app(settings)
        server = uvicorn.Server(uvicorn.Config(app, **uvicorn_options(settings)))

        def serve() -> None:
            if profiler is not None:
                profiler.start()
            try:
                asyncio.run(server.serve())
            finally:
                if profiler is not None:
                    profiler.stop()

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        while not server.started:
            await asyncio.sleep(0.01)
        create = {"workingDirectory": str(work), "provider": "anthropic"}
        rounds: list[dict[str, float]] = []
        try:
            async with TronClient.connect(f"ws://127.0.0.1:{port}/rpc", token=app.state.token) as c:

                async def message(steps: int) -> str:
                    session = await c.call("session.create", create)
                    sid = session["id"]
                    await c.call("session.setMode", {"sessionId": sid, "mode": "bypassPermissions"})
                    for _ in range(steps):
                        llm.add(Response([call]))
                    llm.add(Response([Text("done")]))
                    await c.send_message_and_wait(sid, "go")
                    return str(sid)

                await message(3)  # warm up: imports, the first waiter, the caches
                for r in range(args.rounds):
                    marks.clear()
                    times.spans.clear()
                    marks.on = True
                    await message(args.steps)
                    marks.on = False
                    starts = [s for s, _ in times.spans]
                    # Step i: tool i ended -> stream i+1 / request i+1 (request 0 is the first).
                    n = min(len(marks.tool_end), len(marks.stream_start) - 1, len(starts) - 1)
                    to_stream = [
                        (marks.stream_start[i + 1] - marks.tool_end[i]) * 1000 for i in range(n)
                    ]
                    to_request = [(starts[i + 1] - marks.tool_end[i]) * 1000 for i in range(n)]
                    trip = [(starts[i + 1] - starts[i]) * 1000 for i in range(n)]
                    row = {}
                    if len(marks.commit_end) > n:  # the turn start's commit and state
                        cs, ce = marks.commit_start, marks.commit_end
                        row["tool_end_to_commit_ms"] = med(
                            [(cs[i + 1] - marks.tool_end[i]) * 1000 for i in range(n)]
                        )
                        row["commit_and_state_ms"] = med(
                            [(ce[i + 1] - cs[i + 1]) * 1000 for i in range(n)]
                        )
                        row["state_to_stream_ms"] = med(
                            [(marks.stream_start[i + 1] - ce[i + 1]) * 1000 for i in range(n)]
                        )
                    loop_cpu = [
                        (marks.stream_start_cpu[i + 1] - marks.tool_end_cpu[i]) * 1000
                        for i in range(n)
                    ]
                    row |= {
                        "loop_thread_cpu_ms": med(loop_cpu),
                        # every store call of the message (the tool's own steps too)
                        "store_cpu_ms_per_step": sum(marks.store_cpu) / max(n, 1) * 1000,
                        "tool_end_to_stream_ms": med(to_stream),
                        "tool_end_to_request_ms": med(to_request),
                        "round_trip_ms": med(trip),
                        "tool_ms": marks.steps.get("ToolRegistry.execute", 0.0) / max(n, 1) * 1000,
                    }
                    rounds.append(row)
                    figures = ", ".join(f"{k} {v:.2f}" for k, v in row.items())
                    print(f"round {r + 1} (load {load()}): {figures}", flush=True)
                    steps = marks.steps
                    calls = marks.calls
                    per = max(n, 1)
                    if r == args.rounds - 1:
                        print("\nper step (last round; wall ms, nested steps overlap):")
                        print("| step | ms per step | calls per step |")
                        print("|---|---|---|")
                        for label, sec in sorted(steps.items(), key=lambda kv: -kv[1]):
                            each = calls[label] / per
                            print(f"| {label} | {sec / per * 1000:.2f} | {each:.1f} |")
        finally:
            server.should_exit = True
            thread.join(20)
    keys = rounds[0].keys() if rounds else []
    print(f"\nmedians over {len(rounds)} rounds of {args.steps} steps ({args.tool}):")
    for k in keys:
        print(f"  {k}: {med([row[k] for row in rounds]):.2f}")
    if profiler is not None:
        out: Path = args.profile
        if out.suffix == ".txt":
            out.write_text(profiler.output_text(unicode=True, show_all=False))
        else:
            out.write_text(profiler.output_html())
        print(f"profile: {out}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=40, help="tool calls per message (default 40)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--tool", choices=("bash", "read"), default="bash")
    p.add_argument("--inline", action="store_true", help="experiment: commit in the loop")
    p.add_argument("--profile", type=Path, help="write a pyinstrument profile here")
    return p


if __name__ == "__main__":
    asyncio.run(main(build_parser().parse_args()))
