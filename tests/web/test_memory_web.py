"""Tron's memory in the web chat (real Chromium, real server, scripted model): the Memory
panel shows the open folder's ledger, lessons and handoffs, a handoff opens the session
that holds it, the session list marks sessions with a handoff, and the panel follows a
handoff made while the page is open."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from tests.support.scripted_llm import Response, Text, ToolUse
from tests.web.conftest import WebEnv, open_session, shot

LEDGER = "# Ledger\n\n## Goal\nPort the quokka parser.\n\n## Next steps\nWrite the numbat tests.\n"


def memory_reply(summary: str, **extra: Any) -> Response:
    return Response(
        [ToolUse("record_memory", {
            "summary": summary, "currentState": "half done", "nextSteps": ["numbat tests"],
            "patterns": ["run the quokka suite first"], **extra,
        })]
    )  # fmt: skip


def test_the_memory_panel_shows_the_folders_ledger_and_handoffs(
    page: Page, web_env: WebEnv
) -> None:
    env = web_env
    a = env.new_session("Quokka work")
    env.seed(a, "port the quokka parser", Response([Text("Ported half of it.")]))
    env.llm.add(memory_reply("Ported half of the quokka parser", ledger=LEDGER))
    with env.rpc() as client:
        client.call("session.end", sessionId=a)
    b = env.new_session("Next day")
    open_session(page, b)

    panel = page.get_by_test_id("memory-panel")
    expect(panel).to_be_visible()
    expect(page.get_by_test_id("memory-title")).to_have_text("Memory · project")
    expect(page.get_by_test_id("memory-ledger-text")).to_contain_text("Port the quokka parser.")
    expect(page.get_by_test_id("memory-lesson")).to_have_text(["run the quokka suite first"])
    handoff = page.get_by_test_id("memory-handoff")
    expect(handoff).to_have_text(["Ported half of the quokka parser"])
    # The session that made it is marked in the list, with the summary as its title.
    item = page.locator(f"[data-testid=session-item][data-session-id='{a}']")
    mark = item.get_by_test_id("handoff-mark")
    expect(mark).to_have_attribute("title", "Handoff: Ported half of the quokka parser")
    expect(page.locator(f"[data-testid=session-item][data-session-id='{b}']")
           .get_by_test_id("handoff-mark")).to_have_count(0)  # fmt: skip
    shot(page, "memory-panel")

    # A handoff made while the page shows session B appears without a reload.
    env.seed(b, "write the numbat tests", Response([Text("Wrote them.")]))
    env.llm.add(memory_reply("Wrote the numbat tests"))
    with env.rpc() as client:
        client.call("agent.message", sessionId=b, content="/handoff")
    expect(handoff).to_have_text(["Wrote the numbat tests", "Ported half of the quokka parser"])
    expect(page.get_by_test_id("sys-memory-handoff")).to_have_count(1)
    expect(page.get_by_test_id("sys-memory-handoff")).to_contain_text("Handoff recorded")

    # A handoff opens the session that holds it.
    handoff.nth(1).click()
    page.wait_for_function("(id) => window.tron.state.currentId === id", arg=a)
