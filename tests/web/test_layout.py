"""The web chat's layout at phone, tablet, laptop and desktop widths (Chromium).

At each width the page is measured, not only photographed: the transcript gets
the room the panels leave (never a 0-px column), the message box is on screen
and usable, the title is not cut to a few letters, nothing scrolls sideways,
and the side panels are docked or drawers that open, trap nothing behind them
and close again (Escape, the scrim, or picking something in them).
Screenshots of each state go to tests/web/artifacts/layout-*.png.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.support.scripted_llm import Response, Text, ToolUse
from tests.web.conftest import WebEnv, new_page, open_session, shot

TITLE = "Refactor the payment module"

#: width → (sidebar docked, tree docked)
LAYOUTS = {
    360: (False, False),
    390: (False, False),
    820: (False, False),
    1024: (True, False),
    1440: (True, True),
}


def box(page: Page, testid: str) -> dict[str, float]:
    b: dict[str, float] | None = page.get_by_test_id(testid).bounding_box()
    assert b is not None, f"{testid} is not rendered"
    return b


def on_screen(page: Page, testid: str) -> bool:
    """Whether the element is visible and lies inside the viewport horizontally."""
    loc = page.get_by_test_id(testid)
    if not loc.is_visible():
        return False
    b = loc.bounding_box()
    width = page.viewport_size["width"] if page.viewport_size else 0
    return b is not None and b["x"] >= -1 and b["x"] + b["width"] <= width + 1


def no_sideways_scroll(page: Page) -> None:
    overflow = page.evaluate(
        "document.scrollingElement.scrollWidth - document.scrollingElement.clientWidth"
    )
    wide = page.evaluate(
        "[...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right"
        " > innerWidth + 1 && e.getClientRects().length).slice(0, 5).map((e) => e.className ||"
        " e.tagName)"
    )
    assert overflow <= 0, f"the page scrolls sideways by {overflow}px ({wide})"


@pytest.fixture
def seeded(web_env: WebEnv) -> str:
    sid = web_env.new_session(TITLE)
    web_env.seed(
        sid,
        "List the files, then explain what you found in two short paragraphs",
        Response([Text("Let me look."), ToolUse("Bash", {"command": "ls -la"})]),
        Response([Text("There is one file, `README.md`.\n\n```python\nprint('hello')\n```")]),
    )
    return sid


@pytest.mark.parametrize("width", sorted(LAYOUTS))
def test_layout_at_width(browser: Any, web_env: WebEnv, seeded: str, width: int) -> None:
    sidebar_docked, tree_docked = LAYOUTS[width]
    page = new_page(browser, web_env, width=width, height=800)
    try:
        # No session open: the empty state's button is on screen.
        assert on_screen(page, "empty-new")
        no_sideways_scroll(page)
        open_session(page, seeded)
        expect(page.get_by_test_id("session-title")).to_have_text(TITLE)
        expect(page.get_by_test_id("tool-card")).to_have_count(1)

        # The transcript has the room the docked panels leave, and the composer is usable.
        docked = (280 if width >= 1280 else 260) * sidebar_docked + 300 * tree_docked
        transcript = box(page, "transcript")
        assert transcript["width"] >= width - docked - 2, (transcript, docked)
        assert on_screen(page, "composer-input")
        assert box(page, "composer-input")["width"] >= min(width * 0.5, 400)
        assert on_screen(page, "send-btn")
        # The title is shown whole (this one fits at every width), not cut to "T…".
        title = page.get_by_test_id("session-title")
        assert title.evaluate("el => el.scrollWidth <= el.clientWidth"), "the title is cut"
        assert on_screen(page, "model-select") and on_screen(page, "tree-toggle")
        no_sideways_scroll(page)
        assert on_screen(page, "sidebar") is sidebar_docked
        assert on_screen(page, "tree-panel") is tree_docked
        expect(page.get_by_test_id("sidebar-toggle")).to_be_visible(visible=not sidebar_docked)
        shot(page, f"layout-{width}")

        if not sidebar_docked:
            _sidebar_drawer(page, width, seeded)
        _tree(page, width, tree_docked)
        no_sideways_scroll(page)
        assert not page.page_errors  # type: ignore[attr-defined]
    finally:
        page.context.close()


def _sidebar_drawer(page: Page, width: int, sid: str) -> None:
    toggle = page.get_by_test_id("sidebar-toggle")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    # Closed, the drawer is out of the focus order; the keyboard opens it.
    assert page.evaluate("document.getElementById('sidebar').inert") is True
    toggle.focus()
    page.keyboard.press("Enter")
    expect(page.get_by_test_id("sidebar")).to_be_in_viewport()
    assert on_screen(page, "sidebar") and on_screen(page, "drawer-scrim")
    expect(toggle).to_have_attribute("aria-expanded", "true")
    # Focus moves into the drawer (its search box); the chat behind it is inert.
    expect(page.get_by_test_id("search-input")).to_be_focused()
    assert page.evaluate("document.getElementById('chat').inert") is True
    item = page.locator(f"[data-testid=session-item][data-session-id='{sid}']")
    assert on_screen(page, "sidebar") and item.is_visible()
    shot(page, f"layout-{width}-sessions")
    # Escape closes it and gives the focus back to the button.
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("drawer-scrim")).to_be_hidden()
    expect(page.get_by_test_id("sidebar")).not_to_be_in_viewport()
    expect(toggle).to_be_focused()
    # A click on the scrim closes it too; picking a session closes it and opens that session.
    toggle.click()
    expect(page.get_by_test_id("drawer-scrim")).to_be_visible()
    page.mouse.click(width - 10, 400)  # on the scrim, beside the drawer
    expect(page.get_by_test_id("drawer-scrim")).to_be_hidden()
    toggle.click()
    item.click()
    expect(page.get_by_test_id("drawer-scrim")).to_be_hidden()
    expect(page.get_by_test_id("sidebar")).not_to_be_in_viewport()
    assert page.evaluate("document.getElementById('chat').inert") is False


def _tree(page: Page, width: int, docked: bool) -> None:
    toggle = page.get_by_test_id("tree-toggle")
    before = box(page, "transcript")["width"]
    toggle.click()
    if docked:
        # Hiding the docked tree gives its column to the transcript, and back.
        expect(page.get_by_test_id("tree-panel")).to_be_hidden()
        page.wait_for_function(
            f"document.querySelector('[data-testid=transcript]').getBoundingClientRect().width"
            f" >= {before + 250}"
        )
        toggle.click()
        expect(page.get_by_test_id("tree-panel")).to_be_visible()
        return
    expect(page.get_by_test_id("tree-panel")).to_be_in_viewport()
    assert on_screen(page, "tree-panel")
    nodes = page.get_by_test_id("tree").get_by_test_id("tree-node")
    expect(nodes.first).to_be_visible()
    shot(page, f"layout-{width}-tree")
    page.get_by_test_id("tree-close").click()
    expect(page.get_by_test_id("tree-panel")).not_to_be_in_viewport()
    expect(toggle).to_be_focused()
    # Picking a node closes the drawer and shows that message in the transcript.
    toggle.click()
    nodes.last.get_by_role("button").first.click()
    expect(page.get_by_test_id("drawer-scrim")).to_be_hidden()
    highlighted = page.get_by_test_id("transcript-list").locator("[data-highlighted=true]")
    expect(highlighted).to_have_count(1)
