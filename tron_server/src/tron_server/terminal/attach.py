"""Finding tron-server, starting one when none answers, and connecting to it.

The address comes from ``--server`` when given, else from the record a running
server keeps in ``<home>/server.json`` (:mod:`tron_server.server_record`), else
the default ``ws://127.0.0.1:8420/rpc`` (the port from ``TRON_PORT`` when set,
as for tron-server). The token is always the one in
``<home>/server-token``, read again on every connection: it survives server
restarts, but ``tron-server --rotate-token`` (or another home) replaces it.

When nothing answers and no ``--server`` was named, :func:`attach` starts
``tron-server`` in the background on the same home (and so the same default
database; ``TRON_*`` settings are inherited), detached from the terminal with
its output in ``<home>/logs/tron-server-output.log``, and says so. Like
everything in the home, that file is user-only (0600, in 0700 folders)
whatever the umask: a server's output can name paths and prompts.

Starting is done under a lock in the home (``<home>/server-start.lock``): two
``tron`` started at once start one server, the second finds the first's (a server
listens before its token is in place: refused then, it is tried again once the lock is
free, and only a second refusal names the token). The
server keeps its port across restarts (8420, or ``$TRON_PORT``): the port is
probed as the server binds it (``SO_REUSEADDR``), so connections of the stopped
server that linger in ``TIME_WAIT`` do not move the next one to another port.
A client connects to a server it found once that server has recorded itself (it serves
``/rpc`` and has its token then). To a server it started, it connects as soon as the
token is in place: that server answers while it starts and holds ``/rpc`` requests until
it serves (``app.DeferredStart``), so the connection and the first call are made during
the start; the call's answer says it serves. Should that connection be refused or closed
(a start that failed), it waits for the record, or the exit, as before.

``tron -p PROMPT`` starts that server earlier, before the client is loaded
(:func:`.launch.prestart`, under the same lock); :func:`attach` then waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from websockets.exceptions import InvalidHandshake, InvalidStatus, InvalidURI
from websockets.uri import parse_uri

from ..client import TronClient
from ..server_record import SERVERS_DIR
from .errors import EXIT_NO_SERVER, TerminalError
from .launch import (
    START_LOCK,
    START_TIMEOUT,
    Launched,
    Prestarted,
    default_home,
    default_url,
    open_start_lock,
    start_server,
)

#: How long one connection attempt may take.
CONNECT_TIMEOUT = 5.0
#: Seconds between early connection attempts to a server that does not listen yet.
EARLY_RETRY = 0.02


class Unreachable(Exception):
    """Nothing answered at the address (refused, timed out, not a tron-server)."""


class Refused(Exception):
    """A server answered but refused the upgrade (HTTP ``status``: the token, Host or Origin)."""

    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


@dataclass(frozen=True)
class ServerAddress:
    """Where to connect: ``home`` (token and record) and an optional explicit URL."""

    home: Path
    explicit_url: str | None = None

    def url(self) -> str:
        """The URL to try now: ``--server``, the server's record, or the default."""
        return self.explicit_url or default_url(self.home)

    @property
    def token_path(self) -> Path:
        return self.home / "server-token"

    def token(self) -> str | None:
        """The current token, or None when there is none yet."""
        try:
            return self.token_path.read_text().strip() or None
        except OSError:
            return None


class Connection:
    """An open :class:`TronClient` and how to close it. ``started``: this ``tron``
    started the server (it has this process's environment). ``info``: the server's
    ``system.info``, when it was asked while connecting (a server this ``tron`` started:
    see :func:`_wait_for`), else None."""

    def __init__(self, client: TronClient, url: str, stack: contextlib.AsyncExitStack) -> None:
        self.client = client
        self.url = url
        self.started = False
        self.info: dict[str, Any] | None = None
        self._stack = stack

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self._stack.aclose()


async def connect_once(address: ServerAddress, url: str | None = None) -> Connection:
    """One attempt to connect with the current token.

    Raises :class:`Unreachable`, :class:`Refused`, or :class:`TerminalError` for
    a URL that is not a WebSocket URL."""
    url = url or address.url()
    try:
        parse_uri(url)
    except (InvalidURI, ValueError) as exc:  # ValueError: a port out of range, a bad IPv6
        raise TerminalError(
            f"{url!r} is not a server address: give --server as ws://HOST:PORT/rpc", EXIT_NO_SERVER
        ) from exc
    token = address.token()
    stack = contextlib.AsyncExitStack()
    try:
        client = await stack.enter_async_context(
            TronClient.connect(url, token=token, open_timeout=CONNECT_TIMEOUT)
        )
    except InvalidStatus as exc:
        raise Refused(exc.response.status_code) from exc
    except (OSError, TimeoutError, InvalidHandshake, EOFError) as exc:
        raise Unreachable(str(exc) or type(exc).__name__) from exc
    return Connection(client, url, stack)


