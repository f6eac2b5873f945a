"""A full disk and I/O errors: typed errors, nothing written, usable once space is freed.

SQLite runs on a small tmpfs (a real ENOSPC) and under a file-size limit in a
subprocess (``RLIMIT_FSIZE``: a real EFBIG, which SQLite reports as an I/O
error). PostgreSQL gets a real full disk too: the events tables move to a
tablespace on a small tmpfs. Mounting needs root (CAP_SYS_ADMIN); without it
those tests skip, saying so. The SQLSTATE mapping is also unit-tested for the
codes a real server cannot be made to produce here (58030 I/O error, …).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.events.test_store import snapshot
from tests.support import pg
from tron_events import EventStore
from tron_events.errors import (
    DatabaseReadOnly,
    DiskFull,
    StorageError,
    StorageIOError,
    TronEventsError,
)

# Incompressible enough that PostgreSQL's TOAST cannot shrink it much.
BIG = os.urandom(300_000).hex()


@contextlib.contextmanager
def small_tmpfs(size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted on a fresh folder under /tmp (readable by
    the PostgreSQL server's user), unmounted afterwards; skips without mount."""
    if shutil.which("mount") is None:
        pytest.skip("no mount command: cannot make a small disk to fill")
    where = Path(tempfile.mkdtemp(prefix="tron-full-"))
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        where.rmdir()
        pytest.skip(
            f"cannot mount a small tmpfs ({done.stderr.strip() or done.returncode}): "
            "the disk-full tests need root with CAP_SYS_ADMIN"
        )
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)
        with contextlib.suppress(OSError):
            where.rmdir()


def fill(folder: Path) -> Path:
    """Write a file in ``folder`` until the disk is full; returns it."""
    filler = folder / "filler"
    block = b"\0" * 65_536
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(block)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
        with contextlib.suppress(OSError):  # the last few bytes
            while True:
                f.write(b"\0" * 512)
    return filler


Write = Callable[[EventStore, str], object]
#: Every kind of write, each carrying a big payload that needs new disk space.
WRITES: dict[str, Write] = {
    "append": lambda st, sid: st.append(sid, "message.user", {"content": "w1 " + BIG}),
    "append_many": lambda st, sid: st.append_many(
        sid,
        [
            {"type": "message.user", "payload": {"content": "w2 " + BIG}},
            {"type": "message.assistant", "payload": {"content": [{"type": "text", "text": BIG}]}},
        ],
    ),
    "create_session": lambda st, sid: st.create_session(
        working_directory="/full", model="m", provider="p", system_prompt="w3 " + BIG
    ),
    "end_session": lambda st, sid: st.end_session(sid, summary="w4 " + BIG),
}


def assert_full_then_usable(store: EventStore, sid: str, filler: Path) -> None:
    """Every write fails with DiskFull and leaves the store as it was; once
    the filler is gone every write succeeds."""
    before = snapshot(store)
    for name, write in WRITES.items():
        with pytest.raises(DiskFull) as info:
            write(store, sid)
        assert "full" in str(info.value) and "nothing was written" in str(info.value), name
        assert snapshot(store) == before, f"{name} left something behind"
    assert store.search("w1") == [] and store.search("w2") == []
    filler.unlink()
    for write in WRITES.values():
        write(store, sid)
    assert store.get_session(sid).status == "ended"
    assert len(store.get_events(sid)) == len(before[0]) + 4  # append, 2 of append_many, end
    assert {h.session_id for h in store.search("w1")} == {sid}


def test_sqlite_disk_full_is_typed_and_recoverable() -> None:
    with small_tmpfs("4m") as disk:
        url = f"sqlite:///{disk / 'events.db'}"
        store = EventStore.open(url)
        try:
            sid = store.create_session(working_directory="/full", model="m", provider="p").id
            store.append(sid, "message.user", {"content": "before the disk filled"})
            filler = fill(disk)
            assert_full_then_usable(store, sid, filler)
            assert store.recorder.integrity_check() == "ok"  # type: ignore[attr-defined]
        finally:
            store.close()
        with EventStore.open(url) as again:
            assert again.get_session(sid).event_count == 6


FSIZE_CHILD = textwrap.dedent(
    """
    import json, resource, signal, sys
    from tron_events import EventStore
    from tron_events.errors import TronEventsError

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of being killed
    store = EventStore.open(sys.argv[1])
    sid = sys.argv[2]
    count = store.get_session(sid).event_count
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, hard))
    try:
        store.append(sid, "message.user", {"content": "x " * 200_000})
        failed = None
    except TronEventsError as exc:
        failed = [type(exc).__name__, str(exc), type(exc.__cause__).__name__]
    unchanged = store.get_session(sid).event_count == count
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    store.append(sid, "message.user", {"content": "x " * 200_000})
    after = store.get_session(sid).event_count
    print(json.dumps({"failed": failed, "unchanged": unchanged, "after": after - count}))
    """
)


