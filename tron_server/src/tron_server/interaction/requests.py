"""Requests that wait for the user: questions (AskUser) and approvals of tool calls.

A running turn that needs the user calls :meth:`Requests.wait`, which

1. records ``interaction.requested`` (through the run's writer, so it lands in order),
2. tells the session's clients (``agent.question`` or ``agent.approval``; a sub-agent's
   also reach its parent's clients, as all its ``agent.*`` notifications do),
3. waits for :meth:`Requests.answer` (from ``agent.respond``), the timeout, or the turn's
   abort (a cancellation),
4. records ``interaction.resolved`` and tells the clients (``agent.request_resolved``).

The first answer wins: a second one raises :class:`AlreadyAnswered`, and every client
already got ``agent.request_resolved``. A run stopped by a server shutdown while waiting is
*suspended* (:attr:`AgentRun.suspended`): nothing is recorded, so the request stays pending
in the events, and :mod:`.resume` finishes the turn when it is answered after the restart.
"""

from __future__ import annotations

import logging
import secrets
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

import anyio

from ..errors import InvalidOperationError, InvalidParams
from ..protocol import AGENT_APPROVAL, AGENT_QUESTION, AGENT_REQUEST_RESOLVED

if TYPE_CHECKING:
    from ..agent.turn import AgentRun

__all__ = [
    "AlreadyAnswered",
    "Answer",
    "Kind",
    "PendingRequest",
    "Requests",
    "new_request_id",
    "parse_answer",
    "resolution_payload",
]

log = logging.getLogger("tron_server.interaction")

Kind = Literal["question", "approval"]
Outcome = Literal["answered", "timeout", "aborted", "cancelled"]
Decision = Literal["allow", "allow_always", "deny", "deny_always"]
_DECISIONS = ("allow", "allow_always", "deny", "deny_always")
#: The decisions that record the request's suggested rule for the rest of the session.
ALWAYS = {"allow_always": "allow", "deny_always": "deny"}
MAX_ANSWER_CHARS = 20_000
#: How many ended requests are remembered, to tell a late answer how it ended.
REMEMBERED = 1000


class AlreadyAnswered(InvalidOperationError):
    """The request was answered already (the first answer wins), or ended otherwise."""


def new_request_id() -> str:
    return "req_" + secrets.token_hex(10)


def _now() -> datetime:
    return datetime.now(UTC)


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Answer:
    """How a request ended. ``value`` answers a question; ``decision`` (and ``reason``)
    an approval; ``rule`` is what an ``allow_always`` (or ``deny_always``) added."""

    outcome: Outcome
    value: str | list[str] | None = None
    decision: Decision | None = None
    reason: str | None = None
    responder: str | None = None
    rule: str | None = None


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidParams(f"{what} must be text")
    if len(value) > MAX_ANSWER_CHARS:
        raise InvalidParams(f"{what} is longer than {MAX_ANSWER_CHARS} characters")
    return value


def parse_answer(info: dict[str, Any], raw: Any, responder: str | None = None) -> Answer:
    """Check ``raw`` (``agent.respond``'s ``answer``) against the request ``info``.

    A question takes text (any text, also with options: "other"), or a list of texts when
    ``multiSelect``; an approval takes ``{decision: "allow"|"allow_always"|"deny"|
    "deny_always", reason?}`` (or the decision alone as text). Raises :class:`InvalidParams`."""
    if info.get("kind") == "approval":
        if isinstance(raw, str):
            raw = {"decision": raw}
        if not isinstance(raw, dict) or raw.get("decision") not in _DECISIONS:
            raise InvalidParams(
                'an approval\'s answer is {"decision": "allow" | "allow_always" | "deny" | '
                '"deny_always", "reason"?: text}'
            )
        reason = raw.get("reason")
        reason = _text(reason, "reason").strip() or None if reason is not None else None
        decision = raw["decision"]
        rule = info.get("suggestion") if decision in ALWAYS else None
        return Answer("answered", decision=decision, reason=reason, responder=responder, rule=rule)
    if info.get("multiSelect"):
        if isinstance(raw, str):
            raw = [raw]
        if not isinstance(raw, list):
            raise InvalidParams("this question takes several choices: answer with a list of texts")
        return Answer("answered", value=[_text(v, "each choice") for v in raw], responder=responder)
    text = _text(raw, "the answer").strip()
    if not text:
        raise InvalidParams("the answer is empty")
    return Answer("answered", value=text, responder=responder)


