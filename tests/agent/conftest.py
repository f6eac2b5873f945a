"""The agent-runtime tests' fixture: ``h``, a :class:`~tests.agent.harness.Harness` (a
real SQLite store, the scripted LLM behind the real Anthropic adapter, test tools)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.agent.harness import EchoTool, Harness, SlowTool, no_sleep
from tests.support.scripted_llm import scripted_llm
from tron_events import AsyncEventStore
from tron_llm import RetryPolicy
from tron_llm.anthropic import AnthropicProvider
from tron_server.agent import Orchestrator
from tron_server.hooks.base import HookEngine
from tron_server.tools import Read
from tron_server.tools.base import ToolRegistry


@pytest.fixture
async def h(tmp_path: Path) -> AsyncIterator[Harness]:
    store = await AsyncEventStore.open(f"sqlite:///{tmp_path / 'agent.db'}")
    async with scripted_llm() as llm:
        provider = AnthropicProvider(
            api_key="test-key",
            base_url=llm.base_url,
            retry=RetryPolicy(max_retries=2, sleep=no_sleep),
        )
        echo, slow = EchoTool(), SlowTool()
        notes: list[tuple[str, str, dict[str, Any]]] = []
        orch = Orchestrator(
            store,
            lambda _provider, _model: provider,
            ToolRegistry([echo, slow, Read()]),
            HookEngine(),
            lambda method, sid, data: notes.append((method, sid, data)),
            home=tmp_path / "home",
        )
        h = Harness(store, llm, orch, tmp_path, echo, slow, notes)
        try:
            yield h
        finally:
            await orch.shutdown(timeout=5)
            await provider.aclose()
            await store.aclose()