def refused_error(address: ServerAddress, url: str, status: int) -> TerminalError:
    """The message for a server that refused the connection."""
    if urlsplit(url).path != "/rpc":
        return TerminalError(
            f"A server answers at {url}, but refused the connection (HTTP {status}): "
            "tron-server's endpoint is ws://HOST:PORT/rpc.",
            EXIT_NO_SERVER,
        )
    if address.token() is None:
        what = f"there is no token at {address.token_path}"
    else:
        what = f"it refused the token in {address.token_path} (HTTP {status})"
    return TerminalError(
        f"A tron-server answers at {url}, but {what}. It was probably started with another "
        "home: pass that --home (or TRON_HOME), or restart it with this one.",
        EXIT_NO_SERVER,
    )


@contextlib.asynccontextmanager
async def start_lock(home: Path, timeout: float = START_TIMEOUT + 10) -> AsyncIterator[None]:
    """Hold ``<home>/server-start.lock`` while starting a server (waiting, at most ``timeout``
    seconds, for another ``tron`` that holds it)."""
    fd = open_start_lock(home)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TerminalError(
                        f"another tron has been starting tron-server for {timeout:.0f} s "
                        f"(it holds {home / START_LOCK}); try again, or start one with "
                        "`tron-server`.",
                        EXIT_NO_SERVER,
                    ) from None
                await asyncio.sleep(0.1)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _log_tail(path: Path, lines: int = 8) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


async def attach(
    address: ServerAddress,
    *,
    start: bool = True,
    announce: Callable[[str], None] | None = None,
    prestarted: Prestarted | None = None,
) -> Connection:
    """Connect to the server, starting one in the background when none answers
    (never when ``--server`` named one); ``prestarted``: the one :func:`.launch.prestart`
    started for this client, waited for (its start lock released after). Raises
    :class:`TerminalError`."""
    if prestarted is not None:
        try:
            return await _connect_started(address, prestarted.launched, announce)
        finally:
            prestarted.release()
    url = address.url()
    try:
        return await connect_once(address, url)
    except Refused as exc:
        if address.explicit_url:
            raise refused_error(address, url, exc.status) from None
        # A server another tron is starting on this home listens before its token is in
        # place: refused then, it is tried again once that tron is done (its lock free).
        try:
            async with start_lock(address.home):
                return await connect_once(address)
        except Refused as again:
            raise refused_error(address, address.url(), again.status) from None
        except (Unreachable, OSError):
            raise refused_error(address, url, exc.status) from None
    except Unreachable as exc:
        if address.explicit_url or not start:
            raise TerminalError(
                f"No tron-server answers at {url} ({exc}). Start one with `tron-server` "
                "(or run `tron` without --server to start one in the background).",
                EXIT_NO_SERVER,
            ) from None
    try:
        async with start_lock(address.home):
            # Another tron may have started one while this one waited for the lock.
            with contextlib.suppress(Unreachable, Refused):
                return await connect_once(address)
            return await _start_and_connect(address, announce)
    except OSError as exc:
        # The home cannot hold the server's files (a file in its place, no room, no
        # permission) or Python cannot be run: say so rather than "unexpected error".
        home = address.home
        if home.exists() and not home.is_dir():
            why = f"{home} is a file, not a folder"
        else:
            why = f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else "")
        raise TerminalError(
            f"No tron-server answers at {url}, and none could be started on the home "
            f"{home} ({why}). Fix that, pass another --home (or TRON_HOME), or start one "
            "with `tron-server`.",
            EXIT_NO_SERVER,
        ) from None


async def _start_and_connect(
    address: ServerAddress, announce: Callable[[str], None] | None
) -> Connection:
    return await _connect_started(address, start_server(address.home), announce)


