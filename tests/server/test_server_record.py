"""``<home>/server.json``: how clients find a running server on any port, also when
several servers share a home (``<home>/servers/``)."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tron_server.server_record import (
    SERVERS_DIR,
    new_record,
    read_server_record,
    record_path,
    register_server,
    remove_server_record,
    running_servers,
    unregister_server,
    write_server_record,
)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_record_round_trips_user_only(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        write_server_record(tmp_path, new_record("127.0.0.1", 9123, version="1.2.3"))
    finally:
        os.umask(old)
    assert stat.S_IMODE(record_path(tmp_path).stat().st_mode) == 0o600
    record = read_server_record(tmp_path)
    assert record is not None
    assert (record.url, record.http_url) == ("ws://127.0.0.1:9123/rpc", "http://127.0.0.1:9123")
    assert record.pid == os.getpid() and record.version == "1.2.3"


def test_a_stale_or_broken_record_reads_as_absent(tmp_path: Path) -> None:
    assert read_server_record(tmp_path) is None
    write_server_record(tmp_path, new_record("127.0.0.1", 9123, pid=_dead_pid()))
    assert read_server_record(tmp_path) is None
    record_path(tmp_path).write_text("{not json")
    assert read_server_record(tmp_path) is None


def test_a_server_removes_only_its_own_record(tmp_path: Path) -> None:
    write_server_record(tmp_path, new_record("::1", 9000, pid=1))
    remove_server_record(tmp_path)  # not ours: kept
    assert record_path(tmp_path).exists()
    write_server_record(tmp_path, new_record("::1", 9000))
    assert read_server_record(tmp_path) is not None
    assert read_server_record(tmp_path).url == "ws://[::1]:9000/rpc"  # type: ignore[union-attr]
    remove_server_record(tmp_path)
    assert not record_path(tmp_path).exists()


@contextlib.contextmanager
def tron_like_process() -> Iterator[int]:
    """A process whose command line names tron_server (as a server's does)."""
    script = "import time; print('up', flush=True); time.sleep(120)"
    proc = subprocess.Popen([sys.executable, "-c", script, "tron_server"], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"up\n"  # exec'd: named
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def test_servers_sharing_a_home_hand_the_record_over(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with tron_like_process() as a, tron_like_process() as b, tron_like_process() as c:
        first, second = new_record("127.0.0.1", 9001, pid=a), new_record("127.0.0.1", 9002, pid=b)
        assert register_server(home, first) is True
        assert register_server(home, second) is False  # clients keep finding the first
        assert read_server_record(home) == first
        assert [r.pid for r in running_servers(home)] == [a, b]
        # The first stops: the second is what clients find now.
        assert unregister_server(home, a) == second
        assert read_server_record(home) == second
        assert json.loads(record_path(home).read_bytes())["pid"] == b
        # A third, then the second stops while the third runs: handed to the third.
        third = new_record("127.0.0.1", 9003, pid=c)
        assert register_server(home, third) is False
        assert unregister_server(home, b) == third
        # The last one stops: no record is left (clients start a server).
        assert unregister_server(home, c) is None
    assert not record_path(home).exists() and read_server_record(home) is None
    assert [p.name for p in (home / SERVERS_DIR).iterdir()] == [".lock"]


def test_a_killed_server_is_replaced_by_a_running_one_and_forgotten(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with tron_like_process() as b:
        with tron_like_process() as a:
            register_server(home, new_record("127.0.0.1", 9001, pid=a))
            register_server(home, new_record("127.0.0.1", 9002, pid=b))
        # The first was killed without a word: its record is stale; readers use the other.
        record = read_server_record(home)
        assert record is not None and record.pid == b
        with tron_like_process() as c:  # the next server to start forgets the dead one
            register_server(home, new_record("127.0.0.1", 9003, pid=c))
            assert sorted(p.name for p in (home / SERVERS_DIR).glob("*.json")) == sorted(
                [f"{b}.json", f"{c}.json"]
            )
            assert read_server_record(home).pid == c  # type: ignore[union-attr]
    # Records of processes that are not tron-servers (a reused pid) do not count.
    write_server_record(home, new_record("127.0.0.1", 9004, pid=os.getpid()))
    with tron_like_process() as d:
        assert register_server(home, new_record("127.0.0.1", 9005, pid=d)) is True
