"""The web chat in a real browser (Chromium via Playwright) against a real tron-server
and the scripted LLM (the real Anthropic adapter end to end).

Log in, chat with streaming text and a tool call, fork, rewind, search and jump,
abort with Esc, a dropped socket mid-stream, and a server restart (new token: the
page asks to log in again, then catches up with nothing lost or repeated). Each
test has its own server, database and page, and seeds the history it needs.
"""

from __future__ import annotations

import time
from typing import Any

from playwright.sync_api import Page, expect

from tests.support.scripted_llm import Response, Text, Thinking, ToolUse
from tests.web._rpc import SyncRpc, path_events
from tests.web.conftest import WebEnv, open_session, shot

#: Stored event types the transcript draws as their own element (with data-event-id).
DRAWN = {
    "message.user",
    "message.assistant",
    "message.system",
    "session.start",
    "session.fork",
    "notification.interrupted",
    "config.model_switch",
    "config.reasoning_level",
    "compact.summary",
    "context.cleared",
    "error.agent",
    "error.provider",
    "error.tool",
    "turn.failed",
}


def rpc(env: WebEnv) -> SyncRpc:
    return SyncRpc(env.server.base_url, env.server.token)


def seed_echo_demo(env: WebEnv) -> str:
    """A session whose first reply runs a Bash command and whose second ends the exchange."""
    sid = env.new_session("Echo demo")
    env.seed(
        sid,
        "Say hi from the shell",
        Response([Thinking("The user wants a greeting from the shell, so I will run echo."),
                  Text("Let me run **echo** for you in the shell."),
                  ToolUse("Bash", {"command": "echo hi; echo bye"})]),
        Response([Text("The command printed `hi` and then `bye`. All done here.")]),
    )  # fmt: skip
    return sid


def current_session(page: Page) -> str:
    sid: str = page.evaluate("window.tron.state.currentId")
    return sid


def drawn_ids(page: Page) -> list[str]:
    ids: list[str] = page.evaluate(
        "[...document.querySelectorAll('[data-testid=transcript-list] > [data-event-id]')]"
        ".map(e => e.dataset.eventId)"
    )
    return ids


def assert_transcript_matches_store(page: Page, env: WebEnv) -> None:
    """Every event on the session's path is drawn exactly once, in order, and nothing else."""
    sid = current_session(page)
    with rpc(env) as client:
        tree = client.call("session.getTree", sessionId=sid)
    expected = [e["id"] for e in path_events(tree) if e["type"] in DRAWN]
    # The page may still be applying the last notifications: give it a moment.
    deadline = time.monotonic() + 5
    while drawn_ids(page) != expected and time.monotonic() < deadline:
        time.sleep(0.05)
    drawn = drawn_ids(page)
    assert len(drawn) == len(set(drawn)), f"an event is drawn twice: {drawn}"
    assert drawn == expected


def send(page: Page, text: str) -> None:
    box = page.get_by_test_id("composer-input")
    box.fill(text)
    box.press("Enter")


def wait_idle(page: Page) -> None:
    expect(page.get_by_test_id("abort-btn")).to_be_hidden()
    expect(page.get_by_test_id("working")).to_be_hidden()


def assistant(page: Page, text: str) -> Any:
    return page.get_by_test_id("transcript-list").locator(
        "[data-testid=msg-assistant]", has_text=text
    )


# -- 1. log in, create a session, stream text and a tool call ---------------------------


