"""Closing the turn a server left open when it died (its lease expired).

What the server that takes the session over records, at the session's head and by
compare-and-append (two takers cannot both record it), is what a server records for a
turn it stops at shutdown: an ``interrupted`` error result for every call that has
none (:data:`TAKEOVER_RESULT`: the call is never run again),
``notification.interrupted`` and ``stream.turn_end`` with stop reason ``aborted``.
A turn that waits for the user's answer (an approval, a question) is left as it is:
its request is answered on any server, as after a restart
(:mod:`tron_server.interaction.resume`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from tron_events import ConcurrencyConflict, SessionNotFound
from tron_llm import Usage

from ..interaction.pending import TURN_CLOSERS, find_pending_turn
from ..protocol import AGENT_COMPLETE, AGENT_TOOL_END, AGENT_TURN_END, usage_json

if TYPE_CHECKING:
    from tron_events import AsyncEventStore

    from ..agent.orchestrator import Emit

__all__ = ["TAKEOVER_REASON", "TAKEOVER_RESULT", "close_interrupted_turn"]

log = logging.getLogger("tron_server.cluster")

TAKEOVER_RESULT = (
    "Tool execution was interrupted: the server running it stopped (another server took "
    "the session over; the call was not run again)."
)
TAKEOVER_REASON = "the server running the turn stopped"
#: Events after which the turn is closed (or was never started): nothing to record.
#: (Walking back, the open turn's own ``stream.turn_start`` is where the walk stops.)
_CLOSED = TURN_CLOSERS - {"stream.turn_start"}


async def close_interrupted_turn(store: AsyncEventStore, session_id: str, emit: Emit) -> bool:
    """Record the end of the session's open turn, if it has one that waits for nobody;
    True when something was recorded."""
    if await find_pending_turn(store, session_id) is not None:
        return False  # answerable here as after a restart
    try:
        session = await store.get_session(session_id)
    except SessionNotFound:
        return False
    if session.status != "active":
        return False
    path = await store.get_ancestors(session.head_event_id)
    calls: list[tuple[str, str]] = []
    answered: set[str] = set()
    turn: int | None = None
    for event in reversed(path):
        if event.type in _CLOSED:
            return False
        payload = event.payload
        if event.type == "tool.result":
            answered.add(str(payload.get("toolCallId")))
        elif event.type == "tool.call":
            calls.append((str(payload.get("toolCallId")), str(payload.get("name"))))
        elif event.type == "stream.turn_start":
            turn = int(payload.get("turn") or 0)
            break
    if turn is None:
        return False
    cut = [(cid, name) for cid, name in reversed(calls) if cid not in answered]
    usage = Usage()
    drafts: list[dict[str, Any]] = [
        {"type": "tool.result", "payload": {"toolCallId": cid, "content": TAKEOVER_RESULT,
                                            "isError": True, "interrupted": True}}
        for cid, _name in cut
    ]  # fmt: skip
    drafts.append({"type": "notification.interrupted",
                   "payload": {"turn": turn, "reason": TAKEOVER_REASON}})  # fmt: skip
    drafts.append({"type": "stream.turn_end",
                   "payload": {"turn": turn, "stopReason": "aborted",
                               "tokenUsage": usage.to_payload(), "cost": None}})  # fmt: skip
    try:
        await store.append_many(session_id, drafts, expected_head=session.head_event_id)
    except ConcurrencyConflict:
        log.info("session %s moved on while its turn was being closed", session_id)
        return False
    for cid, name in cut:
        emit(AGENT_TOOL_END, session_id, {"turn": turn, "toolCallId": cid, "name": name,
                                          "isError": True, "content": TAKEOVER_RESULT,
                                          "interrupted": True})  # fmt: skip
    emit(AGENT_TURN_END, session_id, {"turn": turn, "stopReason": "aborted",
                                      "usage": usage_json(usage), "cost": None})  # fmt: skip
    emit(AGENT_COMPLETE, session_id, {"turns": 0, "stopReason": "aborted", "runId": None,
                                      "interrupted": True})  # fmt: skip
    return True
