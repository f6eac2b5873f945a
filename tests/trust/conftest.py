"""The trust tests' server (tests/support/fixtures.py has the rest): one in dontAsk mode
that would let a folder's bypassPermissions act; ``test_configuration_files`` overrides it."""

from __future__ import annotations

import pytest

from tests.support.scripted_llm import ScriptedLLM
from tests.support.server import RunningServer, ServerFactory


@pytest.fixture
def server(
    server_factory: ServerFactory,
    llm: ScriptedLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> RunningServer:
    """A server that would let a folder's bypassPermissions act (the worst case), in
    dontAsk mode: what no rule allows is refused, so a call that runs was let through by
    the folder."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    return server_factory(
        anthropic_base_url=llm.base_url,
        default_model="claude-sonnet-4-5",
        default_permission_mode="dontAsk",
        allow_bypass_permissions=True,
    )
