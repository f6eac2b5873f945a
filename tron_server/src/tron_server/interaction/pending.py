"""Finding, in the stored events, a request no live run waits for any more.

A run stopped while it waited for the user (a server shutdown, a crash) leaves its session's
path ending like this::

    message.assistant {content: [..., tool_use T, ...]}
    tool.call T ...                 (and the results of the calls that ran before T)
    interaction.requested {requestId R, toolCallId T}
    (hook events, file events ... nothing that ends the turn)

:func:`find_pending_turn` walks back from the head to the turn's ``message.assistant`` and
returns that request and what is needed to finish the turn (:mod:`.resume`): the calls in
the order the model made them (full arguments, from ``tool.call``) and those already
answered. Anything that closes a turn first (``stream.turn_end``, ``message.user``, an
interruption, ``context.cleared``, a fork's root) means nothing is pending.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tron_events import AsyncEventStore, Event, EventNotFound, Session, SessionNotFound
from tron_events.messages import ToolUseBlock

__all__ = ["TURN_CLOSERS", "PendingTurn", "find_pending_turn"]

#: Events after which no request of an earlier turn can be pending.
TURN_CLOSERS = frozenset(
    {
        "message.user",
        "message.system",
        "stream.turn_start",
        "stream.turn_end",
        "notification.interrupted",
        "turn.failed",
        "error.provider",
        "error.agent",
        "context.cleared",
        "compact.boundary",
        "compact.summary",
        "session.start",
        "session.fork",
        "session.end",
    }
)


@dataclass
class PendingTurn:
    """A turn left waiting for the user: its ``request`` (the ``interaction.requested``
    payload, camelCase), the turn number, the assistant message's tool calls in order,
    the ids already answered, and the ``tool.call`` event of each call."""

    session_id: str
    request: dict[str, Any]
    turn: int
    uses: list[ToolUseBlock]
    answered: set[str]
    call_events: dict[str, str]
    assistant: dict[str, Any] = field(default_factory=dict)

    @property
    def request_id(self) -> str:
        return str(self.request["requestId"])

    def info(self) -> dict[str, Any]:
        """The request as clients see it (``pendingRequests``, ``agent.question`` …)."""
        data = dict(self.request)
        data["sessionId"] = self.session_id
        data["resumable"] = True
        return data


async def find_pending_turn(
    store: AsyncEventStore,
    session_id: str,
    session: Session | None = None,
    head: Event | None = None,
) -> PendingTurn | None:
    """The request a stopped run of ``session_id`` left pending, or None. ``session``:
    its row, when the caller has just read it; ``head``: that row's head event, read with
    it (a head that closes a turn or is the model's reply answers without the path)."""
    try:
        if session is None or session.id != session_id:
            session, head = await store.get_session_and_head(session_id)
        if session.status != "active":
            return None
        # The walk below stops at its first event for these: no path to read.
        if (
            head is not None
            and head.id == session.head_event_id
            and (head.type in TURN_CLOSERS or head.type == "message.assistant")
        ):
            return None
        path = await store.get_ancestors(session.head_event_id)
    except (SessionNotFound, EventNotFound):
        return None
    results: set[str] = set()
    resolved: set[str] = set()
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    request: dict[str, Any] | None = None
    for event in reversed(path):
        kind = event.type
        payload = event.payload
        if kind == "message.assistant":
            return _build(session_id, request, payload, results, calls)
        if kind in TURN_CLOSERS:
            return None
        if kind == "tool.result":
            results.add(str(payload.get("toolCallId")))
        elif kind == "interaction.resolved":
            resolved.add(str(payload.get("requestId")))
        elif kind == "interaction.requested":
            if request is None and payload.get("requestId") not in resolved:
                request = dict(payload)
        elif kind == "tool.call":
            arguments = payload.get("arguments")
            calls[str(payload.get("toolCallId"))] = (
                event.id,
                dict(arguments) if isinstance(arguments, dict) else {},
            )
    return None


def _build(
    session_id: str,
    request: dict[str, Any] | None,
    assistant: dict[str, Any],
    results: set[str],
    calls: dict[str, tuple[str, dict[str, Any]]],
) -> PendingTurn | None:
    if request is None or request.get("toolCallId") in results:
        return None
    uses: list[ToolUseBlock] = []
    for block in assistant.get("content") or []:
        if isinstance(block, dict) and block.get("type") == "tool_use":
            call_id = str(block.get("id"))
            if call_id not in calls:
                continue  # never recorded as a tool.call: it was never going to run
            name = str(block.get("name"))
            uses.append(ToolUseBlock(id=call_id, name=name, input=calls[call_id][1]))
    if not any(u.id == request.get("toolCallId") for u in uses):
        return None
    turn = request.get("turn")
    if not isinstance(turn, int):
        turn = assistant.get("turn") if isinstance(assistant.get("turn"), int) else 0
    return PendingTurn(
        session_id=session_id,
        request=request,
        turn=int(turn or 0),
        uses=uses,
        answered={u.id for u in uses if u.id in results},
        call_events={cid: event_id for cid, (event_id, _) in calls.items()},
        assistant=dict(assistant),
    )