def test_login_create_and_stream_a_tool_call(page: Page, web_env: WebEnv) -> None:
    env = web_env
    expect(page.get_by_test_id("empty-state")).to_be_visible()

    page.get_by_test_id("new-session-btn").click()
    dialog = page.get_by_test_id("new-session-dialog")
    expect(dialog).to_be_visible()
    # provider and model come from model.list / system.info
    expect(page.get_by_test_id("new-session-provider")).to_have_value("anthropic")
    expect(page.get_by_test_id("new-session-model")).to_have_value("claude-sonnet-4-5")
    page.get_by_test_id("new-session-cwd").fill(str(env.workdir))
    page.get_by_test_id("new-session-title").fill("Echo demo")
    page.get_by_test_id("new-session-create").click()
    expect(dialog).to_be_hidden()
    expect(page.get_by_test_id("session-title")).to_have_text("Echo demo")
    group = page.get_by_test_id("workspace-group").filter(has_text=str(env.workdir))
    expect(group.get_by_test_id("session-item")).to_have_count(1)

    env.llm.add(
        Response(
            [
                Thinking("The user wants a greeting from the shell, so I will run echo."),
                Text("Let me run **echo** for you in the shell."),
                ToolUse("Bash", {"command": "echo hi; sleep 1.5; echo bye"}),
            ],
            delay=0.12,
        ),
        Response(
            [
                Text(
                    "The command printed `hi` and then `bye`. All done here.\n\n"
                    "- `echo hi` ran first\n- `sleep 1.5` waited\n- `echo bye` ran last"
                )
            ],
            delay=0.05,
        ),
    )
    send(page, "Say hi from the shell")
    expect(page.get_by_test_id("composer-input")).to_have_value("")

    # Streaming: thinking, then text, arrive live before the message is stored.
    expect(page.get_by_test_id("live-thinking")).to_contain_text("greeting")
    expect(page.get_by_test_id("live-text")).to_contain_text("Let me run")
    expect(page.get_by_test_id("abort-btn")).to_be_visible()
    expect(page.get_by_test_id("send-btn")).to_have_text("Queue")

    # The tool card: shown while it runs, with its streamed output (agent.tool_output).
    card = page.get_by_test_id("tool-card")
    expect(card).to_have_count(1)
    expect(card.get_by_test_id("tool-name")).to_have_text("Bash")
    expect(card.get_by_test_id("tool-summary")).to_have_text("echo hi; sleep 1.5; echo bye")
    expect(card).to_have_attribute("data-status", "running")
    expect(card.get_by_test_id("tool-output")).to_contain_text("hi")
    shot(page, "01-tool-running")
    expect(card).to_have_attribute("data-status", "done", timeout=15_000)
    expect(card.get_by_test_id("tool-result")).to_contain_text("bye")
    expect(card.get_by_test_id("tool-duration")).to_contain_text("s")

    expect(assistant(page, "All done here")).to_have_count(1)
    wait_idle(page)
    expect(page.get_by_test_id("live-turn")).to_be_hidden()

    # Thinking is collapsible and starts collapsed once stored.
    thinking = page.get_by_test_id("thinking")
    expect(thinking).to_have_count(1)
    assert thinking.evaluate("d => d.open") is False
    thinking.locator("summary").click()
    assert thinking.evaluate("d => d.open") is True
    expect(thinking).to_contain_text("greeting from the shell")

    # Token use and cost per turn, and per session.
    usage = page.get_by_test_id("turn-usage")
    expect(usage).to_have_count(2)
    # "turns" are named for what they count: one prompt took two model calls.
    expect(usage.first).to_contain_text("Model call 1")
    expect(usage.first).to_contain_text("in 10")
    header = page.get_by_test_id("session-usage")
    expect(header).to_have_attribute("data-prompts", "1")
    expect(header).to_have_attribute("data-calls", "2")
    expect(header).to_contain_text("1 prompt · 2 model calls")
    expect(header).to_contain_text("out 10")

    assert_transcript_matches_store(page, env)
    shot(page, "02-chat")


# -- 2. fork from the first reply, rewind, branch ---------------------------------------


