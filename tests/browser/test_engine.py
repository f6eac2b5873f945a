"""What needs no Chromium: the clear errors when the browser cannot start (the extra is
missing, Chromium is missing), and frames that skip a client already behind."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tron_server.browser import BrowserManager, BrowserUnavailable, Engine
from tron_server.connection import Connection
from tron_server.hub import LOSSY_PENDING_BYTES, Hub
from tron_server.tools.base import ToolContext, ToolRegistry
from tron_server.tools.browser import Browser

pytestmark = pytest.mark.anyio


async def test_without_playwright_the_error_names_the_extra_and_the_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "playwright.async_api", None)  # import fails
    with pytest.raises(BrowserUnavailable) as caught:
        await Engine().new_context()
    message = str(caught.value)
    assert "tron-server[browser]" in message and "`playwright`" in message


async def test_without_chromium_the_tool_says_what_to_install(tmp_path: Path) -> None:
    manager = BrowserManager(chromium=str(tmp_path / "no-chromium"))
    registry = ToolRegistry([Browser(manager)])
    ctx = ToolContext("sess_x", tmp_path, "toolu_1")
    result = await registry.execute(
        "Browser", {"action": "navigate", "url": "https://example.com/"}, ctx
    )
    assert result.is_error
    assert f"Chromium was not found at {tmp_path / 'no-chromium'}" in str(result.content)
    assert "apt-get install chromium" in str(result.content) and "TRON_CHROMIUM_PATH" in str(
        result.content
    )
    assert not manager.engine.running and manager.get("sess_x") is None


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"action": "click"}, "click needs ref"),
        ({"action": "type", "ref": "e1"}, "type needs text"),
        ({"action": "select", "ref": "e1"}, "select needs values"),
        ({"action": "wait"}, "wait needs text (to wait for) or timeMs"),
        ({"action": "navigate"}, "navigate needs url"),
        ({"action": "fly"}, "action"),
    ],
)
async def test_each_action_says_what_it_needs(
    arguments: dict[str, Any], message: str, tmp_path: Path
) -> None:
    registry = ToolRegistry([Browser(BrowserManager())])
    result = await registry.execute("Browser", arguments, ToolContext("s", tmp_path, "t"))
    assert result.is_error and message in str(result.content)


async def test_actions_before_navigate_and_close_need_no_browser(tmp_path: Path) -> None:
    manager = BrowserManager(chromium=str(tmp_path / "none"))
    registry = ToolRegistry([Browser(manager)])
    ctx = ToolContext("s", tmp_path, "t")
    snap = await registry.execute("Browser", {"action": "snapshot"}, ctx)
    assert snap.is_error and "start with navigate" in str(snap.content)
    closed = await registry.execute("Browser", {"action": "close"}, ctx)
    assert not closed.is_error and "was not open" in str(closed.content)


async def test_frames_skip_a_connection_that_is_behind() -> None:
    sent: list[str] = []

    async def send(frame: str) -> None:  # never called: no writer runs in this test
        sent.append(frame)

    async def close(code: int, reason: str) -> None:
        pass

    hub = Hub()
    fast = Connection(send, close, queue_limit=1000)
    slow = Connection(send, close, queue_limit=1000)
    for conn in (fast, slow):
        hub.attach(conn)
        await hub.subscribe(conn, "sess_1")
    slow.enqueue("x" * (LOSSY_PENDING_BYTES + 1))  # a client far behind
    frame = {"data": "/9j/" + "A" * 1000, "width": 1, "height": 1, "url": "u", "seq": 1}
    assert hub.publish("sess_1", "browser.frame", frame, lossy=True) == 1
    assert fast.queued == 1 and slow.queued == 1 and not slow.closing
    # Other notifications still reach it.
    assert hub.publish("sess_1", "browser.status", {"open": True}) == 2
