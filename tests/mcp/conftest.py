"""The MCP tests' fixtures: the real servers (installed into the user's cache), a real
tron-server on the scripted LLM in the default permission mode, and helpers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.interaction.conftest import make_server, server  # noqa: F401
from tests.mcp.servers import HttpServer, everything_entry, time_server
from tests.server.conftest import llm, server_factory  # noqa: F401


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def everything() -> Path:
    """server-everything's ``dist/index.js``."""
    return everything_entry()


@pytest.fixture(scope="session")
def time_program() -> Path:
    """The ``mcp-server-time`` program."""
    return time_server()


@pytest.fixture
def everything_http(everything: Path) -> Iterator[HttpServer]:
    server = HttpServer(everything, "streamableHttp")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def everything_sse(everything: Path) -> Iterator[HttpServer]:
    server = HttpServer(everything, "sse")
    try:
        yield server
    finally:
        server.stop()


def stdio(entry: Path, *args: str, **extra: Any) -> dict[str, Any]:
    """A ``.mcp.json`` entry running server-everything (or a node script) over stdio."""
    return {"command": "node", "args": [str(entry), *args], **extra}


def write_mcp_json(folder: Path, servers: dict[str, Any]) -> Path:
    path = folder / ".mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}, indent=2))
    return path


def approve_all(home: Path) -> None:
    """``enableAllProjectMcpServers`` in the server's own settings (its home)."""
    path = home / "settings.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    data["enableAllProjectMcpServers"] = True
    path.write_text(json.dumps(data))
