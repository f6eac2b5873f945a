"""The Browser tool over a real tron-server: the scripted model drives Debian's Chromium
through local pages, working from snapshots and refs as a real model does."""

from __future__ import annotations

import base64
import os
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.browser.conftest import browser_engine, need_chromium
from tests.browser.site import Site
from tests.support.scripted_llm import Response, ScriptedLLM, Text, ToolUse
from tron_server.browser import _procs

pytestmark = pytest.mark.anyio


def last_result_text(body: dict[str, Any]) -> str:
    """The text of the tool results in the request's last message (what the model saw)."""
    out: list[str] = []
    for block in body["messages"][-1]["content"]:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            content = block.get("content")
            if isinstance(content, str):
                out.append(content)
            else:
                out.extend(p.get("text", "") for p in content or [] if p.get("type") == "text")
    return "\n".join(out)


def ref_of(body: dict[str, Any], role_and_name: str) -> str:
    """The ref of the element whose snapshot line starts with ``role_and_name``."""
    text = last_result_text(body)
    for line in text.splitlines():
        if line.strip().lstrip("- ").startswith(role_and_name):
            found = re.search(r"\[ref=([A-Za-z0-9_-]+)\]", line)
            if found:
                return found.group(1)
    raise AssertionError(f"no {role_and_name!r} in the snapshot:\n{text}")


def browse(**arguments: Any) -> Response:
    return Response([ToolUse("Browser", arguments)])


def browse_ref(action: str, role_and_name: str, **more: Any) -> Any:
    """A response built from the request: act on the element the last snapshot showed."""
    return lambda body: browse(action=action, ref=ref_of(body, role_and_name), **more)


async def new_session(client: Any, workdir: Path) -> str:
    session = await client.call("session.create", {"workingDirectory": str(workdir)})
    return str(session["id"])


async def run_message(client: Any, sid: str, text: str, timeout: float = 120) -> list[Any]:
    """Send ``text``; every notification of the session until agent.complete."""
    stream = client.notifications(session_id=sid)
    await client.call("agent.message", {"sessionId": sid, "content": text})
    seen = []
    with anyio.fail_after(timeout):
        while True:
            n = await stream.next()
            seen.append(n)
            if n.method == "agent.complete" and not n.data.get("parentSessionId"):
                return seen


async def test_the_model_drives_the_browser_through_local_pages(
    site: Site, llm: ScriptedLLM, make_server: Any, tmp_path: Path
) -> None:
    need_chromium()
    server = make_server(llm, allow=["Browser(domain:127.0.0.1)"])
    llm.add(
        browse(action="navigate", url=f"{site.base}/form"),
        browse_ref("type", 'textbox "Query"', text="tron rocks", submit=True),
        browse(action="navigate", url=f"{site.base}/links"),
        browse_ref("click", 'link "Next page"'),
        browse(action="navigate", url=f"{site.base}/js-list"),
        browse(action="wait", text="item three"),
        browse(action="snapshot"),
        browse(action="navigate", url=f"{site.base}/console"),
        browse(action="console"),
        browse(action="screenshot"),
        Response([Text("Done browsing.")]),
    )
    async with server.connect() as client, server.connect() as bystander:
        sid = await new_session(client, tmp_path)
        others = bystander.notifications(["browser.frame", "browser.status"])
        seen = await run_message(client, sid, "browse the local site")
        assert seen[-1].data["stopReason"] == "end_turn"
        ends = [n.data for n in seen if n.method == "agent.tool_end"]
        assert [e["isError"] for e in ends] == [False] * 10, ends

        # What the model saw at each step (request i+1 carries result i).
        seen_by_model = [last_result_text(llm.requests[i]) for i in range(1, 11)]
        assert 'textbox "Query"' in seen_by_model[0] and "[ref=" in seen_by_model[0]
        assert "You searched: tron rocks" in seen_by_model[1]  # typed and submitted
        assert "/result?q=tron+rocks" in seen_by_model[1]
        assert "Welcome to page two" in seen_by_model[3]  # clicked by ref
        assert "item three" in seen_by_model[5] and "item three" in seen_by_model[6]
        console = seen_by_model[8]
        assert "[log] hello from the page" in console
        assert "[error] boom: something failed" in console
        assert "[pageerror] uncaught kaboom" in console

        # The screenshot: an image block in the next model request.
        [result] = [
            b for b in llm.requests[10]["messages"][-1]["content"] if b["type"] == "tool_result"
        ]
        image = [p for p in result["content"] if p["type"] == "image"]
        assert image and image[0]["source"]["media_type"] == "image/jpeg"
        assert image[0]["source"]["data"].startswith("/9j/")  # JPEG's base64 start

        # Frames and the status reached the subscribed client only, not the bystander.
        frames = [n for n in seen if n.method == "browser.frame"]
        assert frames, "no browser.frame reached the subscribed client"
        assert frames[0].data["data"].startswith("/9j/") and frames[0].data["width"] > 0
        status = [n.data for n in seen if n.method == "browser.status"]
        assert status[-1]["open"] is True and status[-1]["action"] == "screenshot"
        assert status[-1]["url"] == f"{site.base}/console"
        with pytest.raises(TimeoutError):
            await others.next(timeout=0.5)

        # Search finds the snapshots' text (tool results are indexed).
        found = await client.call("events.search", {"query": "Welcome page two", "sessionId": sid})
        assert any(h["type"] == "tool.result" for h in found["hits"]), found

        # Frames and status are notifications only: nothing of them is stored.
        events = await client.sync(sid)
        assert not [e for e in events if e["type"].startswith("browser")]

        # The browser stays open for the next message; aborting closes it.
        engine = browser_engine(server)
        assert engine.running
        await client.call("agent.abort", {"sessionId": sid})
        assert not engine.running


