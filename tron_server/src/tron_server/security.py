"""Local-server security: the per-launch token, Host/Origin allowlists, and auth.

A server that runs bash on the user's machine is a target for any web page
the user visits (DNS rebinding, cross-site WebSockets) and for other local
users. Three controls, used together:

* a random token, kept in ``home/server-token`` (mode 0600) across restarts
  until the user rotates it (``tron-server --rotate-token``), so clients and
  open pages reconnect by themselves after a restart. Programs send
  ``Authorization: Bearer <token>``. A browser logs in at ``/login?token=…``,
  which sets the HttpOnly, SameSite=Strict cookie ``tron_session`` (an HMAC of
  the token, not the token) and redirects to ``/``. The login URL the server
  prints carries a **one-time login code**, not the token: used once, it no
  longer logs anyone in (the URL stays in browser history and terminal
  scrollback, the long-lived token must not); ``/login`` also takes the token
  itself (what the web page's login form sends). A token in a query string
  is accepted only by ``/login``.
* a Host allowlist (``localhost``, ``127.0.0.1``, ``[::1]`` with the port) and
  an Origin allowlist (the server's own origins) on every HTTP and WebSocket
  request, checked by :class:`HostOriginGuard` before anything else runs;
* binding to 127.0.0.1 unless ``--allow-remote`` (see :mod:`tron_server.cli`).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import ipaddress
import logging
import os
import re
import secrets
from collections.abc import Iterable, Iterator
from http.cookies import SimpleCookie
from pathlib import Path

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger("tron_server.security")

COOKIE_NAME = "tron_session"
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


# -- the token ----------------------------------------------------------------


#: What a token looks like (``secrets.token_urlsafe(32)``: 43 URL-safe characters).
_TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_-]{32,256}")


def new_token() -> str:
    """A fresh random token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def load_or_create_token(path: Path, *, rotate: bool = False) -> tuple[str, bool]:
    """The token in ``path``, or a new one written there (``rotate``, no file, or a
    file that does not hold a token); returns ``(token, written)``.

    A kept token file is made user-only (0600) if it was not. Two servers
    starting at once on one home end up with the same token, never one each.
    """
    if rotate:
        token = new_token()
        write_token(path, token)
        return token, True
    existing = _valid_token(path)
    if existing is not None:
        return existing, False
    # Decide under a lock on the folder: two servers starting at once on one home
    # must not both find "no token" and each write its own.
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with _folder_lock(path.parent):
        existing = _valid_token(path)
        if existing is not None:
            return existing, False
        token = new_token()
        write_token(path, token)
    return token, True


@contextlib.contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """An exclusive flock on ``folder`` itself (no lock file is left behind)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _valid_token(path: Path) -> str | None:
    try:
        token = read_token(path)
    except (OSError, UnicodeDecodeError):
        return None
    if not _TOKEN_SHAPE.fullmatch(token):
        return None
    if os.stat(path).st_mode & 0o077:
        log.warning(
            "the token file was readable by others: made it user-only (0600)",
            extra={"fields": {"path": str(path)}},
        )
        os.chmod(path, 0o600)
    return token


def write_token(path: Path, token: str) -> None:
    """Write ``token`` to ``path`` readable by the owner only (0600), atomically.

    The file is created 0600 from the start (never world-readable, not even
    for a moment) and moved into place whole, so a reader never sees half a
    token.
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # O_CREAT's mode is ignored if tmp already existed
        os.write(fd, token.encode() + b"\n")
    finally:
        os.close(fd)
    os.replace(tmp, path)


def read_token(path: Path) -> str:
    """The token in ``path`` (as written by :func:`write_token`)."""
    return path.read_text().strip()


def cookie_value(token: str) -> str:
    """What the ``tron_session`` cookie holds: derived from the token, not the token."""
    return hmac.new(token.encode(), b"tron_session cookie v1", hashlib.sha256).hexdigest()


def _same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


def login_url(host: str, port: int, code: str) -> str:
    """The URL that logs a browser in (sets the cookie, then redirects to /) on a
    server listening on ``host:port``; ``code`` is a one-time login code (or the token)."""
    if is_loopback_host(host) or host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    elif ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}/login?token={code}"


