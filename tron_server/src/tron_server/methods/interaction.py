"""Permission modes and rules over RPC.

``session.setMode`` records ``config.permission_mode`` (also while the agent runs: the
next tool call follows it) and announces ``session.mode_changed`` to every client;
``mode.list`` lists the modes; ``permissions.get`` the rules that apply to a session and
where each comes from. (``command.list`` is the commands package's: :mod:`tron_server.commands`.)
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..errors import ManagerUnavailableError
from ..interaction import Interaction
from ..protocol import SESSION_MODE_CHANGED
from ..rpc import MethodRegistry, NoParams, Params, RpcContext
from .session import session_details

__all__ = ["register", "set_mode"]


class SetModeParams(Params):
    session_id: str = Field(min_length=1)
    mode: str = Field(min_length=1, max_length=40)


class SessionParams(Params):
    session_id: str = Field(min_length=1)


def _interaction(ctx: RpcContext) -> Interaction:
    interaction = ctx.services.interaction
    if interaction is None:
        raise ManagerUnavailableError("permission modes are not available in this server")
    return interaction


async def set_mode(ctx: RpcContext, session_id: str, mode: str) -> dict[str, Any]:
    """Switch the session's mode and tell every client (``session.mode_changed``)."""
    interaction = _interaction(ctx)
    previous, new = await interaction.set_mode(session_id, mode)
    store = ctx.services.store
    assert store is not None
    session = await session_details(store, await store.get_session(session_id))
    session["permissionMode"] = new
    ctx.services.hub.publish(
        session_id,
        SESSION_MODE_CHANGED,
        {"sessionId": session_id, "previousMode": previous, "mode": new, "session": session},
    )
    return {"sessionId": session_id, "previousMode": previous, "mode": new}


def register(registry: MethodRegistry) -> None:
    """Add session.setMode, mode.list, permissions.get and command.list."""

    @registry.method(
        "session.setMode",
        SetModeParams,
        description="Set the session's permission mode: default, acceptEdits, plan, dontAsk, "
        "or bypassPermissions (only on a server started with --allow-bypass-permissions).",
        needs=("store", "interaction"),
    )
    async def set_mode_(ctx: RpcContext, p: SetModeParams) -> dict[str, Any]:
        return await set_mode(ctx, p.session_id, p.mode)

    @registry.method(
        "mode.list",
        NoParams,
        description="The permission modes, whether this server allows each, and the order "
        "a client cycles through them (Shift+Tab).",
        needs=("interaction",),
    )
    async def list_modes(ctx: RpcContext, p: NoParams) -> dict[str, Any]:
        return {"modes": _interaction(ctx).modes(), "default": "default"}

    @registry.method(
        "permissions.get",
        SessionParams,
        description="The session's mode and every permission rule that applies to it "
        "(settings files, and this session's 'allow always' answers), with its source.",
        needs=("store", "interaction"),
    )
    async def get_permissions(ctx: RpcContext, p: SessionParams) -> dict[str, Any]:
        return await _interaction(ctx).describe(p.session_id)
