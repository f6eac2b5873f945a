"""agent.*: send a message (the loop runs in the background), abort, catch up, answer.

``agent.message`` whose text starts with ``/`` is a slash command: the commands package
installs itself in front of this method (:mod:`tron_server.commands`). A message to an
idle session whose stopped run left a question or an approval pending cancels that
request first (its turn is closed with results saying so). ``agent.respond`` answers a
pending request (:mod:`tron_server.interaction`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from ..errors import ManagerUnavailableError
from ..interaction import Interaction
from ..mcp import expand_mentions
from ..rpc import MethodRegistry, Params, RpcContext

__all__ = ["register"]

AGENT_NEEDS = ("store", "orchestrator")


class AgentMessageParams(Params):
    """``content`` (text or Anthropic-shaped blocks) or ``prompt`` (text), not both."""

    session_id: str = Field(min_length=1)
    content: str | list[dict[str, Any]] | None = None
    prompt: str | None = None
    queue: bool = False
    reasoning_level: Literal["low", "medium", "high", "xhigh"] | None = None
    max_turns: int | None = Field(default=None, ge=1)
    #: False: the caller gets the run's ``agent.*`` notifications but no ``events.new``
    #: (a client that only prints the reply; the server then reads nothing back for it).
    events: bool = True

    @model_validator(mode="after")
    def _one_content(self) -> AgentMessageParams:
        if (self.content is None) == (self.prompt is None):
            raise ValueError("give exactly one of content or prompt")
        return self

    def message(self) -> str | list[dict[str, Any]]:
        if self.content is not None:
            return self.content
        assert self.prompt is not None
        return self.prompt


class SessionParams(Params):
    session_id: str = Field(min_length=1)


class RespondParams(Params):
    """``answer``: text (or a list of texts for a multiSelect question), or for an approval
    ``{decision: "allow" | "allow_always" | "deny" | "deny_always", reason?}``."""

    session_id: str = Field(min_length=1)
    request_id: str = Field(min_length=1, max_length=100)
    answer: str | list[str] | dict[str, Any]


def _interaction(ctx: RpcContext) -> Interaction:
    interaction = ctx.services.interaction
    if interaction is None:
        raise ManagerUnavailableError("questions and approvals are not available in this server")
    return interaction


def register(registry: MethodRegistry) -> None:
    """Add the agent.* methods to ``registry``."""

    @registry.method(
        "agent.message",
        AgentMessageParams,
        description="Send a message; returns at once, output streams as agent.* notifications. "
        "A busy session answers -32003 unless queue is true.",
        needs=AGENT_NEEDS,
    )
    async def message(ctx: RpcContext, p: AgentMessageParams) -> dict[str, Any]:
        runtime = ctx.services.runtime
        runtime.agent()  # -32002 before anything else when there is no runtime
        # Subscribe first so the caller sees the very first delta of the turn.
        await ctx.subscribe(p.session_id, events=p.events)
        content = p.message()
        if isinstance(content, str) and "@" in content and ctx.services.mcp is not None:
            content = await _with_resources(ctx, p.session_id, content)
        return await runtime.send(
            p.session_id, content, queue=p.queue, reasoning_level=p.reasoning_level,
            max_turns=p.max_turns,
        )  # fmt: skip

    @registry.method(
        "agent.abort",
        SessionParams,
        description="Stop the running turn (stream and tools) and drop queued messages; on an "
        "idle session, end the question or approval a stopped run left pending.",
        needs=AGENT_NEEDS,
    )
    async def abort(ctx: RpcContext, p: SessionParams) -> dict[str, Any]:
        return {"aborted": await ctx.services.runtime.abort(p.session_id)}

    @registry.method(
        "agent.getState",
        SessionParams,
        description="The running turn so far (text, thinking, tool calls), for a late client.",
        needs=AGENT_NEEDS,
    )
    async def get_state(ctx: RpcContext, p: SessionParams) -> dict[str, Any]:
        store = ctx.services.store
        assert store is not None
        await store.get_session(p.session_id)  # -32000 for an unknown session
        state = ctx.services.runtime.agent().get_state(p.session_id)
        interaction = ctx.services.interaction
        state["pendingRequests"] = (
            await interaction.pending(p.session_id) if interaction is not None else []
        )
        return state

    @registry.method(
        "agent.respond",
        RespondParams,
        description="Answer a question or an approval the agent waits for (the first answer "
        "wins); after a restart, answering continues the turn.",
        needs=AGENT_NEEDS,
    )
    async def respond(ctx: RpcContext, p: RespondParams) -> dict[str, Any]:
        responder = ctx.connection.id if ctx.connection is not None else None
        await ctx.subscribe(p.session_id)  # the answerer sees the turn go on
        return await _interaction(ctx).respond(p.session_id, p.request_id, p.answer, responder)


async def send(
    ctx: RpcContext,
    session_id: str,
    content: str | list[dict[str, Any]],
    *,
    queue: bool = False,
    reasoning_level: str | None = None,
    **options: Any,
) -> dict[str, Any]:
    """:meth:`tron_server.runtime.Runtime.send` for an RPC call (kept for callers of old)."""
    return await ctx.services.runtime.send(
        session_id, content, queue=queue, reasoning_level=reasoning_level, **options
    )


async def _with_resources(
    ctx: RpcContext, session_id: str, content: str
) -> str | list[dict[str, Any]]:
    """``@server:uri`` mentions followed by the resources (:mod:`tron_server.mcp.mentions`)."""
    store = ctx.services.store
    assert store is not None
    session = await store.get_session(session_id)
    folder = Path(session.working_directory)
    return await expand_mentions(ctx.services.mcp, session_id, folder, content)
