"""Issue 27 in Chromium (a real tron-server and the scripted LLM): "Allow always" on a
Write covers later Writes; Rewind on a message of yours goes to just before it and puts
it in the composer; an approval shows the diff the call makes to the file on disk.
Each failed on the code before."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from tests.support.scripted_llm import Response, Text, ToolUse
from tests.web._rpc import SyncRpc
from tests.web.conftest import WebEnv, shot


def _session(env: WebEnv, title: str, mode: str | None = None) -> str:
    with SyncRpc(env.server.base_url, env.server.token) as rpc:
        sid: str = rpc.call("session.create", workingDirectory=str(env.workdir), title=title)["id"]
        if mode is not None:
            rpc.call("session.setMode", sessionId=sid, mode=mode)
    return sid


def _open(page: Page, sid: str, title: str) -> None:
    page.evaluate(f"location.hash = '#s={sid}'")
    expect(page.get_by_test_id("session-title")).to_have_text(title)


def _send(page: Page, text: str) -> None:
    box = page.get_by_test_id("composer-input")
    box.fill(text)
    box.press("Enter")


def _assistant(page: Page, text: str) -> Any:
    return page.get_by_test_id("transcript-list").locator(
        "[data-testid=msg-assistant]", has_text=text
    )


def _user_texts(request: dict[str, Any]) -> list[str]:
    out = []
    for message in request["messages"]:
        if message["role"] != "user":
            continue
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        out += [b["text"] for b in blocks if b.get("type") == "text"]
    return out


def test_allow_always_on_a_write_covers_the_next_write(page: Page, web_env: WebEnv) -> None:
    env = web_env
    sid = _session(env, "Always", mode="default")
    env.llm.add(
        Response([ToolUse("Write", {"file_path": "a.txt", "content": "A\n"})]),
        Response([Text("first written")]),
        Response([ToolUse("Write", {"file_path": "b.txt", "content": "B\n"})]),
        Response([Text("second written")]),
    )
    _open(page, sid, "Always")
    _send(page, "write a")
    prompt = page.get_by_test_id("request-prompt")
    always = prompt.get_by_test_id("approve-always-btn")
    expect(always).to_contain_text("Allow always: Edit")
    label = always.text_content()
    always.click()
    expect(_assistant(page, "first written")).to_have_count(1)
    _send(page, "write b")
    # The rule covers this Write: no approval is asked (the old "Edit" asked again).
    expect(_assistant(page, "second written")).to_have_count(1)
    expect(prompt).to_be_hidden()
    assert (env.workdir / "b.txt").read_text() == "B\n"
    assert label == "Allow always: Edit (every file edit)"  # it says what it covers


def test_rewind_on_a_message_of_yours_puts_it_in_the_composer(page: Page, web_env: WebEnv) -> None:
    env = web_env
    sid = _session(env, "Rewind")
    env.seed(sid, "BASHME now", Response([Text("answer one")]))
    env.seed(sid, "LONGME narrow", Response([Text("answer two")]))
    _open(page, sid, "Rewind")
    expect(_assistant(page, "answer two")).to_have_count(1)
    mine = page.get_by_test_id("transcript-list").locator(
        "[data-testid=msg-user]", has_text="LONGME narrow"
    )
    mine.hover()
    mine.get_by_test_id("rewind-btn").click()
    box = page.get_by_test_id("composer-input")
    expect(box).to_have_value("LONGME narrow")
    expect(mine).to_have_count(0)  # before it: the message is off the path
    expect(_assistant(page, "answer two")).to_have_count(0)
    expect(_assistant(page, "answer one")).to_have_count(1)
    env.llm.add(Response([Text("answer to the edit")]))
    box.press("End")
    box.type(" please")
    box.press("Enter")
    expect(_assistant(page, "answer to the edit")).to_have_count(1)
    assert _user_texts(env.llm.requests[-1]) == ["BASHME now", "LONGME narrow please"]


def test_an_approval_shows_the_diff_against_the_file_on_disk(page: Page, web_env: WebEnv) -> None:
    env = web_env
    (env.workdir / "notes.txt").write_text("keep this\nold line\n")
    sid = _session(env, "Diff", mode="default")
    env.llm.add(
        Response(
            [
                Text("I will overwrite the notes."),
                ToolUse("Write", {"file_path": "notes.txt", "content": "keep this\nnew line\n"}),
            ]
        ),
        Response([Text("overwritten")]),
    )
    _open(page, sid, "Diff")
    _send(page, "overwrite")
    prompt = page.get_by_test_id("request-prompt")
    body = prompt.get_by_test_id("approval-input")
    diff = body.get_by_test_id("diff")
    # An overwrite of one line is +1 −1 against the disk (not +2 −0: "all new").
    expect(diff).to_have_attribute("data-added", "1")
    expect(diff).to_have_attribute("data-removed", "1")
    expect(diff.get_by_test_id("diff-del")).to_contain_text(["old line"])
    expect(diff.get_by_test_id("diff-add")).to_contain_text(["new line"])
    expect(body).not_to_contain_text('"file_path"')
    expect(_assistant(page, "I will overwrite the notes.")).to_be_visible()
    shot(page, "approval-diff")
    page.keyboard.press("Enter")
    expect(_assistant(page, "overwritten")).to_have_count(1)
    assert (env.workdir / "notes.txt").read_text() == "keep this\nnew line\n"
