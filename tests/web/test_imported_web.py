"""Sessions whose folder is not on this machine (imported, or removed since), in the web
chat (Chromium): the new-session dialog never proposes such a folder, and its error
says what is wrong once."""

from __future__ import annotations

import shutil

from playwright.sync_api import Page, expect

from tests.web.conftest import WebEnv, open_session


def test_the_new_session_dialog_never_proposes_a_missing_folder(
    page: Page, web_env: WebEnv
) -> None:
    gone = web_env.workdir.parent / "imported-from-elsewhere"
    gone.mkdir()
    older = web_env.new_session("Here")
    newer = web_env.new_session("Imported", workingDirectory=str(gone))
    shutil.rmtree(gone)  # the most recent session's folder is not on this machine
    page.reload()
    expect(page.get_by_test_id("session-item")).to_have_count(2)
    dialog = page.get_by_test_id("new-session-dialog")
    cwd = page.get_by_test_id("new-session-cwd")
    for opened in (None, newer, older):
        if opened:
            open_session(page, opened)
        page.get_by_test_id("new-session-btn").click()
        expect(dialog).to_be_visible()
        # The most recent folder that exists: never the missing one.
        expect(cwd).to_have_value(str(web_env.workdir))
        page.locator("#ns-cancel").click()
        expect(dialog).to_be_hidden()

    # A missing folder typed by hand: the error says so once, not twice.
    page.get_by_test_id("new-session-btn").click()
    cwd.fill(str(gone))
    page.get_by_test_id("new-session-create").click()
    error = page.get_by_test_id("new-session-error")
    expect(error).to_be_visible()
    text = error.text_content() or ""
    assert text.count("must be an existing directory") == 1, text
    assert text == "workingDirectory: must be an existing directory", text
