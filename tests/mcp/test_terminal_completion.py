"""``@`` in ``tron``'s input completes an MCP server's resources (``@server:uri``), from
``mcp.list``; the real app, headless, on a real tron-server and server-everything."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.mcp.conftest import stdio, write_mcp_json
from tests.terminal.conftest import TronEnv, env, tron_env  # noqa: F401
from tests.terminal.test_app_pilot import run_app, until
from tron_server.client import TronClient
from tron_server.terminal.app import TronApp
from tron_server.terminal.commands import Command, mention_word, parse_mentions


def test_mention_words_and_the_listing() -> None:
    assert mention_word("read @ev:demo") == "ev:demo"
    assert mention_word("read @") == ""
    assert mention_word("mail me@example.com") is None
    assert mention_word("@ev:x ") is None
    listing = {"servers": [{"resources": [{"mention": "@ev:demo://a", "name": "a.md"}]},
                           {"resources": []}]}  # fmt: skip
    assert parse_mentions(listing) == [Command("ev:demo://a", "a.md", "mention")]


def test_at_completes_resources(env: TronEnv, everything: Path) -> None:  # noqa: F811
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
