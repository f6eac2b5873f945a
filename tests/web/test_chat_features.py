"""The chat next to Claude Code and opencode (issue 17.11), in Chromium against a real
tron-server and the scripted LLM: tool cards read as what they do (the command, the
path and a diff), a provider error shown once with Retry and Edit-and-resend, titles
from the first prompt and forks titled apart, search grouped per session with one
hit per tool call, providers without a key marked, a sensible working directory for
new sessions, and code blocks that copy exactly their code."""

from __future__ import annotations

import os
from typing import Any

from playwright.sync_api import Page, expect

from tests.support.scripted_llm import Response, Text, ToolUse, error_response
from tests.web._rpc import path_events
from tests.web.conftest import DOCS_SCREENSHOT, WebEnv, new_page, open_session, shot


def transcript(page: Page) -> Any:
    return page.get_by_test_id("transcript-list")


def send(page: Page, text: str) -> None:
    box = page.get_by_test_id("composer-input")
    box.fill(text)
    box.press("Enter")


def wait_idle(page: Page) -> None:
    expect(page.get_by_test_id("abort-btn")).to_be_hidden()
    expect(page.get_by_test_id("working")).to_be_hidden()


def test_tool_cards_show_the_command_the_path_and_a_diff(page: Page, web_env: WebEnv) -> None:
    env = web_env
    source = env.workdir / "app.py"
    source.write_text("def greet():\n    return 'hi'\n\nprint(greet())\n")
    new_file = env.workdir / "notes.md"
    sid = env.new_session("Friendlier greeting")
    # A first attempt, rewound: the tree has a branch.
    env.seed(sid, "Make the greeting friendlier", Response([Text("Which file is it in?")]))
    with env.rpc() as client:
        root = client.call("session.get", sessionId=sid)["rootEventId"]
        client.call("session.rewind", sessionId=sid, eventId=root)
    env.seed(
        sid,
        "Change the greeting and write notes",
        Response([Text("Checking."),
                  ToolUse("Bash", {"command": "grep -n greet app.py", "description": "Find it"})]),
        Response([ToolUse("Edit", {"file_path": str(source), "old_string": "    return 'hi'",
                                   "new_string": "    return 'hello'\n    # friendlier"})]),
        Response([ToolUse("Write", {"file_path": str(new_file),
                                    "content": "# Notes\n\n- greeting changed\n"})]),
        Response([ToolUse("Read", {"file_path": str(source), "offset": 1, "limit": 2})]),
        Response([Text("Done: `app.py` greets with hello.\n\n| File | Change |\n|---|---|\n"
                       "| `app.py` | greeting |\n| `notes.md` | new |")]),
    )  # fmt: skip
    assert "hello" in source.read_text()
    # The test server runs in bypassPermissions; the picture shows what a user starts with.
    with env.rpc() as client:
        client.call("session.setMode", sessionId=sid, mode="default")
    open_session(page, sid)
    cards = page.get_by_test_id("tool-card")
    expect(cards).to_have_count(4)

    bash = cards.nth(0)
    expect(bash.get_by_test_id("tool-command")).to_have_text("$ grep -n greet app.py")
    expect(bash.get_by_test_id("tool-args")).to_contain_text("Find it")
    # Highlighted: the command name is a token of its own.
    expect(bash.get_by_test_id("tool-command").locator(".tok-fn")).to_have_text("grep")

    edit = cards.nth(1)
    # Paths inside the working directory read relative to it.
    expect(edit.get_by_test_id("tool-summary")).to_have_text("app.py")
    expect(edit.get_by_test_id("diff-path")).to_have_text("app.py")
    expect(edit.get_by_test_id("diff-del")).to_have_count(1)
    expect(edit.get_by_test_id("diff-del")).to_contain_text("return 'hi'")
    expect(edit.get_by_test_id("diff-add")).to_have_count(2)
    expect(edit.get_by_test_id("diff-add").first).to_contain_text("return 'hello'")
    expect(edit.get_by_test_id("diff")).to_have_attribute("data-added", "2")
    expect(edit.get_by_test_id("diff")).to_have_attribute("data-removed", "1")
    # Numbered as in the file (line 2), from the numbered snippet the result carries.
    expect(edit.get_by_test_id("diff-del").locator(".diff-no").first).to_have_text("2")
    expect(edit.get_by_test_id("diff-add").nth(1).locator(".diff-no").nth(1)).to_have_text("3")

    write = cards.nth(2)
    expect(write.get_by_test_id("diff-path")).to_have_text("notes.md")
    expect(write.get_by_test_id("diff-add")).to_have_count(3)
    expect(write.get_by_test_id("diff-del")).to_have_count(0)

    read = cards.nth(3)
    expect(read.get_by_test_id("tool-path")).to_have_text("app.py")
    expect(read.get_by_test_id("tool-path")).to_have_attribute("title", str(source))
    tree_nodes = page.get_by_test_id("tree").get_by_test_id("tree-node")
    expect(tree_nodes.filter(has_text="[Edit app.py]")).to_have_count(1)
    expect(read.get_by_test_id("tool-args")).to_contain_text("lines 1–2")

    # No raw JSON in the cards' arguments; it is one click away.
    for i in range(4):
        assert '{"' not in (cards.nth(i).get_by_test_id("tool-args").text_content() or "")
    raw = edit.get_by_test_id("tool-args-raw")
    expect(raw).to_be_hidden()
    edit.get_by_text("Raw arguments").click()
    expect(raw).to_contain_text('"old_string"')
    edit.scroll_into_view_if_needed()
    shot(page, "tool-cards")
    edit.get_by_text("Raw arguments").click()
    expect(raw).to_be_hidden()

    # The picture for the README: the prompt, the command and the diff, the tree's branch.
    expect(page.get_by_test_id("tree").locator("[data-on-path=false]")).to_have_count(2)
    expect(transcript(page).locator("table")).to_have_count(1)
    for i in (0, 2, 3):  # fold the cards whose results say little
        cards.nth(i).locator(".tool-head").click()
    page.get_by_test_id("transcript").evaluate("el => el.scrollTop = 0")
    page.mouse.move(0, 0)
    page.wait_for_timeout(300)  # the hover actions fade out
    path = shot(page, "readme")
    if os.environ.get("TRON_UPDATE_SCREENSHOT"):
        DOCS_SCREENSHOT.write_bytes(path.read_bytes())


