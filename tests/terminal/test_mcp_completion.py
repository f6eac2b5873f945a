"""``@`` in ``tron``'s input completes an MCP server's resources (``@server:uri``), from
``mcp.list``, and ``/mcp`` shows the servers and approves one; the real app, headless, on a
real tron-server and real stdio servers (server-everything, the marker server)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.mcp.servers import marker_server, started, stdio, write_mcp_json
from tests.support.scripted_llm import Response, Text
from tests.terminal.conftest import TronEnv
from tests.terminal.test_app_pilot import run_app, until
from tron_server.client import TronClient
from tron_server.terminal.app import TronApp
from tron_server.terminal.commands import Command, mention_word, parse_mentions
from tron_server.terminal.widgets import TextItem


def test_mention_words_and_the_listing() -> None:
    assert mention_word("read @ev:demo") == "ev:demo"
    assert mention_word("read @") == ""
    assert mention_word("mail me@example.com") is None
    assert mention_word("@ev:x ") is None
    listing = {"servers": [{"resources": [{"mention": "@ev:demo://a", "name": "a.md"}]},
                           {"resources": []}]}  # fmt: skip
    assert parse_mentions(listing) == [Command("ev:demo://a", "a.md", "mention")]


def test_at_completes_resources(env: TronEnv, everything: Path) -> None:
    project = env.project("mentions")
    write_mcp_json(project, {"ev": stdio(everything, "stdio")})
    (env.server.home / "settings.json").write_text(json.dumps({"enableAllProjectMcpServers": True}))

    async def list_once() -> None:  # the server lists its resources once
        async with TronClient.connect(env.server.ws_url, token=env.server.token) as client:
            await client.call("trust.set", {"path": str(project), "trusted": True})
            await client.call("mcp.list", {"workingDirectory": str(project)})

    asyncio.run(list_once())

    async def body(app: TronApp, pilot: Any) -> None:
        await until(lambda: bool(app.chat.completer.mentions), pilot)
        await pilot.press(*"see @ev:demo://resource/static/document/arch")
        await until(lambda: bool(app.chat.completer.shown), pilot)
        assert [c.name for c in app.chat.completer.shown] == [
            "ev:demo://resource/static/document/architecture.md"]  # fmt: skip
        await pilot.press("tab")
        expected = "see @ev:demo://resource/static/document/architecture.md "
        assert app.chat.input.text == expected and app.chat.completer.shown == []

    run_app(env, project, body)


def test_slash_mcp_shows_the_servers_and_approves_one(env: TronEnv) -> None:
    project = env.project("slash-mcp")
    marker = env.root / "slash-mcp-started"
    write_mcp_json(project, {"mark": marker_server(marker)})
    settings = env.server.home / "settings.json"  # the module's server: another test's key goes
    data = json.loads(settings.read_text()) if settings.exists() else {}
    data.pop("enableAllProjectMcpServers", None)
    settings.write_text(json.dumps(data))

    async def trust() -> None:  # as the question on first open would, answered "trust"
        async with TronClient.connect(env.server.ws_url, token=env.server.token) as client:
            await client.call("trust.set", {"path": str(project), "trusted": True})

    asyncio.run(trust())
    env.llm.add(Response([Text("hi")]))

    def said(text: str, app: TronApp) -> bool:
        return any(text in note.text for note in app.chat.notes)

    async def body(app: TronApp, pilot: Any) -> None:
        app.chat.input.load_text("hello")  # /mcp is the session's: there is one from here
        await pilot.press("enter")
        await until(lambda: "hi" in [w.shown for w in app.chat.transcript.query(TextItem)], pilot)
        await until(lambda: app.chat.model is not None and not app.chat.model.busy, pilot)
        app.chat.input.load_text("/mcp")
        await pilot.press("enter")
        await until(lambda: said("mark  needs-approval", app), pilot)
        assert said("approve it with /mcp approve mark", app)
        app.chat.input.load_text("/mcp approve mark")
        await pilot.press("enter")
        await until(lambda: said("MCP server mark: approved", app), pilot)
        assert said("(now idle).", app)  # usable; it starts when first used

    run_app(env, project, body)
    assert len(started(marker)) <= 1  # started at most once, when first used
