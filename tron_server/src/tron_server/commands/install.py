"""The commands package on the method registry: ``command.list``, and ``agent.message``
routing a text that starts with ``/`` to :func:`.router.run_command_message`.

The commands sit above the methods (they send messages and call methods), so the
methods never import them: :func:`register` puts the router in front of the
``agent.message`` that :mod:`tron_server.methods.agent` registered.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from ..methods.agent import AgentMessageParams
from ..rpc import MethodRegistry, Params, RpcContext
from ..rpc.registry import Handler
from .router import command_list, run_command_message

__all__ = ["CommandListParams", "register"]


class CommandListParams(Params):
    """The commands of a session's working directory, or of ``workingDirectory``; with
    neither, the built-ins and the home folder's commands."""

    session_id: str | None = Field(default=None, min_length=1)
    working_directory: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _not_both(self) -> CommandListParams:
        if self.session_id is not None and self.working_directory is not None:
            raise ValueError("give sessionId or workingDirectory, not both")
        return self


def _is_command(content: str | list[dict[str, Any]]) -> bool:
    return isinstance(content, str) and content.lstrip().startswith("/")


def _route_commands(send_message: Handler) -> Handler:
    """``agent.message`` with slash commands: a ``/…`` text goes to the router (which
    sends what is not really a command, ``/usr/bin/env …``, as a message)."""

    async def message(ctx: RpcContext, p: AgentMessageParams) -> dict[str, Any]:
        content = p.message()
        if not isinstance(content, str) or not _is_command(content):
            result: dict[str, Any] = await send_message(ctx, p)
            return result
        ctx.services.runtime.agent()  # -32002 before anything else when there is no runtime
        # Subscribe first so the caller sees the very first delta of the turn.
        await ctx.subscribe(p.session_id)
        return await run_command_message(ctx, p.session_id, content, p.queue, p.reasoning_level)

    return message


def register(registry: MethodRegistry) -> None:
    """Add ``command.list`` and route ``agent.message``'s slash commands (``agent.message``
    must be registered already)."""
    registry.wrap("agent.message", _route_commands)

    @registry.method(
        "command.list",
        CommandListParams,
        description="The slash commands: built-ins and Markdown command files "
        "(~/.tron/commands, .claude/commands, .tron/commands) and MCP servers' prompts "
        "(/mcp__server__prompt), with descriptions.",
    )
    async def list_commands(ctx: RpcContext, p: CommandListParams) -> dict[str, Any]:
        working_directory: Path | None = None
        if p.working_directory is not None:
            working_directory = Path(p.working_directory).expanduser()
        elif p.session_id is not None:
            store = ctx.services.store
            assert store is not None
            session = await store.get_session(p.session_id)
            working_directory = Path(session.working_directory)
        return {"commands": command_list(ctx, working_directory, p.session_id)}
