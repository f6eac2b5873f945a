"""The server's managers, handed to every method through ``RpcContext.services``.

A method declares the ones it needs (``needs=("store", "orchestrator")``); one
that is None answers -32002 (manager not available). Tests build partial
Services; ``open_services`` builds them all.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .runtime import Runtime
from .settings import Settings
from .version import server_version
from .workspace.editor import FileProviders

if TYPE_CHECKING:
    from tron_events import AsyncEventStore

    from .agent.orchestrator import Orchestrator
    from .cluster.node import ClusterNode
    from .interaction import Interaction
    from .mcp import McpManager
    from .providers import ProviderFactory
    from .tools import ToolRegistry
    from .workspace import Workspace

log = logging.getLogger("tron_server.services")


class Notifier(Protocol):
    """What the methods and the runtime use of the hub: :class:`tron_server.hub.Hub`, in
    the transport above, is the one a server runs (``conn``: its connections)."""

    def publish(
        self,
        session_id: str | None,
        method: str,
        data: Any,
        *,
        timestamp: str | None = None,
        also_to: str | None = None,
        lossy: bool = False,
    ) -> int: ...

    def emit(self, method: str, session_id: str, data: dict[str, Any]) -> None: ...

    async def subscribe(self, conn: Any, session_id: str, *, events: bool = True) -> None: ...

    def unsubscribe(self, conn: Any, session_id: str) -> bool: ...

    def drop_session(self, session_id: str) -> None: ...

    #: Called with a session's id when its last client left (its caches dropped).
    caches_dropped: list[Callable[[str], None]]


@dataclass
class Services:
    """Everything the methods use. Built by the app's lifespan (or by a test)."""

    settings: Settings
    store: AsyncEventStore | None
    #: Notifications to the clients (the transport's Hub).
    hub: Notifier
    #: The agent runtime (None in tests that run without one: agent.* answer -32002).
    orchestrator: Orchestrator | None = None
    tools: ToolRegistry | None = None
    #: (working_directory, record) -> HookEngine.
    hooks_factory: Callable[..., Any] | None = None
    #: (provider name, model) -> tron_llm Provider.
    providers: ProviderFactory | None = None
    #: Questions, approvals, permission modes (None: tools run without a permission gate).
    interaction: Interaction | None = None
    #: File recording, rewinds with files, diffs and worktrees.
    workspace: Workspace | None = None
    #: Clients serving a session's files (an editor's buffers: ``files.register``).
    files: FileProviders = field(default_factory=FileProviders)
    #: The MCP client: the folders' MCP servers and their tools.
    mcp: McpManager | None = None
    version: str = ""
    #: Issues a one-time login URL for the web chat (``system.loginUrl``); None
    #: without the web app (tests that build services alone).
    issue_login_url: Callable[[], str] | None = None
    #: This server among several on one PostgreSQL database (None: SQLite, or a test).
    cluster: ClusterNode | None = None

    def __post_init__(self) -> None:
        if not self.version:
            self.version = server_version()

    @property
    def home(self) -> Path:
        return self.settings.home

    @property
    def runtime(self) -> Runtime:
        """Send, abort, ensure-idle: what the methods and the commands call."""
        return Runtime(self.orchestrator, self.interaction, self.cluster)


# -- building the services of a running server ------------------------------------------


def import_runtime() -> None:
    """Import what :func:`open_services` builds the runtime from (the store, the agent, the
    tools, MCP, the providers), without building anything: ``tron-server`` does it in a
    thread while it already answers ``/health``, so that the event loop is not held by
    the imports. Importing is all it does: safe in any thread."""
    # anyio loads its asyncio backend at the first call that needs it (the store's first
    # worker thread): ~20 ms that would otherwise be spent in the event loop.
    import anyio._backends._asyncio  # noqa: F401

    import tron_events  # noqa: F401

    from . import agent, browser, hooks, interaction, mcp, providers, tools, workspace  # noqa: F401
    from .agent import orchestrator, subagents  # noqa: F401
    from .tools import browser as browser_tool  # noqa: F401
    from .tools import recall, webfetch  # noqa: F401