def resolution_payload(info: dict[str, Any], answer: Answer, *, resumed: bool) -> dict[str, Any]:
    """``interaction.resolved``'s payload."""
    payload: dict[str, Any] = {
        "requestId": info["requestId"],
        "kind": info["kind"],
        "outcome": answer.outcome,
        "toolCallId": info.get("toolCallId"),
    }
    if answer.value is not None:
        payload["answer"] = answer.value
    if answer.decision is not None:
        payload["decision"] = answer.decision
    if answer.reason:
        payload["reason"] = answer.reason
    if answer.rule:
        payload["rule"] = answer.rule
    if resumed:
        payload["resumed"] = True
    return payload


def resolved_notification(
    info: dict[str, Any], answer: Answer, *, resumed: bool = False
) -> dict[str, Any]:
    """``agent.request_resolved``'s data."""
    data = resolution_payload(info, answer, resumed=resumed)
    data["resolved"] = True
    data["requestSessionId"] = info.get("sessionId")
    if answer.responder:
        data["answeredBy"] = answer.responder
    return data


@dataclass(eq=False)
class PendingRequest:
    """A request a live run waits for. ``info`` is what clients see (also in
    ``agent.getState``'s ``pendingRequests``); ``sessions`` the session it is in and
    its parents (any of them may answer)."""

    info: dict[str, Any]
    run: AgentRun
    sessions: tuple[str, ...]
    done: anyio.Event = field(default_factory=anyio.Event)
    answer: Answer | None = None

    @property
    def request_id(self) -> str:
        return str(self.info["requestId"])


