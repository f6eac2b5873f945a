"""The server's managers, handed to every method through ``RpcContext.services``.

A method declares the ones it needs (``needs=("store", "orchestrator")``); one
that is None answers -32002 (manager not available).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .hub import Hub
from .settings import Settings

if TYPE_CHECKING:
    from tron_events import AsyncEventStore

    from .rpc.registry import MethodRegistry

log = logging.getLogger("tron_server.services")


def server_version() -> str:
    """The installed tron-server version."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tron-server")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0.0.0"


@dataclass
class Services:
    """Everything the methods use. Built by the app's lifespan (or by a test)."""

    settings: Settings
    store: AsyncEventStore | None
    hub: Hub
    #: tron_server.agent.orchestrator.Orchestrator, when the agent runtime is installed.
    orchestrator: Any | None = None
    #: tron_server.tools.ToolRegistry
    tools: Any | None = None
    #: (working_directory, record) -> HookEngine, when the hooks package is present.
    hooks_factory: Callable[..., Any] | None = None
    #: (provider name, model) -> tron_llm Provider.
    providers: Callable[[str, str], Any] | None = None
    #: The methods this server answers (system.info lists them).
    registry: MethodRegistry | None = None
    version: str = ""

    def __post_init__(self) -> None:
        if not self.version:
            self.version = server_version()

    @property
    def home(self) -> Path:
        return self.settings.home


# -- building the services of a running server ------------------------------------------


async def open_services(settings: Settings, registry: MethodRegistry | None = None) -> Services:
    """Open the store (created and migrated if needed) and build every manager present.

    The agent runtime, the tools, the hooks and the provider factory are
    optional parts (other packages of this tree); the ones that are missing
    leave their service None and the methods needing them answer -32002.
    """
    from tron_events import AsyncEventStore

    store = await AsyncEventStore.open(settings.resolved_database_url())
    services = Services(settings=settings, store=store, hub=Hub(store), registry=registry)
    services.tools = _optional("tron_server.tools", "default_tools")
    services.hooks_factory = _hooks_factory(settings)
    services.providers = _provider_factory(settings)
    services.orchestrator = build_orchestrator(services)
    return services


def build_orchestrator(services: Services) -> Any | None:
    """The agent runtime's Orchestrator, or None when tron_server.agent is not installed.

    Optional constructor arguments are passed only if the Orchestrator takes
    them, so the two packages can evolve separately.
    """
    import inspect

    cls = _optional_attr("tron_server.agent.orchestrator", "Orchestrator")
    if cls is None or services.store is None:
        return None
    if services.providers is None or services.tools is None:
        log.warning("agent runtime present but providers or tools are missing: agent.* disabled")
        return None
    accepted = inspect.signature(cls).parameters
    optional: dict[str, Any] = {
        "home": services.settings.home,
        "hooks_factory": services.hooks_factory,
        "settings": services.settings,
        "auto_compact_threshold": services.settings.auto_compact_threshold,
    }
    kwargs = {k: v for k, v in optional.items() if k in accepted}
    return cls(
        services.store, services.providers, services.tools, None, services.hub.emit, **kwargs
    )


def _provider_factory(settings: Settings) -> Callable[[str, str], Any] | None:
    make = _optional_attr("tron_server.providers", "ProviderFactory")
    return make(settings) if make is not None else None


def _hooks_factory(settings: Settings) -> Callable[[Path, Any], Any] | None:
    build = _optional_attr("tron_server.hooks", "build_hook_engine")
    if build is None:
        return None

    def factory(working_directory: Path, record: Any) -> Any:
        return build(working_directory, settings.home, record)

    return factory


def _optional(module: str, name: str) -> Any | None:
    fn = _optional_attr(module, name)
    return fn() if fn is not None else None


def _optional_attr(module: str, name: str) -> Any | None:
    """``module.name``, or None when that module (not one it imports) does not exist."""
    import importlib

    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module.startswith(exc.name):
            log.info("optional part %s not installed", module)
            return None
        raise
    return getattr(mod, name, None)


async def stop_runtime(services: Services) -> None:
    """Stop the agent runtime: running turns are aborted and recorded (the store stays open)."""
    if services.orchestrator is not None:
        try:
            await services.orchestrator.shutdown()
        except Exception:
            log.exception("orchestrator shutdown failed")
    close = getattr(services.providers, "aclose", None)
    if close is not None:
        try:
            await close()
        except Exception:
            log.exception("closing the providers failed")


__all__ = [
    "Services",
    "build_orchestrator",
    "open_services",
    "server_version",
    "stop_runtime",
]