def _driver_pids() -> list[int]:
    """Playwright drivers (node … run-driver) below this process (the in-thread server)."""
    me = _procs.Proc(os.getpid(), os.getppid(), 0)
    out = []
    for proc in _procs.tree(me):
        try:
            cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"run-driver" in cmdline:
            out.append(proc.pid)
    return out


def _alive(pids: list[int]) -> list[int]:
    return [p for p in pids if Path(f"/proc/{p}").exists() and _procs._read(p) is not None]


async def test_an_abort_mid_navigation_leaves_no_chromium_process(
    site: Site, llm: ScriptedLLM, make_server: Any, tmp_path: Path
) -> None:
    need_chromium()
    server = make_server(llm, allow=["Browser(domain:127.0.0.1)"])
    llm.add(browse(action="navigate", url=f"{site.base}/slow"))
    engine = browser_engine(server)
    drivers_before = _driver_pids()
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        stream = client.notifications(["agent.complete"], session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "open the slow page"})
        with anyio.fail_after(60):
            while "/slow" not in site.hits:  # the navigation is under way
                await anyio.sleep(0.05)
        chromium = engine.processes()
        drivers = [p for p in _driver_pids() if p not in drivers_before]
        assert engine.browser_pid in chromium and len(chromium) >= 3, chromium  # + renderers
        assert drivers, "no Playwright driver found below the server"
        assert await client.call("agent.abort", {"sessionId": sid}) == {"aborted": True}
        done = await stream.next(timeout=30)
        assert done.data["stopReason"] == "aborted"
        # Nothing of the browser is left: not Chromium's tree, not Playwright's driver.
        with anyio.fail_after(15):
            while _alive(chromium + drivers):
                await anyio.sleep(0.1)
        assert not engine.running
        events = await client.sync(sid)
        [result] = [e for e in events if e["type"] == "tool.result"]
        assert result["payload"]["isError"] and result["payload"].get("interrupted")
    site.release()


async def test_two_sessions_do_not_share_cookies(
    site: Site, llm: ScriptedLLM, make_server: Any, tmp_path: Path
) -> None:
    need_chromium()
    server = make_server(llm, allow=["Browser(domain:127.0.0.1)"])
    async with server.connect() as client:
        a = await new_session(client, tmp_path)
        b = await new_session(client, tmp_path)
        llm.add(browse(action="navigate", url=f"{site.base}/set-cookie?v=alpha"),
                Response([Text("set")]))  # fmt: skip
        await run_message(client, a, "set a cookie")
        # A's browser is still open while B browses: two contexts side by side.
        llm.add(browse(action="navigate", url=f"{site.base}/cookies"), Response([Text("seen")]))
        await run_message(client, b, "show the cookies")
        assert "Cookies: none" in last_result_text(llm.requests[-1])
        llm.add(browse(action="navigate", url=f"{site.base}/cookies"), Response([Text("seen")]))
        await run_message(client, a, "show the cookies")
        assert "Cookies: who=alpha" in last_result_text(llm.requests[-1])
        assert browser_engine(server).running
        for sid in (a, b):
            await client.call("session.end", {"sessionId": sid})
        assert not browser_engine(server).running  # the session's end closed the last one


