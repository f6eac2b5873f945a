"""``@`` in the web chat's composer completes an MCP server's resources (Chromium, a real
tron-server and server-everything)."""

from __future__ import annotations

import json
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.mcp.servers import stdio, write_mcp_json
from tests.web._rpc import SyncRpc
from tests.web.conftest import WebEnv


def test_at_completes_resources_in_the_page(
    page: Page,
    web_env: WebEnv,
    everything: Path,
) -> None:
    env = web_env
    write_mcp_json(env.workdir, {"ev": stdio(everything, "stdio")})
    (env.server.home / "settings.json").write_text(json.dumps({"enableAllProjectMcpServers": True}))
    with SyncRpc(env.server.base_url, env.server.token) as rpc:
        rpc.call("trust.set", path=str(env.workdir), trusted=True)
        rpc.call("mcp.list", workingDirectory=str(env.workdir))  # lists the resources once
        sid = rpc.call("session.create", workingDirectory=str(env.workdir), title="At")["id"]
    page.evaluate(f"location.hash = '#s={sid}'")
    expect(page.get_by_test_id("session-title")).to_have_text("At")
    box = page.get_by_test_id("composer-input")
    box.fill("")
    box.type("see @ev:demo://resource/static/document/arch")
    menu = page.get_by_test_id("command-menu")
    expect(menu).to_be_visible()
    items = menu.get_by_test_id("command-item")
    expect(items).to_have_count(1)
    expect(items.nth(0)).to_contain_text("@ev:demo://resource/static/document/architecture.md")
    box.press("Tab")
    expect(box).to_have_value("see @ev:demo://resource/static/document/architecture.md ")
    expect(menu).to_be_hidden()
