"""Fixtures for the browser and WebFetch tests: the local site, and a real tron-server
whose model is the scripted LLM and whose home settings allow the site's host.

The server runs the real Browser tool: Playwright driving Debian's Chromium. Chromium
is heavy on a small machine, so the tests that need it are few, and each starts the
browser only through the tool (one Chromium per server at a time, stopped with the last
session's context). Without Chromium or Playwright they skip, saying why; with
``TRON_REQUIRE_CHROMIUM=1`` (CI) that is a failure, as in ``tests/web``.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.site import Site
from tests.support.scripted_llm import ScriptedLLM
from tests.support.server import RunningServer

CHROMIUM = os.environ.get("TRON_CHROMIUM", "/usr/bin/chromium")


def chromium_missing() -> str | None:
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        return (
            f"Chromium not found at {CHROMIUM} (install Debian's `chromium` package, "
            "as .ci/run does, or set TRON_CHROMIUM)"
        )
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        return "playwright (Python) is not installed (the tron-server[browser] extra)"
    return None


def need_chromium() -> None:
    """Skip (fail under TRON_REQUIRE_CHROMIUM) without Chromium or Playwright."""
    reason = chromium_missing()
    if reason is None:
        return
    if os.environ.get("TRON_REQUIRE_CHROMIUM"):
        pytest.fail(f"TRON_REQUIRE_CHROMIUM is set but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture
def site() -> Iterator[Site]:
    with Site() as s:
        yield s


def write_rules(home: Path, **rules: list[str]) -> None:
    """``<home>/settings.json`` with these permission rules (allow=[…], deny=[…])."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "settings.json").write_text(json.dumps({"permissions": rules}))


@pytest.fixture
def make_server(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Any]:
    """``make_server(llm, allow=[…], deny=[…], **settings)``: a tron-server (own temp home,
    SQLite) whose Anthropic provider is ``llm``; stopped at the end."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    servers: list[RunningServer] = []

    def make(llm: ScriptedLLM, *, allow: list[str] = (), deny: list[str] = (),  # type: ignore[assignment]
             **overrides: Any) -> RunningServer:  # fmt: skip
        home = Path(tmp_path_factory.mktemp("tron-home"))
        write_rules(home, allow=list(allow), deny=list(deny))
        overrides.setdefault("chromium_path", CHROMIUM)
        server = RunningServer(home, anthropic_base_url=llm.base_url, **overrides).start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


def browser_engine(server: RunningServer) -> Any:
    """The server's Chromium engine (tron_server.browser.Engine)."""
    tools = server.services.tools
    assert tools is not None
    tool = tools.get("Browser")
    assert tool is not None
    return tool.manager.engine  # type: ignore[attr-defined]
