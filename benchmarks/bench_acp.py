"""``tron acp``: opening a long session in an editor.

    uv run python benchmarks/bench_acp.py [--turns 2000] [--rounds 5]

A session of ``--turns`` turns (each: the user's message, the assistant's text and a
Read call, its result, the assistant's answer: 4 events, ~1 KB of text) is written to
a fresh home's database; a real tron-server (a subprocess) serves it. Each round, in
rotated order:

- ``session/load``: a new ``tron acp`` (started as Zed starts it, driven by the ACP Python
  SDK's client) is initialized, then the time from sending ``session/load`` to the last
  replayed ``session/update`` (and to its answer) is measured;
- ``session/resume``: the same, to the answer of ``session/resume`` (nothing replayed);
- ``tron -c``: what ``tron -c`` does to open the session before drawing it, through the
  same client code (``TronClient``, ``terminal.sessions.latest_session``, then the
  terminal's catch-up: ``events.subscribe``, ``session.getTree`` into its
  ``SessionModel``, ``events.sync``, ``session.get``, ``agent.getState``) — the Textual
  drawing is not included.

Medians of the rounds; the machine's load (``uptime``) is printed with them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _workload import machine
from acp import PROTOCOL_VERSION, spawn_agent_process
from acp.schema import ClientCapabilities

from tron_events import EventStore
from tron_server.client import TronClient
from tron_server.terminal.model import SessionModel
from tron_server.terminal.sessions import latest_session

WORDS = ["the", "parser", "reads", "each", "token", "and", "the", "writer", "keeps", "the",
         "tree", "in", "order", "so", "that", "a", "rewind", "finds", "every", "file", "as",
         "it", "was"]  # fmt: skip


def text(n: int, seed: int) -> str:
    return " ".join(WORDS[(seed + i) % len(WORDS)] for i in range(n))


def build(home: Path, project: Path, turns: int) -> str:
    """The session, written straight to the database tron-server will open."""
    (home / "database").mkdir(parents=True, exist_ok=True)
    with EventStore.open(str(home / "database" / "prod.db")) as store:
        session = store.create_session(
            working_directory=str(project), model="claude-sonnet-4-5", provider="anthropic"
        )
        drafts: list[dict[str, Any]] = []
        for turn in range(1, turns + 1):
            call = f"toolu_{turn:05d}"
            drafts += [
                {"type": "message.user", "payload": {"content": text(40, turn), "turn": turn}},
                {"type": "message.assistant", "payload": {"turn": turn, "content": [
                    {"type": "text", "text": text(30, turn + 1)},
                    {"type": "tool_use", "id": call, "name": "Read",
                     "input": {"file_path": f"src/mod_{turn % 50}.py"}},
                ], "stopReason": "tool_use"}},
                {"type": "tool.result", "payload": {"toolCallId": call,
                                                    "content": text(60, turn + 2)}},
                {"type": "message.assistant", "payload": {"turn": turn, "content": [
                    {"type": "text", "text": text(50, turn + 3)}], "stopReason": "end_turn"}},
            ]  # fmt: skip
            if len(drafts) >= 2000:
                store.append_many(session.id, drafts)
                drafts = []
        if drafts:
            store.append_many(session.id, drafts)
        return session.id


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Collector:
    def __init__(self) -> None:
        self.count = 0
        self.last = 0.0

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.count += 1
        self.last = time.perf_counter()

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("no permission is asked in this benchmark")

    def on_connect(self, conn: Any) -> None:
        pass


async def acp_open(home: Path, project: Path, sid: str, how: str) -> tuple[float, float, int]:
    """(seconds to the last update, seconds to the answer, updates) of one open."""
    tron = Path(sys.executable).parent / "tron"
    collector = Collector()
    async with spawn_agent_process(
        collector, str(tron), "acp", env={"TRON_HOME": str(home)}, cwd=project,
        use_unstable_protocol=True,
    ) as (conn, _process):  # fmt: skip
        await conn.initialize(protocol_version=PROTOCOL_VERSION,
                              client_capabilities=ClientCapabilities())  # fmt: skip
        start = time.perf_counter()
        if how == "load":
            await conn.load_session(cwd=str(project), session_id=sid)
        else:
            await conn.resume_session(cwd=str(project), session_id=sid)
        answered = time.perf_counter()
        count = collector.count
    last = collector.last - start if count else 0.0
    return last, answered - start, count


async def tron_continue(url: str, token: str, project: Path) -> tuple[float, int]:
    """``tron -c``'s way to the session, up to its model of it (not drawn)."""
    async with TronClient.connect(url, token=token) as client:
        start = time.perf_counter()
        session = await latest_session(client, project)
        sid = session["id"]
        model = SessionModel(session)
        await client.call("events.subscribe", {"sessionId": sid})
        tree = await client.call("session.getTree", {"sessionId": sid})
        for ev in tree["events"]:
            model.add_event(ev)
        after = model.last_sequence
        while True:
            page = await client.call(
                "events.sync", {"sessionId": sid, "afterSequence": after, "limit": 2000}
            )
            for ev in page["events"]:
                model.add_event(ev)
            after = page.get("nextSequence", after)
            if not page["hasMore"] or not page["events"]:
                break
        model.set_session(await client.call("session.get", {"sessionId": sid}), "snapshot")
        model.apply_snapshot(await client.call("agent.getState", {"sessionId": sid}))
        return time.perf_counter() - start, len(model.path())


