"""Recall: the agent searches its own past, every session of this workspace.

Two uses, read-only (no approval needed, like Grep; a ``deny`` rule naming ``Recall``
still refuses it):

- ``{"query": "flaky migration"}``: full-text search of the workspace's past sessions
  (messages, thinking, tool calls and results, compaction summaries, handoffs; forks,
  sub-agents and imported Claude Code, Codex and pi sessions included), best first, each
  hit cited by session and event id with a snippet;
- ``{"event_id": "evt_…"}``: an excerpt around a hit, the events on the path to it and
  those after it in its session.

The search and the excerpt are :mod:`tron_server.memory.recall`'s.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tron_events import AsyncEventStore, SessionNotFound

from ..memory.recall import NotInWorkspace, excerpt, render_hits, search_workspace
from .base import Tool, ToolContext, ToolResult

__all__ = ["Recall", "RecallParams"]


class RecallParams(BaseModel):
    query: str | None = Field(
        default=None,
        description="Words to find in past sessions of this workspace (all must match; "
        "literal text, no operators).",
    )
    event_id: str | None = Field(
        default=None,
        description="An event id from a search result: show the events around it instead.",
    )
    limit: int = Field(default=10, ge=1, le=50, description="Most hits to return.")

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="after")
    def _one_of(self) -> RecallParams:
        if bool(self.query and self.query.strip()) == bool(self.event_id):
            raise ValueError("give either query (to search) or event_id (to read around a hit)")
        return self


class Recall(Tool[RecallParams]):
    """Search the workspace's past sessions, or read around one of their events."""

    name = "Recall"
    description = (
        "Search everything earlier sessions in this workspace said and did (messages, tool "
        "calls and results, compaction summaries, handoffs; forks, sub-agents and imported "
        "sessions included) with query, or read the events around a hit with event_id. "
        "Results cite session and event ids; use them when you rely on what you found."
    )
    Params = RecallParams

    def __init__(self, store: AsyncEventStore) -> None:
        self.store = store

    async def run(self, params: RecallParams, ctx: ToolContext) -> ToolResult:
        try:
            session = await self.store.get_session(ctx.session_id)
        except SessionNotFound:
            return ToolResult(f"Unknown session {ctx.session_id}.", is_error=True)
        workspace = session.workspace_id
        if params.event_id:
            try:
                text = await excerpt(self.store, params.event_id, workspace_id=workspace)
            except NotInWorkspace as exc:
                return ToolResult(f"{exc}. Search with query to find event ids.", is_error=True)
            return ToolResult(text, details={"eventId": params.event_id})
        query = (params.query or "").strip()
        hits = await search_workspace(
            self.store, query, workspace_id=workspace, limit=params.limit,
            current_session=ctx.session_id,
        )  # fmt: skip
        return ToolResult(
            render_hits(hits, query),
            details={"hits": [h.to_json() for h in hits]},
        )
