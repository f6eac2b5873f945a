"""Several processes on one database: nothing lost, duplicated or branched.

SQLite here must also never let "database is locked" reach a caller; the
crash test kills writers with SIGKILL and checks what survives.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.events import _workers
from tests.events._workers import assert_linear
from tron_events import EventStore

pytestmark = pytest.mark.slow

PROCESSES = 4
PER_PROCESS = 40


def test_processes_share_one_session_with_expected_head(store: EventStore) -> None:
    s = store.create_session(working_directory="/p", model="m", provider="p")
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(PROCESSES) as pool:
        results = pool.starmap(
            _workers.append_shared,
            [(store.url, s.id, PER_PROCESS, w) for w in range(PROCESSES)],
        )
    acknowledged = [eid for ids, _ in results for eid in ids]
    assert len(acknowledged) == len(set(acknowledged)) == PROCESSES * PER_PROCESS
    chain = assert_linear(store, s.id)
    assert sorted(chain[1:]) == sorted(acknowledged)


def test_processes_on_separate_sessions(store: EventStore) -> None:
    sessions = [
        store.create_session(working_directory=f"/p{i}", model="m", provider="p")
        for i in range(PROCESSES)
    ]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(PROCESSES) as pool:
        results = pool.starmap(
            _workers.append_own, [(store.url, s.id, PER_PROCESS) for s in sessions]
        )
    for s, acknowledged in zip(sessions, results, strict=True):
        assert assert_linear(store, s.id)[1:] == acknowledged
    feed = store.get_since(limit=100_000).events
    assert len(feed) == len({e.id for e in feed}) == PROCESSES * (PER_PROCESS + 1)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_sigkill_during_appends_loses_nothing_acknowledged(
    store: EventStore, tmp_path: Path
) -> None:
    kills = 20
    sessions = [
        store.create_session(working_directory="/crash", model="m", provider="p").id
        for _ in range(3)
    ]
    acknowledged: list[str] = []
    rng = random.Random(1234)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for _ in range(kills):
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.events._workers", store.url, *sessions],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
        )  # fmt: skip
        assert child.stdout is not None
        first = child.stdout.readline()  # it is writing
        assert first, child.stderr.read() if child.stderr else "no output"
        acknowledged.extend(first.split())
        time.sleep(rng.uniform(0.0, 0.15))
        child.send_signal(signal.SIGKILL)
        out, err = child.communicate()
        assert "locked" not in err
        # A line is complete only if the process printed its newline.
        lines = out.split("\n")
        for line in lines[:-1]:
            acknowledged.extend(line.split())
    # Reopen as a new process would, after the crashes.
    with EventStore.open(store.url) as after:
        assert after.recorder.integrity_check() == "ok"  # type: ignore[attr-defined]
        stored: set[str] = set()
        for sid in sessions:
            chain = assert_linear(after, sid)
            head = after.get_session(sid).head_event_id
            assert after.get_ancestors(head)[0].id == chain[0]
            stored.update(chain)
        missing = [eid for eid in acknowledged if eid not in stored]
        assert not missing, f"{len(missing)} acknowledged events lost"
        assert len(acknowledged) > kills
