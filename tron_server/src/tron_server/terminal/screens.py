"""Screens over the conversation: the session tree, a list to pick from, and the
question / approval prompt."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static, Tree
from textual.widgets.option_list import Option
from textual.widgets.tree import TreeNode

from .model import MESSAGE_TYPES, SessionModel, content_text, user_text

_NODE_TYPES = MESSAGE_TYPES | {"session.start", "session.fork"}


@dataclass(frozen=True)
class TreeChoice:
    action: str  # "fork" | "rewind"
    event_id: str
    edit: str | None = None
    """A rewind to before a message: its text, to put back in the input."""


def _label(ev: dict[str, Any], on_path: bool, is_head: bool, width: int = 60) -> Text:
    p = ev.get("payload") or {}
    kind = ev.get("type")
    if kind == "message.user":
        icon, label = "›", content_text(p.get("content"))
    elif kind == "message.assistant":
        icon = "◆"
        content = p.get("content")
        blocks: list[Any] = content if isinstance(content, list) else []
        tools = [
            str(b.get("name"))
            for b in blocks
            if isinstance(b, dict) and b.get("type") == "tool_use"
        ]
        label = content_text(content) or (f"[{', '.join(tools)}]" if tools else "")
    elif kind == "session.fork":
        icon, label = "⑂", f"fork of {p.get('sourceSessionId') or '?'}"
    else:
        icon, label = "●", f"start · {p.get('model') or ''}"
    label = " ".join(label.replace("`", "").replace("*", "").split()) or "(no text)"
    if len(label) > width:
        label = label[: width - 1] + "…"
    text = Text(f"{icon} ", style="bold" if on_path else "dim")
    text.append(label, style="" if on_path else "dim")
    if is_head:
        text.append("  HEAD", style="bold reverse")
    return text


class TreeScreen(ModalScreen[TreeChoice | None]):
    """The session's tree of messages. ``f`` forks at the selected message, ``r``
    rewinds to it (on the current path only; to just before it for a message of
    yours, whose text goes back into the input), Esc closes."""

    DEFAULT_CSS = """
    TreeScreen { align: center middle; }
    TreeScreen > Vertical { width: 95%; height: 90%; border: round $accent; background: $surface; }
    TreeScreen Tree { height: 1fr; }
    TreeScreen .hint { height: auto; color: $text-muted; padding: 0 1; }
    """
    BINDINGS = [
        Binding("f", "fork", "Fork here"),
        Binding("r", "rewind", "Rewind here"),
        Binding("escape", "close", "Close"),
    ]

    def __init__(self, model: SessionModel) -> None:
        super().__init__()
        self.model = model

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(
                "Session tree · ↑↓ move · f fork here · r rewind here (your message: to "
                "before it) · Esc close",
                classes="hint",
            )
            yield Tree[str]("session", id="tree")
            yield Static("", id="tree-info", classes="hint")

    def on_mount(self) -> None:
        tree = self.query_one(Tree)
        tree.show_root = False
        model = self.model
        shown = {eid: ev for eid, ev in model.events.items() if ev.get("type") in _NODE_TYPES}

        def shown_parent(ev: dict[str, Any]) -> str | None:
            current = ev.get("parentId")
            while current:
                if current in shown:
                    return str(current)
                parent = model.events.get(current)
                current = parent.get("parentId") if parent else None
            return None

        children: dict[str | None, list[dict[str, Any]]] = {}
        for ev in shown.values():
            children.setdefault(shown_parent(ev), []).append(ev)
        for kids in children.values():
            kids.sort(key=lambda e: (e.get("depth", 0), e.get("sessionId") == model.id,
                                     e.get("sequence", 0)))  # fmt: skip
        on_path = {e["id"] for e in model.path()}
        head = model.head_id
        while head and head not in shown:
            head = (model.events.get(head) or {}).get("parentId")
        cursor_node: TreeNode[str] | None = None

        def add_chain(node: TreeNode[str], ev: dict[str, Any]) -> None:
            nonlocal cursor_node
            current = ev
            while True:
                eid = str(current["id"])
                kids = children.get(eid, [])
                leaf = node.add_leaf(_label(current, eid in on_path, eid == head), data=eid)
                if eid == head:
                    cursor_node = leaf
                if len(kids) == 1:
                    current = kids[0]
                    continue
                for kid in kids:
                    branch = node.add(
                        Text("⑂ branch", style="" if kid["id"] in on_path else "dim"),
                        data=str(kid["id"]),
                        expand=True,
                    )
                    add_chain(branch, kid)
                return

        for root in children.get(None, []):
            add_chain(tree.root, root)
        tree.focus()
        if cursor_node is not None:
            target: TreeNode[str] = cursor_node
            self.call_after_refresh(lambda: tree.move_cursor(target))

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[str]) -> None:
        event_id = event.node.data
        ev = self.model.events.get(event_id) if event_id else None
        if ev is None:
            return
        label = _label(ev, True, False, 50).plain
        self._say(f"{label}  ·  {event_id}")

    def _selected(self) -> str | None:
        node = self.query_one(Tree).cursor_node
        if node is None or node.data is None:
            return None
        ev = self.model.events.get(node.data)
        return node.data if ev is not None and ev.get("type") in MESSAGE_TYPES else None

    def _say(self, text: str) -> None:
        self.query_one("#tree-info", Static).update(text)

    def action_fork(self) -> None:
        event_id = self._selected()
        if event_id is None:
            self._say("Select a message to fork from.")
            return
        self.dismiss(TreeChoice("fork", event_id))

    def action_rewind(self) -> None:
        event_id = self._selected()
        if event_id is None:
            self._say("Select a message to rewind to.")
            return
        if event_id not in {e["id"] for e in self.model.path()}:
            self._say("That message is on another branch: fork from it instead (f).")
            return
        ev = self.model.events[event_id]
        text = user_text((ev.get("payload") or {}).get("content"))
        if ev.get("type") == "message.user" and text is not None and ev.get("parentId"):
            # Back to before the message, which goes into the input to edit (Claude
            # Code's rewind): rewinding *to* it would send the next prompt with it.
            self.dismiss(TreeChoice("rewind", str(ev["parentId"]), edit=text))
            return
        if event_id == self.model.head_id:
            self._say("That is already the head.")
            return
        self.dismiss(TreeChoice("rewind", event_id))

    def action_close(self) -> None:
        self.dismiss(None)


class InfoScreen(ModalScreen[None]):
    """Text to read (help, context, cost); any of Esc, Enter or q closes it."""

    DEFAULT_CSS = """
    InfoScreen { align: center middle; }
    InfoScreen > Vertical { width: 95%; height: auto; max-height: 90%; border: round $accent;
                            background: $surface; padding: 0 1; }
    """
    BINDINGS = [
        Binding("escape", "close", "Close"),
        Binding("enter", "close", show=False),
        Binding("q", "close", show=False),
    ]

    def __init__(self, text: str | Text) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.text)
            yield Static(Text("Esc closes", style="dim"))

    def action_close(self) -> None:
        self.dismiss(None)


class PickScreen(ModalScreen[str | None]):
    """Pick one of a list (sessions, models): Enter picks, Esc cancels."""

    DEFAULT_CSS = """
    PickScreen { align: center middle; }
    PickScreen > Vertical { width: 95%; height: auto; max-height: 90%; border: round $accent;
                            background: $surface; }
    PickScreen OptionList { height: auto; max-height: 30; }
    PickScreen .hint { color: $text-muted; padding: 0 1; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, choices: list[tuple[str, str]]) -> None:
        super().__init__()
        self.title_text = title
        self.choices = choices

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"{self.title_text} · Enter picks · Esc cancels", classes="hint")
            yield OptionList(*(Option(label, id=value) for value, label in self.choices))

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


__all__ = [
    "InfoScreen",
    "PickScreen",
    "TreeChoice",
    "TreeScreen",
]
