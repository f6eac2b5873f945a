"""Where a running tron-server can be found: ``<home>/server.json``.

A server on any port must be findable by its clients (``tron``,
``TronClient.from_home``), so once it accepts connections it records its
address beside its token (``<home>/server-token``)::

    {"url": "ws://127.0.0.1:8420/rpc", "httpUrl": "http://127.0.0.1:8420",
     "pid": 4242, "version": "0.1.0", "startedAt": "2026-11-24T15:20:00Z"}

The file is user-only (0600) and replaced atomically. A record whose process
is gone is stale: readers treat it as absent. A server removes its own record
on a clean shutdown (and only its own: another server may have replaced it).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import orjson

RECORD_NAME = "server.json"
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

    def to_json(self) -> bytes:
        return orjson.dumps(
            {
                "url": self.url,
                "httpUrl": self.http_url,
                "pid": self.pid,
                "version": self.version,
                "startedAt": self.started_at,
            }
        )


def record_path(home: Path) -> Path:
    """``<home>/server.json``."""
    return home / RECORD_NAME


def write_server_record(home: Path, record: ServerRecord) -> Path:
    """Write ``record`` to ``<home>/server.json`` (0600 from the start, atomic)."""
    path = record_path(home)
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


def new_record(host: str, port: int, *, version: str = "", pid: int | None = None) -> ServerRecord:
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
    )


def read_server_record(home: Path) -> ServerRecord | None:
    """The record in ``<home>/server.json``; None when absent, unreadable or stale
    (its process no longer exists)."""
    try:
        data = orjson.loads(record_path(home).read_bytes())
        record = ServerRecord(
            url=str(data["url"]),
            http_url=str(data.get("httpUrl") or ""),
            pid=int(data["pid"]),
            version=str(data.get("version") or ""),
            started_at=str(data.get("startedAt") or ""),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return record if process_exists(record.pid) else None


def remove_server_record(home: Path, pid: int | None = None) -> None:
    """Remove the record if it is this process's (or ``pid``'s); leave another server's."""
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


__all__ = [
    "DEFAULT_HTTP_URL",
    "RECORD_NAME",
    "ServerRecord",
    "new_record",
    "process_exists",
    "read_server_record",
    "record_path",
    "remove_server_record",
    "write_server_record",
]
