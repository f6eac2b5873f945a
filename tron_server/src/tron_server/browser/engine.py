"""One Chromium for the server, started on first use and stopped with its last context.

Playwright for Python (the optional extra ``tron-server[browser]``) drives the system's
Chromium (Debian's ``/usr/bin/chromium``; ``TRON_CHROMIUM_PATH``): nothing is downloaded.
Each session gets a browser context of its own (cookies, storage, cache), so sessions
never see each other's logins. When the last context closes, the browser and Playwright's
driver stop too, and whatever is left of Chromium's process tree is killed
(:mod:`._procs`): no Chromium outlives its use.
"""

from __future__ import annotations

import itertools
import logging
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from . import _procs

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Playwright

__all__ = ["DEFAULT_CHROMIUM", "LAUNCH_ARGS", "BrowserUnavailable", "Engine"]

log = logging.getLogger("tron_server.browser")

DEFAULT_CHROMIUM = "/usr/bin/chromium"

#: Headless Chromium as it runs here (also as root): no GPU, no QUIC, and none of the
#: background connections a closed network refuses (updates, sync, field trials).
LAUNCH_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)

_launches = itertools.count(1)


class BrowserUnavailable(Exception):
    """The browser cannot start; the message says what to install or set."""


def _playwright_missing() -> str:
    return (
        "the Browser tool needs Playwright for Python, which is not installed: install "
        "tron-server with its browser extra, `pip install 'tron-server[browser]'` (or "
        "`uv sync --extra browser`), which brings the package `playwright`. It drives the "
        "system's Chromium; no browser download is needed."
    )


def find_chromium(path: str) -> str | None:
    """``path`` as an executable (an absolute path, or a name on ``PATH``), or None."""
    if os.sep in path:
        return path if os.access(path, os.X_OK) and Path(path).is_file() else None
    return shutil.which(path)


class Engine:
    """The shared browser; :meth:`new_context` starts it, the last close stops it."""

    def __init__(self, chromium: str = DEFAULT_CHROMIUM, *, headless: bool = True) -> None:
        self.chromium = chromium
        self.headless = headless
        self._pw: Playwright | None = None
        self._browser: Browser | None = None
        self._root: _procs.Proc | None = None
        self._contexts: set[BrowserContext] = set()
        self._lock = anyio.Lock()
        #: A switch on Chromium's command line that finds its processes (see :mod:`._procs`).
        self.marker = f"--tron-browser={os.getpid()}-{id(self):x}-0"

    @property
    def running(self) -> bool:
        return self._browser is not None

    @property
    def browser_pid(self) -> int | None:
        """The Chromium browser process (None when stopped, or not found)."""
        return self._root.pid if self._root is not None else None

    def processes(self) -> list[int]:
        """The pids of Chromium's processes now (the browser and everything below it)."""
        return [p.pid for p in _procs.tree(self._root)] if self._root is not None else []

    async def new_context(self, **options: Any) -> BrowserContext:
        """A fresh context (starting the browser when it is not running). Raises
        :class:`BrowserUnavailable`."""
        async with self._lock:
            browser = await self._start()
            context = await browser.new_context(**options)
            self._contexts.add(context)
            return context

    async def close_context(self, context: BrowserContext) -> None:
        """Close ``context``; the browser stops with the last one. Never raises."""
        with anyio.CancelScope(shield=True):
            async with self._lock:
                self._contexts.discard(context)
                try:
                    with anyio.move_on_after(10):
                        await context.close()
                except Exception as exc:  # the browser may be gone already
                    log.debug("closing a browser context: %s", exc)
                if not self._contexts:
                    await self._stop()

    async def aclose(self) -> None:
        """Close every context and stop the browser (server shutdown). Never raises."""
        with anyio.CancelScope(shield=True):
            async with self._lock:
                self._contexts.clear()
                await self._stop()

    async def _start(self) -> Browser:
        if self._browser is not None and self._browser.is_connected():
            return self._browser
        if self._browser is not None:  # it crashed: start again
            await self._stop()
        try:
            from playwright.async_api import Error as PlaywrightError
            from playwright.async_api import async_playwright
        except ImportError:
            raise BrowserUnavailable(_playwright_missing()) from None
        executable = find_chromium(self.chromium)
        if executable is None:
            raise BrowserUnavailable(
                f"Chromium was not found at {self.chromium}: install it (Debian: `apt-get "
                "install chromium`) or point TRON_CHROMIUM_PATH at a Chromium or Chrome "
                "executable"
            )
        self.marker = f"--tron-browser={os.getpid()}-{id(self):x}-{next(_launches)}"
        pw = await async_playwright().start()
        try:
            browser = await pw.chromium.launch(
                executable_path=executable,
                headless=self.headless,
                args=[*LAUNCH_ARGS, self.marker],
                handle_sigint=False,
                handle_sigterm=False,
                handle_sighup=False,
            )
        except PlaywrightError as exc:
            await pw.stop()
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise BrowserUnavailable(f"Chromium ({executable}) did not start: {first}") from None
        except BaseException:
            with anyio.CancelScope(shield=True):
                await pw.stop()
            raise
        self._pw, self._browser = pw, browser
        self._root = await anyio.to_thread.run_sync(_procs.find_marked, self.marker)
        log.info("browser started", extra={"fields": {"pid": self.browser_pid}})
        return browser

    async def _stop(self) -> None:
        browser, pw, root = self._browser, self._pw, self._root
        self._browser = self._pw = self._root = None
        procs = await anyio.to_thread.run_sync(_procs.tree, root) if root is not None else []
        if browser is not None:
            try:
                with anyio.move_on_after(10):
                    await browser.close()
            except Exception as exc:
                log.debug("closing the browser: %s", exc)
        if pw is not None:
            try:
                with anyio.move_on_after(10):
                    await pw.stop()
            except Exception as exc:
                log.debug("stopping playwright: %s", exc)
        killed = await _procs.kill_leftovers(procs)
        if killed:
            log.warning("killed %d Chromium processes left after the browser closed", len(killed))
        if browser is not None:
            log.info("browser stopped")
