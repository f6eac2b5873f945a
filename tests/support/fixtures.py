"""The fixtures every test folder may use: one pytest plugin, registered once by
``tests/conftest.py`` (``pytest_plugins``), so each xdist worker loads it as it loads
that conftest. A folder's conftest adds what only that folder needs, and may override a
fixture here by its name (``tests/interaction`` runs ``server`` in the default
permission mode, for instance).

Stores, on SQLite and PostgreSQL (each PostgreSQL test skips with the reason when the
server is absent)::

    def test_x(store): ...            # an EventStore, a fresh database on each backend
    async def test_y(astore): ...     # the same database as an AsyncEventStore
    def test_z(store_url): ...        # just the URL

Servers (see :mod:`tests.support.server`)::

    def test_x(running_server): ...                 # started with default settings
    def test_y(server_factory):
        server = server_factory(anthropic_base_url=llm.base_url)   # any Settings field
    async def test_z(client): await client.call("system.ping")     # TronClient on running_server
    async def test_w(server, llm): ...     # a server whose Anthropic provider is ``llm``
    async def test_v(make_server): ...     # make_server(**settings): default permission mode
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.servers import everything_entry
from tests.support import pg
from tests.support.scripted_llm import ScriptedLLM, scripted_llm
from tests.support.server import RunningServer, ServerFactory
from tests.support.stores import BACKENDS, make_url, skip_without_postgres
from tron_events import AsyncEventStore, EventStore
from tron_server.client import TronClient


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    """asyncio for every async test (websockets, the client and the store's async side are
    asyncio-based); session-scoped, so async fixtures of any scope may use it."""
    return "asyncio"


# -- stores ----------------------------------------------------------------------------


@pytest.fixture(scope="session")
def pg_template() -> Iterator[str]:
    """A migrated PostgreSQL database that per-test databases are copied from."""
    skip_without_postgres()
    name = pg.create_database(prefix="tron_template")
    try:
        EventStore.open(pg.url_for(name)).close()
        yield name
    finally:
        pg.drop_database(name)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    if name == "postgres":
        skip_without_postgres()
    return name


@pytest.fixture
def store_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    """A URL of a fresh, migrated database on each backend."""
    yield from make_url(backend, tmp_path, request)


@pytest.fixture
def store(store_url: str) -> Iterator[EventStore]:
    s = EventStore.open(store_url)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
async def astore(store: EventStore) -> AsyncIterator[AsyncEventStore]:
    """The ``store`` fixture (SQLite and PostgreSQL) as an AsyncEventStore."""
    yield AsyncEventStore(store)


# -- the scripted model and servers ----------------------------------------------------


@pytest.fixture
async def llm() -> AsyncIterator[ScriptedLLM]:
    """The scripted LLM on a port of its own (queue replies with ``llm.add``)."""
    async with scripted_llm() as served:
        yield served


@pytest.fixture
def server_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerFactory]:
    """``server_factory(**settings)`` starts a server (own temp home); stopped at the end."""
    servers: list[RunningServer] = []

    def make(**overrides: Any) -> RunningServer:
        home = Path(tmp_path_factory.mktemp("tron-home"))
        server = RunningServer(home, **overrides).start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


@pytest.fixture
def running_server(server_factory: ServerFactory) -> RunningServer:
    """A server with default settings (temp home, SQLite at home/database/prod.db)."""
    return server_factory()


@pytest.fixture
async def client(running_server: RunningServer) -> AsyncIterator[TronClient]:
    """A TronClient connected to ``running_server``."""
    async with running_server.connect() as c:
        yield c


@pytest.fixture
def server(
    server_factory: ServerFactory, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> RunningServer:
    """A server whose Anthropic provider is ``llm``; the other providers have no key."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    for var in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return server_factory(anthropic_base_url=llm.base_url)


@pytest.fixture
def make_server(
    server_factory: ServerFactory, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., RunningServer]:
    """``make_server(**settings)``: a server on the scripted LLM, in the default mode (it
    asks before anything that is not read-only) unless told otherwise."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")

    def make(**overrides: Any) -> RunningServer:
        options: dict[str, Any] = {
            "anthropic_base_url": llm.base_url,
            "default_model": "claude-sonnet-4-5",
            "default_permission_mode": "default",
            "allow_bypass_permissions": False,
        }
        options.update(overrides)
        return server_factory(**options)

    return make


# -- real MCP servers ------------------------------------------------------------------


@pytest.fixture(scope="session")
def everything() -> Path:
    """server-everything's ``dist/index.js`` (installed once into the user's cache)."""
    return everything_entry()
