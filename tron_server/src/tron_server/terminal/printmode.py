"""``tron -p``: one turn, no screen, for scripts and CI.

    tron -p "What does this project do?"                 # the reply, as text
    git diff | tron -p --output-format json             # the prompt from stdin; one JSON object
    tron -p "Fix the tests" --output-format stream-json # one JSON object per notification

Output formats:

* ``text``: the final reply (the text of the run's last assistant message).
* ``json``: one object ``{type: "result", isError, result, sessionId, stopReason,
  turns, usage: {inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens},
  cost, sessionCost, durationMs, error}``.
* ``stream-json``: every notification of the session as it arrives,
  ``{type: "notification", method, sessionId, timestamp, data}``, one per line,
  then the ``json`` object as the last line. Its sub-agents' ``agent.*``
  notifications are included (their ``sessionId`` is the child's, and ``data``
  has ``parentSessionId`` and ``parentToolCallId``).

Nobody is there to answer, so a question (AskUser) or an approval the server asks for —
the session's own or a sub-agent's — is answered at once: an approval is denied, a
question told that no one can answer (the model sees both and carries on). Allow what a
script needs with permission rules or ``--permission-mode``.

The exit status is 0 when the turn ends normally and 1 when it fails (an
``agent.error``, or a stop reason of ``error``, ``aborted``, ``blocked`` or
``max_turns``); the reason is printed on stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Literal, TextIO

import orjson

from ..client import ConnectionLost, Notification, RpcCallError, TronClient
from .capabilities import unknown_param
from .errors import EXIT_NO_SERVER, EXIT_OK, EXIT_TURN_FAILED, TerminalError

OutputFormat = Literal["text", "json", "stream-json"]
#: Stop reasons that mean the run did not finish its work.
FAILED_STOPS = frozenset({"error", "aborted", "blocked", "max_turns", "invalid_history"})
NO_ONE_TO_ASK = (
    "tron -p runs without a person to ask; allow this with a permissions rule "
    "(settings.json) or --permission-mode"
)
NO_ONE_TO_ANSWER = (
    "No one can answer: tron -p runs non-interactively. Decide for yourself, and say what "
    "you assumed."
)


@dataclass
class RunOutcome:
    """What one run produced, from its notifications."""

    session_id: str
    reply: str = ""
    stop_reason: str | None = None
    turns: int = 0
    usage: dict[str, int] = field(
        default_factory=lambda: {
            "inputTokens": 0,
            "outputTokens": 0,
            "cacheReadTokens": 0,
            "cacheWriteTokens": 0,
        }
    )
    cost: float | None = 0.0
    error: str | None = None
    _turn_text: dict[int, str] = field(default_factory=dict)
    _last_turn: int | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None or self.stop_reason in FAILED_STOPS

    def take(self, n: Notification) -> bool:
        """Account for one notification; True when the run is complete."""
        data = n.data if isinstance(n.data, dict) else {}
        if n.method == "agent.turn_start":
            turn = data.get("turn")
            if isinstance(turn, int):
                self._last_turn = turn
                self._turn_text[turn] = ""
        elif n.method == "agent.text_delta":
            turn = data.get("turn")
            if isinstance(turn, int):
                self._turn_text[turn] = self._turn_text.get(turn, "") + str(data.get("delta", ""))
        elif n.method == "agent.turn_end":
            usage = data.get("usage") or {}
            for key in self.usage:
                value = usage.get(key)
                if isinstance(value, int):
                    self.usage[key] += value
            cost = data.get("cost")
            if self.cost is not None:
                self.cost = self.cost + float(cost) if isinstance(cost, int | float) else None
        elif n.method == "agent.error":
            self.error = str(data.get("message") or "the agent failed")
        elif n.method == "agent.complete":
            self.stop_reason = str(data.get("stopReason") or "")
            turns = data.get("turns")
            self.turns = turns if isinstance(turns, int) else len(self._turn_text)
            # The reply is the last turn that said something (a turn that only
            # called tools has no text).
            for turn in sorted(self._turn_text, reverse=True):
                if self._turn_text[turn].strip():
                    self.reply = self._turn_text[turn].strip("\n")
                    break
            return True
        return False

    def result(self, *, duration_ms: int, session_cost: float | None) -> dict[str, Any]:
        error = self.error
        if error is None and self.failed:
            error = f"the run stopped: {self.stop_reason}"
        return {
            "type": "result",
            "isError": self.failed,
            "result": self.reply,
            "sessionId": self.session_id,
            "stopReason": self.stop_reason,
            "turns": self.turns,
            "usage": dict(self.usage),
            "cost": self.cost,
            "sessionCost": session_cost,
            "durationMs": duration_ms,
            "error": error,
        }


async def _decline(client: TronClient, sid: str, method: str, data: dict[str, Any]) -> None:
    """Answer a question or an approval at once (see the module docstring)."""
    request_id = data.get("requestId")
    if method not in ("agent.question", "agent.approval") or not isinstance(request_id, str):
        return
    if method == "agent.approval":
        answer: Any = {"decision": "deny", "reason": NO_ONE_TO_ASK}
    else:
        answer = [] if data.get("multiSelect") else NO_ONE_TO_ANSWER
    with contextlib.suppress(RpcCallError):  # answered meanwhile, or timed out
        await client.call(
            "agent.respond", {"sessionId": sid, "requestId": request_id, "answer": answer}
        )


async def _send(client: TronClient, params: dict[str, Any]) -> None:
    """``agent.message``; without ``events`` for a server that does not know it (older)."""
    try:
        await client.call("agent.message", params)
    except RpcCallError as exc:
        if "events" not in params or not unknown_param(exc, "events"):
            raise
        await client.call("agent.message", {k: v for k, v in params.items() if k != "events"})


def _line(obj: Any) -> str:
    return orjson.dumps(obj).decode()


def _of_run(n: Notification, session_id: str) -> bool:
    """A notification of the session, or an ``agent.*`` one of a sub-agent it started."""
    if n.session_id == session_id:
        return True
    data = n.data if isinstance(n.data, dict) else {}
    return n.method.startswith("agent.") and data.get("parentSessionId") == session_id


async def run_print(
    client: TronClient,
    session: dict[str, Any],
    prompt: str,
    *,
    output_format: OutputFormat = "text",
    extra: dict[str, Any] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Send ``prompt`` to ``session``, wait for the run to finish, print; the exit status."""
    out = out or sys.stdout
    err = err or sys.stderr
    sid = str(session["id"])
    outcome = RunOutcome(sid)
    started = time.monotonic()
    params: dict[str, Any] = {"sessionId": sid, "content": prompt, **(extra or {})}
    if output_format != "stream-json":
        params["events"] = False  # only the agent.* notifications are read here
    async with client.notifications() as stream:
        try:
            await _send(client, params)
            while True:
                n = await stream.next()
                data = n.data if isinstance(n.data, dict) else {}
                if n.session_id == sid or data.get("parentSessionId") == sid:
                    await _decline(client, sid, n.method, data)
                if not _of_run(n, sid):
                    continue
                if output_format == "stream-json":
                    out.write(
                        _line(
                            {
                                "type": "notification",
                                "method": n.method,
                                "sessionId": n.session_id,
                                "timestamp": n.timestamp,
                                "data": n.data,
                            }
                        )
                        + "\n"
                    )
                    out.flush()
                own = n.session_id == sid  # a sub-agent's agent.complete ends nothing here
                if own and n.method.startswith("agent.") and outcome.take(n):
                    break
        except ConnectionLost as exc:
            raise TerminalError(
                f"Lost the connection to tron-server during the run ({exc}). The run may still "
                f"be going on: `tron -r {sid}` opens the session.",
                EXIT_NO_SERVER,
            ) from None
        except asyncio.CancelledError:
            # Ctrl+C: stop the run on the server too, then let the cancellation through.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.call("agent.abort", {"sessionId": sid}), 3)
            raise
    session_cost: float | None = None
    with contextlib.suppress(Exception):
        latest = await client.call("session.get", {"sessionId": sid})
        cost = latest.get("cost")
        session_cost = float(cost) if isinstance(cost, int | float) else None
    result = outcome.result(
        duration_ms=int((time.monotonic() - started) * 1000), session_cost=session_cost
    )
    if output_format == "text":
        if outcome.reply:
            out.write(outcome.reply + "\n")
    else:
        out.write(_line(result) + "\n")
    out.flush()
    if outcome.failed:
        err.write(f"tron: {result['error']}\n")
        err.flush()
        return EXIT_TURN_FAILED
    return EXIT_OK


__all__ = ["FAILED_STOPS", "OutputFormat", "RunOutcome", "run_print"]