def test_sqlite_file_size_limit_is_a_typed_io_error(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'events.db'}"
    with EventStore.open(url) as store:  # migrated here: the child need not import Alembic
        sid = store.create_session(working_directory="/f", model="m", provider="p").id
    done = subprocess.run(
        [sys.executable, "-c", FSIZE_CHILD, url, sid],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    # SQLite reports EFBIG as SQLITE_IOERR_WRITE (ENOSPC is SQLITE_FULL).
    assert result["failed"] is not None, "the write past the limit succeeded"
    kind, message, cause = result["failed"]
    assert kind in ("StorageIOError", "DiskFull") and cause == "OperationalError", result
    assert "nothing was written" in message and "events.db" in message
    assert result["unchanged"] and result["after"] == 1


def test_sqlite_read_only_database_is_typed(tmp_path: Path) -> None:
    # File modes do not stop root; SQLite's query_only pragma raises the same
    # SQLITE_READONLY a read-only file does, on the store's own connection.
    with EventStore.open(f"sqlite:///{tmp_path / 'events.db'}") as store:
        sid = store.create_session(working_directory="/r", model="m", provider="p").id
        conn = store.recorder._connection()  # type: ignore[attr-defined]
        conn.execute("PRAGMA query_only = ON")
        with pytest.raises(DatabaseReadOnly, match="cannot be written"):
            store.append(sid, "message.user", {"content": "no"})
        conn.execute("PRAGMA query_only = OFF")
        store.append(sid, "message.user", {"content": "yes"})
        assert store.get_session(sid).event_count == 2


# -- PostgreSQL ---------------------------------------------------------------


def _postgres_tablespace_skip() -> str | None:
    reason = pg.unavailable_reason()
    if reason:
        return f"PostgreSQL tests skipped: {reason}"
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return "no local 'postgres' user: the server cannot use a tmpfs made here"
    return None


def test_postgres_disk_full_is_typed_and_recoverable(pg_template: str) -> None:
    reason = _postgres_tablespace_skip()
    if reason:
        pytest.skip(reason)
    user = pwd.getpwnam("postgres")
    with small_tmpfs("6m") as disk:
        space = disk / "space"
        space.mkdir()
        os.chown(space, user.pw_uid, user.pw_gid)
        tablespace = f"tron_full_{os.getpid()}"
        with pg._connect() as admin:
            try:
                admin.execute(f"CREATE TABLESPACE {tablespace} LOCATION '{space}'")
            except Exception as exc:  # a server on another machine cannot see the folder
                pytest.skip(f"the PostgreSQL server cannot use a tablespace here: {exc}")
        try:
            with pg.fresh_database(template=pg_template) as url:
                dbname = url.rsplit("/", 1)[1]
                with pg._connect(pg.ADMIN_DSN.rsplit("/", 1)[0] + "/" + dbname) as conn:
                    # The events (and their TOAST rows) and the search rows live on the small disk.
                    for table in ("events", "events_search"):
                        conn.execute(f"ALTER TABLE {table} SET TABLESPACE {tablespace}")
                with EventStore.open(url) as store:
                    sid = store.create_session(working_directory="/full", model="m", provider="p")
                    store.append(sid.id, "message.user", {"content": "before the disk filled"})
                    filler = fill(disk)
                    with pytest.raises(DiskFull, match=dbname) as info:
                        store.append(sid.id, "message.user", {"content": BIG})
                    assert getattr(info.value.__cause__, "sqlstate", None) == "53100"
                    assert_full_then_usable(store, sid.id, filler)
        finally:
            with pg._connect() as admin:
                admin.execute(f"DROP TABLESPACE IF EXISTS {tablespace}")


def _pg_error(sqlstate: str, message: str = "boom") -> Any:
    import psycopg.errors

    return psycopg.errors.lookup(sqlstate)(message)


@pytest.mark.parametrize(
    ("sqlstate", "kind", "words"),
    [
        ("53100", DiskFull, "is full"),
        ("58030", StorageIOError, "I/O error"),
        ("58000", StorageIOError, "I/O error"),
        ("58P01", StorageIOError, "I/O error"),
        ("53000", StorageError, "ran out of resources"),
        ("53200", StorageError, "ran out of resources"),
        ("XX001", StorageError, "damaged"),
        ("XX002", StorageError, "damaged"),
        ("25006", DatabaseReadOnly, "read-only"),
    ],
)
def test_postgres_storage_sqlstates_are_typed(
    sqlstate: str, kind: type[StorageError], words: str
) -> None:
    """The SQLSTATE classes a real server here can only be made to produce for
    53100 (above): each maps to its typed error, which names the database
    without its password and says that nothing was written."""
    pytest.importorskip("psycopg")
    from tron_events._postgres import _translate

    typed = _translate(_pg_error(sqlstate, "could not write block"), "postgresql://u@h/db")
    assert type(typed) is kind
    assert isinstance(typed, TronEventsError)
    assert words in str(typed) and "nothing was written" in str(typed)
    assert sqlstate in str(typed) and "could not write block" in str(typed)


def test_postgres_connection_limits_are_not_storage_errors() -> None:
    pytest.importorskip("psycopg")
    from tron_events._postgres import _translate

    assert _translate(_pg_error("53300")) is None  # too_many_connections
    assert _translate(_pg_error("42601")) is None  # a syntax error is ours, not the disk's


def test_postgres_errors_name_the_database_without_its_password() -> None:
    pytest.importorskip("psycopg")
    from tron_events._postgres import database_name

    assert database_name("postgresql+psycopg://tron:s3cret@db.example:5433/tron") == (
        "postgresql+psycopg://tron:***@db.example:5433/tron"
    )
