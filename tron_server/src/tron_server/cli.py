"""``tron-server``: start the server (uvicorn) on this machine.

    tron-server                       # http://127.0.0.1:8420, SQLite at ~/.tron/database/prod.db
    tron-server --port 9000 --database-url postgresql+psycopg://localhost/tron

Options override ``TRON_*`` environment variables. A non-loopback ``--host``
is refused unless ``--allow-remote`` is given too: the server runs commands
on this machine for whoever holds the token.

Start-up, in this order, so that a server that cannot run changes nothing:

1. the port is taken (bound and listening) — a busy port is one line ("port
   8420 is in use (is another tron-server running? pid N)") and exit status 2,
   before any file is written;
2. the home folder and the log file are made user-only (0700 / 0600);
3. an existing SQLite database is locked (``flock``) for as long as the server runs:
   a second tron-server on it refuses to start, saying so (SQLite serves one server;
   PostgreSQL several);
4. the token is read from ``<home>/server-token``, or created there (0600);
5. ``/health`` answers (``"ready": false``): the rest is built behind it
   (:class:`~tron_server.app.DeferredStart`), and ``/rpc`` requests sent meanwhile wait;
6. the runtime's modules are loaded (in a thread), then the database is opened
   (created and migrated if needed; a new SQLite file is locked then) — a database
   that cannot be used is one line naming why, and exit status 2 (what uvicorn logged
   meanwhile stays in the log file, and nothing was recorded or said "listening");
7. once everything serves (``"ready": true``): it records itself in ``<home>/servers/``
   and, unless another running tron-server is there, in ``<home>/server.json``
   (clients read it; see :mod:`.server_record`: a second server on one home takes
   over when the first stops), and "listening" and the one-time login URL are
   printed.

No traceback reaches the terminal: details go to the log file.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import gc
import logging
import os
import socket
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from .heap import limit_malloc_arenas
from .logging import FORMATS, LEVELS, configure_logging, private_dir, release_stderr
from .provider_env import fingerprint
from .security import is_loopback_host
from .security import login_url as security_login_url
from .server_record import (
    ServerRecord,
    is_tron_server,
    new_record,
    record_path,
    register_server,
    unregister_server,
)
from .settings import Settings

if TYPE_CHECKING:
    import uvicorn

    from .services import Services

log = logging.getLogger("tron_server.cli")

#: Exit status of a server that could not start (busy port, unusable database …).
EXIT_CANNOT_START = 2

ENVIRONMENT_HELP = """\
environment:
  Every option also reads TRON_<NAME> (TRON_HOST, TRON_PORT, TRON_DATABASE_URL,
  TRON_HOME, TRON_LOG_LEVEL, TRON_LOG_FORMAT, TRON_ALLOW_REMOTE).

  provider keys:
    ANTHROPIC_API_KEY                 anthropic (Messages API)
    OPENAI_API_KEY                    openai, openai-responses
    GEMINI_API_KEY or GOOGLE_API_KEY  google (Gemini)
    TRON_OPENAI_COMPATIBLE_API_KEY    openai-compatible, when its server wants one (OpenRouter)
  provider endpoints (base URLs):
    TRON_ANTHROPIC_BASE_URL, TRON_OPENAI_BASE_URL, TRON_GOOGLE_BASE_URL, else the
    SDKs' ANTHROPIC_BASE_URL, OPENAI_BASE_URL, GOOGLE_GEMINI_BASE_URL;
    TRON_OPENAI_COMPATIBLE_BASE_URL   (required for openai-compatible: Ollama, vLLM …)
  defaults for new sessions:
    TRON_DEFAULT_PROVIDER (anthropic), TRON_DEFAULT_MODEL (claude-sonnet-4-5)

files (in HOME, default ~/.tron; user-only):
  server-token           the token (kept across restarts; --rotate-token replaces it)
  server.json            where the running server listens (read by clients)
  servers/PID.json       each running server (several may share a home)
  database/prod.db       the default SQLite database
  logs/tron-server.log   the log (JSON lines, rotated at 10 MB, 5 kept; no secrets;
                         shared safely by servers on one home)
  trust.json             the folders you trust (see below)

