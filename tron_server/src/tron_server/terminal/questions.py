"""Questions and approvals the server waits on: opened over the input, one at a
time, answered with ``agent.respond`` (a sub-agent's too: the parent answers)."""

from __future__ import annotations

from typing import Any

from ..client import ConnectionLost, RpcCallError
from .host import ChatHost
from .screens import Request, RequestScreen


class Questions:
    """The requests pending for the user, and the one shown."""

    def __init__(self, host: ChatHost) -> None:
        self.host = host
        self.pending: dict[str, Request] = {}
        self.screen: RequestScreen | None = None

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
            screen = self.screen
            if screen is not None and screen.request.request_id == request_id:
                host.later(screen.dismiss, None)
                host.later(host.notify, "Answered elsewhere.")
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
            request = Request(request_id, "approval", f"Allow {name}?", tool_name=name,
                              tool_input=data.get("input", data.get("arguments")),
                              reason=str(data.get("reason") or ""),
                              suggestion=str(data.get("suggestion") or ""))  # fmt: skip
        else:
            return False
        self.pending[request_id] = request
        host.later(self.show, request)
        return True

    def show_again(self) -> None:
        """``/answer``: the first pending request, or say there is none."""
        if not self.pending:
            self.host.notify("Nothing is waiting for an answer.")
        else:
            self.show(next(iter(self.pending.values())))

    def show(self, request: Request) -> None:
        if self.screen is not None:
            return  # one at a time; the next is shown when this one is answered
        host = self.host
        screen = RequestScreen(request)
        self.screen = screen

        async def answered(answer: Any) -> None:
            self.screen = None
            if answer is not None and host.model is not None:
                try:
                    await host.link.call(
                        "agent.respond",
                        {"sessionId": host.model.id, "requestId": request.request_id,
                         "answer": answer},
                    )  # fmt: skip
                    self.pending.pop(request.request_id, None)
                except (RpcCallError, ConnectionLost) as exc:
                    host.say(f"The answer was not taken: {exc}", error=True)
            elif answer is None:
                host.notify("Not answered yet: /answer shows it again.", timeout=5)
                return
            rest = [r for r in self.pending.values() if r is not request]
            if answer is not None and rest:
                self.show(rest[0])

        host.open_screen(screen, answered)


__all__ = ["Questions"]
