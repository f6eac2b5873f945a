"""agent.*: send a message (the loop runs in the background), abort, catch up."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from ..agent import Orchestrator
from ..errors import ManagerUnavailableError
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


def _orchestrator(ctx: RpcContext) -> Orchestrator:
    orchestrator = ctx.services.orchestrator
    if orchestrator is None:  # pragma: no cover - needs=() checks it first
        raise ManagerUnavailableError("the agent runtime is not running")
    assert isinstance(orchestrator, Orchestrator)
    return orchestrator


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
        orchestrator = _orchestrator(ctx)
        # Subscribe first so the caller sees the very first delta of the turn.
        await ctx.subscribe(p.session_id)
        return await orchestrator.send_message(
            p.session_id,
            p.message(),
            queue=p.queue,
            reasoning_level=p.reasoning_level,
            max_turns=p.max_turns,
        )

    @registry.method(
        "agent.abort",
        SessionParams,
        description="Stop the running turn (stream and tools) and drop queued messages.",
        needs=AGENT_NEEDS,
    )
    async def abort(ctx: RpcContext, p: SessionParams) -> dict[str, Any]:
        return {"aborted": await _orchestrator(ctx).abort(p.session_id)}

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
        return _orchestrator(ctx).get_state(p.session_id)
