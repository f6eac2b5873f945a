"""Browser: a real Chromium the agent drives, one action per call (``docs/browser.md``).

The model works from snapshots: ``snapshot`` (and every action that may change the page)
returns the page as an accessibility tree in which each element the model can act on has
a ``[ref=eN]``; ``click``, ``type`` and ``select`` take that ref. ``screenshot`` returns
an image block the model sees (stored in the ``tool.result`` like Read's images);
``console`` the page's recent console messages and errors. The browser is one Playwright
context per session (:mod:`tron_server.browser`), started by the first call and closed by
``close``, an abort, the session's end or the server's shutdown.

Permissions: ``navigate`` asks for a domain the rules do not allow
(``Browser(domain:example.com)``), and for a loopback or private address unless a rule
names the domain; the other actions act on the page already open and need no approval.
Where the page itself goes (links, forms, scripts, redirects) is checked by the browser
session with the same rules, without asking: what is not allowed is blocked and the result
says how to open it.
"""

from __future__ import annotations

import base64
import contextlib
import logging
from pathlib import Path
from typing import Any, Literal

import anyio
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..browser.engine import BrowserUnavailable
from ..browser.manager import BrowserManager
from ..browser.session import ActionError, BrowserSession
from ..paths import PathError, PathPolicy
from .base import Tool, ToolContext, ToolResult

__all__ = ["Browser", "BrowserParams"]

log = logging.getLogger(__name__)

Action = Literal[
    "navigate", "snapshot", "click", "type", "press", "select", "back", "wait",
    "screenshot", "console", "close",
]  # fmt: skip

#: What each action needs besides ``action``.
_NEEDS: dict[str, tuple[str, ...]] = {
    "navigate": ("url",),
    "click": ("ref",),
    "type": ("ref", "text"),
    "press": ("key",),
    "select": ("ref", "values"),
}
#: Actions after which the result shows the page (its snapshot).
_SHOWS_PAGE = frozenset({"navigate", "click", "type", "press", "select", "back", "wait"})


class BrowserParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Action = Field(
        description="navigate {url} | snapshot | click {ref} | type {ref, text, submit?} | "
        "press {key} | select {ref, values} | back | wait {text | timeMs} | "
        "screenshot {fullPage?} | console | close"
    )
    url: str | None = Field(default=None, description="navigate: the URL to open.")
    ref: str | None = Field(
        default=None, description="click, type, select: an element's ref from the last snapshot."
    )
    text: str | None = Field(
        default=None, description="type: the text to enter; wait: text to wait for."
    )
    submit: bool = Field(default=False, description="type: press Enter after typing.")
    key: str | None = Field(
        default=None, description="press: a key or chord, e.g. Enter, Escape, Control+A."
    )
    values: list[str] | None = Field(
        default=None, description="select: the option values or labels to select."
    )
    timeMs: int | None = Field(  # camelCase: the parameter names of the issue and the docs
        default=None, ge=0, le=30_000, description="wait: milliseconds (at most 30000)."
    )
    fullPage: bool = Field(
        default=False, description="screenshot: the whole page, not just the viewport."
    )

    @model_validator(mode="after")
    def _needs(self) -> BrowserParams:
        missing = [
            name for name in _NEEDS.get(self.action, ()) if getattr(self, name) in (None, "")
        ]
        if missing:
            raise ValueError(f"{self.action} needs {' and '.join(missing)}")
        if self.action == "wait" and not self.text and self.timeMs is None:
            raise ValueError("wait needs text (to wait for) or timeMs")
        return self


def _describe(p: BrowserParams) -> str:
    match p.action:
        case "navigate":
            return f"navigate {p.url}"
        case "click":
            return f"click {p.ref}"
        case "type":
            return f"type into {p.ref}" + (" and submit" if p.submit else "")
        case "press":
            return f"press {p.key}"
        case "select":
            return f"select {', '.join(p.values or [])} in {p.ref}"
        case "wait":
            return f"wait for {p.text!r}" if p.text else f"wait {p.timeMs} ms"
        case "screenshot":
            return "screenshot (full page)" if p.fullPage else "screenshot"
        case _:
            return p.action


def _download_place(policy: PathPolicy) -> Any:
    """Where a download goes: its suggested name in the working directory, made unique,
    checked like any write of the agent (the guardrails' write policy)."""

    async def place(name: str) -> Path:
        base = Path(name).name.strip() or "download"
        if base in (".", "..") or base.startswith("."):
            base = "download" + (base if base not in (".", "..") else "")
        stem, suffix = Path(base).stem, Path(base).suffix
        for n in range(1000):
            candidate = base if n == 0 else f"{stem} ({n}){suffix}"
            with policy.resolve(candidate) as target:
                if target.exists:
                    continue
                policy.check_write(target)
                return target.path
        raise PathError(f"too many files named like {base}")

    return place