def test_a_provider_error_is_shown_once_with_retry_and_edit(page: Page, web_env: WebEnv) -> None:
    env = web_env
    sid = env.new_session("Flaky provider")
    env.seed(sid, "Hello there", Response([Text("Hi! How can I help?")]))
    open_session(page, sid)
    failure = "prompt is too long for this model"
    env.llm.add(error_response(400, "invalid_request_error", failure))
    send(page, "Summarize the whole repository")
    card = page.get_by_test_id("error-card")
    expect(card).to_have_count(1)
    expect(card.get_by_test_id("error-message")).to_have_text(failure)
    wait_idle(page)
    # Once: not again as a line, a live error or a toast.
    page.wait_for_timeout(300)  # a notification that would add a second copy has arrived
    assert page.locator("#app, #toasts").get_by_text(failure).count() == 1
    expect(page.get_by_test_id("live-error")).to_be_hidden()
    expect(card).to_have_attribute("data-actionable", "true")
    # Screen readers hear it once too (the transcript is not a live region).
    expect(page.get_by_test_id("announcer")).to_have_text(f"The turn failed: {failure}")
    shot(page, "provider-error")

    # Retry: the same prompt again, from before the failed one; the failure stays in the tree.
    env.llm.add(Response([Text("The repository has one README.")]))
    card.get_by_test_id("retry-btn").click()
    expect(
        transcript(page).locator("[data-testid=msg-assistant]", has_text="one README")
    ).to_be_visible()
    wait_idle(page)
    expect(page.get_by_test_id("announcer")).to_have_text("The agent finished.")
    expect(page.get_by_test_id("error-card")).to_have_count(0)
    prompts = transcript(page).get_by_test_id("user-text")
    expect(prompts).to_have_text(["Hello there", "Summarize the whole repository"])
    assert env.llm.requests[-1]["messages"][-1]["content"][0]["text"] == (
        "Summarize the whole repository"
    )
    off = page.get_by_test_id("tree").locator("[data-testid=tree-node][data-on-path=false]")
    expect(off).to_have_count(1)  # the failed attempt
    expect(off).to_contain_text("Summarize the whole repository")

    # Edit and resend: back to before the failed prompt, its text in the composer.
    env.llm.add(error_response(400, "invalid_request_error", failure))
    send(page, "Now list every file with its size")
    expect(page.get_by_test_id("error-card")).to_have_count(1)
    wait_idle(page)
    page.get_by_test_id("edit-resend-btn").click()
    composer = page.get_by_test_id("composer-input")
    expect(composer).to_have_value("Now list every file with its size")
    expect(composer).to_be_focused()
    expect(page.get_by_test_id("error-card")).to_have_count(0)
    expect(prompts).to_have_text(["Hello there", "Summarize the whole repository"])
    with env.rpc() as client:
        head = path_events(client.call("session.getTree", sessionId=sid))[-1]
    assert head["type"] == "stream.turn_end"  # the end of the retried exchange
    env.llm.add(Response([Text("Only README.md, 16 bytes.")]))
    composer.fill("List every file")
    composer.press("Enter")
    expect(
        transcript(page).locator("[data-testid=msg-assistant]", has_text="16 bytes")
    ).to_be_visible()
    wait_idle(page)


