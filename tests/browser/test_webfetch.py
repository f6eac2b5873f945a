"""WebFetch against the local site: conversion, caps, charsets, redirects, refusals; and
through a real tron-server: the prompt's side call to the session's model, and the
approvals a domain and a loopback address ask for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpcore
import pytest

from tests.browser.site import Site
from tests.support.scripted_llm import Response, ScriptedLLM, Text, ToolUse
from tron_server.browser.urls import UrlVerdict
from tron_server.tools._guarded_http import AddressRefused, GuardedBackend
from tron_server.tools.base import ToolContext, ToolRegistry, ToolResult
from tron_server.tools.webfetch import MAX_RESULT_CHARS, SUMMARY_SYSTEM, WebFetch

pytestmark = pytest.mark.anyio


def checker(deny_hosts: tuple[str, ...] = ("localhost",)) -> Any:
    """A permission layer: 127.0.0.1 allowed with its (loopback) address, ``deny_hosts``
    denied, anything else would ask."""

    async def check(tool: str, url: str, call: str | None) -> UrlVerdict:
        host = url.split("//", 1)[1].split("/", 1)[0].split(":", 1)[0]
        if host == "127.0.0.1":
            return UrlVerdict("allow", "allowed by the rule WebFetch(domain:127.0.0.1)",
                              ("127.0.0.1",))  # fmt: skip
        if host in deny_hosts:
            return UrlVerdict("deny", f"denied by the rule WebFetch(domain:{host})")
        return UrlVerdict("ask", f"WebFetch(domain:{host}) is not allowed yet")

    return check


async def fetch(
    tool: WebFetch, url: str, tmp_path: Path, check: Any = None, **more: Any
) -> ToolResult:
    ctx = ToolContext("sess_test", tmp_path, "toolu_1", check_url=check or checker())
    return await ToolRegistry([tool]).execute("WebFetch", {"url": url, **more}, ctx)


async def test_html_becomes_markdown_with_absolute_links(site: Site, tmp_path: Path) -> None:
    result = await fetch(WebFetch(), f"{site.base}/links", tmp_path)
    assert not result.is_error, result.content
    text = str(result.content)
    assert text.startswith(f"URL: {site.base}/links\nTitle: Links\n")
    assert "# Links" in text
    assert f"[Next page]({site.base}/page2)" in text  # relative links made absolute
    assert result.details is not None and result.details["contentType"] == "text/html"
    plain = await fetch(WebFetch(), f"{site.base}/doc.md", tmp_path)
    assert "# Plain\n\nJust *markdown* text." in str(plain.content)


async def test_large_pages_are_cut_to_the_budget_and_the_byte_cap(
    site: Site, tmp_path: Path
) -> None:
    result = await fetch(WebFetch(), f"{site.base}/large", tmp_path)
    text = str(result.content)
    assert not result.is_error and result.details is not None
    assert "Paragraph 0:" in text and "Paragraph 2499:" not in text
    assert "[truncated: " in text and "more characters of the page were left out" in text
    assert len(text) < MAX_RESULT_CHARS + 1000
    assert result.details["truncatedChars"] > 100_000
    small = await fetch(WebFetch(max_bytes=10_000), f"{site.base}/large", tmp_path)
    assert "(only the first 10,000 bytes of the page were read)" in str(small.content)
    assert small.details is not None and small.details["bytes"] == 10_000


async def test_the_pages_charset_is_used(site: Site, tmp_path: Path) -> None:
    latin = await fetch(WebFetch(), f"{site.base}/latin1", tmp_path)
    assert "Title: Café" in str(latin.content) and "# Crème brûlée" in str(latin.content)
    assert "5 € — déjà vu" in str(latin.content)
    assert latin.details is not None and latin.details["charset"] == "cp1252"
    sjis = await fetch(WebFetch(), f"{site.base}/sjis", tmp_path)  # declared in <meta> only
    assert "Title: 日本語" in str(sjis.content) and "# こんにちは世界" in str(sjis.content)


async def test_redirects_on_the_host_are_followed_and_to_another_host_reported(
    site: Site, tmp_path: Path
) -> None:
    same = await fetch(WebFetch(), f"{site.base}/redirect", tmp_path)
    assert f"URL: {site.base}/final" in str(same.content)
    assert "Landed after a redirect" in str(same.content)
    assert same.details is not None and same.details["redirects"] == [f"{site.base}/final"]
    hits = len(site.hits)
    away = await fetch(WebFetch(), f"{site.base}/redirect-away", tmp_path, check=checker(()))
    assert not away.is_error
    assert f"redirects to another host: {site.other}/page2" in str(away.content)
    assert f"call WebFetch again with url '{site.other}/page2'" in str(away.content)
    assert site.hits[hits:] == ["/redirect-away"]  # the other host was not contacted
    denied = await fetch(WebFetch(), f"{site.base}/redirect-away", tmp_path)
    assert denied.is_error and "denied by the rule WebFetch(domain:localhost)" in str(
        denied.content
    )


async def test_what_webfetch_refuses(site: Site, tmp_path: Path) -> None:
    for url in ("file:///etc/passwd", "ftp://example.com/x", "/relative", "http://u:p@x.org/"):
        result = await fetch(WebFetch(), url, tmp_path)
        assert result.is_error and "WebFetch refused the URL" in str(result.content), url
    binary = await fetch(WebFetch(), f"{site.base}/image.png", tmp_path)
    assert binary.is_error and "image/png" in str(binary.content)
    # Without a permission layer only public addresses are reached: not the loopback.
    ctx = ToolContext("sess_test", tmp_path, "toolu_1")
    local = await ToolRegistry([WebFetch()]).execute("WebFetch", {"url": site.base}, ctx)
    assert local.is_error and "private addresses need a permission rule" in str(local.content)
    assert "/" not in site.hits


async def test_a_fetch_is_bounded_in_time(site: Site, tmp_path: Path) -> None:
    result = await fetch(WebFetch(timeout=1), f"{site.base}/slow", tmp_path)
    assert result.is_error and "took longer than 1 s" in str(result.content)
    site.release()


async def test_connections_go_only_to_checked_addresses() -> None:
    """The rebinding guard: a host granted for public addresses only is not connected to
    when it resolves to the loopback; an unchecked host not at all."""
    backend = GuardedBackend()
    with pytest.raises(AddressRefused, match="was not checked"):
        await backend.connect_tcp("localhost", 9)
    backend.grant("localhost", private_ok=False)
    with pytest.raises(AddressRefused, match="private or loopback address"):
        await backend.connect_tcp("localhost", 9)
    backend.grant("localhost", private_ok=True)
    with pytest.raises(httpcore.ConnectError):  # allowed: it really tries (nothing listens)
        await backend.connect_tcp("localhost", 9)


# -- through the server ------------------------------------------------------------------


async def _turn(client: Any, sid: str, text: str) -> list[Any]:
    stream = client.notifications(session_id=sid)
    await client.call("agent.message", {"sessionId": sid, "content": text})
    seen = []
    with anyio.fail_after(60):
        while True:
            n = await stream.next()
            seen.append(n)
            if n.method == "agent.approval":
                return seen
            if n.method == "agent.complete":
                return seen


async def test_a_prompt_is_answered_by_the_sessions_model(
    site: Site, llm: ScriptedLLM, make_server: Any, tmp_path: Path
) -> None:
    server = make_server(llm, allow=["WebFetch(domain:127.0.0.1)"])
    question = "What does paragraph 7 say?"
    llm.add(
        Response([ToolUse("WebFetch", {"url": f"{site.base}/large", "prompt": question})]),
        Response([Text("Paragraph 7 is about a quick brown fox.")]),  # the side call
        Response([Text("Done.")]),
    )
    async with server.connect() as client:
        session = await client.call("session.create", {"workingDirectory": str(tmp_path)})
        sid = session["id"]
        seen = await _turn(client, sid, "read the page")
        assert seen[-1].method == "agent.complete"
        side = llm.requests[1]
        assert side["model"] == session["model"] and not side.get("tools")
        assert SUMMARY_SYSTEM in str(side["system"])
        page = str(side["messages"][0]["content"])
        assert "Paragraph 7:" in page and question in page
        # More than the result's budget (about 270 paragraphs), up to the prompt's.
        assert "Paragraph 400:" in page and "Paragraph 2499:" not in page
        [end] = [n.data for n in seen if n.method == "agent.tool_end"]
        assert not end["isError"]
        assert end["content"].endswith("Paragraph 7 is about a quick brown fox.")
        assert "(the model read the first 100,000 characters)" in end["content"]
        events = await client.sync(sid)
        [result] = [e["payload"] for e in events if e["type"] == "tool.result"]
        assert result["details"]["summary"]["model"] == session["model"]
        assert result["details"]["summary"]["outputTokens"] > 0


async def test_a_loopback_address_asks_even_when_every_tool_is_allowed(
    site: Site, llm: ScriptedLLM, make_server: Any, tmp_path: Path
) -> None:
    """bypassPermissions and a bare ``WebFetch`` rule do not reach the user's machine: the
    user is asked, with the rule that would allow it. A denial reaches the model; an
    "allow" (once) lets that call, and only that call, reach the address."""
    server = make_server(llm, allow=["WebFetch"])  # the tests' servers run bypassPermissions
    llm.add(
        Response([ToolUse("WebFetch", {"url": f"{site.base}/links"})]),
        Response([ToolUse("WebFetch", {"url": f"{site.base}/page2"})]),
        Response([Text("Understood.")]),
    )
    async with server.connect() as client:
        sid = (await client.call("session.create", {"workingDirectory": str(tmp_path)}))["id"]
        stream = client.notifications(["agent.approval", "agent.complete"], session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "fetch local pages"})
        asked = await stream.next(timeout=60)
        assert asked.method == "agent.approval"
        assert "on your machine or private network (127.0.0.1)" in asked.data["reason"]
        assert asked.data["suggestion"] == "WebFetch(domain:127.0.0.1)"
        await client.call("agent.respond", {"sessionId": sid,
                          "requestId": asked.data["requestId"], "answer": "deny"})  # fmt: skip
        again = await stream.next(timeout=60)
        assert again.method == "agent.approval" and again.data["input"]["url"].endswith("/page2")
        assert site.hits == []
        await client.call("agent.respond", {"sessionId": sid,
                          "requestId": again.data["requestId"], "answer": "allow"})  # fmt: skip
        done = await stream.next(timeout=60)
        assert done.method == "agent.complete"
        assert site.hits == ["/page2"]
        results = [e["payload"] for e in await client.sync(sid) if e["type"] == "tool.result"]
        assert "The user denied permission to run WebFetch" in str(results[0]["content"])
        assert "Welcome to page two" in str(results[1]["content"]) and not results[1]["isError"]


async def test_an_approval_answered_after_a_restart_reaches_the_address(
    site: Site, llm: ScriptedLLM, make_server: Any, tmp_path: Path
) -> None:
    """The request survives a restart; answered "allow" then, the call runs as shown (the
    address it asked about included)."""
    server = make_server(llm)
    llm.add(
        Response([ToolUse("WebFetch", {"url": f"{site.base}/page2"})]),
        Response([Text("Read it.")]),
    )
    async with server.connect() as client:
        sid = (await client.call("session.create", {"workingDirectory": str(tmp_path)}))["id"]
        stream = client.notifications(["agent.approval"], session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "fetch"})
        await stream.next(timeout=60)
    server.restart()
    async with server.connect() as client:
        [pending] = (await client.call("agent.getState", {"sessionId": sid}))["pendingRequests"]
        stream = client.notifications(["agent.complete"], session_id=sid)
        await client.call("agent.respond", {"sessionId": sid,
                          "requestId": pending["requestId"], "answer": "allow"})  # fmt: skip
        await stream.next(timeout=60)
        results = [e["payload"] for e in await client.sync(sid) if e["type"] == "tool.result"]
        assert "Welcome to page two" in str(results[0]["content"]), results
    assert site.hits == ["/page2"]
