"""Recall sees what the browser showed: the text of a Browser snapshot (a ``tool.result``)
is found by a later session's Recall tool and by ``memory.search``, cited by the browsing
session and the event."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import need_chromium
from tests.browser.site import Site
from tests.browser.test_browser_tool import browse, last_result_text, new_session, run_message
from tests.support.scripted_llm import Response, ScriptedLLM, Text, ToolUse

pytestmark = pytest.mark.anyio


async def test_recall_finds_the_text_of_a_browser_snapshot(
    site: Site, llm: ScriptedLLM, make_server: Any, tmp_path: Path
) -> None:
    need_chromium()
    server = make_server(llm, allow=["Browser(domain:127.0.0.1)"])
    # The list is written by the page's JavaScript: its words are in no URL and no
    # tool input, only in what the browser showed.
    llm.add(
        browse(action="navigate", url=f"{site.base}/js-list"),
        browse(action="wait", timeMs=800),
        Response([Text("Read the list.")]),
    )
    async with server.connect() as client:
        browsing = await new_session(client, tmp_path)
        await run_message(client, browsing, "read the list")
        assert "item three" in last_result_text(llm.requests[2])
        # The wait's result shows the list (the navigate's may too, if the script ran first).
        shown = [
            e["id"] for e in await client.sync(browsing)
            if e["type"] == "tool.result" and "item three" in json.dumps(e["payload"])
        ]  # fmt: skip
        assert shown
        await client.call("session.end", {"sessionId": browsing})

        llm.add(
            Response([ToolUse("Recall", {"query": "item three"}, id="toolu_recall")]),
            Response([Text("It was in the list.")]),
        )
        searcher = await new_session(client, tmp_path)
        await run_message(client, searcher, "what did the list say?")
        found = last_result_text(llm.requests[-1])
        cited = [f"session {browsing} · event {i} · tool.result" for i in shown]
        [first] = [c for c in cited if c in found][:1] or [None]
        assert first is not None, found
        assert "item" in found.split(first, 1)[1].splitlines()[1]  # its snippet

        hits = await client.call(
            "memory.search", {"query": "item three", "workingDirectory": str(tmp_path)}
        )
        assert set(shown) & {h["eventId"] for h in hits["hits"]}
