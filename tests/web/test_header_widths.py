"""The chat header's text is measured, not only photographed (Chromium): at a phone's
390 px the model picker shows its model's whole name (it was cut to "Claude Son"), and
at a desktop's 1440 px a long header (a long title, a deep folder, a long usage line)
leaves the working directory readable (it was cut to "/…")."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page

from tests.support.scripted_llm import Response, Text, ToolUse, Usage
from tests.web.conftest import WebEnv, new_page, open_session, shot

LONG_TITLE = "Refactor the payment module so that refunds and chargebacks share one ledger"

#: The selected option's text width, and the room the select gives it (its content box
#: less the drop-down arrow, ~20 px in Chromium).
SELECT_ROOM = """(el) => {
  const cs = getComputedStyle(el);
  const ctx = document.createElement('canvas').getContext('2d');
  ctx.font = cs.font;
  const text = el.options[el.selectedIndex].text;
  const room = el.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) - 20;
  return {text, needed: ctx.measureText(text).width, room};
}"""


@pytest.fixture
def long_header(web_env: WebEnv) -> str:
    deep = web_env.workdir / "services" / "payments-gateway" / "src" / "integration-tests"
    deep.mkdir(parents=True)
    sid = web_env.new_session(LONG_TITLE, workingDirectory=str(deep))
    # Large, below the context window (no compaction): a long usage line.
    big = Usage(input_tokens=20_000, output_tokens=45_678, cache_read_input_tokens=30_000)
    web_env.seed(
        sid,
        "Look around",
        Response([ToolUse("Bash", {"command": "true"})], usage=big),
        Response([Text("Done.")], usage=big),
    )
    return sid


def _header(page: Page) -> dict[str, Any]:
    result: dict[str, Any] = page.evaluate(
        """() => {
      const cwd = document.querySelector('[data-testid=session-cwd]');
      const ctx = document.createElement('canvas').getContext('2d');
      ctx.font = getComputedStyle(cwd).font;
      return {cwdShown: cwd.clientWidth, cwdWhole: cwd.scrollWidth,
              ch: ctx.measureText('0').width,
              usage: document.querySelector('[data-testid=session-usage]').textContent};
    }"""
    )
    return result


@pytest.mark.parametrize("width", [390, 1440])
def test_the_header_cuts_neither_the_model_nor_the_folder(
    browser: Any, web_env: WebEnv, long_header: str, width: int
) -> None:
    page = new_page(browser, web_env, width=width, height=800)
    try:
        open_session(page, long_header)
        page.wait_for_function(
            "document.querySelector('[data-testid=session-usage]').textContent.includes('cache')"
        )
        shot(page, f"header-{width}")
        model = page.get_by_test_id("model-select").evaluate(SELECT_ROOM)
        assert model["text"].startswith("Claude"), model
        assert model["room"] + 1 >= model["needed"], f"the model's name is cut: {model}"
        header = _header(page)
        # The folder shows whole, or at least 24 characters of it (not "/…").
        assert header["cwdShown"] >= min(header["cwdWhole"], 24 * header["ch"]), header
        assert not page.page_errors  # type: ignore[attr-defined]
    finally:
        page.context.close()
