"""``<home>/server.json``: how clients find a running server on any port."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from tron_server.server_record import (
    new_record,
    read_server_record,
    record_path,
    remove_server_record,
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
