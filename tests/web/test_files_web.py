"""The files the agent changed, in Chromium: the recorded diff on Edit and Write cards,
and the rewind dialog (conversation only / conversation and files, the files and their
diffs listed, an outside change refused until "restore anyway")."""

from __future__ import annotations

import time

from playwright.sync_api import Page, expect

from tests.support.scripted_llm import Response, Text, ToolUse
from tests.web.conftest import WebEnv, open_session, shot


def test_edit_diffs_and_the_rewind_dialog(page: Page, web_env: WebEnv) -> None:
    env = web_env
    notes = env.workdir / "notes.txt"
    sid = env.new_session("Files demo")
    env.seed(sid, "Get ready", Response([Text("Ready when you are.")]))
    env.seed(
        sid,
        "Write the notes, then fix them",
        Response([ToolUse("Write", {"file_path": "notes.txt", "content": "one\ntwo\nthree\n"})]),
        Response(
            [ToolUse("Edit", {"file_path": "notes.txt", "old_string": "two", "new_string": "TWO"})]
        ),
        Response([Text("The notes are written and fixed.")]),
    )
    assert notes.read_text() == "one\nTWO\nthree\n"
    open_session(page, sid)

    # The Edit card shows the diff the server recorded: the whole file's lines, numbered.
    recorded = page.locator("[data-testid=recorded-diff-holder][data-recorded=true]")
    expect(recorded).to_have_count(2)  # the Write's and the Edit's
    edit = recorded.nth(1)
    expect(edit.get_by_test_id("diff-del")).to_have_text(["2−two"])
    expect(edit.get_by_test_id("diff-add")).to_have_text(["2+TWO"])
    expect(recorded.nth(0).get_by_test_id("diff-add")).to_have_count(3)  # a new file

    final = page.locator("[data-testid=msg-assistant]", has_text="written and fixed")
    ready = page.locator("[data-testid=msg-assistant]", has_text="Ready when you are").first
    ready_id = ready.get_attribute("data-event-id")

    # Rewind, then cancel: nothing changes.
    ready.hover()
    ready.get_by_test_id("rewind-btn").click()
    dialog = page.get_by_test_id("rewind-dialog")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_test_id("rewind-file")).to_have_count(1)
    expect(dialog.get_by_test_id("rewind-file")).to_contain_text("notes.txt")
    dialog.get_by_test_id("rewind-cancel").click()
    expect(dialog).to_have_count(0)
    expect(final).to_have_count(1)
    assert notes.read_text() == "one\nTWO\nthree\n"

    # An outside change: the dialog says so, and files are restored only when told to.
    notes.write_text("one\nTWO\nthree\nmy own line\n")
    ready.hover()
    ready.get_by_test_id("rewind-btn").click()
    expect(dialog).to_be_visible()
    expect(dialog.get_by_test_id("rewind-file-problem")).to_contain_text("changed outside")
    dialog.locator("summary").first.click()  # its diff: what the rewind would write
    expect(dialog.get_by_test_id("diff-del")).to_contain_text(["my own line"])
    shot(page, "files-rewind-dialog")
    expect(dialog.get_by_test_id("rewind-with-files")).to_be_checked()
    dialog.get_by_test_id("rewind-confirm").click()
    expect(dialog.get_by_test_id("rewind-error")).to_be_visible()
    assert notes.exists()  # nothing written
    dialog.get_by_test_id("rewind-force").check()
    dialog.get_by_test_id("rewind-confirm").click()
    expect(dialog).to_have_count(0)
    expect(final).to_have_count(0)
    page.wait_for_function("(p) => !window.tron.state.data.get(p[0]).busy", arg=[sid])
    assert not notes.exists()  # the file did not exist at that point
    with env.rpc() as client:
        session = client.call("session.get", sessionId=sid)
        head = client.call("events.list", sessionId=sid)["events"][-1]
    assert head["type"] == "file.restore" and head["parentId"] == ready_id
    assert session["headEventId"] == head["id"]
    # The outside change is kept in the record.
    [change] = head["payload"]["changes"]
    assert change["path"] == str(notes.resolve()) and head["payload"]["forced"] == [change["path"]]
    # Undo, from the toast: back to the old head, with files.
    undo = page.get_by_test_id("toast").get_by_role("button", name="Undo")
    undo.click()
    expect(final).to_have_count(1)
    page.wait_for_function("(p) => !window.tron.state.data.get(p[0]).busy", arg=[sid])
    for _ in range(400):  # the answer came after the files were written: a guard only
        if notes.exists():
            break
        time.sleep(0.05)
    assert notes.read_text() == "one\nTWO\nthree\n"  # as the agent left it
