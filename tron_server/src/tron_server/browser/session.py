"""One session's browser: a Playwright context, its current page, and the agent's actions.

A :class:`BrowserSession` is what the Browser tool drives: ``navigate``, ``snapshot``
(Playwright's aria snapshot for AI, each element with a ``[ref=eN]``), ``click``/``type``/
``select`` by ref, ``press``, ``back``, ``wait``, ``screenshot``, ``console``. It keeps:

- **what the agent may open** (``docs/browser.md``): every request the context makes
  passes :meth:`_route`. A page (a main-frame navigation) opens only on a host the user
  approved with a ``navigate`` in this context or one the rules allow without asking; a
  request of any kind to a loopback or private address only when its host was allowed
  with its private addresses. What is blocked is said in the next action's result, with
  how to open it (``navigate``, which asks). Chromium follows redirects without asking
  the route, so after each action the page it landed on is checked the same way
  (:meth:`_check_landing`), and closed (``about:blank``) before the agent sees it if it is
  not allowed. ``file:`` URLs only inside the working directory.
- **what happened meanwhile**: console messages and page errors (the last
  :data:`MAX_CONSOLE`), downloads (saved into the working directory), dialogs (dismissed),
  new tabs (the newest becomes the current page).
- **the picture**: the current page's screencast (:mod:`.frames`) and a
  ``browser.status`` notification (URL, title, last action) after each action.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import time
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

import anyio

from ..protocol import BROWSER_FRAME, BROWSER_STATUS
from .engine import Engine
from .frames import Screencast
from .urls import HostResolver, UrlCheck, UrlRefused, UrlVerdict, non_public, parse_web_url

if TYPE_CHECKING:
    from playwright.async_api import (
        BrowserContext,
        ConsoleMessage,
        Dialog,
        Download,
        Page,
        Request,
        Route,
    )
    from playwright.async_api import Error as PlaywrightError

__all__ = [
    "ACTION_TIMEOUT_MS",
    "MAX_CONSOLE",
    "MAX_SNAPSHOT_CHARS",
    "NAVIGATION_TIMEOUT_MS",
    "ActionError",
    "BrowserSession",
    "Publish",
]

log = logging.getLogger("tron_server.browser")

NAVIGATION_TIMEOUT_MS = 30_000
ACTION_TIMEOUT_MS = 10_000
#: Longest ``wait``.
MAX_WAIT_MS = 30_000
MAX_SNAPSHOT_CHARS = 30_000
MAX_CONSOLE = 200
#: Notes in one result (a page loading many blocked resources would flood it).
MAX_NOTES = 20
#: A full-page screenshot is cut at this height (CSS pixels): taller images are scaled
#: down by the providers until they are unreadable.
MAX_SCREENSHOT_HEIGHT = 4000
VIEWPORT = {"width": 1280, "height": 800}
_REF = re.compile(r"^[A-Za-z0-9_-]{1,32}$")

Publish = Callable[[str, dict[str, Any]], None]
"""``(notification method, data)`` for the session's clients; never blocks."""
PlaceDownload = Callable[[str], Awaitable[Path]]
"""Suggested file name → where to save the download (raises ``OSError``/``ValueError``)."""


class ActionError(Exception):
    """An action that cannot be done as asked; the message is for the model."""


def _cut(text: str, limit: int, what: str) -> str:
    if len(text) <= limit:
        return text
    end = text.rfind("\n", 0, limit)
    end = end if end > limit // 2 else limit
    return text[:end] + f"\n[{what} cut: {len(text) - end:,} more characters]"


def _message(exc: BaseException) -> str:
    text = str(exc).strip()
    # Playwright appends a call log; the first lines say what happened.
    return "\n".join(text.splitlines()[:3]) if text else type(exc).__name__


