"""The web chat's new-session dialog asks before opening an untrusted folder that defines
configuration, listing what it defines; the answer is recorded (trust.set) or not, and
a trusted folder (or one defining nothing) is not asked about (issue 26 item 1)."""

from __future__ import annotations

import json
from typing import Any

from playwright.sync_api import Page, expect

from tests.trust.hostile import make_hostile
from tests.web.conftest import WebEnv, shot


def create_in(page: Page, folder: str) -> None:
    page.get_by_test_id("new-session-btn").click()
    expect(page.get_by_test_id("new-session-dialog")).to_be_visible()
    page.get_by_test_id("new-session-cwd").fill(folder)
    page.get_by_test_id("new-session-create").click()


def sessions_in(env: WebEnv, folder: str) -> list[dict[str, Any]]:
    with env.rpc() as client:
        found: list[dict[str, Any]] = client.call("session.list", workingDirectory=folder)[
            "sessions"
        ]
    return found


def test_the_new_session_dialog_asks_about_an_untrusted_folder(page: Page, web_env: WebEnv) -> None:
    env = web_env
    hostile = make_hostile(env.workdir.parent / "cloned")
    folder = str(hostile.root)

    # A folder that defines nothing: no question.
    create_in(page, str(env.workdir))
    expect(page.get_by_test_id("new-session-dialog")).to_be_hidden()

    # The hostile one: the dialog asks, lists what it defines, and creates nothing yet.
    create_in(page, folder)
    ask = page.get_by_test_id("new-session-trust")
    expect(ask).to_be_visible()
    expect(ask).to_contain_text(folder)
    items = page.get_by_test_id("new-session-trust-items").locator("li")
    expect(items).to_have_text([
        "18 hooks (commands run on events)",
        "3 allow rules",
        "defaultMode bypassPermissions",
        "1 command that runs shell (!`…`)",
        "2 agent definitions",
        "1 MCP server",
    ])  # fmt: skip
    expect(page.get_by_test_id("new-session-create")).to_be_hidden()
    expect(page.get_by_test_id("new-session-trust-no")).to_be_focused()
    shot(page, "trust-question")
    assert sessions_in(env, folder) == []

    # "Continue without its settings": created, untrusted, nothing recorded.
    page.get_by_test_id("new-session-trust-no").click()
    expect(page.get_by_test_id("new-session-dialog")).to_be_hidden()
    assert len(sessions_in(env, folder)) == 1
    with env.rpc() as client:
        assert client.call("trust.get", path=folder)["trusted"] is False
    trust_file = env.server.home / "trust.json"
    assert not trust_file.exists() or folder not in trust_file.read_text()

    # Asked again next time (the folder is still untrusted); editing the folder hides
    # the question; this time the answer is "Trust this folder".
    create_in(page, folder)
    expect(ask).to_be_visible()
    page.get_by_test_id("new-session-cwd").fill(folder + "/")
    expect(ask).to_be_hidden()
    page.get_by_test_id("new-session-cwd").fill(folder)
    page.get_by_test_id("new-session-create").click()
    expect(ask).to_be_visible()
    page.get_by_test_id("new-session-trust-yes").click()
    expect(page.get_by_test_id("new-session-dialog")).to_be_hidden()
    assert len(sessions_in(env, folder)) == 2
    assert json.loads(trust_file.read_text())["folders"][folder]["trusted"] is True

    # Trusted now: no question.
    create_in(page, folder)
    expect(page.get_by_test_id("new-session-dialog")).to_be_hidden()
    assert len(sessions_in(env, folder)) == 3