class LoginCodes:
    """One-time login codes: each logs one browser in, once.

    Held in memory: a restart forgets the codes not used yet (it prints a new
    login URL). At most ``limit`` are outstanding; issuing more drops the oldest.
    """

    def __init__(self, limit: int = 16) -> None:
        self._codes: list[str] = []
        self._limit = limit

    def issue(self) -> str:
        code = secrets.token_urlsafe(32)
        self._codes.append(code)
        del self._codes[: -self._limit]
        return code

    def redeem(self, candidate: str) -> bool:
        """True (and the code is spent) if ``candidate`` is an outstanding code."""
        # Compare with every code, in constant time each, before removing the match.
        matches = [code for code in self._codes if _same(candidate, code)]
        for code in matches:
            self._codes.remove(code)
        return bool(matches)

    def __len__(self) -> int:
        return len(self._codes)


class Authenticator:
    """Checks the credentials of a request against the token (and the login codes)."""

    def __init__(self, token: str) -> None:
        self.token = token
        self._cookie = cookie_value(token)
        self.login_codes = LoginCodes()

    def check_login_token(self, candidate: str) -> bool:
        """A one-time login code (spent by this call) or the token itself."""
        if self.login_codes.redeem(candidate):
            return True
        return _same(candidate, self.token)

    def cookie(self) -> str:
        return self._cookie

    def is_authorized(self, headers: Headers) -> bool:
        """A valid ``Authorization: Bearer`` header or ``tron_session`` cookie.

        Tokens in query strings are deliberately not looked at (they end up in
        logs and browser history); only ``/login`` takes one.
        """
        auth = headers.get("authorization", "")
        scheme, _, value = auth.partition(" ")
        if scheme.lower() == "bearer" and value and _same(value.strip(), self.token):
            return True
        for raw in headers.getlist("cookie"):
            jar: SimpleCookie = SimpleCookie()
            try:
                jar.load(raw)
            except Exception:  # malformed cookies are simply not credentials
                continue
            morsel = jar.get(COOKIE_NAME)
            if morsel is not None and _same(morsel.value, self._cookie):
                return True
        return False


# -- Host and Origin --------------------------------------------------------------


def is_loopback_host(host: str) -> bool:
    """True for ``localhost``, 127.0.0.0/8 and ::1 (what the CLI binds without --allow-remote)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_hosts(port: int, extra: Iterable[str] = ()) -> frozenset[str]:
    """``Host`` values accepted: the loopback names with the port (and ``extra`` hosts)."""
    names = [*LOOPBACK_NAMES, *(_bracket(h) for h in extra)]
    return frozenset(f"{name}:{port}" for name in names)


def allowed_origins(hosts: Iterable[str]) -> frozenset[str]:
    """The server's own origins, one per allowed ``Host``."""
    return frozenset(f"http://{host}" for host in hosts)


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


class HostOriginGuard:
    """Pure ASGI middleware: refuse (403) any HTTP or WebSocket request whose
    ``Host`` is not allowed or whose ``Origin`` (when present) is not ours.

    It runs before routing, so a refused WebSocket upgrade gets HTTP 403 and
    never reaches the RPC layer. Lifespan messages pass through.
    """

    def __init__(self, app: ASGIApp, *, hosts: frozenset[str], origins: frozenset[str]) -> None:
        self.app = app
        self.hosts = hosts
        self.origins = origins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        problem = self.problem(headers)
        if problem is None:
            await self.app(scope, receive, send)
            return
        log.warning("request refused: %s", problem, extra={"fields": {"path": scope["path"]}})
        if scope["type"] == "websocket":
            # Closing before accepting makes the server answer the upgrade with 403.
            await send({"type": "websocket.close", "code": 1008, "reason": ""})
            return
        response = PlainTextResponse(f"forbidden: {problem}\n", status_code=403)
        await response(scope, receive, send)

    def problem(self, headers: Headers) -> str | None:
        """Why the request is refused, or None if its Host and Origin are fine."""
        hosts = headers.getlist("host")
        if len(hosts) != 1 or hosts[0].lower() not in self.hosts:
            return "Host header not allowed (use http://127.0.0.1:<port>)"
        origins = headers.getlist("origin")
        if len(origins) > 1 or (origins and origins[0].lower() not in self.origins):
            return "Origin not allowed"
        return None


__all__ = [
    "COOKIE_NAME",
    "Authenticator",
    "HostOriginGuard",
    "LoginCodes",
    "allowed_hosts",
    "allowed_origins",
    "cookie_value",
    "is_loopback_host",
    "load_or_create_token",
    "new_token",
    "read_token",
    "write_token",
]