async def open_services(
    settings: Settings, new_hub: Callable[[AsyncEventStore], Notifier]
) -> Services:
    """Open the store (created and migrated if needed) and build every manager;
    ``new_hub(store)`` makes the hub (the transport's: ``tron_server.hub.Hub``)."""
    from tron_events import AsyncEventStore

    # The store first: a database that cannot be used is reported before the
    # runtime's imports are paid for.
    store = await AsyncEventStore.open(settings.resolved_database_url())

    from .agent.orchestrator import Orchestrator
    from .agent.subagents import SubagentSettings
    from .hooks import build_hook_engine
    from .interaction import AskUserTool, Interaction, NotifyTool
    from .mcp import McpManager, McpOptions
    from .providers import ProviderFactory
    from .tools import default_tools
    from .tools.recall import Recall
    from .workspace import Workspace

    services = Services(settings=settings, store=store, hub=new_hub(store))
    services.workspace = Workspace(
        store,
        settings.home,
        max_file_bytes=settings.workspace_max_file_bytes,
        watch_commands=settings.workspace_record_commands,
        max_files=settings.workspace_max_files,
    )
    services.tools = default_tools(services.workspace.recorder)
    services.providers = ProviderFactory(settings)

    def hooks_factory(working_directory: Path, record: Any) -> Any:
        return build_hook_engine(working_directory, settings.home, record)

    services.hooks_factory = hooks_factory
    services.mcp = McpManager(
        settings.home,
        claude_json=settings.resolved_claude_json(),
        options=McpOptions.from_environment(
            sampling=settings.mcp_sampling, client_version=services.version
        ),
        list_wait=settings.mcp_list_wait,
    )
    if settings.mcp_sampling:
        from .mcp.sampling import make_sampler

        services.mcp.sample = make_sampler(
            services.providers, settings.default_provider, settings.default_model
        )
    await services.mcp.start()
    services.orchestrator = Orchestrator(
        store,
        services.providers,
        services.tools,
        None,
        services.hub.emit,
        home=settings.home,
        hooks_factory=hooks_factory,
        auto_compact_threshold=settings.auto_compact_threshold,
        subagents=SubagentSettings(
            max_parallel=settings.subagent_max_parallel,
            max_depth=settings.subagent_max_depth,
            enabled=settings.subagent_max_depth > 0,
        ),
        mcp=services.mcp,
        memory=True,
        files=services.workspace.recorder,
    )
    # A session nobody has open keeps no checked history in memory (issue 29 goal 4).
    services.hub.caches_dropped.append(services.orchestrator.forget_history)
    interaction = Interaction(
        store,
        services.orchestrator,
        home=settings.home,
        timeout=settings.ask_timeout,
        allow_bypass=settings.allow_bypass_permissions,
        default_mode=settings.default_permission_mode,
    )
    services.orchestrator.attach_interaction(interaction)
    services.orchestrator.attach_editor_files(services.files.for_session)
    services.orchestrator.mcp_ask = interaction.ask
    services.interaction = interaction
    services.tools.register(AskUserTool(interaction))
    services.tools.register(NotifyTool(interaction))
    _add_web_tools(services)
    services.tools.register(Recall(store))
    services.cluster = _open_cluster(settings, services)
    # genai-prices loads its price snapshot on first use (~0.7 s): pay it in a thread
    # once the server answers, neither before it does nor in the first turn (which,
    # should it come first, waits for the import as any importer does).
    asyncio.get_running_loop().call_later(WARM_PRICES_AFTER, _warm_prices_in_background)
    # The adapters' TLS context (the CA bundle: tens of ms) before the first model call
    # needs it; OpenSSL reads the file without the GIL.
    threading.Thread(target=_warm_tls, name="tron-warm-tls", daemon=True).start()
    return services


def _open_cluster(settings: Settings, services: Services) -> ClusterNode | None:
    """On PostgreSQL, the node that shares the database with other servers (leases,
    forwarded calls, relayed notifications); the app's lifespan starts it."""
    url = settings.resolved_database_url()
    if not url.startswith("postgresql"):
        return None
    from tron_events.cluster import Cluster

    from .cluster.node import ClusterNode, new_server_id

    assert services.store is not None and services.orchestrator is not None
    cluster = Cluster(url, new_server_id(), ttl=settings.cluster_lease_seconds)
    node = ClusterNode(cluster, services.store, services.orchestrator, services.hub.emit)
    services.orchestrator.on_run_change = node.run_changed
    return node


#: Seconds after the services are built when genai-prices is loaded in the background.
WARM_PRICES_AFTER = 0.5


def _warm_prices_in_background() -> None:
    threading.Thread(target=_warm_prices, name="tron-warm-prices", daemon=True).start()


def _add_web_tools(services: Services) -> None:
    """WebFetch (answering prompts with the session's model) and the Browser, whose frames
    and status go to the session's subscribers (frames dropped for a client behind)."""
    from .browser import BrowserManager
    from .protocol import BROWSER_FRAME
    from .tools.browser import Browser
    from .tools.webfetch import SessionModelSummarizer, WebFetch

    assert services.tools is not None and services.store is not None
    assert services.providers is not None
    hub = services.hub

    def emit(method: str, session_id: str, data: dict[str, Any]) -> None:
        hub.publish(session_id, method, data, lossy=method == BROWSER_FRAME)

    services.tools.register(WebFetch(SessionModelSummarizer(services.store, services.providers)))
    manager = BrowserManager(emit, chromium=services.settings.chromium_path)
    services.tools.register(Browser(manager))


def _warm_tls() -> None:
    from tron_llm import shared_ssl_context

    shared_ssl_context()


def _warm_prices() -> None:
    from tron_llm import Usage, cost_usd

    try:
        cost_usd("anthropic", "claude-sonnet-4-5", Usage())
    except Exception:  # only a warm-up: the first real price says what is wrong
        log.debug("warming genai-prices failed", exc_info=True)


async def stop_runtime(services: Services) -> None:
    """Stop the agent runtime: running turns are aborted and recorded (the store stays open)."""
    if services.orchestrator is not None:
        try:
            await services.orchestrator.shutdown()
        except Exception:
            log.exception("orchestrator shutdown failed")
    if services.mcp is not None:
        try:
            await services.mcp.aclose()  # stdio servers are killed with their groups
        except Exception:
            log.exception("closing the MCP servers failed")
    if services.providers is not None:
        try:
            await services.providers.aclose()
        except Exception:
            log.exception("closing the providers failed")


__all__ = [
    "Services",
    "open_services",
    "server_version",
    "stop_runtime",
]
