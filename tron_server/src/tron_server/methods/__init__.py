"""The JSON-RPC methods, one module per namespace, each with ``register(registry)``.

session, events, system and model are always there; agent and context (the
agent runtime's methods) are registered when their modules are installed.
"""

from __future__ import annotations

import importlib
import logging

from ..rpc import MethodRegistry
from . import events, mcp, model, session, system, workspace

log = logging.getLogger("tron_server.methods")

#: Method modules of optional parts, registered when importable.
OPTIONAL_MODULES = (
    "tron_server.methods.agent",
    "tron_server.methods.context",
    "tron_server.methods.interaction",
)


def build_registry() -> MethodRegistry:
    """A registry with every available method."""
    registry = MethodRegistry()
    for module in (session, events, system, model, workspace, mcp):
        module.register(registry)
    for name in OPTIONAL_MODULES:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            log.info("optional methods %s not installed", name)
            continue
        mod.register(registry)
    return registry


__all__ = ["OPTIONAL_MODULES", "build_registry"]
