"""Finishing a turn whose run stopped while it waited for the user.

After a restart, the request is still pending in the events (:mod:`.pending`). Answering it
(``agent.respond``) starts a run of the session whose request carries a
:class:`Resumption`; before anything else the run records, in the order a live run would
have:

1. ``interaction.resolved`` (``resumed: true``);
2. the waiting call's ``tool.result``: the answer (a question), the tool's own result
   (an approval allowed: the tool runs now), or the refusal (denied);
3. the results of the calls the model made after it, run now like any (a call before it
   left without a result by the stop gets an "interrupted" error result);
4. ``stream.turn_end`` for that turn (its cost priced from the stored usage),

then the loop calls the model again, so the history it sends is the one a live run would
have produced. A new message sent instead of an answer *cancels* the request: the waiting
call and the calls after it get error results saying so, the turn is closed, and the new
message starts the next turn. ``agent.abort`` instead of an answer closes the turn as a
live abort would (``aborted``: interrupted results, ``notification.interrupted``) and does
not call the model.

It continues the turn with the turn's own steps (:class:`~tron_server.agent.turn.AgentRun`'s
``_run_tool``, ``_run_tools``, ``_record_result``, ``_close_aborted``, ``_turn_end``).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Protocol

from tron_events.messages import ToolUseBlock
from tron_llm import Usage, cost_usd

from ..protocol import AGENT_REQUEST_RESOLVED, AGENT_TOOL_END, AGENT_TURN_START
from ..tools.base import ToolResult
from .pending import PendingTurn, find_pending_turn
from .requests import Answer, Requests, resolution_payload, resolved_notification
from .rules import Behavior

if TYPE_CHECKING:
    from ..agent.turn import AgentRun

__all__ = ["CANCELLED_ANSWER", "NOT_RUN_CANCELLED", "STOPPED_RESULT", "ResumeHost", "Resumption"]

log = logging.getLogger("tron_server.interaction")

STOPPED_RESULT = "Tool execution was interrupted: the server stopped while it ran."
CANCELLED_ANSWER = "The user did not answer: they sent a new message instead."
NOT_RUN_CANCELLED = "Tool was not run: the user sent a new message instead of answering."


def _usage(assistant: dict[str, Any], provider: str) -> Usage:
    raw = assistant.get("tokenUsage") or {}
    usage = Usage(
        input_tokens=int(raw.get("inputTokens") or 0),
        output_tokens=int(raw.get("outputTokens") or 0),
        cache_read_tokens=int(raw.get("cacheReadTokens") or 0),
        cache_write_tokens=int(raw.get("cacheCreationTokens") or 0),
    )
    model = str(assistant.get("model") or "")
    try:
        cost = cost_usd(provider, model, usage) if model else None
    except Exception:  # an unknown model has no price: the cost stays unknown
        cost = None
    return usage.model_copy(update={"cost_usd": cost})


class ResumeHost(Protocol):
    """What a resumption uses of :class:`~tron_server.interaction.service.Interaction`
    (which satisfies it, and creates the resumptions)."""

    @property
    def requests(self) -> Requests: ...

    def question_result(self, info: dict[str, Any], answer: Answer) -> ToolResult: ...

    def denied_result(self, tool: str, reason: str | None) -> ToolResult: ...

    async def grant(
        self, run: AgentRun, rule: str, request_id: str, *, behavior: Behavior = "allow"
    ) -> None: ...

    def preapprove(self, tool_call_id: str) -> None: ...


class Resumption:
    """The :class:`~tron_server.agent.turn.Resume` of a request answered (or cancelled)
    after the run that asked stopped."""

    def __init__(self, interaction: ResumeHost, pending: PendingTurn, answer: Answer) -> None:
        self.interaction = interaction
        self.pending = pending
        self.answer = answer

    async def finish(self, run: AgentRun) -> tuple[str, bool]:
        store = run.deps.store
        pt = await find_pending_turn(store, run.session_id)
        if pt is None or pt.request_id != self.pending.request_id:
            log.info("request %s is no longer pending; nothing to finish", self.pending.request_id)
            return "end_turn", False
        state = await store.get_state_at_head(run.session_id)
        usage = _usage(pt.assistant, state.provider)
        stop = str(pt.assistant.get("stopReason") or "tool_use")
        run.tool_call_events.update(pt.call_events)
        turn = pt.turn
        run.progress.begin(turn)
        run.notify_client(AGENT_TURN_START, {"turn": turn, "resumed": True})
        index = next(i for i, u in enumerate(pt.uses) if u.id == pt.request["toolCallId"])
        target = pt.uses[index]
        earlier = [u for u in pt.uses[:index] if u.id not in pt.answered]
        later = [u for u in pt.uses[index + 1 :] if u.id not in pt.answered]
        await self._error_results(run, earlier, STOPPED_RESULT, interrupted=True)

        info = pt.info()
        answer = self.answer
        await run.writer.append(
            "interaction.resolved", resolution_payload(info, answer, resumed=True)
        )
        data = resolved_notification(info, answer, resumed=True)
        self.interaction.requests.remember(data)
        run.notify_client(AGENT_REQUEST_RESOLVED, data)
        if answer.outcome == "aborted":
            return await run._close_aborted(turn, [target, *later], set(), usage)
        if answer.outcome != "answered":
            await self._error_results(run, [target], CANCELLED_ANSWER)
            await self._error_results(run, later, NOT_RUN_CANCELLED)
            await run._turn_end(turn, stop, usage)
            return stop, False

        if info["kind"] == "question":
            await run._record_result(
                turn, target, self.interaction.question_result(info, answer), time.monotonic()
            )
        elif answer.decision in ("deny", "deny_always"):
            if answer.decision == "deny_always" and answer.rule:
                await self.interaction.grant(run, answer.rule, pt.request_id, behavior="deny")
            denied = self.interaction.denied_result(target.name, answer.reason)
            await run._record_result(turn, target, denied, time.monotonic())
        else:
            if answer.decision == "allow_always" and answer.rule:
                await self.interaction.grant(run, answer.rule, pt.request_id)
            self.interaction.preapprove(target.id)
            started = time.monotonic()
            result = await run._run_tool(turn, target)
            if result is None:
                return await run._close_aborted(turn, [target, *later], set(), usage)
            await run._record_result(turn, target, result, started)
        answered = await run._run_tools(turn, later)
        if len(answered) < len(later) or run.abort_requested:
            return await run._close_aborted(turn, later, answered, usage)
        await run._turn_end(turn, stop, usage)
        return stop, True

    @staticmethod
    async def _error_results(
        run: AgentRun, uses: list[ToolUseBlock], text: str, *, interrupted: bool = False
    ) -> None:
        drafts: list[tuple[str, dict[str, Any]]] = []
        for use in uses:
            payload: dict[str, Any] = {"toolCallId": use.id, "content": text, "isError": True}
            if interrupted:
                payload["interrupted"] = True
            drafts.append(("tool.result", payload))
            run.notify_client(
                AGENT_TOOL_END,
                {"turn": run.progress.turn, "toolCallId": use.id, "name": use.name,
                 "isError": True, "content": text, "durationMs": 0},
            )  # fmt: skip
        await run.writer.append_many(drafts)
