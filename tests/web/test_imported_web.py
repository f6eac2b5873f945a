"""Sessions whose folder is not on this machine (imported, or removed since), in the web
chat (Chromium): opening one warns and offers a folder to continue in (session.resume),
the new-session dialog never proposes such a folder, and errors say what is wrong once."""

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


def test_a_session_whose_folder_is_missing_offers_to_continue_elsewhere(
    page: Page, web_env: WebEnv
) -> None:
    gone = web_env.workdir.parent / "on-another-machine"
    gone.mkdir()
    web_env.new_session("Here")  # the most recent folder that exists: proposed
    sid = web_env.new_session("Imported", workingDirectory=str(gone))
    shutil.rmtree(gone)
    page.reload()
    open_session(page, sid)
    notice = page.get_by_test_id("folder-missing")
    expect(notice).to_be_visible()
    expect(notice).to_contain_text(str(gone))
    expect(notice).to_contain_text("not a folder on this machine")
    field = page.get_by_test_id("folder-missing-input")
    expect(field).to_have_value(str(web_env.workdir))
    # A folder that does not exist either: refused, said once.
    field.fill(str(gone))
    page.get_by_test_id("folder-missing-continue").click()
    error = page.get_by_test_id("folder-missing-error")
    expect(error).to_have_text("workingDirectory: must be an existing directory")
    field.fill(str(web_env.workdir))
    page.get_by_test_id("folder-missing-continue").click()
    expect(notice).to_be_hidden()
    expect(page.get_by_test_id("session-cwd")).to_have_text(str(web_env.workdir))
    moved = page.get_by_test_id("sys-folder-change")
    expect(moved).to_contain_text(f"Continued in {web_env.workdir} (was {gone})")
    with web_env.rpc() as client:
        session = client.call("session.get", sessionId=sid)
    assert session["workingDirectory"] == str(web_env.workdir)
    assert session["workingDirectoryExists"] is True
    # A session whose folder is here shows no notice.
    expect(page.get_by_test_id("folder-missing")).to_be_hidden()
