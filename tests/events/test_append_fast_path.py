"""The per-commit append's pieces written out for speed (issue 29, goal 3) say what the
general code they stand for says: the timestamp, the change signal's bump, the path
cache's row, a payload type registered again, and SQLite's one-event transaction
waiting out another writer."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from datetime import UTC, datetime
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from tron_events import EventStore
from tron_events import store as store_module
from tron_events._changes import ALL_EVENTS, ChangeSignal
from tron_events._path_cache import PathCache
from tron_events.errors import InvalidPayload
from tron_events.models import SharedPayload
from tron_events.payloads import Payload, register_event_type, validate_payload


@settings(max_examples=200)
@given(seconds=st.integers(0, 4_000_000_000), millis=st.integers(0, 999))
def test_now_is_the_iso_time_in_milliseconds(seconds: int, millis: int) -> None:
    t = seconds + millis / 1000 + 0.0004  # inside the millisecond, clear of rounding
    with mock.patch.object(store_module.time, "time", return_value=t):
        got = store_module.now()
    want = datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds")
    assert got == want.replace("+00:00", "Z")


def test_bump_commit_is_the_bump_of_the_session_its_workspace_and_all_events() -> None:
    a, b = ChangeSignal(), ChangeSignal()
    for sid, wid in [("s1", "w1"), ("s1", "w1"), ("s2", "w1")]:
        a.bump_commit(sid, wid)
        b.bump(sid, wid, ALL_EVENTS)
    for keys in ["s1", "s2", "w1", ALL_EVENTS, "other"]:
        assert a.version(frozenset({keys})) == b.version(frozenset({keys}))


def test_bump_commit_wakes_who_waits_on_any_of_its_keys() -> None:
    async def run() -> list[bool]:
        signal = ChangeSignal()
        woken = []
        for keys in [{"s1"}, {"w1"}, {ALL_EVENTS}, {"s2"}]:
            seen = signal.version(frozenset(keys))
            waiter = asyncio.create_task(signal.wait(frozenset(keys), seen, timeout=0.5))
            await asyncio.sleep(0.01)  # waiting now
            threading.Thread(target=signal.bump_commit, args=("s1", "w1")).start()
            t0 = time.monotonic()
            await waiter
            woken.append(time.monotonic() - t0 < 0.4)
        return woken

    assert asyncio.run(run()) == [True, True, True, False]


rows = st.lists(st.tuples(st.integers(0, 6), st.text(max_size=30)), max_size=12)


@given(steps=rows, budget=st.sampled_from([10**9, 2_000]))
def test_extend_one_keeps_what_extend_keeps(steps: list[tuple[int, str]], budget: int) -> None:
    """Any order of rows (gaps, repeats, out of order), over two sessions and a budget
    that evicts: the same rows cached, the same byte counts."""
    one, many = PathCache(budget), PathCache(budget)
    for i, (sequence, raw) in enumerate(steps):
        sid = f"s{i % 2}"
        row = (i, f"e{i}", None, sequence, sequence, "t", "now", SharedPayload(raw))
        one.extend_one(sid, "w", row)
        many.extend(sid, "w", sequence - 1, [row])
    assert one._nbytes == many._nbytes
    assert list(one._sessions) == list(many._sessions)
    for sid, entry in one._sessions.items():
        other = many._sessions[sid]
        assert (entry.max_sequence, entry.nbytes) == (other.max_sequence, other.nbytes)
        assert entry.by_id == other.by_id


class _First(Payload):
    value: int


class _Second(Payload):
    value: str


def test_a_type_registered_again_is_validated_by_its_new_model() -> None:
    name = "test.fast_path_registered_again"
    register_event_type(name, _First)
    assert validate_payload(name, {"value": 1}) == {"value": 1}
    register_event_type(name, _Second)
    with pytest.raises(InvalidPayload):
        validate_payload(name, {"value": 1})
    assert validate_payload(name, {"value": "x"}) == {"value": "x"}


class _Plain(BaseModel):  # not a Payload: no fast path, pydantic decides
    value: int


def test_a_type_without_a_fast_path_is_validated_by_its_model() -> None:
    name = "test.fast_path_plain_model"
    register_event_type(name, _Plain)  # type: ignore[arg-type]
    with pytest.raises(InvalidPayload):
        validate_payload(name, {"value": "x"})
    assert validate_payload(name, {"value": 2}) == {"value": 2}


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_an_append_to_the_known_head_waits_for_another_writer(store: EventStore) -> None:
    s = store.create_session(working_directory="/w", model="m", provider="p")
    first = store.append(s.id, "message.user", {"content": "a"})  # the head is known now
    other = sqlite3.connect(
        store.recorder.path,  # type: ignore[attr-defined]
        isolation_level=None,
        check_same_thread=False,
    )
    other.execute("BEGIN IMMEDIATE")  # the write lock, as another process would hold it
    released = threading.Event()

    def release() -> None:
        time.sleep(0.2)
        other.execute("COMMIT")
        released.set()

    threading.Thread(target=release).start()
    got: Any = store.append(s.id, "message.user", {"content": "b"})
    assert released.is_set()
    other.close()
    assert got.parent_id == first.id
    assert [e.id for e in store.get_events(s.id)][-2:] == [first.id, got.id]
