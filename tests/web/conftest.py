"""Fixtures for the browser tests: a real tron-server, the scripted LLM, Chromium.

One Chromium process serves the whole run (starting it is the expensive part);
everything else is per test: a fresh scripted LLM, a fresh tron-server over a
fresh home directory and database, and a fresh browser context (its own
cookies, storage and page). So every test passes alone and in any order: a
test that needs history builds it itself (``seed``: through the RPC API, as
any client would, which is fast), and nothing a test leaves behind is seen by
another.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.scripted_llm import Response, ScriptedLLM, scripted_llm_thread
from tests.web._rpc import SyncRpc
from tests.web._server import WebServer

CHROMIUM = os.environ.get("TRON_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).parent / "artifacts"
DOCS_SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "screenshot.png"
#: Generous: the machine may be loaded; a condition that holds is seen at once anyway.
EXPECT_TIMEOUT_MS = 15_000


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
    user_home: Path
    notes: dict[str, Any] = field(default_factory=dict)

    def rpc(self) -> SyncRpc:
        """A JSON-RPC client with the current token (use it as a context manager)."""
        return SyncRpc(self.server.base_url, self.server.token)

    def new_session(self, title: str | None = None, **params: Any) -> str:
        """Create a session in ``workdir`` through the API; its id."""
        params.setdefault("workingDirectory", str(self.workdir))
        if title is not None:
            params["title"] = title
        with self.rpc() as client:
            sid: str = client.call("session.create", **params)["id"]
        return sid

    def seed(self, session_id: str, prompt: str, *responses: Response) -> None:
        """Run one user message to completion with ``responses`` (the history a test needs)."""
        self.llm.add(*responses)
        with self.rpc() as client:
            client.call("events.subscribe", sessionId=session_id)
            client.call("agent.message", sessionId=session_id, content=prompt)
            client.wait_for("agent.complete", timeout=30)


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    """One Chromium for the web tests; tests get their own contexts (no shared page state).
    Package-scoped: Playwright's sync API keeps an event loop running in the main thread
    while it is started, so it must stop before the tests after these (asyncio.run)."""
    _skip_unless_chromium()
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    pw = sync_playwright().start()
    try:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield b
        finally:
            b.close()
    finally:
        pw.stop()


@pytest.fixture
def web_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[WebEnv]:
    """A fresh scripted LLM and tron-server (own home, own SQLite database) for one test."""
    _skip_unless_chromium()
    workdir = tmp_path / "project"
    workdir.mkdir()
    (workdir / "README.md").write_text("# demo project\n")
    user_home = tmp_path / "user-home"
    user_home.mkdir()
    # The Anthropic adapter wants a key; the scripted LLM ignores it. The other
    # providers have none: the model picker must say so.
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    for var in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(user_home))
    with scripted_llm_thread() as llm:
        server = WebServer(tmp_path / "tron-home", llm.base_url)
        server.start()
        try:
            yield WebEnv(server=server, llm=llm, workdir=workdir, user_home=user_home)
        finally:
            server.stop()


def new_page(browser: Any, env: WebEnv, *, width: int = 1440, height: int = 900) -> Any:
    """A new browser context and page, logged in through the login URL and connected."""
    from playwright.sync_api import expect

    # Reduced motion: drawers open without a transition, so a measurement never sees one half-way.
    context = browser.new_context(
        viewport={"width": width, "height": height}, color_scheme="light", reduced_motion="reduce"
    )
    p = context.new_page()
    p.page_errors = []  # type: ignore[attr-defined]
    p.on("pageerror", lambda exc: p.page_errors.append(str(exc)))  # type: ignore[attr-defined]
    p.goto(env.server.login_url)
    expect(p.get_by_test_id("conn-status")).to_have_attribute("data-state", "connected")
    return p


@pytest.fixture
def page(browser: Any, web_env: WebEnv) -> Iterator[Any]:
    """A page of its own (fresh context) logged in through the login URL, connected."""
    p = new_page(browser, web_env)
    try:
        yield p
        assert not p.page_errors, f"uncaught errors in the page: {p.page_errors}"
    finally:
        p.context.close()


def open_session(page: Any, session_id: str) -> None:
    """Show ``session_id`` in ``page`` (as following a #s= link does) and wait for it."""
    from playwright.sync_api import expect

    page.evaluate(f"location.hash = '#s={session_id}'")
    page.wait_for_function(
        "(id) => { const s = window.tron.state; const sd = s.data.get(id);"
        " return s.currentId === id && sd && sd.loaded && s.subscribedId === id; }",
        arg=session_id,
    )
    expect(page.get_by_test_id("conn-status")).to_have_attribute("data-synced", "true")


def shot(page: Any, name: str) -> Path:
    """Save a screenshot of the main states as a test artifact."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path