async def test_the_browser_stays_where_the_rules_allow(
    site: Site, llm: ScriptedLLM, make_server: Any, tmp_path: Path
) -> None:
    need_chromium()
    server = make_server(
        llm, allow=["Browser(domain:127.0.0.1)"], deny=["Browser(domain:localhost)"]
    )
    (tmp_path / "page.html").write_text("<title>Local file</title><h1>From the workspace</h1>")
    llm.add(
        browse(action="navigate", url=f"{site.other}/page2"),
        browse(action="navigate", url=f"{site.base}/links"),
        browse_ref("click", 'link "Elsewhere"'),
        browse(action="navigate", url=f"{site.base}/redirect-away"),
        browse(action="navigate", url="file:///etc/hostname"),
        browse(action="navigate", url=(tmp_path / "page.html").as_uri()),
        browse(action="navigate", url=f"{site.base}/links"),
        browse_ref("click", 'link "Get the report"'),
        Response([Text("Done.")]),
    )
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        seen = await run_message(client, sid, "go places")
        ends = [n.data for n in seen if n.method == "agent.tool_end"]
        saw = [last_result_text(llm.requests[i]) for i in range(1, 9)]
        # A denied domain: the permission gate refuses the call.
        assert ends[0]["isError"]
        assert "denied by the rule Browser(domain:localhost)" in saw[0]
        # A link to it: the page does not go there.
        assert f"Blocked: the page tried to open {site.other}/page2" in saw[2]
        assert f'Page: "Links" — {site.base}/links' in saw[2]
        # A redirect to it (Chromium follows redirects without asking the route): the page
        # is closed before the model sees it.
        assert f"The page went to {site.other}/page2" in saw[3]
        assert "Page: about:blank" in saw[3] and "Welcome to page two" not in saw[3]
        # file: only inside the working directory.
        assert ends[4]["isError"] and "outside the working directory" in saw[4]
        assert "From the workspace" in saw[5] and not ends[5]["isError"]
        # A download lands in the working directory.
        with anyio.fail_after(20):
            while not (tmp_path / "report.txt").exists():
                await anyio.sleep(0.05)
        assert (tmp_path / "report.txt").read_text() == "the report\n"


async def test_a_sub_agent_browses_in_a_context_of_its_own_and_shutdown_closes_all(
    site: Site, llm: ScriptedLLM, make_server: Any, tmp_path: Path
) -> None:
    need_chromium()
    server = make_server(llm, allow=["Browser(domain:127.0.0.1)"])
    llm.add(
        browse(action="navigate", url=f"{site.base}/set-cookie?v=parent"),
        Response(
            [
                ToolUse(
                    "Task", {"description": "check cookies", "prompt": "Open /cookies and report"}
                )
            ]
        ),
        browse(action="navigate", url=f"{site.base}/cookies"),  # the child
        Response([Text("The child saw its cookies.")]),
        browse(action="navigate", url=f"{site.base}/cookies"),  # the parent again
        Response([Text("Done.")]),
    )
    manager = browser_engine(server)
    drivers_before = _driver_pids()  # another test's browser may run in this process
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        seen = await run_message(client, sid, "delegate")
        assert seen[-1].data["stopReason"] == "end_turn"
        assert "Cookies: none" in last_result_text(llm.requests[3])  # the child's own context
        assert "Cookies: who=parent" in last_result_text(llm.requests[5])
        children = await client.call("session.list", {})
        child_ids = [s["id"] for s in children["sessions"] if s.get("parentSessionId") == sid]
        assert child_ids
        tool = server.services.tools.get("Browser")
        assert tool.manager.get(child_ids[0]) is None  # closed when its task ended
        assert tool.manager.get(sid) is not None and manager.running
    # The server stops with the parent's browser open: nothing of it outlives the server.
    chromium = manager.processes()
    drivers = [p for p in _driver_pids() if p not in drivers_before]
    assert chromium and drivers
    server.stop()
    with anyio.fail_after(15):
        while _alive(chromium + drivers):
            await anyio.sleep(0.1)