async def _connect_started(
    address: ServerAddress, launched: Launched, announce: Callable[[str], None] | None
) -> Connection:
    if announce is not None:
        announce(
            f"Started tron-server in the background (pid {launched.process.pid}, "
            f"{launched.url}); its output: {launched.log_path}"
        )
    connection = await _wait_for(address, launched)
    connection.started = True
    return connection


def _recorded_itself(home: Path, pid: int) -> bool:
    """Whether the server ``pid`` has written its own record: it accepts connections,
    with its token in place (a connection before that would be refused, and logged)."""
    return (home / SERVERS_DIR / f"{pid}.json").exists()


async def _connect_early(address: ServerAddress, url: str, timeout: float) -> Connection:
    """A connection to a server still starting, returned once it serves: it answers
    ``/health`` before it is ready and holds ``/rpc`` requests until then (``app.
    DeferredStart``), so the connection and its first call (``system.info``, kept in
    ``info``) are made while it starts instead of after. Raises when the server refused,
    closed (a start that failed: 1011) or did not answer in time; :class:`Unreachable`
    while nothing listens yet."""
    connection = await connect_once(address, url)
    try:
        info = await connection.client.call("system.info", timeout=timeout)
    except BaseException:
        await connection.close()
        raise
    connection.info = info if isinstance(info, dict) else None
    return connection


async def _wait_for(address: ServerAddress, launched: Launched) -> Connection:
    """The server ``launched`` once it serves: connected early when its token is there
    (:func:`_connect_early`), else (or when that fails) once it has recorded itself."""
    deadline = time.monotonic() + START_TIMEOUT
    early: asyncio.Task[Connection] | None = None
    tried_early = False
    next_try = 0.0
    try:
        while True:
            now = time.monotonic()
            if early is None and not tried_early and now >= next_try and address.token():
                tried_early = True
                # Until it listens, a try every EARLY_RETRY s: it listens well before it
                # serves, and a connection made meanwhile waits in its backlog.
                next_try = now + EARLY_RETRY
                early = asyncio.ensure_future(
                    _connect_early(address, launched.url, max(deadline - now, 1))
                )
            if early is not None and early.done():
                done, early = early, None
                error = None if done.cancelled() else done.exception()
                if not done.cancelled() and error is None:
                    return done.result()
                # Not listening yet: try again. Refused, closed or timed out: the record
                # says when it serves (or the exit, why it does not), as for a server
                # found another way.
                tried_early = not isinstance(error, Unreachable)
            connection = await _wait_step(address, launched, deadline, early)
            if connection is not None:
                return connection
    finally:
        if early is not None:  # given up (an error, or cancelled) while it connected
            early.cancel()
            await asyncio.wait({early})
            if not early.cancelled() and early.exception() is None:
                await early.result().close()


async def _wait_step(
    address: ServerAddress,
    launched: Launched,
    deadline: float,
    early: asyncio.Task[Connection] | None,
) -> Connection | None:
    """One look at the starting server: a connection once it has recorded itself (unless
    an early one is under way: its answer comes first), a TerminalError once it exited or
    the start timed out, else None after a short wait (cut short by ``early``'s end)."""
    if early is None and _recorded_itself(address.home, launched.process.pid):
        with contextlib.suppress(Refused, Unreachable):
            return await connect_once(address, launched.url)
    if launched.process.poll() is not None:
        # It exited: maybe another `tron` started one at the same moment.
        with contextlib.suppress(Unreachable, Refused):
            return await connect_once(address)
        tail = _log_tail(launched.log_path)
        raise TerminalError(
            "No tron-server was running and the one started in the background exited "
            f"(status {launched.process.returncode}). See {launched.log_path}"
            + (f":\n{tail}" if tail else "."),
            EXIT_NO_SERVER,
        )
    if time.monotonic() > deadline:
        raise TerminalError(
            f"tron-server was started in the background (pid {launched.process.pid}) but "
            f"did not answer within {START_TIMEOUT:.0f} s. See {launched.log_path}.",
            EXIT_NO_SERVER,
        )
    # Often: a server starting takes a few hundred ms, and each look is cheap (a file's
    # existence): looked at often, the record costs little of the first turn.
    if early is None:
        await asyncio.sleep(0.005)
    else:
        await asyncio.wait({early}, timeout=0.005)
    return None


__all__ = [
    "Connection",
    "Launched",
    "Refused",
    "ServerAddress",
    "TerminalError",
    "Unreachable",
    "attach",
    "connect_once",
    "default_home",
    "refused_error",
    "start_lock",
    "start_server",
]
