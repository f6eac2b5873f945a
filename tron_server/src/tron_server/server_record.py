"""Where a running tron-server can be found: ``<home>/server.json``.

A server on any port must be findable by its clients (``tron``,
``TronClient.from_home``), so once it accepts connections it records its
address beside its token (``<home>/server-token``)::

    {"url": "ws://127.0.0.1:8420/rpc", "httpUrl": "http://127.0.0.1:8420",
     "pid": 4242, "version": "0.1.0", "startedAt": "2026-11-24T15:20:00Z",
     "database": "/home/u/.tron/database/prod.db", "providerEnv": {...}}

(``providerEnv``: the provider variables the server was started with, see
:mod:`.provider_env`; ``database`` as a user should see it, without a password.)

Several servers may share a home (on different ports, one database: the store is
safe for several processes). Each records itself in ``<home>/servers/<pid>.json``;
``server.json`` names the one clients use: the first to start. When it stops, it
hands ``server.json`` to the longest-running other server (or removes it when none
is left); if it died without a word, readers fall back to the live records in
``servers/`` themselves. Records are changed under a lock
(``<home>/servers/.lock``), user-only (0600, the folder 0700) and replaced
atomically. A record whose process is gone is stale: readers treat it as absent,
and the next server to start or stop removes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import orjson

RECORD_NAME = "server.json"
#: The folder of every running server's own record (``<pid>.json``).
SERVERS_DIR = "servers"
DEFAULT_HTTP_URL = "http://127.0.0.1:8420"


@dataclass(frozen=True)
class ServerRecord:
    """A running server's address, as it recorded it."""

    url: str
    """The JSON-RPC WebSocket URL (``ws://HOST:PORT/rpc``)."""
    http_url: str
    """The HTTP base URL (``http://HOST:PORT``): ``/health``, ``/login``, the web chat."""
    pid: int
    version: str = ""
    started_at: str = ""
    database: str = ""
    """The database, as shown to a user (a SQLite path, or the URL without its password)."""
    provider_env: dict[str, str] | None = None
    """The provider variables it was started with (:func:`.provider_env.fingerprint`);
    None when not known (a record written by ``tron`` before the server's own)."""

    def to_json(self) -> bytes:
        data: dict[str, object] = {
            "url": self.url,
            "httpUrl": self.http_url,
            "pid": self.pid,
            "version": self.version,
            "startedAt": self.started_at,
        }
        if self.database:
            data["database"] = self.database
        if self.provider_env is not None:
            data["providerEnv"] = self.provider_env
        return orjson.dumps(data)


def record_path(home: Path) -> Path:
    """``<home>/server.json``."""
    return home / RECORD_NAME


def write_server_record(home: Path, record: ServerRecord) -> Path:
    """Write ``record`` to ``<home>/server.json`` (0600 from the start, atomic)."""
    return _write(record_path(home), record)


def _write(path: Path, record: ServerRecord) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # O_CREAT's mode is ignored if tmp already existed
        os.write(fd, record.to_json() + b"\n")
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return path


def new_record(
    host: str,
    port: int,
    *,
    version: str = "",
    pid: int | None = None,
    database: str = "",
    provider_env: dict[str, str] | None = None,
) -> ServerRecord:
    """The record of a server listening on ``host:port`` (this process by default)."""
    shown = f"[{host}]" if ":" in host else host
    if host in ("0.0.0.0", "::", ""):
        shown = "127.0.0.1"
    return ServerRecord(
        url=f"ws://{shown}:{port}/rpc",
        http_url=f"http://{shown}:{port}",
        pid=os.getpid() if pid is None else pid,
        version=version,
        started_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        database=database,
        provider_env=None if provider_env is None else dict(provider_env),
    )


def read_server_record(home: Path) -> ServerRecord | None:
    """The server clients of ``home`` should use: the one in ``<home>/server.json``,
    or, when that one is gone (killed before it could hand over), the longest-running
    server recorded in ``<home>/servers/``; None when no recorded server runs."""
    record = _read(record_path(home))
    if record is not None and process_exists(record.pid):
        return record
    live = running_servers(home)
    return live[0] if live else None


