"""Starting ``tron-server`` in the background, and ``tron -p``'s early start.

:func:`start_server` starts a detached server on a free port (its output in
``<home>/logs/tron-server-output.log``) and records it until it records itself;
:mod:`.attach` calls it under ``<home>/server-start.lock`` when nothing answers.

:func:`prestart` is the same start made before the client is even loaded: ``tron -p
PROMPT`` with no server answering starts one first, then imports the client while the
server starts (the two run side by side), and :func:`.attach.attach` waits for that one
instead of starting another. It starts nothing when anything is in doubt — another
``--server``, ``--no-start``, a command line the parser refuses, no prompt argument,
something listening at the address, another ``tron`` starting one — and leaves the
case to :mod:`.attach`, which says what is wrong. Only the standard library and the
parser are imported before the server is spawned (the server record after it).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

from ..folders import private_dir
from .errors import EXIT_NO_SERVER, TerminalError

# What the start does not need before the server is spawned is imported after it (the
# server record: orjson, dataclasses, datetime): ``tron -p`` spawns
# ``tron-server`` ~20 ms after its own start rather than ~40 ms.

DEFAULT_PORT = 8420
#: How long a background server may take to accept its first connection.
START_TIMEOUT = 30.0
#: The lock ``tron`` holds while it starts a server (in the home).
START_LOCK = "server-start.lock"
#: ``server_record.RECORD_NAME``, named here so that looking for a record needs no import.
RECORD_NAME = "server.json"


def default_port() -> int:
    """``$TRON_PORT`` (tron-server's own setting) or 8420."""
    try:
        return int(os.environ.get("TRON_PORT") or DEFAULT_PORT)
    except ValueError:
        return DEFAULT_PORT


def default_home() -> Path:
    """``$TRON_HOME`` or ``~/.tron`` (the server's default too)."""
    env = os.environ.get("TRON_HOME")
    return Path(env).expanduser() if env else Path.home() / ".tron"


def default_url(home: Path) -> str:
    """The URL of the server recorded in ``home``, else of the default port."""
    from ..server_record import read_server_record

    record = read_server_record(home)
    if record is not None:
        return record.url
    return f"ws://127.0.0.1:{default_port()}/rpc"


def _free_port() -> int:
    """The default port (8420, or ``$TRON_PORT``) when it is free, else one the system picks.

    Probed as tron-server binds (``SO_REUSEADDR``): a port whose last server just
    stopped, with connections still in ``TIME_WAIT``, is free to it, so it is kept."""
    for port in (default_port(), 0):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return int(sock.getsockname()[1])
    raise TerminalError("no free port to start tron-server on", EXIT_NO_SERVER)  # pragma: no cover


class Launched:
    """A tron-server this client started in the background."""

    def __init__(self, process: subprocess.Popen[bytes], url: str, log_path: Path) -> None:
        self.process = process
        self.url = url
        self.log_path = log_path


def start_server(home: Path) -> Launched:
    """Start ``tron-server`` detached (its own session: it outlives this terminal),
    on a free port, its output going to ``<home>/logs/tron-server-output.log``."""
    port = _free_port()
    private_dir(home)
    log_path = private_dir(home / "logs") / "tron-server-output.log"
    command = [sys.executable, "-m", "tron_server", "--home", str(home), "--port", str(port)]
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.fchmod(fd, 0o600)  # O_CREAT's mode is masked by the umask, and ignored for an old file
    with os.fdopen(fd, "ab") as log:
        log.write(f"\n--- started by tron at {time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode())
        log.flush()
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    from ..server_record import new_record, write_server_record

    record = new_record("127.0.0.1", port, pid=process.pid)
    # Until the server writes its own record, ours lets the next `tron` find it
    # (the server's record, once written, replaces this one).
    with contextlib.suppress(OSError):
        write_server_record(home, record)
    return Launched(process, record.url, log_path)


def open_start_lock(home: Path) -> int:
    """A descriptor of ``<home>/server-start.lock`` (created user-only); lock it with flock."""
    private_dir(home)
    return os.open(home / START_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)


class Prestarted:
    """A server :func:`prestart` started, and the start lock it still holds (released by
    :meth:`release`, once the client is connected or has given up)."""

    def __init__(self, launched: Launched, home: Path, lock_fd: int | None) -> None:
        self.launched = launched
        self.home = home
        self.lock_fd: int | None = lock_fd

    def release(self) -> None:
        if self.lock_fd is not None:
            os.close(self.lock_fd)  # closing releases the lock
            self.lock_fd = None


def prestart(argv: Sequence[str]) -> Prestarted | None:
    """For ``tron -p PROMPT`` when no server answers: start one now, before the client is
    loaded (see the module's docstring); None when nothing was started."""
    args = list(argv)
    if args[:1] in (["server"], ["mcp"], ["acp"]):
        return None
    from .options import build_parser, check_args

    parser = build_parser()
    try:
        # Quietly: a command line with a mistake is left for the client to refuse.
        with (
            open(os.devnull, "w") as quiet,
            contextlib.redirect_stderr(quiet),
            contextlib.redirect_stdout(quiet),
        ):
            parsed = parser.parse_args(args)
            check_args(parser, parsed)
    except SystemExit:
        return None
    prompt = parsed.prompt
    if not parsed.print or parsed.server or parsed.no_start or not (prompt and prompt.strip()):
        return None
    home = (parsed.home or default_home()).expanduser()
    fd: int | None = None
    try:
        if _answers(home):
            return None
        fd = open_start_lock(home)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None  # another tron is starting one: the client waits for it
        if _answers(home):  # started while this one looked
            return None
        started = Prestarted(start_server(home), home, fd)
        fd = None
        return started
    except (OSError, TerminalError):
        return None  # the client tries again, and says what is wrong
    finally:
        if fd is not None:
            os.close(fd)


def _answers(home: Path) -> bool:
    """Whether something accepts connections where the client would connect (the server
    recorded in ``home``, else the default port: :func:`default_url`)."""
    if (home / RECORD_NAME).exists():
        parts = urlsplit(default_url(home))
        host = parts.hostname or "127.0.0.1"
        try:
            port = parts.port or 80
        except ValueError:
            return True  # not ours to judge: the client says what is wrong with it
    else:  # no record: the default address, without loading the record's module
        host, port = "127.0.0.1", default_port()
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


__all__ = [
    "DEFAULT_PORT",
    "START_LOCK",
    "START_TIMEOUT",
    "Launched",
    "Prestarted",
    "default_home",
    "default_port",
    "default_url",
    "open_start_lock",
    "prestart",
    "start_server",
]