class Browser(Tool[BrowserParams]):
    """Drive the session's browser (see the module docstring)."""

    name = "Browser"
    description = (
        "Control a real web browser (Chromium) to open pages, read them, click, type, "
        "submit forms, run their JavaScript and take screenshots; the user can watch it. "
        "Work from snapshots: `snapshot` (and every action that changes the page) shows "
        "the page as an accessibility tree with a [ref=eN] for each element; pass that ref "
        "to click, type and select (refs change when the page does). `screenshot` returns "
        "an image; `console` the page's console messages and errors; `close` ends the "
        "browser. The user approves each new domain `navigate` opens. For reading a "
        "static page, WebFetch is cheaper."
    )
    Params = BrowserParams

    def __init__(self, manager: BrowserManager) -> None:
        self.manager = manager

    async def release(self, session_id: str) -> None:
        await self.manager.release(session_id)

    async def aclose(self) -> None:
        await self.manager.aclose()

    async def run(self, params: BrowserParams, ctx: ToolContext) -> ToolResult:
        sid = ctx.session_id
        if params.action == "close":
            was_open = self.manager.get(sid) is not None
            await self.manager.release(sid)
            return ToolResult("Closed the browser." if was_open else "The browser was not open.")
        if self.manager.get(sid) is None and params.action not in ("navigate",):
            return ToolResult("The browser is not open: start with navigate {url}.", is_error=True)
        try:
            browser = await self.manager.session(
                sid,
                ctx.working_directory,
                check=ctx.check_url,
                place_download=_download_place(ctx.path_policy),
            )
        except BrowserUnavailable as exc:
            return ToolResult(f"The browser cannot start: {exc}", is_error=True)
        browser.begin(_describe(params))
        try:
            result = await self._do(browser, params, ctx)
        except ActionError as exc:
            result = ToolResult(self._with_notes(browser, f"Browser: {exc}"), is_error=True)
        except Exception as exc:
            # The browser itself failed (it crashed, the driver died): start afresh next time.
            log.exception("browser action %s failed", params.action)
            await self.manager.release(sid)
            return ToolResult(
                f"The browser failed ({type(exc).__name__}: {exc}); it was closed, the next "
                "navigate opens a new one.",
                is_error=True,
            )
        except BaseException:
            # Aborted: the browser goes with the turn (no page keeps loading unseen).
            with anyio.CancelScope(shield=True):
                await self.manager.release(sid)
            raise
        with contextlib.suppress(ActionError):
            title = await browser.page.title() if not browser.closed else None
            browser.status(title)
        return result

    @staticmethod
    def _with_notes(browser: BrowserSession, text: str) -> str:
        notes = browser.take_notes()
        return "\n".join([text, *notes]) if notes else text

    async def _do(self, browser: BrowserSession, p: BrowserParams, ctx: ToolContext) -> ToolResult:
        done = ""
        details: dict[str, Any] = {"action": p.action}
        match p.action:
            case "navigate":
                assert p.url is not None
                await browser.navigate(p.url, ctx.tool_call_id)
                done = f"Opened {p.url}."
            case "click":
                assert p.ref is not None
                await browser.click(p.ref)
                done = f"Clicked {p.ref}."
            case "type":
                assert p.ref is not None and p.text is not None
                await browser.type(p.ref, p.text, p.submit)
                done = f"Typed into {p.ref}" + (" and pressed Enter." if p.submit else ".")
            case "press":
                assert p.key is not None
                await browser.press(p.key)
                done = f"Pressed {p.key}."
            case "select":
                assert p.ref is not None and p.values is not None
                chosen = await browser.select(p.ref, p.values)
                done = f"Selected {', '.join(chosen) or 'nothing'} in {p.ref}."
            case "back":
                went = await browser.back()
                done = "Went back." if went else "There is no page to go back to."
            case "wait":
                waited = await browser.wait(p.text, p.timeMs)
                done = f"Waited {waited:.1f} s" + (f" for {p.text!r}." if p.text else ".")
            case "snapshot":
                text = await browser.snapshot()
                page = await browser.summary()
                return ToolResult(self._with_notes(browser, f"{page}\n\n{text}"), details=details)
            case "console":
                page = await browser.summary()
                return ToolResult(
                    self._with_notes(browser, f"{page}\nConsole:\n{browser.console()}"),
                    details=details,
                )
            case "screenshot":
                return await self._screenshot(browser, p.fullPage, details)
        page = await browser.summary()
        snapshot = await browser.snapshot() if p.action in _SHOWS_PAGE else ""
        text = self._with_notes(browser, f"{done}\n{page}")
        details["url"] = browser.page.url
        return ToolResult(f"{text}\n\n{snapshot}" if snapshot else text, details=details)

    async def _screenshot(
        self, browser: BrowserSession, full_page: bool, details: dict[str, Any]
    ) -> ToolResult:
        data, width, height = await browser.screenshot(full_page)
        page = await browser.summary()
        text = self._with_notes(
            browser,
            f"Screenshot of the page ({width}×{height}, JPEG, {len(data):,} bytes).\n{page}",
        )
        details |= {"url": browser.page.url, "width": width, "height": height, "bytes": len(data)}
        return ToolResult(
            [
                {"type": "text", "text": text},
                {
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": "image/jpeg",
                        "data": base64.b64encode(data).decode("ascii"),
                    },
                },
            ],
            details=details,
        )