def jpeg_size(data: bytes) -> tuple[int, int]:
    """A JPEG's (width, height), read from its start-of-frame marker."""
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            raise AssertionError(f"not a JPEG marker at byte {i}")
        marker, length = data[i + 1], int.from_bytes(data[i + 2 : i + 4], "big")
        if marker in (0xC0, 0xC1, 0xC2):
            height = int.from_bytes(data[i + 5 : i + 7], "big")
            return int.from_bytes(data[i + 7 : i + 9], "big"), height
        i += 2 + length
    raise AssertionError("no start-of-frame marker in the JPEG")


async def test_press_select_back_wait_full_page_screenshot_and_close(
    site: Site, llm: ScriptedLLM, make_server: Any, tmp_path: Path
) -> None:
    need_chromium()
    server = make_server(llm, allow=["Browser(domain:127.0.0.1)"])
    engine = browser_engine(server)
    at_close: dict[str, Any] = {}

    def close(body: dict[str, Any]) -> Response:
        at_close["chromium"] = engine.processes()
        at_close["pid"] = engine.browser_pid
        return browse(action="close")

    def after_close(body: dict[str, Any]) -> Response:
        at_close["running"] = engine.running
        at_close["alive"] = _alive(at_close["chromium"])
        return browse(action="navigate", url=f"{site.base}/page2")

    llm.add(
        browse(action="navigate", url=f"{site.base}/form"),
        browse_ref("select", 'combobox "Colour"', values=["blue"]),
        browse_ref("type", 'textbox "Query"', text="pressed"),
        browse(action="press", key="Enter"),
        browse(action="back"),
        browse(action="wait", timeMs=300),
        browse(action="navigate", url=f"{site.base}/tall"),
        browse(action="screenshot", fullPage=True),
        close,
        after_close,
        Response([Text("Done.")]),
    )
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        seen = await run_message(client, sid, "use every action")
        assert seen[-1].data["stopReason"] == "end_turn"
        ends = [n.data for n in seen if n.method == "agent.tool_end"]
        assert [e["isError"] for e in ends] == [False] * 10, ends
        saw = [last_result_text(llm.requests[i]) for i in range(1, 11)]

        # select: the option chosen shows in the snapshot that follows.
        assert "Selected b in" in saw[1]
        colour = saw[1][saw[1].index('combobox "Colour"') :]
        assert re.search(r'option "blue" \[selected\]', colour), saw[1]
        # press: Enter in the field submits the form, with the selected colour.
        assert "Pressed Enter." in saw[3] and "You searched: pressed" in saw[3]
        assert "/result?q=pressed&c=b" in saw[3] and "colour b" in saw[3]
        # back: the form again.
        assert "Went back." in saw[4] and f"{site.base}/form" in saw[4]
        assert 'textbox "Query"' in saw[4] and "You searched" not in saw[4]
        # wait {timeMs}: waited about that long, on the same page.
        waited = re.search(r"Waited (\d+\.\d) s\.", saw[5])
        assert waited and 0.3 <= float(waited.group(1)) < 5, saw[5]
        # screenshot {fullPage}: taller than the viewport (800 px), up to the cap.
        [result] = [b for b in llm.requests[8]["messages"][-1]["content"]
                    if b["type"] == "tool_result"]  # fmt: skip
        [image] = [p for p in result["content"] if p["type"] == "image"]
        width, height = jpeg_size(base64.b64decode(image["source"]["data"]))
        assert width == 1280 and height > 2400, (width, height)
        assert f"(1280×{height}, JPEG" in saw[7]
        # close: Chromium is gone before the next action; that one starts a fresh browser.
        assert "Closed the browser." in saw[8]
        assert at_close["chromium"] and at_close["running"] is False
        assert at_close["alive"] == [], at_close
        assert "Welcome to page two" in saw[9]
        assert engine.running and engine.browser_pid != at_close["pid"]
        await client.call("session.end", {"sessionId": sid})
        assert not engine.running
