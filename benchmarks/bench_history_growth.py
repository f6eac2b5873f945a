"""Per-call work that grows with the history (issue 29): the history check and the
adapters' conversion of the history, full walk against incremental, at a long session.

    uv run python benchmarks/bench_history_growth.py --turns 500 --calls 20

A ``_peer_sessions`` history of ``--turns`` turns (each with a tool call: four
messages a turn) is written to a SQLite store; then ``--calls`` more turns are
appended one at a time, each followed by ``get_state_at_head`` (the store's live
projection, as the agent's turn reads it) and, on that state's messages:

* ``validate_history`` (the full walk, what each model call did before) against a
  ``HistoryChecker`` kept across the calls (what a run does now);
* each adapter's body built without its wire cache (as before) and with it (a cache
  kept across the calls, as the adapter instance keeps it), checked equal; best of 3
  with the collector paused, as ``tron_llm._http`` builds a body. The check is timed
  once per call (its state moves on), the collector on.

Also reported: how many of the state's messages are the very objects of the previous
call's state (the prefix a turn hands to the next), within one store and after the
store is opened again (a new process: none). Medians over the calls, in ms.
"""

from __future__ import annotations

import argparse
import gc
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


def _ms(fn: Callable[[], Any], repeat: int = 3) -> tuple[Any, float]:
    """The result and the best time of ``repeat`` calls, the collector paused (as
    ``tron_llm._http`` pauses it around a request's conversion)."""
    best = float("inf")
    out = None
    gc.disable()
    try:
        for _ in range(repeat):
            start = time.perf_counter()
            out = fn()
            best = min(best, time.perf_counter() - start)
    finally:
        gc.enable()
    return out, best * 1000


def _turn_events(n: int, model: str) -> list[dict[str, Any]]:
    usage = {"inputTokens": 100, "outputTokens": 5, "cacheReadTokens": 0, "cacheCreationTokens": 0}
    call_id = f"toolu_more{n:06d}"
    arguments = {"command": f"rg probe{n}", "description": "Search"}
    return [
        {"type": "message.user", "payload": {"content": f"step {n}: go on", "turn": n}},
        {"type": "stream.turn_start", "payload": {"turn": n}},
        {
            "type": "message.assistant",
            "payload": {
                "content": [
                    {"type": "tool_use", "id": call_id, "name": "Bash", "input": arguments}
                ],
                "turn": n, "tokenUsage": usage, "stopReason": "tool_use", "model": model,
                "latency": 900.0,
            },
        },
        {"type": "tool.call", "payload": {"toolCallId": call_id, "name": "Bash",
                                          "arguments": arguments, "turn": n}},
        {"type": "tool.result", "payload": {"toolCallId": call_id, "content": f"out {n}\n" * 20,
                                            "isError": False, "duration": 12.0}},
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()

    import _peer_sessions as sessions

    from tron_events import EventStore
    from tron_events.validate import HistoryChecker, validate_history
    from tron_llm import anthropic, gemini
    from tron_llm._types import LLMRequest
    from tron_llm._wire_cache import WireCache
    from tron_llm.openai_chat import OpenAIChatProvider
    from tron_llm.openai_responses import OpenAIResponsesProvider

    model = "claude-sonnet-4-5"
    chat = OpenAIChatProvider(api_key="k")
    responses = OpenAIResponsesProvider(api_key="k")
    anthropic_cache: WireCache[Any] = WireCache()
    gemini_cache: WireCache[Any] = WireCache()
    builders: dict[str, tuple[Callable[[LLMRequest], Any], Callable[[LLMRequest], Any]]] = {
        "anthropic": (
            lambda r: anthropic.build_body(r),
            lambda r: anthropic.build_body(r, anthropic_cache),
        ),
        "openai-chat": (
            lambda r: chat.build_body(r, cached=False),
            lambda r: chat.build_body(r),
        ),
        "openai-responses": (
            lambda r: responses.build_body(r, cached=False),
            lambda r: responses.build_body(r),
        ),
        "gemini": (
            lambda r: gemini.build_body(r, gemini._id_map(r)),
            lambda r: gemini.build_body(r, None, gemini_cache),  # as the adapter now
        ),
    }
    times: dict[str, list[float]] = {"check: full": [], "check: incremental": []}
    for name in builders:
        times[f"{name}: uncached"] = []
        times[f"{name}: cached"] = []
    same: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        url = f"sqlite:///{folder / 'growth.db'}"
        EventStore.open(url).close()
        history = sessions.history(args.turns, seed=args.turns)
        sid = sessions.tron_session(url, folder, history, model)
        store = EventStore.open(url)
        checker = HistoryChecker()
        previous: list[Any] = []
        try:
            state = store.get_state_at_head(sid)
            checker.check(state.messages)
            for _, cached in builders.values():
                cached(LLMRequest(model=model, messages=state.messages))
            previous = state.messages
            for n in range(args.calls):
                store.append_many(sid, _turn_events(100_000 + n, model))
                state = store.get_state_at_head(sid)
                messages = state.messages
                common = min(len(previous), len(messages))
                same.append(sum(a is b for a, b in zip(previous, messages, strict=False)) / common)
                full, t_full = _ms(lambda: validate_history(messages))  # noqa: B023
                # Once: the checker's state moves on with each call.
                start = time.perf_counter()
                inc = checker.check(messages)
                times["check: incremental"].append((time.perf_counter() - start) * 1000)
                times["check: full"].append(t_full)
                assert inc == full
                request = LLMRequest(model=model, messages=messages, system="You are Tron.")
                for name, (uncached, cached) in builders.items():
                    body, t_un = _ms(lambda: uncached(request))  # noqa: B023
                    # The first call converts the new messages; the best of 3 is kept.
                    fast, t_cached = _ms(lambda: cached(request))  # noqa: B023
                    times[f"{name}: cached"].append(t_cached)
                    times[f"{name}: uncached"].append(t_un)
                    assert orjson.dumps(fast) == orjson.dumps(body), name
                previous = messages
            count = len(messages)
        finally:
            store.close()
        reopened = EventStore.open(url)
        try:
            again = reopened.get_state_at_head(sid).messages
            across = sum(a is b for a, b in zip(previous, again, strict=False)) / len(again)
        finally:
            reopened.close()
    print(f"history: {count} messages at the last call ({args.turns} turns + {args.calls} calls)")
    print(f"messages that are the previous call's objects: median {statistics.median(same):.1%}"
          f" (min {min(same):.1%}); after reopening the store: {across:.1%}")  # fmt: skip
    print("| per model call (median, ms) | before: full | after: incremental |")
    print("|---|---|---|")
    print(f"| history check | {statistics.median(times['check: full']):.3f} | "
          f"{statistics.median(times['check: incremental']):.3f} |")  # fmt: skip
    for name in builders:
        print(f"| {name} body | {statistics.median(times[f'{name}: uncached']):.3f} | "
              f"{statistics.median(times[f'{name}: cached']):.3f} |")  # fmt: skip


if __name__ == "__main__":
    main()
