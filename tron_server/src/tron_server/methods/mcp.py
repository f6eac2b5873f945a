"""MCP servers over RPC: ``mcp.list``, ``mcp.approve``, ``mcp.setSessionServers``.

``mcp.list {sessionId? | workingDirectory?, connect?}`` lists the servers a folder (or a
session: its folder plus its own servers) has, with scope, transport, status (``connected``,
``connecting``, ``idle``, ``failed``, ``needs-approval``, ``disabled``), error and stderr
tail, and their tools, prompts and resources; ``connect`` (default true) starts the usable
ones first. ``mcp.approve {workingDirectory, server, approved}`` remembers the user's answer
for a project server (or switches a server of any scope off or on for that folder).
``mcp.setSessionServers {sessionId, mcpServers}`` gives a session servers of its own (an
editor's, through ACP), as ``session.create``'s ``mcpServers`` does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from ..errors import InvalidParams, ManagerUnavailableError
from ..mcp import ConfigError, McpManager, parse_server
from ..rpc import MethodRegistry, Params, RpcContext

__all__ = ["check_servers", "register"]


class ListParams(Params):
    session_id: str | None = Field(default=None, min_length=1)
    working_directory: str | None = Field(default=None, min_length=1)
    connect: bool = True

    @model_validator(mode="after")
    def _one(self) -> ListParams:
        if (self.session_id is None) == (self.working_directory is None):
            raise ValueError("give sessionId or workingDirectory (one of them)")
        return self


class ApproveParams(Params):
    working_directory: str = Field(min_length=1)
    server: str = Field(min_length=1, max_length=64)
    approved: bool


class SessionServersParams(Params):
    session_id: str = Field(min_length=1)
    mcp_servers: dict[str, Any]


def manager(ctx: RpcContext) -> McpManager:
    found = ctx.services.mcp
    if found is None:
        raise ManagerUnavailableError("this server runs no MCP client")
    return found


def _folder(text: str) -> Path:
    path = Path(text).expanduser()
    if not path.is_absolute():
        raise InvalidParams("workingDirectory must be an absolute path")
    return path.resolve()


def check_servers(servers: dict[str, Any]) -> None:
    """Refuse (-32602) a ``mcpServers`` object with an entry that cannot be used."""
    problems = [
        parsed.error
        for name, raw in servers.items()
        if (parsed := parse_server(str(name), raw, "session", "mcpServers")).error
    ]
    if problems:
        raise InvalidParams("; ".join(str(p) for p in problems), {"errors": problems})


async def session_folder(ctx: RpcContext, session_id: str) -> Path:
    store = ctx.services.store
    assert store is not None
    session = await store.get_session(session_id)
    return Path(session.working_directory)


def register(registry: MethodRegistry) -> None:
    """Add mcp.list, mcp.approve and mcp.setSessionServers."""

    @registry.method(
        "mcp.list",
        ListParams,
        description="The MCP servers of a session or folder: scope, transport, status, error, "
        "tools, prompts and resources (connect: start the usable ones first).",
        needs=("store", "mcp"),
    )
    async def list_servers(ctx: RpcContext, p: ListParams) -> dict[str, Any]:
        if p.session_id is not None:
            folder = await session_folder(ctx, p.session_id)
        else:
            assert p.working_directory is not None
            folder = _folder(p.working_directory)
        return await manager(ctx).describe(folder, p.session_id, connect=p.connect)

    @registry.method(
        "mcp.approve",
        ApproveParams,
        description="Approve (or refuse) a project MCP server for a folder, remembered; for "
        "a server of another scope, switch it on (or off) for that folder.",
        needs=("mcp",),
    )
    async def approve(ctx: RpcContext, p: ApproveParams) -> dict[str, Any]:
        folder = _folder(p.working_directory)
        mcp = manager(ctx)
        views, _ = mcp.view(folder)
        if not any(v.config.name == p.server for v in views):
            known = ", ".join(v.config.name for v in views) or "none"
            raise InvalidParams(
                f"no MCP server {p.server!r} is configured for {folder} (configured: {known})",
                {"server": p.server},
            )
        try:
            mcp.approve(folder, p.server, p.approved)
        except (ConfigError, OSError) as exc:
            raise InvalidParams(f"the answer could not be remembered: {exc}") from None
        listing = await mcp.describe(folder, connect=False)
        server = next(s for s in listing["servers"] if s["name"] == p.server)
        return {"workingDirectory": str(folder), "server": server}

    @registry.method(
        "mcp.setSessionServers",
        SessionServersParams,
        description="Give a session MCP servers of its own (Claude Code's mcpServers shape), "
        "replacing those it had; an editor's servers through ACP.",
        needs=("store", "mcp"),
    )
    async def set_session_servers(ctx: RpcContext, p: SessionServersParams) -> dict[str, Any]:
        await session_folder(ctx, p.session_id)  # -32000 for an unknown session
        check_servers(p.mcp_servers)
        manager(ctx).set_session_servers(p.session_id, p.mcp_servers)
        return {"sessionId": p.session_id, "servers": sorted(p.mcp_servers)}
