"""The agent's web browser (Playwright driving the system's Chromium) and the address
policy it shares with WebFetch.

- :mod:`.urls`: which URLs and addresses may be reached; the verdict type the permission
  layer answers with (no Playwright needed: WebFetch uses it too).
- :class:`BrowserManager`: one browser context per session on one shared Chromium,
  started on first use, closed on abort, at the session's end and at shutdown.
- :class:`BrowserSession`: the actions (navigate, snapshot, click …), the route that
  keeps the browser where it may go, the screencast (``browser.frame``).

Playwright is imported only when a browser starts: without the ``tron-server[browser]``
extra the server runs, and the Browser tool says what to install
(:class:`BrowserUnavailable`). See ``docs/browser.md``.
"""

from __future__ import annotations

from .engine import DEFAULT_CHROMIUM, BrowserUnavailable, Engine
from .manager import BrowserManager
from .session import ActionError, BrowserSession
from .urls import UrlCheck, UrlRefused, UrlVerdict, non_public, parse_web_url

__all__ = [
    "DEFAULT_CHROMIUM",
    "ActionError",
    "BrowserManager",
    "BrowserSession",
    "BrowserUnavailable",
    "Engine",
    "UrlCheck",
    "UrlRefused",
    "UrlVerdict",
    "non_public",
    "parse_web_url",
]
