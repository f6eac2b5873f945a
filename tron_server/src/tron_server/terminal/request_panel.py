"""Questions and approvals, asked in a panel above the input (as the web chat does):
the transcript stays visible above it, so the model's text before a tool call is
read with the call. An approval shows what the call does: the diff an Edit or a
Write would make to the file on disk (the server's ``preview``), the command of a
Bash call, the arguments of another tool as ``name: value`` lines — never raw JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from . import cards
from .diffview import render_files
from .model import ToolState


@dataclass(frozen=True)
class Request:
    """A question or an approval the server waits on (``agent.respond`` answers it)."""

    request_id: str
    kind: str  # "question" | "approval"
    text: str
    options: tuple[str, ...] = ()
    multi_select: bool = False
    tool_name: str = ""
    tool_input: Any = None
    reason: str = ""
    """Why the approval is asked (the rule or mode)."""
    suggestion: str = ""
    """The rule "allow always" adds (``Bash(git push:*)``)."""
    preview: dict[str, Any] | None = None
    """An Edit's or a Write's change to the file as it is now (a ``session.diff`` entry)."""


APPROVAL_CHOICES = (
    ("allow", "Allow once"),
    ("allow_always", "Allow always (this session)"),
    ("deny", "Deny"),
)

#: What a bare rule covers, said on the "allow always" choice.
_RULE_SCOPES = {"Edit": "every file edit", "Read": "every file read"}


def always_label(suggestion: str) -> str:
    """The "allow always" choice, saying which rule it adds and what that covers."""
    if not suggestion:
        return "Allow always (this session)"
    scope = _RULE_SCOPES.get(suggestion)
    return f"Allow always (this session): {suggestion}" + (f" · {scope}" if scope else "")


def _one_line(value: Any, width: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def call_view(request: Request) -> Text:
    """What the call would do (see the module docstring)."""
    args = request.tool_input if isinstance(request.tool_input, dict) else {}
    if request.preview and request.preview.get("diff"):
        return render_files([request.preview])
    tool = ToolState("", name=request.tool_name, arguments=args)
    diff = cards.diff_lines(tool)
    if diff:
        return cards.render_diff(diff, None)
    if request.tool_name == "Bash" and isinstance(args.get("command"), str):
        text = Text("$ ", style="dim")
        text.append(str(args["command"]), style="cyan")
        return text
    if not args and request.tool_input is not None:
        return Text(_one_line(request.tool_input, 400), style="cyan")
    text = Text()
    for key, value in args.items():
        text.append(f"{key}: ", style="dim")
        text.append(_one_line(value, 300) + "\n", style="cyan")
    text.rstrip()
    return text


class RequestPanel(Vertical):
    """Answer a question (a choice, several, or free text) or an approval (allow once,
    allow always, deny with an optional reason). Esc leaves it unanswered (the request
    stays pending on the server; ``/answer`` shows it again)."""

    DEFAULT_CSS = """
    RequestPanel { height: auto; max-height: 70%; border: round $warning; background: $surface;
                   padding: 0 1; display: none; }
    RequestPanel.shown { display: block; }
    RequestPanel #call { height: auto; max-height: 14; }
    RequestPanel OptionList { height: auto; max-height: 8; }
    RequestPanel .hint { color: $text-muted; }
    """
    BINDINGS = [
        Binding("escape", "later", "Answer later"),
        Binding("ctrl+s", "send_choices", "Send the choices", show=False),
    ]

    class Answered(Message):
        """The user answered ``request`` (``answer`` None: later)."""

        def __init__(self, request: Request, answer: Any) -> None:
            super().__init__()
            self.request = request
            self.answer = answer

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.request: Request | None = None
        self.selected: set[str] = set()

    async def ask(self, request: Request) -> None:
        """Show ``request`` (replacing what was shown) and take the focus."""
        self.request = request
        self.selected = set()
        await self.remove_children()
        await self.mount_all(list(self._parts(request)))
        self.add_class("shown")
        if request.kind == "approval":
            self.query_one("#reason", Input).display = False
        self.query_one(OptionList if self.query(OptionList) else Input).focus()

    async def close(self) -> None:
        self.request = None
        self.remove_class("shown")
        await self.remove_children()

    def _parts(self, r: Request) -> list[Any]:
        parts: list[Any] = []
        if r.kind == "approval":
            title = Text(f"Allow {r.tool_name}?", style="bold")
            if r.reason:
                title.append(f"  {r.reason}", style="dim")
            parts.append(Static(title))
            parts.append(VerticalScroll(Static(call_view(r)), id="call"))
            labels = dict(APPROVAL_CHOICES)
            labels["allow_always"] = always_label(r.suggestion)
            parts.append(OptionList(*(Option(label, id=v) for v, label in labels.items())))
            parts.append(Input(placeholder="reason for denying (optional), Enter", id="reason"))
        else:
            parts.append(Static(Text(r.text, style="bold")))
            if r.options:
                parts.append(OptionList(*(Option(o, id=str(i)) for i, o in enumerate(r.options))))
                if r.multi_select:
                    parts.append(Static("Enter toggles · Ctrl+S sends", classes="hint"))
            else:
                parts.append(Input(placeholder="your answer, Enter sends", id="answer"))
        parts.append(Static("Esc: answer later (/answer shows it again)", classes="hint"))
        return parts

    def _answer(self, answer: Any) -> None:
        if self.request is not None:
            self.post_message(self.Answered(self.request, answer))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        r = self.request
        if r is None:
            return
        value = event.option.id or ""
        if r.kind == "approval":
            if value == "deny":
                reason = self.query_one("#reason", Input)
                reason.display = True
                reason.focus()
                return
            self._answer({"decision": value})
            return
        if r.multi_select:
            label = r.options[int(value)]
            if label in self.selected:
                self.selected.discard(label)
            else:
                self.selected.add(label)
            event.option_list.replace_option_prompt(
                value, ("☑ " if label in self.selected else "") + label
            )
            return
        self._answer(r.options[int(value)])

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        r = self.request
        if r is None:
            return
        if r.kind == "approval":
            self._answer({"decision": "deny", "reason": event.value or None})
        else:
            self._answer(event.value)

    def action_send_choices(self) -> None:
        if self.request is not None and self.request.multi_select:
            self._answer([o for o in self.request.options if o in self.selected])

    def action_later(self) -> None:
        self._answer(None)


__all__ = ["APPROVAL_CHOICES", "Request", "RequestPanel", "always_label", "call_view"]
