"""One ``session/prompt``: the message sent to Tron, its notifications streamed to the
editor as ``session/update``s, and the stop reason.

Tron notification → ACP update:

- ``agent.text_delta`` → ``agent_message_chunk``; ``agent.thinking_delta`` →
  ``agent_thought_chunk``;
- ``agent.tool_start`` → ``tool_call`` (``in_progress``; kind, title, absolute locations,
  an Edit's or a Write's diff); ``agent.tool_output`` → ``tool_call_update`` with the
  output so far (a Bash call, where the editor has terminals: the terminal of
  :mod:`.terminals` instead); ``agent.tool_end`` → ``tool_call_update`` ``completed`` /
  ``failed`` with the result (a successful edit: its diff), and a TodoWrite's list as a ``plan``;
- ``agent.approval`` / ``agent.question`` (of the session or of its sub-agents) →
  ``session/request_permission`` (:mod:`.permissions`), answered with ``agent.respond``;
- ``agent.complete`` ends the prompt: its ``stopReason`` mapped by :func:`stop_reason`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import Any, Protocol

from acp import RequestError
from acp.helpers import update_agent_message_text, update_agent_thought_text
from acp.schema import (
    AllowedOutcome,
    PermissionOption,
    PromptResponse,
    StopReason,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
)

from ..client import ConnectionLost, NotificationStream, RpcCallError, TronClient
from ..protocol import (
    AGENT_APPROVAL,
    AGENT_COMPLETE,
    AGENT_ERROR,
    AGENT_QUESTION,
    AGENT_TEXT_DELTA,
    AGENT_THINKING_DELTA,
    AGENT_TOOL_END,
    AGENT_TOOL_OUTPUT,
    AGENT_TOOL_START,
)
from .errors import from_tron
from .permissions import for_request
from .terminals import Feed, Terminals, exit_status
from .toolcalls import (
    ToolContent,
    diff_of,
    kind_of,
    live_output,
    locations_of,
    plan_of,
    result_content,
    title_of,
)

log = logging.getLogger("tron_server.acp")

#: Tron's stop reasons (``agent.complete``) as ACP's. ``error`` is not a stop reason in
#: ACP: the prompt answers with an error instead.
STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "end_turn",
    "blocked": "end_turn",
    "hook_stopped": "end_turn",
    "max_tokens": "max_tokens",
    "max_turns": "max_turn_requests",
    "refusal": "refusal",
    "aborted": "cancelled",
    "suspended": "cancelled",
}


def stop_reason(tron: str | None, *, cancelled: bool = False) -> StopReason:
    """ACP's stop reason for Tron's (``cancelled`` once the editor cancelled)."""
    if cancelled:
        return "cancelled"
    return STOP_REASONS.get(tron or "end_turn", "end_turn")


class Editor(Protocol):
    """What a prompt uses of the ACP client (``acp.interfaces.Client``)."""

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None: ...

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> Any: ...


def _is_text(block: ToolContent) -> bool:
    return block.type == "content" and getattr(block.content, "type", None) == "text"


@dataclass
class _Call:
    name: str
    arguments: dict[str, Any]
    output: str = ""
    feed: Feed | None = None  # a Bash call shown in the editor's terminal


@dataclass
class PromptRun:
    """A prompt in progress in one session."""

    session_id: str
    cwd: str
    editor: Editor
    tron: TronClient
    #: The editor's terminals, when it advertises them (Bash output shown there).
    terminals: Terminals | None = None
    cancelled: bool = False
    run_id: str | None = None
    error: str | None = None
    calls: dict[str, _Call] = field(default_factory=dict)
    asks: set[asyncio.Task[None]] = field(default_factory=set)

    async def send(self, update: Any) -> None:
        await self.editor.session_update(self.session_id, update)

    async def run(self, content: str | list[dict[str, Any]]) -> PromptResponse:
        """Send the message and stream its run; the prompt's answer."""
        stream = self.tron.notifications()
        try:
            try:
                started = await self.tron.call(
                    "agent.message", {"sessionId": self.session_id, "content": content}
                )
            except RpcCallError as exc:
                raise from_tron(exc) from None
            if started.get("builtin"):
                # A built-in slash command answered at once (/help, /cost …).
                output = started.get("output")
                if isinstance(output, str) and output:
                    await self.send(update_agent_message_text(output))
                return PromptResponse(stop_reason="end_turn")
            self.run_id = started.get("runId")
            stopped = await self._follow(stream)
        finally:
            stream.close()
            for task in self.asks:
                task.cancel()
            for call in self.calls.values():  # calls the turn left without an end
                if call.feed is not None and call.feed.exit is None and self.terminals:
                    self.terminals.close(call.feed, 130)
        if stopped == "error" and not self.cancelled:
            raise RequestError(-32603, self.error or "the turn failed", {"stopReason": stopped})
        return PromptResponse(stop_reason=stop_reason(stopped, cancelled=self.cancelled))

    async def _follow(self, stream: NotificationStream) -> str | None:
        while True:
            try:
                n = await stream.next()
            except ConnectionLost as exc:
                raise RequestError(
                    -32603,
                    f"lost the connection to tron-server ({exc}); the turn may still run: "
                    "load the session again to see it",
                ) from None
            data = n.data if isinstance(n.data, dict) else {}
            ours = n.session_id == self.session_id
            if n.method in (AGENT_APPROVAL, AGENT_QUESTION):
                if ours or data.get("parentSessionId") == self.session_id:
                    self._ask(data)
                continue
            if not ours:
                continue
            if n.method == AGENT_COMPLETE:
                if self.run_id is None or data.get("runId") in (None, self.run_id):
                    stop = data.get("stopReason")
                    return stop if isinstance(stop, str) else None
                continue
            await self._update(n.method, data)

    async def _update(self, method: str, data: dict[str, Any]) -> None:
        if method == AGENT_TEXT_DELTA and isinstance(data.get("delta"), str):
            await self.send(update_agent_message_text(data["delta"]))
        elif method == AGENT_THINKING_DELTA and isinstance(data.get("delta"), str):
            await self.send(update_agent_thought_text(data["delta"]))
        elif method == AGENT_TOOL_START:
            await self._tool_start(data)
        elif method == AGENT_TOOL_OUTPUT:
            call = self.calls.get(str(data.get("toolCallId")))
            if call is not None and isinstance(data.get("chunk"), str):
                call.output += data["chunk"]
                if call.feed is not None:  # the editor's terminal shows it
                    call.feed.write(data["chunk"])
                    return
                await self.send(
                    ToolCallProgress(
                        session_update="tool_call_update",
                        tool_call_id=str(data["toolCallId"]),
                        status="in_progress",
                        content=live_output(call.output),
                    )
                )
        elif method == AGENT_TOOL_END:
            await self._tool_end(data)
        elif method == AGENT_ERROR and isinstance(data.get("message"), str):
            self.error = data["message"]

    async def _tool_start(self, data: dict[str, Any]) -> None:
        call_id = str(data.get("toolCallId"))
        name = str(data.get("name") or "tool")
        args = data.get("arguments") if isinstance(data.get("arguments"), dict) else {}
        assert isinstance(args, dict)
        call = self.calls[call_id] = _Call(name, args)
        content: list[ToolContent] = diff_of(name, args, self.cwd)
        if name == "Bash" and self.terminals is not None:
            call.feed = await self.terminals.open(self.session_id, self.cwd)
            if call.feed is not None:
                content = [*self.terminals.content(call.feed)]
        await self.send(
            ToolCallStart(
                session_update="tool_call",
                tool_call_id=call_id,
                title=title_of(name, args, self.cwd),
                kind=kind_of(name, args),
                status="in_progress",
                locations=locations_of(name, args, self.cwd) or None,
                content=content or None,
                raw_input=args,
            )
        )

    async def _tool_end(self, data: dict[str, Any]) -> None:
        call_id = str(data.get("toolCallId"))
        call = self.calls.get(call_id) or _Call(str(data.get("name") or "tool"), {})
        failed = bool(data.get("isError"))
        content = result_content(
            call.name, call.arguments, data.get("content"), self.cwd, is_error=failed
        )
        if call.feed is not None and self.terminals is not None:
            # The terminal shows the output and the viewer exits with the command's status;
            # a call that failed without output (rejected, not started) shows why.
            if failed and call.feed.total == 0:
                call.feed.write("".join(b.content.text for b in content if _is_text(b)))
            self.terminals.close(call.feed, exit_status(data.get("content"), is_error=failed))
            content = [*self.terminals.content(call.feed)]
        await self.send(
            ToolCallProgress(
                session_update="tool_call_update",
                tool_call_id=call_id,
                status="failed" if failed else "completed",
                content=content or None,
                raw_output=data.get("content"),
            )
        )
        if call.name == "TodoWrite" and not failed:
            plan = plan_of(call.arguments)
            if plan is not None:
                await self.send(plan)

    # -- the user in the loop -----------------------------------------------------------

    def _ask(self, request: dict[str, Any]) -> None:
        task = asyncio.create_task(self._permission(request))
        self.asks.add(task)
        task.add_done_callback(self.asks.discard)

    async def _permission(self, request: dict[str, Any]) -> None:
        ask = for_request(request, self.cwd)
        try:
            answer = await self.editor.request_permission(
                self.session_id, ask.tool_call, ask.options
            )
        except Exception as exc:  # the editor failed to answer: the request stays pending
            log.warning("the editor did not answer a permission request: %s", exc)
            return
        outcome = getattr(answer, "outcome", None)
        if not isinstance(outcome, AllowedOutcome):
            return  # cancelled: the prompt's cancellation aborts the turn
        reply = ask.answers.get(outcome.option_id)
        if reply is None:
            log.warning("the editor chose an option that was not offered: %r", outcome.option_id)
            return
        if request.get("kind") == "approval" and str(outcome.option_id).startswith("allow"):
            call_id = str(request.get("toolCallId"))
            with contextlib.suppress(Exception):
                await self.send(
                    ToolCallProgress(
                        session_update="tool_call_update",
                        tool_call_id=call_id,
                        status="in_progress",
                    )
                )
        try:
            await self.tron.call(
                "agent.respond",
                {
                    "sessionId": self.session_id,
                    "requestId": request.get("requestId"),
                    "answer": reply,
                },
            )
        except RpcCallError as exc:  # answered elsewhere first (the web chat, tron)
            log.info("the permission answer was not taken: %s", exc.message)

    async def cancel(self) -> None:
        """``session/cancel``: abort the turn (the prompt then answers ``cancelled``)."""
        self.cancelled = True
        with contextlib.suppress(RpcCallError, ConnectionLost):
            await self.tron.call("agent.abort", {"sessionId": self.session_id})


__all__ = ["STOP_REASONS", "Editor", "PromptRun", "stop_reason"]