def test_fork_from_the_first_reply_and_rewind(page: Page, web_env: WebEnv) -> None:
    env = web_env
    original = seed_echo_demo(env)
    open_session(page, original)
    first_reply = assistant(page, "Let me run").first
    first_reply_id = first_reply.get_attribute("data-event-id")
    first_reply.hover()
    first_reply.get_by_test_id("fork-btn").click()

    page.wait_for_function(
        f"window.tron.state.currentId && window.tron.state.currentId !== '{original}'"
    )
    fork = current_session(page)
    expect(page.get_by_test_id("sys-session-fork")).to_have_count(1)
    # The fork inherits the history up to the first reply, and not the final answer.
    expect(assistant(page, "Let me run")).to_have_count(1)
    expect(assistant(page, "All done here")).to_have_count(0)
    expect(page.get_by_test_id("session-item")).to_have_count(2)
    env.llm.add(Response([Text("On the fork: kiwi.")]))
    send(page, "Continue on the fork")
    expect(assistant(page, "kiwi")).to_have_count(1)
    wait_idle(page)
    assert_transcript_matches_store(page, env)
    with rpc(env) as client:
        tree = client.call("session.getTree", sessionId=fork)
    assert any(
        e["type"] == "session.fork" and e["parentId"] == first_reply_id for e in tree["events"]
    )

    # Back to the original: a second exchange, then rewind it away.
    page.locator(f"[data-testid=session-item][data-session-id='{original}']").click()
    expect(assistant(page, "All done here")).to_have_count(1)
    env.llm.add(Response([Text("A second answer about mango.")]))
    send(page, "Tell me about mango")
    expect(assistant(page, "mango")).to_have_count(1)
    wait_idle(page)

    final = assistant(page, "All done here")
    final_id = final.get_attribute("data-event-id")
    final.hover()
    final.get_by_test_id("rewind-btn").click()
    expect(assistant(page, "mango")).to_have_count(0)
    tree_panel = page.get_by_test_id("tree")
    expect(tree_panel.locator("[data-testid=tree-node][data-head=true]")).to_have_attribute(
        "data-event-id", final_id or ""
    )
    # The rewound exchange stays in the tree, off the path.
    expect(tree_panel.locator("[data-testid=tree-node][data-on-path=false]")).to_have_count(2)

    env.llm.add(Response([Text("After the rewind: papaya.")]))
    send(page, "Something else then")
    expect(assistant(page, "papaya")).to_have_count(1)
    wait_idle(page)
    branch_point = tree_panel.locator(f"[data-testid=tree-node][data-event-id='{final_id}']")
    expect(branch_point).to_have_attribute("data-branches", "2")
    assert_transcript_matches_store(page, env)
    page.get_by_test_id("thinking").locator("summary").click()
    page.get_by_test_id("transcript").evaluate("el => el.scrollTop = 0")
    page.evaluate("document.getElementById('toasts').replaceChildren()")
    page.mouse.move(0, 0)
    page.wait_for_timeout(300)  # the hover actions fade out
    shot(page, "03-fork-rewind-tree")
    page.emulate_media(color_scheme="dark")
    shot(page, "04-dark")
    page.emulate_media(color_scheme="light")


# -- 3. search across sessions and jump --------------------------------------------------


def test_search_jumps_to_the_event(page: Page, web_env: WebEnv) -> None:
    env = web_env
    original = seed_echo_demo(env)
    env.seed(original, "Tell me about mango", Response([Text("A second answer about mango.")]))
    with rpc(env) as client:
        path = path_events(client.call("session.getTree", sessionId=original))
        done = next(e for e in path if "All done here" in str(e["payload"]))
        client.call("session.rewind", sessionId=original, eventId=done["id"])
    env.seed(original, "Something else then", Response([Text("After the rewind: papaya.")]))
    other = env.new_session("Elsewhere")
    # Start from another session so the jump has to switch sessions.
    open_session(page, other)
    page.get_by_test_id("search-input").fill("papaya")
    result = page.get_by_test_id("search-result")
    expect(result.first).to_be_visible()
    expect(result.first.locator("mark")).to_contain_text("papaya")
    shot(page, "05-search")
    result.first.click()
    expect(page.get_by_test_id("search-results")).to_be_hidden()
    page.wait_for_function(f"window.tron.state.currentId === '{original}'")
    target = assistant(page, "papaya")
    expect(target).to_have_attribute("data-highlighted", "true")

    # A hit on a rewound branch is shown in the tree.
    page.get_by_test_id("search-input").fill("mango")
    hit = page.get_by_test_id("search-result").filter(has_text="second answer")
    expect(hit).to_have_count(1)
    hit.click()
    node = page.get_by_test_id("tree").locator("[data-testid=tree-node][data-highlighted=true]")
    expect(node).to_have_count(1)
    expect(node).to_have_attribute("data-on-path", "false")
    expect(node).to_contain_text("mango")


