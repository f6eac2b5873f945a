"""The web chat shows a Task call as a card with its sub-agent's live activity and a link
that opens the child session, and nests children under their parent in the session list
(Chromium against a real tron-server and the scripted LLM)."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.support.scripted_llm import Response, Text, ToolUse
from tests.web._rpc import SyncRpc
from tests.web.conftest import WebEnv, shot


def test_a_task_card_shows_the_child_live_and_opens_it(page: Page, web_env: WebEnv) -> None:
    env = web_env
    with SyncRpc(env.server.base_url, env.server.token) as rpc:
        parent = rpc.call("session.create", workingDirectory=str(env.workdir), title="Boss")["id"]
    env.llm.add(
        Response([Text("Handing this to a helper."),
                  ToolUse("Task", {"description": "count the files",
                                   "prompt": "KID: count the files here"}, id="toolu_web")]),
        Response([Text("Counting them for the parent now."),
                  ToolUse("Bash", {"command": "echo counting; sleep 2; ls | wc -l"})],
                 delay=0.05),
        Response([Text("There is one file: README.md.")]),
        Response([Text("The helper found one file.")]),
    )  # fmt: skip
    page.evaluate(f"location.hash = '#s={parent}'")
    expect(page.get_by_test_id("session-title")).to_have_text("Boss")
    box = page.get_by_test_id("composer-input")
    box.fill("How many files are there?")
    box.press("Enter")

    card = page.locator(".task-card[data-tool-call-id=toolu_web]")
    expect(card).to_be_visible()
    expect(card.get_by_test_id("tool-summary")).to_have_text("count the files")
    # While the child works, the card shows what it is doing, live.
    expect(card.get_by_test_id("task-activity")).to_contain_text("Bash")
    expect(card.get_by_test_id("tool-output")).to_contain_text("→ Bash echo counting")
    link = card.get_by_test_id("task-open-child")
    expect(link).to_be_visible()
    child = link.get_attribute("data-session-id")
    assert child and child.startswith("sess_") and child != parent
    shot(page, "task-card-live")

    expect(card).to_have_attribute("data-status", "done")
    expect(card.get_by_test_id("task-activity")).to_be_hidden()
    expect(card.get_by_test_id("tool-result")).to_contain_text("There is one file")
    expect(
        page.get_by_test_id("transcript-list").locator(
            "[data-testid=msg-assistant]", has_text="The helper found one file."
        )
    ).to_be_visible()

    # The child is listed under its parent.
    family = page.locator(f"[data-testid=session-family][data-session-id='{parent}']")
    nested = family.get_by_test_id("session-children").get_by_test_id("session-item")
    expect(nested).to_have_count(1)
    expect(nested).to_have_attribute("data-session-id", child)
    expect(nested).to_have_attribute("data-kind", "subagent")

    # The link opens the child: its own history, the prompt the parent gave it.
    link.click()
    expect(page).to_have_url(f"{env.server.base_url}/#s={child}")
    assert page.evaluate("window.tron.state.currentId") == child
    transcript = page.get_by_test_id("transcript-list")
    expect(transcript.get_by_test_id("user-text")).to_have_text("KID: count the files here")
    expect(
        transcript.locator("[data-testid=msg-assistant]", has_text="There is one file")
    ).to_be_visible()
    expect(page.get_by_test_id("session-title")).to_have_text("count the files")
    shot(page, "task-child-opened")

    # And back to the parent, whose header counts the sub-agent's cost too.
    transcript.get_by_test_id("open-parent").click()
    assert page.evaluate("window.tron.state.currentId") == parent
    expect(page.get_by_test_id("session-usage")).to_contain_text("with sub-agents $0.0004")
