"""The agent's browser in the web chat (Chromium watching Chromium): the panel shows the
live frames the server streams with the URL and the last action, the screenshot the model
saw is on its tool card, and the panel says when the browser closed."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.browser.site import Site
from tests.support.scripted_llm import Response, Text, ToolUse
from tests.web.conftest import WebEnv, open_session, shot


@pytest.fixture
def site() -> Iterator[Site]:
    with Site() as s:
        yield s


def test_the_browser_panel_shows_the_agents_browser_live(
    page: Page, web_env: WebEnv, site: Site
) -> None:
    env = web_env
    (env.server.home / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["Browser(domain:127.0.0.1)"]}})
    )
    sid = env.new_session("Browse")
    open_session(page, sid)
    panel = page.get_by_test_id("browser-panel")
    expect(panel).to_be_hidden()  # no browser yet
    env.seed(
        sid,
        "look at the list",
        Response([ToolUse("Browser", {"action": "navigate", "url": f"{site.base}/js-list"})]),
        Response([ToolUse("Browser", {"action": "wait", "text": "item three"})]),
        Response([ToolUse("Browser", {"action": "screenshot"})]),
        Response([Text("The list has three items.")]),
    )
    expect(panel).to_be_visible()
    expect(panel).to_have_attribute("data-state", "open")
    expect(page.get_by_test_id("browser-url")).to_have_text(f"{site.base}/js-list")
    expect(page.get_by_test_id("browser-action")).to_have_text("· screenshot")
    frame = page.get_by_test_id("browser-frame")
    expect(frame).to_be_visible()
    expect(frame).to_have_attribute("src", re.compile(r"^data:image/jpeg;base64,/9j/"))
    # The frame is a real picture the page could decode.
    assert page.evaluate(
        "() => { const i = document.querySelector('[data-testid=browser-frame]');"
        " return i.complete && i.naturalWidth > 0; }"
    )
    # The screenshot the model saw is on the Screenshot card.
    shot_img = page.get_by_test_id("tool-image")
    expect(shot_img).to_have_count(1)
    assert (shot_img.get_attribute("src") or "").startswith("data:image/jpeg;base64,/9j/")
    shot(page, "browser-panel")
    # Folded to its bar, then the browser closes (an abort): the panel says so.
    page.get_by_test_id("browser-toggle").click()
    expect(frame).to_be_hidden()
    with env.rpc() as client:
        client.call("agent.abort", sessionId=sid)
    expect(panel).to_have_attribute("data-state", "closed")
    expect(page.get_by_test_id("browser-state")).to_have_text("closed")