folder trust:
  A folder's own configuration (.claude/ and .tron/ settings: hooks, allow rules,
  defaultMode, additionalDirectories; command files running shell; agents;
  .mcp.json servers) does nothing until you trust the folder: `tron` and the web
  chat ask, `tron --trust` trusts the current folder, any client can call
  trust.set. Trust is per real path (symlinks resolved), covers subfolders and can
  be revoked. A folder's deny rules always apply; your own ~/.tron and ~/.claude
  files always act. See docs/trust.md.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tron-server",
        description="Tron's local agent server: JSON-RPC over WebSocket at /rpc, "
        "a web chat at /, health at /health.",
        epilog=ENVIRONMENT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"tron-server {_version()}")
    parser.add_argument("--host", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to listen on (default 8420)")
    parser.add_argument(
        "--database-url",
        help="sqlite:///path.db or postgresql+psycopg://… (default: SQLite at "
        "HOME/database/prod.db)",
    )
    parser.add_argument("--home", type=Path, help="Tron's home directory (default ~/.tron)")
    parser.add_argument("--log-level", choices=LEVELS, help="log level (default info)")
    parser.add_argument(
        "--log-format",
        choices=FORMATS,
        help="log lines on stderr: json (default) or text; the log file is always JSON",
    )
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        default=None,
        help="allow a --host that is not a loopback address (anyone reaching it with the "
        "token can run commands on this machine)",
    )
    parser.add_argument(
        "--allow-bypass-permissions",
        action="store_true",
        default=None,
        help="let sessions use the bypassPermissions mode (nothing asks for approval; deny "
        "rules and guardrails still apply)",
    )
    parser.add_argument(
        "--default-permission-mode",
        choices=("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"),
        help="the permission mode of sessions that set none (default: default, which asks "
        "before anything that is not read-only)",
    )
    parser.add_argument(
        "--ask-timeout",
        type=float,
        metavar="SECONDS",
        help="how long a question or an approval waits for the user (default: until answered)",
    )
    parser.add_argument(
        "--rotate-token",
        action="store_true",
        help="replace the token in HOME/server-token: every client and browser logged in "
        "with the old one must log in again",
    )
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tron-server")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0.0.0"


def settings_from_args(args: argparse.Namespace) -> Settings:
    """Settings from the environment, overridden by the options given."""
    overrides: dict[str, Any] = {
        key: value
        for key, value in {
            "host": args.host,
            "port": args.port,
            "database_url": args.database_url,
            "home": args.home,
            "log_level": args.log_level,
            "log_format": getattr(args, "log_format", None),
            "allow_remote": args.allow_remote,
            "allow_bypass_permissions": args.allow_bypass_permissions,
            "ask_timeout": args.ask_timeout,
            "default_permission_mode": args.default_permission_mode,
        }.items()
        if value is not None
    }
    settings = Settings(**overrides)
    settings.home = settings.home.expanduser()
    return settings


def login_url(settings: Settings, code: str) -> str:
    """The URL that logs a browser in (sets the cookie, then redirects to /).

    ``code`` is a one-time login code (or the token itself)."""
    return security_login_url(settings.host, settings.port, code)


def settings_error(exc: ValidationError, args: argparse.Namespace | None = None) -> str:
    """What is wrong with the settings, naming the option or the ``TRON_*`` variable
    the bad value came from (the parser checks types, not ranges: ``--ask-timeout -5``
    gets here), one line for all."""
    lines = []
    for error in exc.errors():
        field = str(error["loc"][0]) if error["loc"] else "?"
        given = args is not None and getattr(args, field, None) is not None
        name = f"--{field.replace('_', '-')}" if given else f"TRON_{field.upper()}"
        value = error.get("input")
        shown = f"={value!r}" if isinstance(value, str | int | float) else ""
        lines.append(f"{name}{shown}: {error['msg'].removeprefix('Value error, ')}")
    return "; ".join(lines)


class CannotStart(Exception):
    """The server cannot start; the message says why and what to do (one line)."""


# -- the port -------------------------------------------------------------------------


def listening_socket(settings: Settings) -> socket.socket:
    """A socket bound to ``host:port`` and listening, or CannotStart.

    Taking the port first means a second server on a busy port stops before it
    writes anything. (IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only then.)
    """
    host, port = settings.host, settings.port
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise CannotStart(_bind_error(settings, exc)) from None
    sock.setblocking(False)
    return sock