def running_servers(home: Path) -> list[ServerRecord]:
    """Every server recorded in ``<home>/servers/`` whose process runs, the
    longest-running first."""
    live: list[tuple[int, ServerRecord]] = []
    for path in _own_records(home):
        record = _read(path)
        if record is not None and process_exists(record.pid):
            with contextlib.suppress(OSError):  # written once, at start: a finer clock
                live.append((path.stat().st_mtime_ns, record))
    live.sort(key=lambda item: (item[1].started_at, item[0]))
    return [record for _, record in live]


def register_server(home: Path, record: ServerRecord) -> bool:
    """A server accepts connections: write its own record, and ``server.json`` unless
    another running server is there. Returns whether clients now find this one."""
    with _records_locked(home):
        _forget_stale(home)
        _write(_own_path(home, record.pid), record)
        current = _read(record_path(home))
        if current is None or current.pid == record.pid or not is_tron_server(current.pid):
            write_server_record(home, record)
            return True
        return False


def unregister_server(home: Path, pid: int | None = None) -> ServerRecord | None:
    """A server stops (this process, or ``pid``): remove its record; if clients found
    it through ``server.json``, hand that to the longest-running other server. Returns
    that server (None: none left, or ``server.json`` named another one already)."""
    own = os.getpid() if pid is None else pid
    with _records_locked(home):
        with contextlib.suppress(FileNotFoundError):
            _own_path(home, own).unlink()
        current = _read(record_path(home))
        if current is not None and current.pid != own and is_tron_server(current.pid):
            return None  # clients find another server: nothing to hand over
        others = [r for r in running_servers(home) if r.pid != own and is_tron_server(r.pid)]
        if others:
            write_server_record(home, others[0])
            return others[0]
        if current is not None:  # ours, or a server that is gone
            with contextlib.suppress(FileNotFoundError):
                record_path(home).unlink()
        return None


def _read(path: Path) -> ServerRecord | None:
    try:
        data = orjson.loads(path.read_bytes())
        env = data.get("providerEnv")
        return ServerRecord(
            url=str(data["url"]),
            http_url=str(data.get("httpUrl") or ""),
            pid=int(data["pid"]),
            version=str(data.get("version") or ""),
            started_at=str(data.get("startedAt") or ""),
            database=str(data.get("database") or ""),
            provider_env=(
                {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else None
            ),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _own_path(home: Path, pid: int) -> Path:
    return home / SERVERS_DIR / f"{pid}.json"


def _own_records(home: Path) -> list[Path]:
    try:
        return [p for p in (home / SERVERS_DIR).iterdir() if p.name.endswith(".json")]
    except OSError:
        return []


def _forget_stale(home: Path) -> None:
    """Remove the records of servers that are gone (killed, or the machine restarted)."""
    for path in _own_records(home):
        record = _read(path)
        if record is None or not is_tron_server(record.pid):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


@contextlib.contextmanager
def _records_locked(home: Path) -> Iterator[None]:
    folder = home / SERVERS_DIR
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def remove_server_record(home: Path, pid: int | None = None) -> None:
    """Remove ``server.json`` if it is this process's (or ``pid``'s); leave another
    server's. (A server that stops calls :func:`unregister_server`, which also hands
    the record over.)"""
    path = record_path(home)
    own = os.getpid() if pid is None else pid
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, ValueError):
        return
    if isinstance(data, dict) and data.get("pid") == own:
        with contextlib.suppress(OSError):
            path.unlink()


def process_exists(pid: int) -> bool:
    """Whether a process with ``pid`` exists (ours or another user's)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def is_tron_server(pid: int) -> bool:
    """Whether process ``pid`` runs tron-server (its command line says so; where that
    cannot be read, whether it exists): a stale record's pid may be reused."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return process_exists(pid) and not Path("/proc/self").exists()
    except OSError:
        return process_exists(pid)
    return b"tron_server" in cmdline or b"tron-server" in cmdline


__all__ = [
    "DEFAULT_HTTP_URL",
    "RECORD_NAME",
    "SERVERS_DIR",
    "ServerRecord",
    "is_tron_server",
    "new_record",
    "process_exists",
    "read_server_record",
    "record_path",
    "register_server",
    "remove_server_record",
    "running_servers",
    "unregister_server",
    "write_server_record",
]
