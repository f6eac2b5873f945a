"""context.*: how full a session's context is, and compaction (now or as a preview)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..agent import Orchestrator
from ..agent.compaction import compact_session, context_usage
from ..errors import AgentBusyError
from ..rpc import MethodRegistry, Params, RpcContext

__all__ = ["register"]


class SessionParams(Params):
    session_id: str = Field(min_length=1)


def _orchestrator(ctx: RpcContext) -> Orchestrator:
    orchestrator = ctx.services.orchestrator
    assert isinstance(orchestrator, Orchestrator)
    return orchestrator


def register(registry: MethodRegistry) -> None:
    """Add the context.* methods to ``registry``."""

    @registry.method(
        "context.get",
        SessionParams,
        description="Token use of the session's context against its model's window.",
    )
    async def get(ctx: RpcContext, p: SessionParams) -> dict[str, Any]:
        store = ctx.services.store
        assert store is not None
        usage = await context_usage(store, p.session_id)
        totals = (await store.get_state_at_head(p.session_id)).token_usage
        return {
            "model": usage.model,
            "contextWindow": usage.context_window,
            "usedTokens": usage.used_tokens,
            "percent": usage.percent,
            "tokenUsage": {
                "inputTokens": totals.input_tokens,
                "outputTokens": totals.output_tokens,
                "cacheReadTokens": totals.cache_read_tokens,
                "cacheCreationTokens": totals.cache_creation_tokens,
            },
        }

    @registry.method(
        "context.compact",
        SessionParams,
        description="Summarize the history with the session's model (compact.summary); "
        "later turns start from the summary, the raw events stay searchable.",
        needs=("store", "orchestrator"),
    )
    async def compact(ctx: RpcContext, p: SessionParams) -> dict[str, Any]:
        orchestrator = _orchestrator(ctx)
        if orchestrator.is_running(p.session_id):
            raise AgentBusyError(
                f"cannot compact session {p.session_id!r} while its agent is running; "
                "wait for agent.complete or call agent.abort"
            )
        result = await compact_session(orchestrator, p.session_id, record=True)
        return result.to_json()

    @registry.method(
        "context.previewCompaction",
        SessionParams,
        description="The summary compaction would produce and the tokens it saves; "
        "records nothing.",
        needs=("store", "orchestrator"),
    )
    async def preview(ctx: RpcContext, p: SessionParams) -> dict[str, Any]:
        result = await compact_session(_orchestrator(ctx), p.session_id, record=False)
        return result.to_json()