def _bind_error(settings: Settings, exc: OSError) -> str:
    port = settings.port
    if isinstance(exc, socket.gaierror):
        return f"cannot listen on {settings.host!r}: no such address ({exc.strerror})"
    if exc.errno == errno.EADDRINUSE:
        other = _recorded_server(settings.home)
        if other is not None and other.url.rsplit(":", 1)[-1].startswith(f"{port}/"):
            who = f"is another tron-server running? pid {other.pid}"
        else:
            who = "is another tron-server running?"
        return (
            f"port {port} is in use ({who}). Stop it, or start this one with --port <another port>."
        )
    if exc.errno == errno.EACCES:
        return (
            f"not allowed to listen on port {port} (ports below 1024 need privileges): use --port"
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"cannot listen on {settings.host}: it is not an address of this machine"
    return f"cannot listen on {settings.host}:{port}: {exc.strerror or exc}"


def _recorded_server(home: Path) -> ServerRecord | None:
    """The tron-server recorded in ``home/server.json``, if it is running (not this one)."""
    from .server_record import read_server_record

    record = read_server_record(home)
    if record is None or record.pid == os.getpid() or not is_tron_server(record.pid):
        return None
    return record


# -- files ------------------------------------------------------------------------------


@contextlib.contextmanager
def private_umask() -> Iterator[None]:
    """Files created inside are user-only whatever the umask (the database, its
    WAL/SHM and lock files, which SQLite and the migrations create).

    The umask is process-wide: this is used only while the server starts, before
    it runs any tool (the tools read the user's umask when imported, before this: the
    start imports them before it opens the store, see ``app.DeferredStart``).
    """
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL (or bare path); None for other databases."""
    if url.startswith("sqlite:///"):
        raw = url[len("sqlite:///") :].split("?", 1)[0]
        return Path(raw) if raw and raw != ":memory:" else None
    if "://" in url:
        return None
    return Path(url).expanduser()


def database_shown(settings: Settings) -> str:
    """The database as a user should see it: a SQLite file's absolute path (so that
    ``sqlite:///tmp/x.db``, a path relative to the current folder, shows where it
    went), else the URL without its password."""
    from .logging import REDACTOR

    url = settings.resolved_database_url()
    path = sqlite_path(url)
    return str(path.absolute()) if path is not None else REDACTOR.redact(url)


def hold_sqlite(settings: Settings) -> int | None:
    """On SQLite, an exclusive ``flock`` on the database file for as long as this process
    runs (the descriptor it returns is never closed before the process ends: closing any
    descriptor of the file would drop SQLite's own POSIX locks); None on PostgreSQL.
    Raises :class:`CannotStart` when another tron-server holds it: SQLite serves one
    server at a time, PostgreSQL many (docs/deploy.md)."""
    import fcntl

    path = sqlite_path(settings.resolved_database_url())
    if path is None or not path.exists():
        return None
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        # Closed at once: this process is about to stop (its store is closed next).
        os.close(fd)
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            return None  # a file system without flock: nothing to hold
        other = _recorded_server(settings.home)
        who = (
            f"another tron-server (pid {other.pid}, {other.url})"
            if other
            else ("another tron-server")
        )
        raise CannotStart(
            f"{path.absolute()} is in use by {who}: a SQLite database serves one tron-server "
            "at a time. Stop it, or use another --home or --database-url; to run several "
            "servers on one database, use PostgreSQL (docs/deploy.md)"
        ) from None
    return fd


def tighten(settings: Settings) -> None:
    """Make what the server keeps in its home user-only, including files an older
    version (or another umask) left readable by others."""
    home = private_dir(settings.home)
    files = [settings.token_path, record_path(home)]
    db = sqlite_path(settings.resolved_database_url())
    if db is not None and _is_within(db, home):
        private_dir(db.parent)
        files += [db, *(db.with_name(db.name + s) for s in ("-wal", "-shm", ".migrate.lock"))]
    for path in files:
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_mode & 0o077:
                path.chmod(0o600)


def _is_within(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


# -- the database -----------------------------------------------------------------------


def describe_open_error(exc: BaseException, url: str) -> str:
    """One line saying why the database at ``url`` cannot be used, and what to do."""
    from tron_events.errors import StorageError

    from .logging import REDACTOR

    shown = REDACTOR.redact(url)
    if isinstance(exc, StorageError):
        return REDACTOR.redact(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    # Until every backend failure is typed in tron_events, name the usual ones here,
    # never with the driver's own text.
    name = type(exc).__name__
    text = str(exc)
    scheme = url.split("://", 1)[0].lower() if "://" in url else "sqlite"
    if scheme.startswith("mysql") or scheme.startswith("mariadb"):
        return f"{shown}: MySQL is not supported; use SQLite (a file path) or PostgreSQL"
    if isinstance(exc, ModuleNotFoundError) and scheme.startswith("postgres"):
        return (
            f"{shown}: PostgreSQL needs its driver: pip install 'tron-events[postgres]' "
            "(or uv sync in a clone)"
        )
    if name in ("NoSuchModuleError", "ArgumentError") or isinstance(exc, ModuleNotFoundError):
        return (
            f"{shown}: unknown database URL; use sqlite:///PATH, a file path, or "
            "postgresql+psycopg://USER@HOST/DB"
        )
    if "file is not a database" in text or "database disk image is malformed" in text:
        return f"{shown}: the file is not a Tron database (not SQLite); give another path"
    if "readonly" in text or "read-only" in text:
        return f"{shown}: the database is read-only; the server needs to write to it"
    if name == "OperationalError" and scheme.startswith("postgres"):
        return f"{shown}: cannot reach the PostgreSQL server (is it running? is the URL right?)"
    return (
        f"{shown}: the database cannot be opened ({name}); run with --log-level debug and "
        "see the log file for details"
    )


async def open_for_serving(settings: Settings) -> Services:
    """Open the store and build the services, or CannotStart with the reason."""
    from .hub import Hub
    from .services import open_services

    url = settings.resolved_database_url()
    try:
        with private_umask():
            return await open_services(settings, Hub)
    except (KeyboardInterrupt, asyncio.CancelledError):
        raise
    except BaseException as exc:
        if isinstance(exc, SystemExit):
            raise
        log.debug("opening the database failed", exc_info=exc)
        raise CannotStart(describe_open_error(exc, url)) from None


# -- serving ----------------------------------------------------------------------------


def _uvicorn_server(config: uvicorn.Config, on_stopped: Callable[[], None]) -> uvicorn.Server:
    import uvicorn

    class _Server(uvicorn.Server):
        """uvicorn's server, telling us when it has stopped (before uvicorn re-raises the
        signal that stopped it)."""

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            try:
                await super().shutdown(sockets)
            finally:
                on_stopped()

    return _Server(config)


async def serve(settings: Settings, sock: socket.socket, *, rotate_token: bool = False) -> int:
    """Serve ``/health`` at once, open everything else behind it, run until SIGINT/SIGTERM;
    the exit status (or CannotStart, also when the database turns out unusable after
    ``/health`` answered: nothing was recorded or said "listening" then)."""
    import uvicorn

    from .app import DeferredStart, create_app, uvicorn_options
    from .security import load_or_create_token

    # A SQLite database another server holds is refused before anything answers; a new
    # one is held once created (below).
    held = hold_sqlite(settings)
    token, _ = load_or_create_token(settings.token_path, rotate=rotate_token)
    if rotate_token:
        log.info("the token was replaced: clients must use the new one")
    failure: list[BaseException] = []
    recorded: list[bool] = []
    # `tron-server` (__main__) pauses the collector for the start: on again once ready.
    start_paused = not gc.isenabled()

    def collect_again() -> None:
        if start_paused and not gc.isenabled():
            gc.freeze()  # what the start made stays: later full collections skip it
            gc.enable()

    async def open_backend() -> Services:
        services = await open_for_serving(settings)
        if held is None:
            try:
                hold_sqlite(settings)
            except CannotStart:
                if services.store is not None:
                    await services.store.aclose()
                raise
        return services

    def on_ready(services: Services) -> None:
        collect_again()
        release_stderr()
        other = _recorded_server(settings.home)
        record = new_record(
            settings.host,
            settings.port,
            version=services.version,
            database=database_shown(settings),
            provider_env=fingerprint(os.environ),
        )
        recorded.append(True)
        if not register_server(settings.home, record) and other is not None:
            # Both serve the same home (and database); clients find the first, and
            # this one once the first stops.
            log.warning(
                "another tron-server uses this home; clients find it until it stops",
                extra={"fields": {"otherPid": other.pid, "otherUrl": other.url}},
            )
        shown = settings.host if ":" not in settings.host else f"[{settings.host}]"
        print(f"tron-server listening on http://{shown}:{settings.port}", flush=True)
        print(f"  database: {database_shown(settings)}", flush=True)
        print(f"  token file: {settings.token_path}", flush=True)
        print(f"  log file: {settings.log_path}", flush=True)
        print(f"  open in a browser (works once): {login_url(settings, app.state.login_code)}",
              flush=True)  # fmt: skip
        if other is not None:
            print(f"  note: tron-server pid {other.pid} ({other.http_url}) uses this home too; "
                  "clients find that one until it stops", flush=True)  # fmt: skip

    def on_failed(exc: BaseException) -> None:
        collect_again()
        if not isinstance(exc, CannotStart):
            log.error("tron-server could not start", exc_info=exc)
        failure.append(exc)
        server.should_exit = True

    def on_stopped() -> None:
        if recorded:
            successor = unregister_server(settings.home)
            if successor is not None:
                log.info(
                    "clients of this home now find the other tron-server",
                    extra={"fields": {"otherPid": successor.pid, "otherUrl": successor.url}},
                )

    app = create_app(
        settings, token=token, deferred=DeferredStart(open_backend, on_ready, on_failed)
    )
    options = uvicorn_options(settings)
    for key in ("host", "port"):
        options.pop(key)
    config = uvicorn.Config(app, **options, log_level=settings.log_level)
    server = _uvicorn_server(config, on_stopped)
    # On SIGINT/SIGTERM uvicorn shuts down gracefully (the lifespan stops running
    # turns and closes the store), then re-raises the signal: SIGTERM ends the
    # process with that signal's status, SIGINT arrives as KeyboardInterrupt.
    await server.serve(sockets=[sock])
    if failure:
        # What uvicorn said while starting and stopping stays in the log file: the
        # user reads one line saying why.
        release_stderr(drop=True)
        error = failure[0]
        if isinstance(error, CannotStart):
            raise error  # the database, said as describe_open_error says it
        raise CannotStart(
            f"the server could not start ({type(error).__name__}); the log file says why: "
            f"{settings.log_path}"
        )
    return 0 if server.started else EXIT_CANNOT_START


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server until SIGINT/SIGTERM; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        settings = settings_from_args(args)
    except ValidationError as exc:
        return fail(settings_error(exc, args))
    if not 0 < settings.port < 65536:
        parser.error(f"--port must be between 1 and 65535, not {settings.port}")
    if not is_loopback_host(settings.host) and not settings.allow_remote:
        return fail(
            f"refusing to listen on {settings.host!r}: it is not a loopback address, and the "
            "server runs commands on this machine. Use --host 127.0.0.1, or add "
            "--allow-remote if you really mean it."
        )
    if args.rotate_token:
        other = _recorded_server(settings.home)
        if other is not None:
            return fail(
                f"another tron-server (pid {other.pid}, {other.url}) uses {settings.home}: "
                "stop it before rotating the token"
            )
    try:
        sock = listening_socket(settings)
    except CannotStart as exc:
        return fail(str(exc))
    limit_malloc_arenas()  # before any thread: see heap.py
    try:
        tighten(settings)
        # stderr holds its lines until the server is ready: a start that fails says one.
        configure_logging(settings.log_level, log_file=settings.log_path,
                          fmt=settings.log_format, hold_stderr=True)  # fmt: skip
        return asyncio.run(serve(settings, sock, rotate_token=args.rotate_token))
    except CannotStart as exc:
        return fail(str(exc))
    except KeyboardInterrupt:
        return 130
    except OSError as exc:  # the home folder or the log file cannot be written
        if settings.home.exists() and not settings.home.is_dir():
            return fail(f"cannot use {settings.home}: it is a file, not a folder (--home)")
        return fail(f"cannot use {settings.home}: {exc.strerror or exc}")
    finally:
        sock.close()


def fail(message: str) -> int:
    print(f"tron-server: {message}", file=sys.stderr, flush=True)
    return EXIT_CANNOT_START


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
