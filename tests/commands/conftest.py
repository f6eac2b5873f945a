"""The interaction tests' server fixtures (a real server on the scripted LLM)."""

from __future__ import annotations

from tests.interaction.conftest import anyio_backend, llm, make_server, server, server_factory

__all__ = ["anyio_backend", "llm", "make_server", "server", "server_factory"]
