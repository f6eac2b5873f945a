"""Where Tron's resume of a long session goes, step by step, in one process (issue 29).

    uv run python benchmarks/bench_resume_steps.py --turns 500,2000 --rounds 5

The sessions are ``bench_peers.py``'s generated histories (``_peer_sessions.history``,
written with ``_peer_sessions.tron_session`` into a SQLite database in a temporary
folder), one per round, so each is read for the first time, as by a server that has not
opened it. The server's steps before the first model request of a resumed session, each
timed (wall and process CPU), medians of the rounds:

* ``state``: ``EventStore.get_state_at_head`` on a store opened for it (the whole path
  projected: no snapshot or live projection of the session exists yet);
* ``state, again``: the same call once more (the live projection the first one left);
* ``convert``: ``tron_llm.anthropic.convert_messages`` of the state's messages (what
  the Anthropic adapter's ``build_body`` spends on the history), the collector on;
* ``convert, GC off``: the same with the collector paused, as ``tron_llm._http`` does
  around a request's conversion and encoding since 2c21efd (before, the collector's
  passes over thousands of live message objects were half of it);
* ``json.dumps``: the body as ``tron_llm._http`` encoded it before 2c21efd
  (``json.dumps(..., ensure_ascii=False)``);
* ``orjson.dumps``: the body as it encodes it now (``_encode``: orjson).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

STEPS = ("state", "state, again", "convert", "convert, GC off", "json.dumps", "orjson.dumps")


def timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def measure(turns: int, rounds: int, folder: Path) -> dict[str, list[tuple[float, float]]]:
    import _peer_sessions as sessions

    from tron_events import EventStore
    from tron_llm.anthropic import convert_messages

    url = f"sqlite:///{folder / f'resume-{turns}.db'}"
    EventStore.open(url).close()
    history = sessions.history(turns, seed=turns)
    ids = [sessions.tron_session(url, folder, history, "claude-sonnet-4-5") for _ in range(rounds)]
    out: dict[str, list[tuple[float, float]]] = {step: [] for step in STEPS}
    for sid in ids:
        store = EventStore.open(url)
        try:
            state, wall, cpu = timed(lambda: store.get_state_at_head(sid))  # noqa: B023
            out["state"].append((wall, cpu))
            _, wall, cpu = timed(lambda: store.get_state_at_head(sid))  # noqa: B023
            out["state, again"].append((wall, cpu))
        finally:
            store.close()
        messages, wall, cpu = timed(lambda: convert_messages(state.messages))  # noqa: B023
        out["convert"].append((wall, cpu))
        gc.disable()
        try:
            _, wall, cpu = timed(lambda: convert_messages(state.messages))  # noqa: B023
        finally:
            gc.enable()
        out["convert, GC off"].append((wall, cpu))
        body = {"model": "claude-sonnet-4-5", "max_tokens": 8192, "messages": messages}
        _, wall, cpu = timed(lambda: json.dumps(body, ensure_ascii=False).encode())  # noqa: B023
        out["json.dumps"].append((wall, cpu))
        _, wall, cpu = timed(lambda: orjson.dumps(body))  # noqa: B023
        out["orjson.dumps"].append((wall, cpu))
        done = out["state"][-1][0] * 1000
        print(f"  {turns} turns: {len(state.messages)} messages, state {done:.0f} ms",
              file=sys.stderr, flush=True)  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", default="500,2000")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    sizes = [int(t) for t in args.turns.split(",")]
    load = [os.getloadavg()[0]]
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-resume-steps-") as tmp:
        for size in sizes:
            results[size] = measure(size, args.rounds, Path(tmp))
            load.append(os.getloadavg()[0])
    print(f"\nmedians of {args.rounds} sessions, wall / CPU ms "
          f"(load {', '.join(f'{x:.1f}' for x in load)}, "
          f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC):\n")  # fmt: skip
    print("| step | " + " | ".join(f"{s:,} turns" for s in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for step in STEPS:
        cells = []
        for size in sizes:
            rows = results[size][step]
            wall = statistics.median(r[0] for r in rows) * 1000
            cpu = statistics.median(r[1] for r in rows) * 1000
            cells.append(f"{wall:.1f} / {cpu:.1f}")
        print(f"| {step} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
