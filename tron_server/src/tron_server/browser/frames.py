"""The live picture of a session's browser: the DevTools screencast, throttled.

Chromium sends a JPEG frame when the page changes, and the next one only after the last
was acknowledged. The acknowledgement is held back until :data:`FRAME_INTERVAL` has
passed, so a session streams at most :data:`MAX_FPS` frames a second, and the frame that
follows a quiet spell always shows the page as it is now (nothing is dropped on the way:
Chromium renders the latest state when it may send again). Frames go to the clients
subscribed to the session as ``browser.frame`` notifications (``docs/protocol.md``); they
are not events and are never stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from playwright.async_api import CDPSession, Page

__all__ = ["FRAME_INTERVAL", "FRAME_QUALITY", "MAX_FPS", "Screencast"]

log = logging.getLogger("tron_server.browser")

MAX_FPS = 4
FRAME_INTERVAL = 1 / MAX_FPS
#: JPEG quality and the largest frame (CSS pixels are scaled down to fit).
FRAME_QUALITY = 60
FRAME_MAX_WIDTH = 1280
FRAME_MAX_HEIGHT = 800
#: How long stopping the screencast of a page may take (a busy page may not answer).
STOP_TIMEOUT = 2.0

FrameSink = Callable[[dict[str, Any]], None]
"""Receives ``{"data": base64 JPEG, "width", "height", "url", "seq"}``; must not block."""


class Screencast:
    """The screencast of one page; :meth:`start` on the current page, :meth:`stop` when it
    changes or the browser closes."""

    def __init__(self, sink: FrameSink) -> None:
        self.sink = sink
        self.seq = 0
        self._cdp: CDPSession | None = None
        self._page: Page | None = None
        self._acks: set[asyncio.Task[None]] = set()

    async def start(self, page: Page) -> None:
        """Stream ``page`` (stopping the one streamed before)."""
        if self._page is page:
            return
        await self.stop()
        try:
            cdp = await page.context.new_cdp_session(page)
            cdp.on("Page.screencastFrame", self._on_frame)
            await cdp.send(
                "Page.startScreencast",
                {"format": "jpeg", "quality": FRAME_QUALITY, "maxWidth": FRAME_MAX_WIDTH,
                 "maxHeight": FRAME_MAX_HEIGHT, "everyNthFrame": 1},
            )  # fmt: skip
        except Exception as exc:  # a page closing meanwhile: no picture, no failure
            log.debug("screencast not started: %s", exc)
            return
        self._cdp, self._page = cdp, page

    def forget(self) -> None:
        """Stop sending frames without telling the page (its context is closing: Chromium
        answers ``stopScreencast`` only once a navigation in progress is over)."""
        self._cdp, self._page = None, None
        for task in list(self._acks):
            task.cancel()

    async def stop(self) -> None:
        cdp = self._cdp
        self.forget()
        if cdp is not None:
            with contextlib.suppress(Exception):
                with anyio.move_on_after(STOP_TIMEOUT):
                    await cdp.send("Page.stopScreencast")
                    await cdp.detach()

    def _on_frame(self, params: dict[str, Any]) -> None:
        cdp, page = self._cdp, self._page
        if cdp is None or page is None:
            return
        meta = params.get("metadata") or {}
        self.seq += 1
        try:
            self.sink(
                {
                    "data": params.get("data", ""),
                    "width": round(float(meta.get("deviceWidth") or 0)),
                    "height": round(float(meta.get("deviceHeight") or 0)),
                    "url": page.url,
                    "seq": self.seq,
                }
            )
        except Exception:  # a broken listener never stops the browser
            log.exception("a browser frame could not be sent")
        task = asyncio.get_running_loop().create_task(self._ack(cdp, params.get("sessionId")))
        self._acks.add(task)
        task.add_done_callback(self._acks.discard)

    async def _ack(self, cdp: CDPSession, frame: Any) -> None:
        await asyncio.sleep(FRAME_INTERVAL)
        if cdp is self._cdp:
            with contextlib.suppress(Exception):
                await cdp.send("Page.screencastFrameAck", {"sessionId": frame})
