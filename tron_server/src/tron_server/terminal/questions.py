"""Questions and approvals the server waits on: asked in the panel above the input,
one at a time, answered with ``agent.respond`` (a sub-agent's too: the parent answers)."""

from __future__ import annotations

from typing import Any

from ..client import ConnectionLost, RpcCallError
from .host import ChatHost
from .request_panel import Request


class Questions:
    """The requests pending for the user, and the one shown."""

    def __init__(self, host: ChatHost) -> None:
        self.host = host
        self.pending: dict[str, Request] = {}
        self.shown: Request | None = None

    def offer(self, data: dict[str, Any]) -> bool:
        """A notification asking the user something (a question, an approval), or
        saying such a request was answered elsewhere; False for anything else.
        Shown only when the server has ``agent.respond`` to answer with."""
        host = self.host
        request_id = data.get("requestId")
        if not isinstance(request_id, str) or not host.caps.has("agent.respond"):
            return False
        if any(k in data for k in ("answer", "resolved", "answeredBy", "cancelled")):
            self.pending.pop(request_id, None)
            if self.shown is not None and self.shown.request_id == request_id:
                self.shown = None
                host.later(host.close_request)
                host.later(host.notify, "Answered elsewhere.")
                host.later(self.show_next)
            return True
        if isinstance(data.get("question"), str):
            options = data.get("options") or []
            request = Request(
                request_id,
                "question",
                data["question"],
                tuple(str(o.get("label", o) if isinstance(o, dict) else o) for o in options),
                bool(data.get("multiSelect")),
            )
        elif isinstance(data.get("toolName") or data.get("tool"), str):
            name = str(data.get("toolName") or data.get("tool"))
            preview = data.get("preview")
            request = Request(request_id, "approval", f"Allow {name}?", tool_name=name,
                              tool_input=data.get("input", data.get("arguments")),
                              reason=str(data.get("reason") or ""),
                              suggestion=str(data.get("suggestion") or ""),
                              preview=preview if isinstance(preview, dict) else None)  # fmt: skip
        else:
            return False
        self.pending[request_id] = request
        host.later(self.show, request)
        return True

    def show_again(self) -> None:
        """``/answer``: the first pending request, or say there is none."""
        if not self.pending:
            self.host.say("Nothing is waiting for an answer.")
        else:
            self.show(next(iter(self.pending.values())))

    def show_next(self) -> None:
        if self.pending and self.shown is None:
            self.show(next(iter(self.pending.values())))

    def show(self, request: Request) -> None:
        if self.shown is not None:
            return  # one at a time; the next is shown when this one is answered
        self.shown = request
        self.host.ask(request)

    async def answered(self, request: Request, answer: Any) -> None:
        """The panel's answer (None: later): sent with ``agent.respond``."""
        host = self.host
        if self.shown is not request:
            return  # ended meanwhile (answered elsewhere)
        self.shown = None
        await host.close_request()
        if answer is None:
            host.notify("Not answered yet: /answer shows it again.", timeout=5)
            return
        if host.model is not None:
            try:
                await host.link.call(
                    "agent.respond",
                    {"sessionId": host.model.id, "requestId": request.request_id,
                     "answer": answer},
                )  # fmt: skip
                self.pending.pop(request.request_id, None)
            except (RpcCallError, ConnectionLost) as exc:
                host.say(f"The answer was not taken: {exc}", error=True)
        rest = [r for r in self.pending.values() if r is not request]
        if rest:
            self.show(rest[0])


__all__ = ["Questions"]
