"""events.*: list, sync (paged catch-up after a sequence), search, subscribe, unsubscribe.

A client resumes by ``events.subscribe`` first, then ``events.sync`` from its
last sequence until ``hasMore`` is false, dropping ``events.new`` it already has.

``events.search`` gives one hit per place a user would go to: a tool call's
arguments are indexed twice (the assistant message's ``tool_use`` block and the
``tool.call`` event), so when both match, the assistant message's hit stands for
both and names the ``tool.call`` in its ``alsoIn``.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from tron_events import AsyncEventStore, SearchHit

from ..read_ahead import ReadAhead
from ..rpc import JsonText, MethodRegistry, Params, RpcContext, events_json


class EventsListParams(Params):
    session_id: str = Field(min_length=1)
    after_sequence: int | None = Field(default=None, ge=-1)
    types: list[str] | None = Field(default=None, max_length=100)
    limit: int = Field(default=1000, ge=1, le=10_000)


class EventsSyncParams(Params):
    session_id: str = Field(min_length=1)
    after_sequence: int = Field(default=-1, ge=-1)
    limit: int = Field(default=1000, ge=1, le=10_000)


class EventsSearchParams(Params):
    query: str = Field(max_length=10_000)
    workspace_id: str | None = None
    session_id: str | None = None
    types: list[str] | None = Field(default=None, max_length=100)
    limit: int = Field(default=20, ge=1, le=500)
    #: With sessionId: the session and its sub-agent sessions at any depth.
    include_descendants: bool = False

    @model_validator(mode="after")
    def _descendants_need_a_session(self) -> EventsSearchParams:
        if self.include_descendants and self.session_id is None:
            raise ValueError("includeDescendants needs a sessionId")
        return self


class EventsSubscribeParams(Params):
    session_id: str = Field(min_length=1)


def register(registry: MethodRegistry) -> None:
    """Add the events.* methods to ``registry``."""
    read_ahead = ReadAhead()

    @registry.method(
        "events.list",
        EventsListParams,
        description="A session's own events in sequence order (optionally after a sequence).",
    )
    async def list_(ctx: RpcContext, p: EventsListParams) -> dict[str, Any]:
        assert ctx.services.store is not None
        events = await ctx.services.store.get_events(
            p.session_id, after_sequence=p.after_sequence, types=p.types, limit=p.limit
        )
        return {"events": await events_json(events)}

    @registry.method(
        "events.sync",
        EventsSyncParams,
        description="A page of a session's own events after a sequence (resume after reconnect).",
    )
    async def sync(ctx: RpcContext, p: EventsSyncParams) -> dict[str, Any]:
        assert ctx.services.store is not None
        # The page's JSON is built by the database and forwarded unread, and
        # the next page is read while the client decodes this one.
        page = await read_ahead.page(
            ctx.services.store, ctx.connection, p.session_id, p.after_sequence, p.limit
        )
        return {
            "events": JsonText(page.events_json),
            "nextSequence": p.after_sequence if page.last_sequence is None else page.last_sequence,
            "nextCursor": page.next_cursor,
            "hasMore": page.has_more,
        }

    @registry.method(
        "events.search", EventsSearchParams, description="Full-text search, best match first."
    )
    async def search(ctx: RpcContext, p: EventsSearchParams) -> dict[str, Any]:
        store = ctx.services.store
        assert store is not None
        # Ask for more than the limit: collapsing tool calls may take some away.
        hits = await store.search(
            p.query,
            workspace_id=p.workspace_id,
            session_id=p.session_id,
            types=p.types,
            limit=min(2 * p.limit, 1000),
            include_descendants=p.include_descendants,
        )
        also = await _tool_calls_in_messages(store, hits)
        return {
            "hits": [
                {
                    "eventId": h.event_id,
                    "sessionId": h.session_id,
                    "workspaceId": h.workspace_id,
                    "type": h.type,
                    "timestamp": h.timestamp,
                    "sequence": h.sequence,
                    "snippet": h.snippet,
                    "score": h.score,
                    "alsoIn": also.get(h.event_id, []),
                }
                for h in hits
                if h.event_id not in also["absorbed"]
            ][: p.limit]
        }

    @registry.method(
        "events.subscribe",
        EventsSubscribeParams,
        description="Receive this session's notifications (events.new, agent.*) here.",
    )
    async def subscribe(ctx: RpcContext, p: EventsSubscribeParams) -> dict[str, Any]:
        await ctx.subscribe(p.session_id)
        return {"subscribed": True, "sessionId": p.session_id}

    @registry.method(
        "events.unsubscribe",
        EventsSubscribeParams,
        description="Stop receiving this session's notifications on this connection.",
    )
    async def unsubscribe(ctx: RpcContext, p: EventsSubscribeParams) -> dict[str, Any]:
        conn = ctx.connection
        done = conn is not None and ctx.services.hub.unsubscribe(conn, p.session_id)
        return {"unsubscribed": done}


__all__ = ["register"]


async def _tool_calls_in_messages(store: AsyncEventStore, hits: list[SearchHit]) -> dict[str, Any]:
    """For hits on a ``tool.call`` whose assistant message (the one holding its
    ``tool_use`` block) is also a hit: message hit id -> [{eventId, type}] of the
    calls it stands for, and under ``"absorbed"`` the set of those calls' ids."""
    out: dict[str, Any] = {"absorbed": set()}
    messages = [h for h in hits if h.type == "message.assistant"]
    calls = [h for h in hits if h.type == "tool.call"]
    if not messages or not calls:
        return out
    owner: dict[tuple[str, str], str] = {}  # (session, tool_use id) -> message event id
    for h in messages:
        event = await store.get_event(h.event_id)
        content = event.payload.get("content") if event is not None else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                owner[(h.session_id, str(block.get("id")))] = h.event_id
    for h in calls:
        event = await store.get_event(h.event_id)
        call_id = event.payload.get("toolCallId") if event is not None else None
        message = owner.get((h.session_id, str(call_id)))
        if message is not None:
            out.setdefault(message, []).append({"eventId": h.event_id, "type": h.type})
            out["absorbed"].add(h.event_id)
    return out