def test_titles_forks_search_and_the_model_picker(page: Page, web_env: WebEnv) -> None:
    env = web_env
    sid = env.new_session()
    other = env.new_session()
    env.seed(other, "Where is heliotrope mentioned?", Response([Text("Nowhere yet.")]))
    open_session(page, sid)
    item = page.locator(f"[data-testid=session-item][data-session-id='{sid}']")
    expect(item).to_contain_text("New session")

    # Titled from the first prompt, in the header and the list.
    env.llm.add(
        Response([Text("Let me run it."), ToolUse("Bash", {"command": "echo heliotrope"})]),
        Response([Text("It printed heliotrope.")]),
    )
    send(page, "Echo heliotrope in the shell\nand tell me what it printed")
    wait_idle(page)
    expect(page.get_by_test_id("session-title")).to_have_text("Echo heliotrope in the shell")
    expect(item.locator(".session-title")).to_have_text("Echo heliotrope in the shell")

    # A fork is titled apart from its source.
    reply = transcript(page).locator("[data-testid=msg-assistant]", has_text="It printed")
    reply.hover()
    reply.get_by_test_id("fork-btn").click()
    page.wait_for_function(f"window.tron.state.currentId !== '{sid}'")
    expect(page.get_by_test_id("session-title")).to_have_text(
        "Echo heliotrope in the shell (fork #1)"
    )
    fork_item = page.locator("[data-testid=session-item]", has_text="(fork #1)")
    expect(fork_item).to_have_count(1)
    expect(page.get_by_test_id("fork-source")).to_have_text("Echo heliotrope in the shell")

    # Search: grouped per session, one row per event, the tool call once, readable.
    page.get_by_test_id("search-input").fill("heliotrope")
    groups = page.get_by_test_id("search-group")
    expect(groups).to_have_count(2)
    # The other session changed after this page listed it: its title is fetched for the hit.
    theirs = page.locator(f"[data-testid=search-group][data-session-id='{other}']")
    expect(theirs.locator(".search-group-title")).to_have_text("Where is heliotrope mentioned?")
    mine = page.locator(f"[data-testid=search-group][data-session-id='{sid}']")
    rows = mine.get_by_test_id("search-result")
    ids = [rows.nth(i).get_attribute("data-event-id") for i in range(rows.count())]
    assert len(ids) == len(set(ids)) and len(ids) >= 3
    assert mine.locator("[data-type='tool.call']").count() == 0
    carrier = mine.locator("[data-testid=search-result]", has_text="agent + tool call")
    expect(carrier).to_have_count(1)
    expect(carrier.get_by_test_id("hit-snippet")).to_contain_text("command: echo heliotrope")
    for i in range(rows.count()):
        assert '{"' not in (rows.nth(i).get_by_test_id("hit-snippet").text_content() or "")
    shot(page, "search-grouped")
    # The keyboard reaches the results.
    page.get_by_test_id("search-input").press("ArrowDown")
    expect(page.get_by_test_id("search-result").first).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("search-results")).to_be_hidden()

    # The model picker marks providers without a key; their models cannot be picked.
    picker = page.get_by_test_id("model-select")
    openai = picker.locator("optgroup[data-provider=openai]")
    expect(openai).to_have_attribute("label", "openai — no API key")
    assert openai.locator("option").count() > 0
    assert openai.locator("option:not([disabled])").count() == 0
    anthropic = picker.locator("optgroup[data-provider=anthropic]")
    expect(anthropic).to_have_attribute("label", "anthropic")
    assert anthropic.locator("option[disabled]").count() == 0


