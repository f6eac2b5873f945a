"""Fixtures of the trust tests that run a real server: the scripted LLM, and asyncio
(the server's client runs on it)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.server.scripted_llm import ScriptedLLM, scripted_llm


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def llm() -> AsyncIterator[ScriptedLLM]:
    async with scripted_llm() as scripted:
        yield scripted