# -- 4. abort with Esc --------------------------------------------------------------------


def test_escape_aborts_the_running_turn(page: Page, web_env: WebEnv) -> None:
    env = web_env
    open_session(page, env.new_session("Abort me"))
    box = page.get_by_test_id("composer-input")
    box.fill("first line")
    box.press("Shift+Enter")
    box.press_sequentially("second line")
    expect(box).to_have_value("first line\nsecond line")  # Shift+Enter: a new line, not sent
    expect(page.get_by_test_id("abort-btn")).to_be_hidden()

    env.llm.add(Response([Text("Working on a very long answer")], delay=0.05, hang=True))
    box.press("Enter")
    expect(page.get_by_test_id("live-text")).to_contain_text("very long answer")
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("sys-interrupted")).to_have_count(1)
    wait_idle(page)
    expect(page.get_by_test_id("user-text").last).to_have_text("first line\nsecond line")
    expect(page.get_by_test_id("turn-usage").last).to_contain_text("aborted")
    expect(assistant(page, "very long answer")).to_have_count(1)
    expect(page.get_by_test_id("live-turn")).to_be_hidden()
    assert_transcript_matches_store(page, env)


# -- 5. model switch; model output is text, never markup -----------------------------------


def test_model_switch_and_model_output_is_escaped(page: Page, web_env: WebEnv) -> None:
    env = web_env
    sid = env.new_session("Models")
    open_session(page, sid)
    page.get_by_test_id("model-select").select_option("anthropic::claude-haiku-4-5")
    expect(page.get_by_test_id("sys-model-switch")).to_contain_text("claude-haiku-4-5")
    expect(page.get_by_test_id("model-select")).to_have_value("anthropic::claude-haiku-4-5")
    item = page.locator(f"[data-testid=session-item][data-session-id='{sid}']")
    expect(item.locator(".session-meta")).to_contain_text("claude-haiku-4-5")
    # After a reload the picker and the list still show the model the next turn uses.
    page.reload()
    expect(page.get_by_test_id("conn-status")).to_have_attribute("data-synced", "true")
    expect(page.get_by_test_id("model-select")).to_have_value("anthropic::claude-haiku-4-5")
    expect(item.locator(".session-meta")).to_contain_text("claude-haiku-4-5")

    hostile = (
        '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script> '
        "**bold** [click](javascript:window.pwned=3) [docs](https://example.com/x)"
    )
    env.llm.add(Response([Text(hostile)]))
    send(page, "<b>not bold</b>")
    message = assistant(page, "onerror")
    expect(message).to_have_count(1)
    wait_idle(page)
    expect(page.get_by_test_id("user-text").last).to_have_text("<b>not bold</b>")
    body = message.get_by_test_id("assistant-text")
    assert body.locator("img, script, b").count() == 0
    expect(body.locator("strong")).to_have_text("bold")
    # only the http(s) link is a link
    links = body.locator("a")
    expect(links).to_have_count(1)
    expect(links).to_have_attribute("href", "https://example.com/x")
    assert page.evaluate("window.pwned") is None
    assert env.llm.requests[-1]["model"] == "claude-haiku-4-5"

    # A failing tool: the card shows the error.
    missing = env.workdir / "missing.txt"
    env.llm.add(
        Response([ToolUse("Read", {"file_path": str(missing)})]),
        Response([Text("That file does not exist.")]),
    )
    send(page, "Read missing.txt")
    card = page.locator("[data-testid=tool-card]", has_text="missing.txt")
    expect(card).to_have_attribute("data-status", "error")
    expect(card.get_by_test_id("tool-status")).to_have_text("error")
    expect(card.get_by_test_id("tool-result")).to_contain_text("missing.txt")
    expect(assistant(page, "does not exist")).to_have_count(1)
    wait_idle(page)
    assert_transcript_matches_store(page, env)


