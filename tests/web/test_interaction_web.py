"""The user in the loop in Chromium: the agent's question, a tool approval (Enter allows,
Esc denies), the mode switch, and slash-command completion with descriptions (a real
tron-server and the scripted LLM)."""

from __future__ import annotations

import json
from pathlib import Path
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


def test_a_question_is_answered_in_the_page(page: Page, web_env: WebEnv) -> None:
    env = web_env
    sid = _session(env, "Ask")
    env.llm.add(
        Response([ToolUse("AskUser", {"question": "Which colour?", "options": ["red", "blue"]})]),
        Response([Text("Blue it is.")]),
    )
    _open(page, sid, "Ask")
    _send(page, "paint it")
    prompt = page.get_by_test_id("request-prompt")
    expect(prompt).to_be_visible()
    expect(prompt).to_contain_text("Which colour?")
    expect(prompt.get_by_test_id("answer-option")).to_have_count(2)
    shot(page, "question-prompt")
    prompt.get_by_test_id("answer-option").nth(1).click()
    expect(prompt).to_be_hidden()
    expect(
        page.get_by_test_id("transcript-list").locator(
            "[data-testid=msg-assistant]", has_text="Blue it is."
        )
    ).to_be_visible()
    assert "The user chose: blue" in str(env.llm.requests[-1]["messages"][-1])


def test_an_approval_enter_allows_and_esc_denies(page: Page, web_env: WebEnv) -> None:
    env = web_env
    sid = _session(env, "Approve", mode="default")
    env.llm.add(
        Response([ToolUse("Bash", {"command": "touch web-allowed.txt"})]),
        Response([ToolUse("Bash", {"command": "touch web-denied.txt"})]),
        Response([Text("One made, one refused.")]),
    )
    _open(page, sid, "Approve")
    expect(page.get_by_test_id("mode-select")).to_have_value("default")
    _send(page, "make two files")
    prompt = page.get_by_test_id("request-prompt")
    expect(prompt).to_have_attribute("data-kind", "approval")
    expect(prompt.get_by_test_id("approval-input")).to_have_text("touch web-allowed.txt")
    expect(prompt.get_by_test_id("approve-always-btn")).to_contain_text("Bash(touch:*)")
    shot(page, "approval-prompt")
    page.keyboard.press("Enter")  # allow once
    expect(prompt.get_by_test_id("approval-input")).to_have_text("touch web-denied.txt")
    page.keyboard.press("Escape")  # deny (and not abort the turn)
    expect(
        page.get_by_test_id("transcript-list").locator(
            "[data-testid=msg-assistant]", has_text="One made, one refused."
        )
    ).to_be_visible()
    assert (Path(env.workdir) / "web-allowed.txt").exists()
    assert not (Path(env.workdir) / "web-denied.txt").exists()
    assert "denied permission" in str(env.llm.requests[-1]["messages"][-1])


def test_the_mode_switch_and_shift_tab(page: Page, web_env: WebEnv) -> None:
    env = web_env
    sid = _session(env, "Modes", mode="default")
    _open(page, sid, "Modes")
    select = page.get_by_test_id("mode-select")
    expect(select).to_have_value("default")
    select.select_option("plan")
    expect(page.get_by_test_id("toasts")).to_contain_text("Plan (read-only)")
    page.get_by_test_id("composer-input").press("Shift+Tab")  # plan → next in the cycle
    expect(select).not_to_have_value("plan")
    with SyncRpc(env.server.base_url, env.server.token) as rpc:
        mode = rpc.call("session.get", sessionId=sid)["permissionMode"]
        events = rpc.call("events.list", sessionId=sid, types=["config.permission_mode"])
    assert select.input_value() == mode
    assert [e["payload"]["newMode"] for e in events["events"]][:2] == ["default", "plan"]


def test_slash_commands_complete_with_descriptions(page: Page, web_env: WebEnv) -> None:
    env = web_env
    commands = Path(env.workdir) / ".claude" / "commands"
    commands.mkdir(parents=True, exist_ok=True)
    (commands / "shipit.md").write_text(
        "---\ndescription: Ship the change\nargument-hint: [version]\n---\nShip $1 now.\n"
    )
    sid = _session(env, "Slash")
    _open(page, sid, "Slash")
    box = page.get_by_test_id("composer-input")
    box.fill("")
    box.type("/")
    menu = page.get_by_test_id("command-menu")
    expect(menu).to_be_visible()
    expect(menu.locator("[data-name=shipit]")).to_contain_text("Ship the change (project)")
    box.type("mo")
    items = menu.get_by_test_id("command-item")
    expect(items).to_have_count(2)  # /mode, /model
    expect(items.nth(1)).to_contain_text("Switch the model")
    shot(page, "command-completion")
    box.press("ArrowDown")
    box.press("Tab")
    expect(box).to_have_value("/model ")
    expect(menu).to_be_hidden()
    # A built-in's output shows in the page (and sends nothing to the model).
    box.fill("")
    box.type("/cos")
    box.press("Enter")  # completes /cost
    expect(box).to_have_value("/cost")
    box.press("Enter")  # sends it
    expect(page.get_by_test_id("toasts")).to_contain_text("Cost $")


def test_a_slash_typed_before_the_command_list_arrives_opens_the_menu(
    browser: Any, web_env: WebEnv
) -> None:
    """command.list's answer is held back (a slow server) while the user types "/": the
    menu opens when the list arrives, not only at the next key."""
    env = web_env
    held: list[tuple[Any, str | bytes]] = []
    hold = {"on": False}
    ids: set[Any] = set()

    def route(ws: Any) -> None:
        server = ws.connect_to_server()

        def from_page(message: str | bytes) -> None:
            if isinstance(message, str) and '"command.list"' in message:
                ids.add(json.loads(message).get("id"))
            server.send(message)

        def from_server(message: str | bytes) -> None:
            answer = isinstance(message, str) and '"id"' in message
            if hold["on"] and answer and json.loads(message).get("id") in ids:
                held.append((ws, message))
                return
            ws.send(message)

        ws.on_message(from_page)
        server.on_message(from_server)

    context = browser.new_context(viewport={"width": 1440, "height": 900})
    try:
        context.route_web_socket("**/rpc**", route)
        page = context.new_page()
        page.goto(env.server.login_url)
        expect(page.get_by_test_id("conn-status")).to_have_attribute("data-state", "connected")
        sid = _session(env, "Slow list")
        hold["on"] = True
        _open(page, sid, "Slow list")
        box = page.get_by_test_id("composer-input")
        box.click()
        box.type("/")
        menu = page.get_by_test_id("command-menu")
        for _ in range(150):  # the answer is held once the server gives it (slow under load)
            if held:
                break
            page.wait_for_timeout(100)
        expect(menu).to_be_hidden()  # nothing to list yet
        assert held, "command.list was not called (or not held back)"
        hold["on"] = False
        for socket, message in held:
            socket.send(message)
        expect(menu).to_be_visible()
        expect(menu.locator("[data-name=help]")).to_be_visible()
    finally:
        context.close()
