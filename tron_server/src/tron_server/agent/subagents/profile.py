"""Where a session sits among sub-agents, and how a child's run reports to its parent.

A *child* (a sub-agent's session) is a session with ``parent_session_id`` set and no
``fork_from_event_id``; its ``session.start`` records ``parentToolCallId``,
``spawnedByEventId``, ``subagentType``, ``tools`` (the allow-list, absent: every tool),
``taskAgents`` and ``maxTurns``. A fork keeps the limits of the session it was forked from
(a fork of a child is as deep as the child and has the same tools) but is not a child itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tron_events import AsyncEventStore

__all__ = ["TOP_LEVEL", "ParentLink", "SessionProfile", "SubagentSettings", "load_profile"]


@dataclass(frozen=True)
class SubagentSettings:
    """``max_parallel``: Task calls of one message running at once; ``max_depth``: how deep
    children may nest (1: only sessions a user started get the Task tool); ``enabled``:
    whether any session gets the Task tool."""

    max_parallel: int = 4
    max_depth: int = 1
    enabled: bool = True


@dataclass(frozen=True)
class SessionProfile:
    """What the runtime needs to know about a session before running it."""

    depth: int = 0
    """0 for a session a user started; 1 for its children; 2 for theirs …"""
    parent_session_id: str | None = None
    """The parent of a child (None for top-level sessions and forks)."""
    parent_tool_call_id: str | None = None
    subagent_type: str | None = None
    tools: tuple[str, ...] | None = None
    task_agents: tuple[str, ...] | None = None
    max_turns: int | None = None

    @property
    def is_child(self) -> bool:
        return self.parent_session_id is not None


TOP_LEVEL = SessionProfile()


@dataclass(frozen=True)
class ParentLink:
    """A child's run as its parent sees it: every notification of the child carries
    ``parentSessionId`` and ``parentToolCallId``; ``on_event`` (the parent's Task call)
    sees them too, to show the child's activity in the parent's tool output."""

    parent_session_id: str
    tool_call_id: str | None = None
    on_event: Callable[[str, dict[str, Any]], None] | None = None


def _strings(value: Any) -> tuple[str, ...] | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


async def load_profile(
    store: AsyncEventStore, session_id: str, cache: dict[str, SessionProfile]
) -> SessionProfile:
    """The profile of ``session_id`` (walking up to its top-level ancestor; cached)."""
    known = cache.get(session_id)
    if known is not None:
        return known
    session = await store.get_session(session_id)
    if session.parent_session_id is None:
        profile = TOP_LEVEL
    elif session.fork_from_event_id is not None:
        source = await load_profile(store, session.parent_session_id, cache)
        profile = SessionProfile(
            depth=source.depth,
            tools=source.tools,
            task_agents=source.task_agents,
            max_turns=source.max_turns,
            subagent_type=source.subagent_type,
        )
    else:
        parent = await load_profile(store, session.parent_session_id, cache)
        root = await store.get_event(session.root_event_id)
        start: dict[str, Any] = dict(root.payload) if root is not None else {}
        turns = start.get("maxTurns")
        tool_call = start.get("parentToolCallId")
        kind = start.get("subagentType")
        profile = SessionProfile(
            depth=parent.depth + 1,
            parent_session_id=session.parent_session_id,
            parent_tool_call_id=tool_call if isinstance(tool_call, str) else None,
            subagent_type=kind if isinstance(kind, str) else None,
            tools=_strings(start.get("tools")),
            task_agents=_strings(start.get("taskAgents")),
            max_turns=turns if isinstance(turns, int) and turns > 0 else None,
        )
    cache[session_id] = profile
    return profile
