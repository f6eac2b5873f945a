"""Round trip, as a property: random trees of sessions (forks, rewinds,
compactions, deletions, tool calls with inputs large enough to be truncated,
ended sessions) exported and imported into an empty database on the same
backend give identical rows and identical reconstructed histories; one
session exported alone imports on its own and reconstructs the same."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.events._transfer_helpers import rows_of
from tests.support.stores import make_url
from tron_events import EventStore, SessionNotActive
from tron_events.transfer import export_jsonl, import_jsonl

EXAMPLES = {"dev": 200}.get(os.environ.get("HYPOTHESIS_PROFILE", "ci"), 20)

OPS = ["user", "assistant", "tool", "big_tool", "compact", "delete", "rewind", "fork", "end",
       "switch", "turn_end"]  # fmt: skip
WORDS = st.sampled_from(["alpha", "beta", "gamma", "délta", "naïve", "emoji 🚀", "x" * 300])


@pytest.fixture
def stores(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[EventStore, EventStore]]:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    gens = [make_url(backend, tmp_path / d, request) for d in ("a", "b")]
    opened = [EventStore.open(next(g)) for g in gens]
    try:
        yield opened[0], opened[1]
    finally:
        for s in opened:
            s.close()
        for g in gens:
            next(g, None)


def wipe(store: EventStore) -> None:
    search = "events_fts" if store.url.startswith("sqlite") else "events_search"
    with store.recorder.write() as cur:
        for table in ("state_snapshots", search, "events", "sessions", "workspaces"):
            cur.execute(f"DELETE FROM {table}")


def build(store: EventStore, ops: list[tuple[str, int, str]]) -> list[str]:
    """Apply the operations; returns the session ids."""
    first = store.create_session(working_directory="/w/one", model="m", provider="p", title="t")
    sessions = [first.id]
    current = first.id
    turn = 0
    for op, n, word in ops:
        session = store.get_session(current)
        path = store.get_ancestors(session.head_event_id)
        try:
            if op == "user":
                turn += 1
                store.append(current, "message.user", {"content": f"{word} {n}", "turn": turn})
            elif op == "assistant":
                store.append(
                    current,
                    "message.assistant",
                    {"content": [{"type": "text", "text": word}], "turn": turn,
                     "tokenUsage": {"inputTokens": n, "outputTokens": n % 7}},
                )  # fmt: skip
            elif op in ("tool", "big_tool"):
                args = {"cmd": word * (40 if op == "big_tool" else 1), "n": n}
                tid = f"tu_{n}_{len(path)}"
                store.append_many(
                    current,
                    [
                        {"type": "message.assistant", "payload": {"content": [
                            {"type": "tool_use", "id": tid, "name": "bash", "input": args}],
                            "turn": turn}},
                        {"type": "tool.call", "payload": {"toolCallId": tid, "name": "bash",
                                                          "arguments": args}},
                        {"type": "tool.result", "payload": {"toolCallId": tid,
                                                            "content": f"out {word}"}},
                    ],
                )  # fmt: skip
            elif op == "compact":
                store.append(current, "compact.summary", {"summary": f"so far: {word}"})
            elif op == "delete":
                targets = [e for e in path if e.type in ("message.user", "tool.result")]
                if targets:
                    target = targets[n % len(targets)]
                    store.append(
                        current,
                        "message.deleted",
                        {"targetEventId": target.id, "targetType": target.type},
                    )
            elif op == "rewind" and len(path) > 1:
                store.rewind(current, path[n % len(path)].id)
            elif op == "fork":
                fork = store.fork(path[n % len(path)].id, name=word[:20])
                sessions.append(fork.session.id)
                current = fork.session.id
            elif op == "end":
                store.end_session(current, reason=word[:20])
            elif op == "switch":
                current = sessions[n % len(sessions)]
            elif op == "turn_end":
                store.append(current, "stream.turn_end", {"turn": turn, "cost": n / 1000})
        except SessionNotActive:
            current = sessions[n % len(sessions)]
    return sessions


def export(store: EventStore, **scope: Any) -> bytes:
    out = io.BytesIO()
    export_jsonl(store, out, **scope)
    return out.getvalue()


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    ops=st.lists(
        st.tuples(st.sampled_from(OPS), st.integers(0, 10_000), WORDS), min_size=1, max_size=30
    ),
    pick=st.integers(0, 100),
)
def test_round_trip_gives_identical_rows_and_histories(
    stores: tuple[EventStore, EventStore], ops: list[tuple[str, int, str]], pick: int
) -> None:
    source, target = stores
    wipe(source)
    wipe(target)
    sessions = build(source, ops)
    summary = import_jsonl(target, io.BytesIO(export(source, all=True)))
    assert summary.ok and summary.sessions_imported == len(sessions), summary.describe()
    assert rows_of(target) == rows_of(source)
    for sid in sessions:
        head = source.get_session(sid).head_event_id
        assert target.get_state_at(head) == source.get_state_at(head)
    # One session alone: the file carries what it needs (the sessions its
    # forks come from) and reconstructs the same history on its own.
    wipe(target)
    chosen = sessions[pick % len(sessions)]
    alone = import_jsonl(target, io.BytesIO(export(source, session_id=chosen)))
    assert alone.ok and chosen in alone.imported
    head = source.get_session(chosen).head_event_id
    assert target.get_messages_at(head) == source.get_messages_at(head)
