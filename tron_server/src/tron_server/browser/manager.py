"""The browsers of all sessions: one :class:`BrowserSession` per session, on one engine.

A session's browser starts on its first Browser call and lives until the session is
aborted or ends, its sub-agent run is over, or the server stops (:meth:`release`,
:meth:`aclose`); sub-agents each get their own (their own session). Its notifications
(``browser.frame``, ``browser.status``) go to the clients subscribed to the session.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from .engine import DEFAULT_CHROMIUM, Engine
from .session import BrowserSession, PlaceDownload
from .urls import UrlCheck

__all__ = ["BrowserManager", "Emit"]

log = logging.getLogger("tron_server.browser")

Emit = Callable[[str, str, dict[str, Any]], None]
"""``(method, session_id, data)``: a notification to the session's clients; never blocks."""


class BrowserManager:
    """Sessions' browsers (see the module docstring)."""

    def __init__(
        self, emit: Emit | None = None, *, chromium: str = DEFAULT_CHROMIUM, headless: bool = True
    ) -> None:
        self.engine = Engine(chromium, headless=headless)
        self.emit = emit
        self._sessions: dict[str, BrowserSession] = {}
        self._locks: dict[str, anyio.Lock] = {}
        self._closing = False

    def get(self, session_id: str) -> BrowserSession | None:
        """The session's open browser, or None."""
        found = self._sessions.get(session_id)
        return found if found is not None and not found.closed else None

    async def session(
        self,
        session_id: str,
        working_directory: Path,
        *,
        check: UrlCheck | None = None,
        place_download: PlaceDownload | None = None,
    ) -> BrowserSession:
        """The session's browser, opened now if it has none. Raises
        :class:`~.engine.BrowserUnavailable`."""
        lock = self._locks.setdefault(session_id, anyio.Lock())
        async with lock:
            found = self.get(session_id)
            if found is not None:
                found.check = check or found.check
                return found
            if self._closing:
                raise RuntimeError("the server is shutting down")
            browser = BrowserSession(
                self.engine,
                session_id,
                working_directory,
                check=check,
                publish=lambda method, data: self._publish(session_id, method, data),
                place_download=place_download,
            )
            await browser.open()
            self._sessions[session_id] = browser
            return browser

    def _publish(self, session_id: str, method: str, data: dict[str, Any]) -> None:
        if self.emit is None:
            return
        try:
            self.emit(method, session_id, data)
        except Exception:
            log.exception("notification %s failed", method)

    async def release(self, session_id: str) -> None:
        """Close the session's browser (if it has one). Never raises."""
        browser = self._sessions.pop(session_id, None)
        self._locks.pop(session_id, None)
        if browser is not None:
            await browser.close()

    async def aclose(self) -> None:
        """Close every browser and stop Chromium (server shutdown). Never raises."""
        self._closing = True
        for session_id in list(self._sessions):
            await self.release(session_id)
        await self.engine.aclose()
