"""Which web addresses the agent may reach: URL checks, host resolution, and the verdict
type the permission layer answers with (shared by WebFetch and the Browser).

Three rules, the same for both tools (see ``docs/browser.md``):

- only ``http``/``https`` URLs go out (``file:`` only for the Browser, inside the
  working directory; everything else is refused: :func:`parse_web_url`);
- a domain is allowed by the permission rules (``WebFetch(domain:example.com)``,
  ``Browser(domain:example.com)``) or by the user's approval; without either the call asks;
- a host that resolves to a loopback, private, link-local or otherwise non-public address
  (:func:`non_public`) needs a rule that names the domain, or the user's approval for it,
  whatever the mode: the agent must not reach into the user's network by accident, or
  because a page told it to.

The resolution is checked for *every* address a host has (one private address is enough
to ask), and again on each redirect and each connection (:class:`HostResolver`).
"""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

import anyio

__all__ = [
    "MAX_URL_CHARS",
    "HostResolver",
    "UrlCheck",
    "UrlRefused",
    "UrlVerdict",
    "WebUrl",
    "non_public",
    "parse_web_url",
    "resolve_host",
]

#: Longer URLs are refused (Claude Code's WebFetch has the same limit).
MAX_URL_CHARS = 2000

Behavior = Literal["allow", "ask", "deny"]


class UrlRefused(ValueError):
    """A URL that is never fetched (scheme, form); the message says why and what to do."""


@dataclass(frozen=True)
class WebUrl:
    """A parsed URL: ``scheme`` (lower case), ``host`` (lower case, no trailing dot; empty
    for ``file:``), ``port`` (the default one when absent) and the URL as given."""

    url: str
    scheme: str
    host: str
    port: int


def parse_web_url(url: str, *, allow_file: bool = False) -> WebUrl:
    """Check and split ``url``. Raises :class:`UrlRefused` for anything but an absolute
    ``http(s)`` URL with a host (and ``file:`` URLs with ``allow_file``)."""
    if not isinstance(url, str) or not url.strip():
        raise UrlRefused("the URL is empty; give an absolute http:// or https:// URL")
    url = url.strip()
    if len(url) > MAX_URL_CHARS:
        raise UrlRefused(f"the URL is longer than {MAX_URL_CHARS} characters")
    if any(ch in url for ch in "\x00\r\n\t"):
        raise UrlRefused("the URL contains control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UrlRefused(f"cannot read the URL {url!r}: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme == "file" and allow_file:
        return WebUrl(url, "file", "", 0)
    if scheme not in ("http", "https"):
        shown = f"{scheme}:" if scheme else "a relative URL"
        what = (
            "file: URLs only in the Browser, for files of the working directory; "
            if (scheme == "file")
            else ""
        )
        raise UrlRefused(
            f"{shown} is not fetched: only http:// and https:// URLs are ({what}"
            "read local files with Read)"
        )
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        raise UrlRefused(f"the URL {url!r} has no host")
    if parts.username is not None or parts.password is not None:
        raise UrlRefused("URLs with a user name or password are not fetched")
    return WebUrl(url, scheme, host, port or (443 if scheme == "https" else 80))


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])  # drop an IPv6 zone
    except ValueError:
        return None


def non_public(addresses: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The addresses that are not on the public internet: loopback, private ranges,
    link-local, shared (CGNAT), reserved, unspecified, multicast; IPv4-mapped IPv6 addresses
    are judged by their IPv4 address."""
    out: list[str] = []
    for text in addresses:
        ip = _ip(text)
        if ip is None:
            out.append(text)  # not an address we understand: never treat it as public
            continue
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        if not ip.is_global or ip.is_multicast:
            out.append(text)
    return tuple(out)


async def resolve_host(host: str, port: int = 443) -> tuple[str, ...]:
    """Every address ``host`` resolves to (an IP literal: itself), without duplicates, in
    the resolver's order. Raises ``OSError`` when it does not resolve."""
    literal = _ip(host.strip("[]"))
    if literal is not None:
        return (str(literal),)
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: dict[str, None] = {}
    for _family, _type, _proto, _name, sockaddr in infos:
        seen.setdefault(str(sockaddr[0]), None)
    return tuple(seen)


class HostResolver:
    """:func:`resolve_host` with a short cache (a page loads many resources from few hosts);
    a host that does not resolve gives ``()``."""

    def __init__(self, ttl: float = 30.0) -> None:
        self.ttl = ttl
        self._cache: dict[str, tuple[float, tuple[str, ...]]] = {}

    async def addresses(self, host: str, port: int = 443) -> tuple[str, ...]:
        now = time.monotonic()
        hit = self._cache.get(host)
        if hit is not None and now - hit[0] < self.ttl:
            return hit[1]
        try:
            found = await resolve_host(host, port)
        except OSError:
            found = ()
        if len(self._cache) > 1024:
            self._cache.clear()
        self._cache[host] = (now, found)
        return found


@dataclass(frozen=True)
class UrlVerdict:
    """The permission layer's answer for one URL, without asking anyone.

    ``behavior``: ``allow`` (go), ``ask`` (the user would have to approve it: a tool call
    for that URL asks), ``deny`` (a deny rule, or the mode). ``private``: the host's
    non-public addresses at the time of the check; when the verdict allows, connecting to
    them is allowed too (``private_ok``)."""

    behavior: Behavior
    reason: str
    private: tuple[str, ...] = ()

    @property
    def allowed(self) -> bool:
        return self.behavior == "allow"

    @property
    def private_ok(self) -> bool:
        return self.allowed and bool(self.private)


UrlCheck = Callable[[str, str, "str | None"], Awaitable[UrlVerdict]]
"""``check(tool, url, tool_call_id)``: the verdict for ``tool`` (``WebFetch`` or
``Browser``) reaching ``url`` in the calling session, with that session's rules and mode
and, when ``tool_call_id`` is given, what the user approved for that call. Never asks."""