class BrowserSession:
    """The browser of one session (see the module docstring). Create with
    :meth:`open`; every method but :meth:`close` raises :class:`ActionError`."""

    def __init__(
        self,
        engine: Engine,
        session_id: str,
        working_directory: Path,
        *,
        check: UrlCheck | None = None,
        publish: Publish | None = None,
        place_download: PlaceDownload | None = None,
    ) -> None:
        self.engine = engine
        self.session_id = session_id
        self.working_directory = Path(os.path.realpath(working_directory))
        self.check = check
        self.publish = publish or (lambda _m, _d: None)
        self.place_download = place_download
        self.resolver = HostResolver()
        #: Hosts the agent may open pages of → whether their private addresses are allowed.
        self.hosts: dict[str, bool] = {}
        self._verdicts: dict[str, UrlVerdict] = {}
        self.notes: list[str] = []
        self.console_lines: deque[str] = deque(maxlen=MAX_CONSOLE)
        self.console_total = 0
        self.context: BrowserContext | None = None
        self.pages: list[Page] = []
        self.last_action = ""
        self.closed = False
        self.screencast = Screencast(self._frame)
        self._tasks: set[asyncio.Task[None]] = set()

    # -- life ----------------------------------------------------------------------------

    async def open(self) -> None:
        """Start the context and its first page (the browser starts if it is not running)."""
        context = await self.engine.new_context(
            viewport=VIEWPORT,
            accept_downloads=True,
            service_workers="block",  # a service worker's requests would pass the route
        )
        self.context = context
        try:
            context.set_default_timeout(ACTION_TIMEOUT_MS)
            context.set_default_navigation_timeout(NAVIGATION_TIMEOUT_MS)
            await context.route("**/*", self._route)
            context.on("page", self._adopt)
            await context.new_page()  # _adopt makes it the current page
            if self.pages:
                await self.screencast.start(self.pages[-1])
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """Close the context (and the browser with the last one). Never raises."""
        if self.closed:
            return
        self.closed = True
        with anyio.CancelScope(shield=True):
            self.screencast.forget()
            context, self.context = self.context, None
            self.pages = []
            if context is not None:
                await self.engine.close_context(context)
            self.publish(BROWSER_STATUS, {"open": False, "url": None, "title": None,
                                            "action": self.last_action or None})  # fmt: skip

    @property
    def page(self) -> Page:
        if self.closed or not self.pages:
            raise ActionError("the browser is closed; navigate to open it again")
        return self.pages[-1]

    # -- events of the browser -------------------------------------------------------------

    def _adopt(self, page: Page) -> None:
        self.pages.append(page)
        page.on("console", self._on_console)
        page.on("pageerror", self._on_page_error)
        page.on("dialog", self._on_dialog)
        page.on("download", self._on_download)
        page.on("close", self._on_close)
        if len(self.pages) > 1:
            self.notes.append(f"A new tab opened ({page.url or 'loading'}); it is now the page.")
            self._spawn(self.screencast.start(page))

    def _on_close(self, page: Page) -> None:
        was_current = bool(self.pages) and self.pages[-1] is page
        with contextlib.suppress(ValueError):
            self.pages.remove(page)
        if was_current and self.pages and not self.closed:
            self.notes.append(f"The tab closed; the page is now {self.pages[-1].url}.")
            self._spawn(self.screencast.start(self.pages[-1]))

    def _on_console(self, message: ConsoleMessage) -> None:
        where = message.location or {}
        source = where.get("url") or ""
        line = where.get("lineNumber")
        at = f" ({source}:{line})" if source and line is not None else ""
        self._log(f"[{message.type}] {message.text}{at}")

    def _on_page_error(self, error: PlaywrightError) -> None:
        self._log(f"[pageerror] {error.message or error}")

    def _log(self, text: str) -> None:
        self.console_total += 1
        self.console_lines.append(text[:2000])

    def _on_dialog(self, dialog: Dialog) -> None:
        self._log(f"[dialog:{dialog.type}] {dialog.message}")
        self.notes.append(f"A {dialog.type} dialog said {dialog.message!r}; it was dismissed.")
        self._spawn(dialog.dismiss())

    def _on_download(self, download: Download) -> None:
        self._spawn(self._save(download))

    async def _save(self, download: Download) -> None:
        name = download.suggested_filename
        try:
            if self.place_download is None:
                raise ValueError("downloads are not kept here")
            path = await self.place_download(name)
            await download.save_as(path)
            size = path.stat().st_size
        except Exception as exc:
            self.notes.append(f"A download ({name}) was not saved: {_message(exc)}")
            with contextlib.suppress(Exception):
                await download.cancel()
            return
        self.notes.append(f"Downloaded {download.url} → {path} ({size:,} bytes).")

    def _spawn(self, work: Awaitable[Any]) -> None:
        async def run() -> None:
            with contextlib.suppress(Exception):
                await work

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _frame(self, frame: dict[str, Any]) -> None:
        self.publish(BROWSER_FRAME, frame)

    # -- what may be opened ---------------------------------------------------------------

    async def _verdict(self, url: str, call: str | None = None) -> UrlVerdict:
        if self.check is not None:
            return await self.check("Browser", url, call)
        target = parse_web_url(url)
        private = non_public(await self.resolver.addresses(target.host, target.port))
        if private:
            return UrlVerdict("deny", "private addresses need a permission rule", private)
        return UrlVerdict("allow", "public address")

    async def _cached_verdict(self, url: str, host: str) -> UrlVerdict:
        found = self._verdicts.get(host)
        if found is None:
            found = self._verdicts[host] = await self._verdict(url)
        return found

    def _inside(self, url: str) -> bool:
        path = Path(os.path.realpath(url2pathname(urlsplit(url).path)))
        return path == self.working_directory or self.working_directory in path.parents

    async def _allows(self, url: str, main: bool) -> str | None:
        """None when the request may go, else why not."""
        scheme = url.split(":", 1)[0].lower()
        if scheme in ("data", "blob", "about"):
            return None
        try:
            target = parse_web_url(url, allow_file=True)
        except UrlRefused as exc:
            return str(exc)
        if target.scheme == "file":
            return None if self._inside(url) else "a file outside the working directory"
        private = non_public(await self.resolver.addresses(target.host, target.port))
        known = self.hosts.get(target.host)
        if known is not None and (known or not private):
            return None
        if not main and not private:
            return None  # a public resource of an allowed page
        verdict = await self._cached_verdict(url, target.host)
        if verdict.allowed and (verdict.private_ok or not private):
            if main:
                self.hosts[target.host] = verdict.private_ok
            return None
        return verdict.reason

    async def _route(self, route: Route) -> None:
        request: Request = route.request
        try:
            main = request.is_navigation_request() and request.frame.parent_frame is None
        except Exception:  # a worker's request has no frame
            main = False
        try:
            refused = await self._allows(request.url, main)
        except Exception as exc:
            refused = f"it could not be checked ({type(exc).__name__})"
        try:
            if refused is None:
                await route.continue_()
                return
            # A page the agent may not open: the navigation is cancelled and the tab stays
            # where it was (blocking it would show Chromium's error page instead).
            await route.abort("aborted" if main else "blockedbyclient")
        except Exception:  # the page or context closed meanwhile
            return
        if main:
            self.notes.append(
                f"Blocked: the page tried to open {request.url} ({refused}). To open it, "
                "call navigate with that URL: the user is asked to approve its domain."
            )
        else:
            self.notes.append(f"Blocked a request to {request.url} ({refused}).")

    async def _check_landing(self) -> None:
        """Close the page if a redirect took it where it may not be (see the docstring)."""
        page = self.page
        url = page.url
        if url.split(":", 1)[0].lower() not in ("http", "https", "file"):
            return
        refused = await self._allows(url, main=True)
        if refused is None:
            return
        with contextlib.suppress(Exception):
            await page.goto("about:blank")
        self.notes.append(
            f"The page went to {url} ({refused}), so it was closed before you saw it. To open "
            "it, call navigate with that URL: the user is asked to approve its domain."
        )

    # -- actions ---------------------------------------------------------------------------

    def begin(self, action: str) -> None:
        """A new action starts: verdicts are looked up afresh (the rules may have changed)."""
        self._verdicts.clear()
        self.last_action = action

    def take_notes(self) -> list[str]:
        """What happened since the last result (blocked requests, downloads, dialogs…), at
        most :data:`MAX_NOTES` of them and how many more there were."""
        notes, self.notes = self.notes, []
        if len(notes) > MAX_NOTES:
            notes = [*notes[:MAX_NOTES], f"(and {len(notes) - MAX_NOTES} more like these)"]
        return notes

    async def summary(self) -> str:
        """``Page: "title" — url`` of the current page."""
        page = self.page
        try:
            title = await page.title()
        except Exception:
            title = ""
        return f'Page: "{title}" — {page.url}' if title else f"Page: {page.url}"

    def status(self, title: str | None = None) -> None:
        """Tell the clients where the browser is and what it did last."""
        if self.closed or not self.pages:
            return
        self.publish(BROWSER_STATUS, {"open": True, "url": self.pages[-1].url, "title": title,
                                        "action": self.last_action})  # fmt: skip

    async def navigate(self, url: str, tool_call_id: str | None) -> None:
        try:
            target = parse_web_url(url, allow_file=True)
        except UrlRefused as exc:
            raise ActionError(f"cannot open {url}: {exc}") from None
        if target.scheme == "file":
            if not self._inside(target.url):
                raise ActionError(
                    f"{url} is outside the working directory ({self.working_directory}): the "
                    "browser opens only files of the working directory"
                )
        else:
            verdict = await self._verdict(target.url, tool_call_id)
            if not verdict.allowed:
                raise ActionError(f"cannot open {url}: {verdict.reason}")
            self.hosts[target.host] = verdict.private_ok or self.hosts.get(target.host, False)
        await self._goto(target.url)

    async def _goto(self, url: str) -> None:
        from playwright.async_api import Error as PlaywrightError
        from playwright.async_api import TimeoutError as PlaywrightTimeout

        page = self.page
        try:
            response = await page.goto(url, wait_until="load")
        except PlaywrightTimeout:
            self.notes.append(
                f"The page did not finish loading within {NAVIGATION_TIMEOUT_MS // 1000} s; "
                "this is how far it got."
            )
        except PlaywrightError as exc:
            message = _message(exc)
            blocked = [n for n in self.notes if n.startswith("Blocked")]
            if blocked and ("ERR_ABORTED" in message or "ERR_BLOCKED_BY_CLIENT" in message):
                raise ActionError(" ".join(self.take_notes())) from None
            raise ActionError(f"cannot open {url}: {message}") from None
        else:
            if response is not None and response.status >= 400:
                self.notes.append(f"The server answered HTTP {response.status}.")
        await self._check_landing()

    async def settle(self) -> None:
        """Wait (a little) for a navigation an action started, then check where it went."""
        from playwright.async_api import Error as PlaywrightError

        with contextlib.suppress(PlaywrightError):
            await self.page.wait_for_load_state("load", timeout=5_000)
        await self._check_landing()

    async def snapshot(self) -> str:
        from playwright.async_api import Error as PlaywrightError

        await self._check_landing()
        try:
            text = await self.page.aria_snapshot(mode="ai", timeout=ACTION_TIMEOUT_MS)
        except PlaywrightError as exc:
            raise ActionError(f"the page could not be read: {_message(exc)}") from None
        return _cut(text.strip() or "(the page is empty)", MAX_SNAPSHOT_CHARS, "snapshot")

    def _element(self, ref: str) -> Any:
        if not _REF.match(ref):
            raise ActionError(f"{ref!r} is not a ref: use one from the last snapshot, e.g. e5")
        return self.page.locator(f"aria-ref={ref}")

    async def _act(self, what: str, work: Awaitable[Any]) -> Any:
        from playwright.async_api import Error as PlaywrightError

        try:
            return await work
        except PlaywrightError as exc:
            message = _message(exc)
            if "aria-ref" in message or "not found" in message.lower():
                message += " (refs change when the page does: take a new snapshot)"
            raise ActionError(f"{what} failed: {message}") from None

    async def click(self, ref: str) -> None:
        await self._act(f"click {ref}", self._element(ref).click())
        await self.settle()

    async def type(self, ref: str, text: str, submit: bool) -> None:
        element = self._element(ref)
        await self._act(f"type into {ref}", element.fill(text))
        if submit:
            await self._act(f"submit {ref}", element.press("Enter"))
        await self.settle()

    async def press(self, key: str) -> None:
        # On the focused element through a locator: Playwright then waits for a navigation
        # the key starts (Enter in a form field), which ``page.keyboard`` does not, so the
        # snapshot that follows is the new page, not the one being left.
        focused = self.page.locator("*:focus")
        if await self._act("find the focused element", focused.count()) == 1:
            await self._act(f"press {key}", focused.press(key))
        else:
            await self._act(f"press {key}", self.page.keyboard.press(key))
        await self.settle()

    async def select(self, ref: str, values: list[str]) -> list[str]:
        chosen: list[str] = await self._act(
            f"select in {ref}", self._element(ref).select_option(values)
        )
        await self.settle()
        return chosen

    async def back(self) -> bool:
        response = await self._act("back", self.page.go_back(wait_until="load"))
        await self._check_landing()
        return response is not None

    async def wait(self, text: str | None, time_ms: int | None) -> float:
        started = time.monotonic()
        if text:
            timeout = min(time_ms or ACTION_TIMEOUT_MS, MAX_WAIT_MS)
            await self._act(
                f"wait for {text!r}",
                self.page.get_by_text(text).first.wait_for(state="visible", timeout=timeout),
            )
        else:
            await anyio.sleep(min(time_ms or 1000, MAX_WAIT_MS) / 1000)
        await self._check_landing()
        return time.monotonic() - started

    async def screenshot(self, full_page: bool) -> tuple[bytes, int, int]:
        """A JPEG of the page as the user sees it (the viewport, or the whole page cut at
        :data:`MAX_SCREENSHOT_HEIGHT`); with its size."""
        await self._check_landing()
        page = self.page
        width, height = VIEWPORT["width"], VIEWPORT["height"]
        clip = None
        if full_page:
            root = "document.documentElement"
            measure = f"() => [{root}.scrollWidth, {root}.scrollHeight]"
            size = await self._act("measure the page", page.evaluate(measure))
            width = max(1, min(int(size[0]), 4000))
            height = max(1, min(int(size[1]), MAX_SCREENSHOT_HEIGHT))
            clip = {"x": 0, "y": 0, "width": width, "height": height}
        data: bytes = await self._act(
            "screenshot",
            page.screenshot(type="jpeg", quality=75, full_page=full_page, clip=clip),  # type: ignore[arg-type]
        )
        return data, width, height

    def console(self) -> str:
        lines = list(self.console_lines)
        if not lines:
            return "No console messages or page errors."
        earlier = self.console_total - len(lines)
        head = f"({earlier} earlier messages are not kept)\n" if earlier > 0 else ""
        return head + "\n".join(lines)
