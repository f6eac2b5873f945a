"""Fixtures for the browser tests: a real tron-server, the scripted LLM, Chromium.

Everything is module-scoped (one server, one browser, one logged-in page) so the
whole web suite stays well under a minute and a half; the tests of a module run
in order and build on each other's sessions.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.server.scripted_llm import ScriptedLLM, scripted_llm_thread
from tests.web._server import WebServer

CHROMIUM = os.environ.get("TRON_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).parent / "artifacts"
DOCS_SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "screenshot.png"


def chromium_missing() -> str | None:
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        return (
            f"Chromium not found at {CHROMIUM} (install Debian's `chromium` package, "
            "as .ci/run does, or set TRON_CHROMIUM)"
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright (Python) is not installed"
    return None


def _skip_unless_chromium() -> None:
    reason = chromium_missing()
    if reason is None:
        return
    if os.environ.get("TRON_REQUIRE_CHROMIUM"):  # CI: a missing browser is a failure
        pytest.fail(f"TRON_REQUIRE_CHROMIUM is set but {reason}", pytrace=False)
    pytest.skip(reason)


@dataclass
class WebEnv:
    """The server under test, its scripted LLM and a project directory for sessions."""

    server: WebServer
    llm: ScriptedLLM
    workdir: Path
    notes: dict[str, Any] = field(default_factory=dict)  # shared between the ordered tests


@pytest.fixture(scope="module")
def web_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebEnv]:
    _skip_unless_chromium()
    root = tmp_path_factory.mktemp("web")
    workdir = root / "project"
    workdir.mkdir()
    (workdir / "README.md").write_text("# demo project\n")
    with pytest.MonkeyPatch.context() as mp:
        # The Anthropic adapter wants a key; the scripted LLM ignores it.
        mp.setenv("ANTHROPIC_API_KEY", "test-key")
        with scripted_llm_thread() as llm:
            server = WebServer(root / "tron-home", llm.base_url)
            server.start()
            try:
                yield WebEnv(server=server, llm=llm, workdir=workdir)
            finally:
                server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    _skip_unless_chromium()
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    try:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield b
        finally:
            b.close()
    finally:
        pw.stop()


@pytest.fixture(scope="module")
def page(browser: Any, web_env: WebEnv) -> Iterator[Any]:
    """A page logged in through the one-time login URL, connected."""
    from playwright.sync_api import expect

    expect.set_options(timeout=10_000)
    context = browser.new_context(viewport={"width": 1440, "height": 900}, color_scheme="light")
    p = context.new_page()
    errors: list[str] = []
    p.on("pageerror", lambda exc: errors.append(str(exc)))
    p.goto(web_env.server.login_url)
    expect(p.get_by_test_id("conn-status")).to_have_attribute("data-state", "connected")
    yield p
    context.close()
    assert not errors, f"uncaught errors in the page: {errors}"


def shot(page: Any, name: str) -> Path:
    """Save a screenshot of the main states as a test artifact."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path
