"""The JSON-RPC methods, one module per namespace, each with ``register(registry)``.

:func:`register` adds them all; the server's full registry (these, then the slash
commands installing themselves) is :func:`tron_server.app.build_registry`.
"""

from __future__ import annotations

from ..rpc import MethodRegistry
from . import (
    agent,
    context,
    events,
    files,
    interaction,
    mcp,
    memory,
    model,
    session,
    system,
    trust,
    workspace,
)

#: The method modules, in registration order.
MODULES = (
    session,
    events,
    system,
    model,
    workspace,
    trust,
    agent,
    context,
    interaction,
    mcp,
    files,
    memory,
)


def register(registry: MethodRegistry) -> None:
    """Add every method of every module to ``registry``."""
    for module in MODULES:
        module.register(registry)


__all__ = ["MODULES", "register"]