# -- 6. a dropped socket in the middle of a stream -----------------------------------------


def test_dropped_socket_mid_stream_loses_and_repeats_nothing(page: Page, web_env: WebEnv) -> None:
    env = web_env
    open_session(page, env.new_session("Flaky network"))
    words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet"
    env.llm.add(Response([Text(words)], delay=0.15))
    send(page, "Spell the alphabet")
    expect(page.get_by_test_id("live-text")).to_contain_text("bravo")
    page.evaluate("window.tron.rpc.ws.close()")  # the network drops
    expect(page.get_by_test_id("conn-status")).not_to_have_attribute("data-state", "connected")
    expect(page.get_by_test_id("conn-status")).to_have_attribute("data-state", "connected")
    message = assistant(page, "juliet")
    expect(message).to_have_count(1)
    expect(message.get_by_test_id("assistant-text")).to_have_text(words)
    wait_idle(page)
    expect(page.get_by_test_id("live-turn")).to_be_hidden()
    assert_transcript_matches_store(page, env)

    # Again while a tool runs: the turn's text is stored already, the card keeps going.
    env.llm.add(
        Response([Text("Running a slow command."), ToolUse("Bash", {"command": "sleep 2 # slow"})]),
        Response([Text("The slow command finished.")]),
    )
    send(page, "Run something slow")
    card = page.locator("[data-testid=tool-card]", has_text="# slow")
    expect(card).to_have_attribute("data-status", "running")
    page.evaluate("window.tron.rpc.ws.close()")
    expect(page.get_by_test_id("conn-status")).to_have_attribute("data-synced", "false")
    expect(page.get_by_test_id("conn-status")).to_have_attribute("data-synced", "true")
    # Checked at once (an expect would wait for the next turn to clear it): the
    # snapshot's text is the stored message's, so it is not drawn a second time.
    page.wait_for_timeout(150)  # a render frame
    assert "Running a slow command" not in (page.get_by_test_id("live-text").text_content() or "")
    expect(card).to_have_attribute("data-status", "running")  # the snapshot was taken mid-tool
    expect(card).to_have_count(1)
    expect(assistant(page, "Running a slow command")).to_have_count(1)
    expect(card).to_have_attribute("data-status", "done")
    expect(assistant(page, "The slow command finished")).to_have_count(1)
    wait_idle(page)
    assert_transcript_matches_store(page, env)


# -- 7. the server restarts ---------------------------------------------------------------


