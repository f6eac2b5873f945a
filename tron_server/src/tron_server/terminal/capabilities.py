"""What this server offers, learned through the protocol (never assumed).

``system.info`` lists the server's methods: a client feature that needs a method
is on only when the server has it (``command.list`` for slash commands,
``agent.respond`` for questions and approvals, a mode method for permission
modes). A parameter a method may or may not take (``maxTurns``) is probed with
a call that cannot act: the server validates params before it does anything,
and refuses unknown ones (``-32602``, ``extra_forbidden``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..client import RpcCallError, TronClient

#: Methods that set a session's permission mode, in the order they are looked for
#: (the interaction work names it; the client uses whichever the server lists).
MODE_METHODS = ("session.setMode", "permissions.setMode", "session.setPermissionMode", "mode.set")
#: Methods that list the permission modes a server offers.
MODE_LIST_METHODS = ("mode.list", "permissions.modes", "session.modes")

_PROBE_SESSION = "sess_tron_capability_probe"


@dataclass(frozen=True)
class Capabilities:
    """``system.info`` of the server the client is attached to."""

    info: dict[str, Any] = field(default_factory=dict)

    @property
    def methods(self) -> frozenset[str]:
        return frozenset(self.info.get("methods") or ())

    def has(self, method: str) -> bool:
        return method in self.methods

    @property
    def mode_method(self) -> str | None:
        return next((m for m in MODE_METHODS if self.has(m)), None)

    @property
    def mode_list_method(self) -> str | None:
        return next((m for m in MODE_LIST_METHODS if self.has(m)), None)

    @property
    def default_provider(self) -> str:
        return str(self.info.get("defaultProvider") or "")

    @property
    def version(self) -> str:
        return str(self.info.get("version") or "")


async def load(client: TronClient) -> Capabilities:
    """The server's ``system.info``."""
    info = await client.call("system.info")
    return Capabilities(info if isinstance(info, dict) else {})


async def accepts_param(
    client: TronClient,
    method: str,
    name: str,
    value: Any,
    base: dict[str, Any] | None = None,
) -> bool:
    """Whether ``method`` takes the param ``name`` (camelCase), asked with a call on a
    session that does not exist: it is refused either way, and does nothing.
    ``base`` is the rest of a valid call (default: ``agent.message``'s)."""
    params = dict(base if base is not None else {"content": ""})
    params.update({"sessionId": _PROBE_SESSION, name: value})
    try:
        await client.call(method, params)
    except RpcCallError as exc:
        return not unknown_param(exc, name)
    return True


def unknown_param(exc: RpcCallError, name: str) -> bool:
    """Whether the server refused a call for holding the param ``name`` it does not know
    (-32602, ``extra_forbidden`` on that field): an older server."""
    if exc.code != -32602:
        return False
    errors = exc.data.get("errors") or []
    return any(
        isinstance(e, dict) and e.get("field") == name and e.get("type") == "extra_forbidden"
        for e in errors
    )


__all__ = [
    "MODE_LIST_METHODS",
    "MODE_METHODS",
    "Capabilities",
    "accepts_param",
    "load",
    "unknown_param",
]