class Requests:
    """The live requests of this server process."""

    def __init__(self) -> None:
        self._live: dict[str, PendingRequest] = {}
        self._ended: OrderedDict[str, dict[str, Any]] = OrderedDict()

    def get(self, request_id: str) -> PendingRequest | None:
        return self._live.get(request_id)

    def ended(self, request_id: str) -> dict[str, Any] | None:
        """How a request of this process ended (``agent.request_resolved``'s data)."""
        return self._ended.get(request_id)

    def check_open(self, request_id: str) -> None:
        """Raise :class:`AlreadyAnswered` for a request that has ended, saying how."""
        ended = self._ended.get(request_id)
        if ended is None:
            return
        how = {
            "answered": "was already answered",
            "timeout": "timed out",
            "aborted": "ended: the turn was aborted",
            "cancelled": "was cancelled by a new message",
        }.get(str(ended.get("outcome")), "has ended")
        raise AlreadyAnswered(
            f"request {request_id} {how}",
            {"requestId": request_id, "outcome": ended.get("outcome"),
             "answer": ended.get("answer"), "decision": ended.get("decision")},
        )  # fmt: skip

    def remember(self, data: dict[str, Any]) -> None:
        self._ended[str(data["requestId"])] = data
        while len(self._ended) > REMEMBERED:
            self._ended.popitem(last=False)

    def for_session(self, session_id: str) -> list[PendingRequest]:
        """Requests of ``session_id`` and of its sub-agents, oldest first."""
        return [p for p in self._live.values() if session_id in p.sessions]

    def waiting_runs(self) -> list[AgentRun]:
        """The runs waiting for the user right now."""
        return [p.run for p in self._live.values() if p.answer is None]

    def answer(self, pending: PendingRequest, answer: Answer) -> None:
        """Give ``pending`` its answer (no await: the first caller wins)."""
        if pending.answer is not None or self._live.get(pending.request_id) is not pending:
            raise AlreadyAnswered(
                f"request {pending.request_id} was already answered",
                {"requestId": pending.request_id},
            )
        pending.answer = answer
        # Known as ended at once, not only once ``interaction.resolved`` is written: a
        # second answer racing this one (arriving while the run still records it) must
        # get "already answered" from :meth:`check_open`, not look for a stopped turn.
        self.remember(resolved_notification(pending.info, answer))
        pending.done.set()

    async def wait(
        self,
        run: AgentRun,
        info: dict[str, Any],
        *,
        sessions: tuple[str, ...],
        timeout: float | None,
    ) -> Answer:
        """Record and announce the request ``info`` (kind, toolCallId and the question or
        the tool call), wait for its answer and record how it ended. Cancellation (the
        turn's abort) records ``aborted`` and propagates; a suspended run records nothing."""
        info = dict(info)
        info.setdefault("requestId", new_request_id())
        info["sessionId"] = run.session_id
        info["createdAt"] = _iso(_now())
        if timeout:
            info["timeoutSeconds"] = timeout
            info["expiresAt"] = _iso(_now() + timedelta(seconds=timeout))
        pending = PendingRequest(info, run, sessions)
        self._live[pending.request_id] = pending
        method = AGENT_QUESTION if info["kind"] == "question" else AGENT_APPROVAL
        try:
            await run.writer.append("interaction.requested", _requested_payload(info))
            run.notify_client(method, dict(info))
            with anyio.move_on_after(timeout if timeout else float("inf")):
                await pending.done.wait()
        except BaseException:
            self._close(pending, Answer("aborted"), remember=not run.suspended)
            if not run.suspended:  # a suspended run's request stays pending in the events
                with anyio.CancelScope(shield=True):
                    await self._resolve(run, info, Answer("aborted"))
            raise
        answer = self._close(pending, Answer("timeout"))
        await self._resolve(run, info, answer)
        return answer

    def _close(
        self, pending: PendingRequest, otherwise: Answer, *, remember: bool = True
    ) -> Answer:
        """End ``pending`` with no await between: its answer (``otherwise`` when none came),
        remembered before it leaves the live requests, so an answer arriving while the
        resolution is recorded is told how the request ended."""
        if pending.answer is None:
            pending.answer = otherwise
            if remember:
                self.remember(resolved_notification(pending.info, otherwise))
        self._live.pop(pending.request_id, None)
        return pending.answer

    async def _resolve(self, run: AgentRun, info: dict[str, Any], answer: Answer) -> None:
        try:
            await run.writer.append(
                "interaction.resolved", resolution_payload(info, answer, resumed=False)
            )
        except Exception:  # the session moved under us: the turn stops on its next append
            log.exception("could not record the resolution of %s", info.get("requestId"))
        data = resolved_notification(info, answer)
        self.remember(data)
        run.notify_client(AGENT_REQUEST_RESOLVED, data)


#: Longer text values of an approval's input are cut in ``interaction.requested`` (the
#: ``tool.call`` event keeps the full arguments; a Write's content need not be stored twice).
MAX_INPUT_VALUE_CHARS = 10_000


def _cut_input(value: Any) -> tuple[Any, bool]:
    if isinstance(value, str) and len(value) > MAX_INPUT_VALUE_CHARS:
        rest = len(value) - MAX_INPUT_VALUE_CHARS
        return f"{value[:MAX_INPUT_VALUE_CHARS]}… [{rest} more characters]", True
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        cut = False
        for key, item in value.items():
            out[key], was = _cut_input(item)
            cut = cut or was
        return out, cut
    return value, False


def _requested_payload(info: dict[str, Any]) -> dict[str, Any]:
    keys = ("requestId", "kind", "toolCallId", "turn", "question", "options", "multiSelect",
            "toolName", "input", "reason", "suggestion", "timeoutSeconds", "expiresAt")  # fmt: skip
    payload = {k: info[k] for k in keys if info.get(k) is not None}
    if "input" in payload:
        payload["input"], cut = _cut_input(payload["input"])
        if cut:
            payload["inputTruncated"] = True
    return payload