def test_server_restart_log_in_again_and_catch_up(page: Page, web_env: WebEnv) -> None:
    env = web_env
    sid = seed_echo_demo(env)
    open_session(page, sid)
    status = page.get_by_test_id("conn-status")

    # Stop the server in the middle of a streamed answer: the shutdown aborts the
    # turn and records what it got to.
    env.llm.add(Response([Text("one two three four five six seven eight nine ten")], delay=0.3))
    send(page, "Count slowly")
    expect(page.get_by_test_id("live-text")).to_contain_text("two")
    before = drawn_ids(page)
    env.server.stop()
    expect(status).to_have_attribute("data-state", "offline")
    shot(page, "06-offline")

    # tron-server --rotate-token: a new token, so the old cookie is no longer valid (a plain
    # restart keeps the token, and the page reconnects by itself).
    env.server.start(rotate_token=True)
    expect(status).to_have_attribute("data-state", "unauthorized")
    banner = page.get_by_test_id("login-banner")
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("Log in again")
    shot(page, "07-log-in-again")

    # While the page is locked out, another client works on the session.
    env.llm.add(Response([Text("Written while the page was away: lychee.")]))
    with rpc(env) as client:
        client.call("events.subscribe", sessionId=sid)
        client.call("agent.message", sessionId=sid, content="Anything new?")
        client.wait_for("agent.complete", timeout=20)

    page.get_by_test_id("login-input").fill(env.server.login_url)
    page.get_by_test_id("login-submit").click()
    expect(status).to_have_attribute("data-state", "connected")
    expect(banner).to_be_hidden()
    expect(assistant(page, "lychee")).to_have_count(1)
    # The interrupted answer is there once, as stored; the live copy is gone.
    interrupted = assistant(page, "one two")
    expect(interrupted).to_have_count(1)
    expect(interrupted).to_contain_text("interrupted")
    expect(page.get_by_test_id("live-turn")).to_be_hidden()
    after = drawn_ids(page)
    assert after[: len(before)] == before
    assert_transcript_matches_store(page, env)

    # A fresh load of the same session draws exactly the same events.
    fresh = page.context.new_page()
    fresh.goto(f"{env.server.base_url}/#s={sid}")
    expect(fresh.get_by_test_id("conn-status")).to_have_attribute("data-state", "connected")
    expect(assistant(fresh, "lychee")).to_have_count(1)
    fresh_ids = drawn_ids(fresh)
    assert fresh_ids == drawn_ids(page)
    fresh.close()

    # And the page goes on working.
    env.llm.add(Response([Text("Still here after the restart.")]))
    send(page, "Still there?")
    expect(assistant(page, "Still here after the restart")).to_have_count(1)
    wait_idle(page)
    assert_transcript_matches_store(page, env)
    shot(page, "08-recovered")


def test_a_plain_restart_keeps_the_page_logged_in(page: Page, web_env: WebEnv) -> None:
    """Issue 17.10: the token outlives a restart, so an open page reconnects by itself,
    with no login banner, and goes on working."""
    env = web_env
    sid = env.new_session("Restarted")
    env.seed(sid, "Before the restart", Response([Text("Noted: quince.")]))
    open_session(page, sid)
    status = page.get_by_test_id("conn-status")
    expect(status).to_have_attribute("data-state", "connected")
    env.server.stop()
    expect(status).to_have_attribute("data-state", "offline")
    env.server.start()  # same home, same token file: tron-server started again
    expect(status).to_have_attribute("data-state", "connected")
    expect(page.get_by_test_id("login-banner")).to_be_hidden()
    expect(assistant(page, "quince")).to_have_count(1)
    env.llm.add(Response([Text("Still logged in: medlar.")]))
    send(page, "Still there?")
    expect(assistant(page, "medlar")).to_have_count(1)
    wait_idle(page)
    assert_transcript_matches_store(page, env)


# -- 8. a page opened without the login URL -----------------------------------------------


def test_a_page_without_login_asks_for_the_token(browser: Any, web_env: WebEnv) -> None:
    env = web_env
    env.new_session("One")
    env.new_session("Two")
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(env.server.base_url + "/")
        status = page.get_by_test_id("conn-status")
        expect(status).to_have_attribute("data-state", "unauthorized")
        expect(page.get_by_test_id("login-banner")).to_be_visible()
        expect(page.get_by_test_id("login-banner")).to_contain_text(env.server.base_url)

        page.get_by_test_id("login-input").fill("not-the-token")
        page.get_by_test_id("login-submit").click()
        expect(page.get_by_test_id("toast").last).to_contain_text("Login failed")
        expect(status).to_have_attribute("data-state", "unauthorized")

        page.get_by_test_id("login-input").fill(env.server.token)  # the bare token works too
        page.get_by_test_id("login-submit").click()
        expect(status).to_have_attribute("data-state", "connected")
        expect(page.get_by_test_id("session-item")).to_have_count(2)
    finally:
        context.close()