async def main_async(turns: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home, project = Path(tmp) / "home", Path(tmp) / "project"
        project.mkdir()
        project = project.resolve()
        t0 = time.perf_counter()
        sid = build(home, project, turns)
        print(f"built {turns} turns ({turns * 4} events) in {time.perf_counter() - t0:.1f} s")
        port = free_port()
        env = {**os.environ, "ANTHROPIC_API_KEY": "bench"}
        server = subprocess.Popen(
            [sys.executable, "-m", "tron_server", "--home", str(home), "--port", str(port),
             "--log-level", "warning"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while not (home / "server.json").exists():
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("tron-server did not start")
                await asyncio.sleep(0.1)
            token = (home / "server-token").read_text().strip()
            url = f"ws://127.0.0.1:{port}/rpc"
            results: dict[str, list[float]] = {"load": [], "load_answer": [], "resume": [],
                                               "continue": []}  # fmt: skip
            names = ["load", "resume", "continue"]
            replayed = shown = 0
            for r in range(rounds):
                order = names[r % 3 :] + names[: r % 3]
                for name in order:
                    if name == "continue":
                        seconds, shown = await tron_continue(url, token, project)
                        results["continue"].append(seconds)
                    elif name == "load":
                        last, answer, replayed = await acp_open(home, project, sid, "load")
                        results["load"].append(last)
                        results["load_answer"].append(answer)
                    else:
                        _, answer, _ = await acp_open(home, project, sid, "resume")
                        results["resume"].append(answer)
                print(f"round {r + 1}: " + ", ".join(
                    f"{k} {v[-1] * 1000:.0f} ms" for k, v in results.items()))  # fmt: skip
        finally:
            server.terminate()
            server.wait(30)
        uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        print(f"\n{machine()}; load: {uptime}")
        print(f"session of {turns} turns ({turns * 4} events), {rounds} rounds, medians:")
        print(
            f"| session/load, to the last of {replayed} updates | "
            f"{statistics.median(results['load']) * 1000:.0f} ms |"
        )
        print(
            f"| session/load, to its answer | "
            f"{statistics.median(results['load_answer']) * 1000:.0f} ms |"
        )
        print(
            f"| session/resume, to its answer | "
            f"{statistics.median(results['resume']) * 1000:.0f} ms |"
        )
        print(
            f"| tron -c, to its model of the session ({shown} path events) | "
            f"{statistics.median(results['continue']) * 1000:.0f} ms |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main_async(args.turns, args.rounds))


if __name__ == "__main__":
    main()