def test_new_session_dialog_starts_in_a_sensible_directory(browser: Any, web_env: WebEnv) -> None:
    env = web_env
    page = new_page(browser, env)
    try:
        # No session yet: the home directory of the user running the server.
        page.get_by_test_id("empty-new").click()
        expect(page.get_by_test_id("new-session-cwd")).to_have_value(str(env.user_home))
        provider = page.get_by_test_id("new-session-provider")
        expect(provider).to_have_value("anthropic")
        expect(provider.locator("option[value=openai]")).to_have_text("openai — no API key")
        assert provider.locator("option[value=openai]").is_disabled()
        page.keyboard.press("Escape")
        # Then: the directory of the most recently active session (the last one used).
        other = env.workdir / "sub"
        other.mkdir()
        env.new_session("Older")
        env.new_session("Newer", workingDirectory=str(other))
        page.reload()
        expect(page.get_by_test_id("conn-status")).to_have_attribute("data-synced", "true")
        page.get_by_test_id("new-session-btn").click()
        expect(page.get_by_test_id("new-session-cwd")).to_have_value(str(other))
        assert not page.page_errors  # type: ignore[attr-defined]
    finally:
        page.context.close()


def test_code_blocks_are_highlighted_and_copy_their_code(browser: Any, web_env: WebEnv) -> None:
    env = web_env
    code = 'def main():\n    print("hi")  # say it'
    sid = env.new_session("Code")
    env.seed(
        sid,
        "Show me a script and a table",
        Response(
            [Text(f"Here:\n\n```python\n{code}\n```\n\n| File | Lines |\n|---|--:|\n| a.py | 2 |")]
        ),
    )
    page = new_page(browser, env)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    try:
        open_session(page, sid)
        block = transcript(page).locator(".codeblock")
        expect(block.locator(".tok-kw").first).to_have_text("def")
        expect(block.locator(".tok-str")).to_have_text('"hi"')
        expect(transcript(page).locator("table td").first).to_have_text("a.py")
        block.get_by_test_id("copy-code").click()
        expect(block.get_by_test_id("copy-code")).to_have_attribute("data-copied", "true")
        assert page.evaluate("navigator.clipboard.readText()") == code
        assert not page.page_errors  # type: ignore[attr-defined]
    finally:
        page.context.close()
