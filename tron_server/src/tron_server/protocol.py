"""The wire vocabulary: the names and JSON objects every layer of the server speaks
to clients in (``docs/protocol.md``).

A foundation module: the runtime (``agent/``, ``interaction/``), the RPC methods and
the hub all use it, so none of them imports another to learn how a Session looks on
the wire or what a notification is called.

Every notification is ``{jsonrpc, method: <kind>, params: {sessionId, timestamp,
data}}``; the kinds are the constants below (:data:`NOTIFICATIONS` lists them all,
and ``docs/protocol.md`` documents exactly these). ``session.*`` kinds go to every
connection (:data:`BROADCAST_PREFIXES`), the others to the session's subscribers.
"""

from __future__ import annotations

import os
from typing import Any, Final

from tron_events import Session
from tron_llm import Usage

# -- notification kinds ----------------------------------------------------------------

EVENTS_NEW: Final = "events.new"
"""Every stored event of a subscribed session, in sequence order, once per subscription."""

AGENT_TURN_START: Final = "agent.turn_start"
AGENT_TEXT_DELTA: Final = "agent.text_delta"
AGENT_THINKING_DELTA: Final = "agent.thinking_delta"
AGENT_TOOL_START: Final = "agent.tool_start"
AGENT_TOOL_OUTPUT: Final = "agent.tool_output"
AGENT_TOOL_END: Final = "agent.tool_end"
AGENT_TURN_END: Final = "agent.turn_end"
AGENT_COMPLETE: Final = "agent.complete"
AGENT_COMPACTED: Final = "agent.compacted"
AGENT_ERROR: Final = "agent.error"
AGENT_QUESTION: Final = "agent.question"
AGENT_APPROVAL: Final = "agent.approval"
AGENT_REQUEST_RESOLVED: Final = "agent.request_resolved"
AGENT_COMMAND_OUTPUT: Final = "agent.command_output"

BROWSER_FRAME: Final = "browser.frame"
"""A JPEG of the session's browser (the DevTools screencast, throttled; never stored)."""
BROWSER_STATUS: Final = "browser.status"
"""Where the session's browser is and what it did last (opened, each action, closed)."""

FILES_REQUEST: Final = "files.request"
"""A file provider's request (read or write a file of its session): only to that client."""

SESSION_NOTIFICATION: Final = "session.notification"
SESSION_MODE_CHANGED: Final = "session.mode_changed"
SESSION_CREATED: Final = "session.created"
SESSION_FORKED: Final = "session.forked"
SESSION_REWOUND: Final = "session.rewound"
SESSION_ENDED: Final = "session.ended"
SESSION_DELETED: Final = "session.deleted"

NOTIFICATIONS: Final = frozenset(
    {
        EVENTS_NEW,
        AGENT_TURN_START,
        AGENT_TEXT_DELTA,
        AGENT_THINKING_DELTA,
        AGENT_TOOL_START,
        AGENT_TOOL_OUTPUT,
        AGENT_TOOL_END,
        AGENT_TURN_END,
        AGENT_COMPLETE,
        AGENT_COMPACTED,
        AGENT_ERROR,
        AGENT_QUESTION,
        AGENT_APPROVAL,
        AGENT_REQUEST_RESOLVED,
        AGENT_COMMAND_OUTPUT,
        BROWSER_FRAME,
        BROWSER_STATUS,
        FILES_REQUEST,
        SESSION_NOTIFICATION,
        SESSION_MODE_CHANGED,
        SESSION_CREATED,
        SESSION_FORKED,
        SESSION_REWOUND,
        SESSION_ENDED,
        SESSION_DELETED,
    }
)
"""Every notification kind the server sends."""

BROADCAST_PREFIXES: Final = ("session.",)
"""Notifications whose kind starts so go to every connection, whatever it follows."""

# -- objects ---------------------------------------------------------------------------


def session_kind(session: Session) -> str:
    """``"fork"``, ``"subagent"`` (a child a Task call created) or ``"session"``."""
    if session.fork_from_event_id is not None:
        return "fork"
    return "subagent" if session.parent_session_id is not None else "session"


def session_json(session: Session) -> dict[str, Any]:
    """A Session as the protocol's camelCase object."""
    return {
        "id": session.id,
        "workspaceId": session.workspace_id,
        "rootEventId": session.root_event_id,
        "headEventId": session.head_event_id,
        "status": session.status,
        "model": session.model,
        "provider": session.provider,
        "workingDirectory": session.working_directory,
        # False for a session whose folder is not on this machine (an imported one, a
        # folder since removed): clients warn, and offer another (session.resume).
        "workingDirectoryExists": os.path.isdir(session.working_directory),
        "title": session.title,
        "parentSessionId": session.parent_session_id,
        "forkFromEventId": session.fork_from_event_id,
        "createdAt": session.created_at,
        "lastActivityAt": session.last_activity_at,
        "endedAt": session.ended_at,
        "eventCount": session.event_count,
        "messageCount": session.message_count,
        "turnCount": session.turn_count,
        "inputTokens": session.input_tokens,
        "outputTokens": session.output_tokens,
        "cacheReadTokens": session.cache_read_tokens,
        "cacheCreationTokens": session.cache_creation_tokens,
        "cost": session.cost,
        "kind": session_kind(session),
    }


def usage_json(usage: Usage) -> dict[str, Any]:
    """The ``usage`` object of ``agent.turn_end``."""
    return {
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "cacheReadTokens": usage.cache_read_tokens,
        "cacheWriteTokens": usage.cache_write_tokens,
        "reasoningTokens": usage.reasoning_tokens,
        "totalTokens": usage.total_tokens,
    }


__all__ = [
    "AGENT_APPROVAL",
    "AGENT_COMMAND_OUTPUT",
    "AGENT_COMPACTED",
    "AGENT_COMPLETE",
    "AGENT_ERROR",
    "AGENT_QUESTION",
    "AGENT_REQUEST_RESOLVED",
    "AGENT_TEXT_DELTA",
    "AGENT_THINKING_DELTA",
    "AGENT_TOOL_END",
    "AGENT_TOOL_OUTPUT",
    "AGENT_TOOL_START",
    "AGENT_TURN_END",
    "AGENT_TURN_START",
    "BROADCAST_PREFIXES",
    "BROWSER_FRAME",
    "BROWSER_STATUS",
    "EVENTS_NEW",
    "FILES_REQUEST",
    "NOTIFICATIONS",
    "SESSION_CREATED",
    "SESSION_DELETED",
    "SESSION_ENDED",
    "SESSION_FORKED",
    "SESSION_MODE_CHANGED",
    "SESSION_NOTIFICATION",
    "SESSION_REWOUND",
    "session_json",
    "session_kind",
    "usage_json",
]
