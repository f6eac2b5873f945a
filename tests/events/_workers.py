"""Code run in child processes by the concurrency and crash tests, and the
check they share."""

from __future__ import annotations

import itertools
import sys
import time

from tron_events import ConcurrencyConflict, EventStore


def assert_linear(store: EventStore, session_id: str) -> list[str]:
    """One chain: sequences 0..n-1 without gaps, each event the child of the last."""
    events = store.get_events(session_id)
    assert [e.sequence for e in events] == list(range(len(events)))
    for prev, cur in itertools.pairwise(events):
        assert cur.parent_id == prev.id, "an accidental branch"
        assert cur.depth == prev.depth + 1
    session = store.get_session(session_id)
    assert session.head_event_id == events[-1].id
    assert session.event_count == len(events)
    return [e.id for e in events]


def append_shared(url: str, session_id: str, count: int, worker: int) -> tuple[list[str], int]:
    """Append ``count`` events to a shared session with compare-and-append,
    retrying on conflicts; (acknowledged ids, conflicts seen)."""
    acknowledged: list[str] = []
    conflicts = 0
    with EventStore.open(url, upgrade=False) as store:
        for i in range(count):
            while True:
                head = store.get_session(session_id).head_event_id
                try:
                    e = store.append(
                        session_id, "message.user", {"content": f"w{worker} n{i}", "turn": i},
                        expected_head=head,
                    )  # fmt: skip
                except ConcurrencyConflict:
                    conflicts += 1
                    continue
                acknowledged.append(e.id)
                break
    return acknowledged, conflicts


def append_own(url: str, session_id: str, count: int) -> list[str]:
    """Append ``count`` events to a session only this process writes."""
    with EventStore.open(url) as store:
        return [
            store.append(session_id, "message.user", {"content": f"n{i}", "turn": i}).id
            for i in range(count)
        ]


def append_forever(url: str, session_ids: list[str]) -> None:
    """Append in a loop until killed, printing each acknowledged id."""
    store = EventStore.open(url)
    i = 0
    while True:
        sid = session_ids[i % len(session_ids)]
        if i % 5 == 4:
            events = store.append_many(
                sid, [{"type": "message.user", "payload": {"content": f"batch {i} {k}"}}
                      for k in range(3)],
            )  # fmt: skip
            ids = [e.id for e in events]
        else:
            ids = [store.append(sid, "message.user", {"content": f"crash test {i}"}).id]
        sys.stdout.write(" ".join(ids) + "\n")
        sys.stdout.flush()
        i += 1
        if i % 50 == 0:
            time.sleep(0)


if __name__ == "__main__":
    append_forever(sys.argv[1], sys.argv[2:])
