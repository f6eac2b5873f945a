"""The widgets of the interactive screen: transcript items, the input, the status line."""

from __future__ import annotations

from typing import Any, Protocol

from rich.console import Group
from rich.text import Text
from textual import events
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Collapsible, Markdown, Static, TextArea

from . import cards
from .items import Item


class ItemWidget:
    """Mixin: a widget showing one transcript item, updated in place."""

    item_key: str = ""
    signature: Any = None

    async def show(self, item: Item) -> None:  # pragma: no cover - every subclass overrides
        raise NotImplementedError


class UserItem(Static, ItemWidget):
    DEFAULT_CSS = """
    UserItem { background: $boost; color: $text; padding: 0 1; margin: 1 0 0 0; }
    """

    def __init__(self, item: Item) -> None:
        super().__init__(classes="item user")
        self.item_key = item.key

    async def show(self, item: Item) -> None:
        self.signature = item.signature
        text = Text("› ", style="bold")
        text.append(item.text)
        self.update(text)


class TextItem(Markdown, ItemWidget):
    """Assistant text as Markdown (code blocks highlighted); streams by appending."""

    DEFAULT_CSS = """
    TextItem { margin: 1 0 0 0; padding: 0 1; background: transparent; }
    TextItem > *:last-child { margin-bottom: 0; }
    """

    def __init__(self, item: Item) -> None:
        super().__init__(item.text, classes="item text")
        self.item_key = item.key
        self.shown = item.text
        self._ready = False

    async def on_mount(self) -> None:
        # Markdown renders its initial text in its own (earlier) mount handler: text
        # that came meanwhile is rendered now, rather than overwritten by it.
        self._ready = True
        if self.source != self.shown:
            await self.update(self.shown)

    async def show(self, item: Item) -> None:
        self.signature = item.signature
        text = item.text
        if text == self.shown:
            return
        if not self._ready:
            self.shown = text
            self._initial_markdown = text
            return
        if self.shown and text.startswith(self.shown):
            await self.append(text[len(self.shown) :])
        else:
            await self.update(text)
        self.shown = text


class ThinkingItem(Collapsible, ItemWidget):
    """Thinking, collapsed (click or Enter on the title opens it)."""

    DEFAULT_CSS = """
    ThinkingItem { margin: 1 0 0 0; padding: 0; border: none; background: transparent; }
    ThinkingItem > Contents { padding: 0 2; color: $text-muted; }
    """

    def __init__(self, item: Item) -> None:
        self._body = Static("", classes="thinking-text")
        # The title is right from the start: a title changed in the same tick as the
        # mount could keep the auto width laid out for the old one (seen cut to
        # "▶ Thinking" under load).
        super().__init__(
            self._body, title=self._title_for(item), collapsed=True, classes="item thinking"
        )
        self.item_key = item.key

    @staticmethod
    def _title_for(item: Item) -> str:
        return f"Thinking ({len(item.text.split())} words)"

    async def show(self, item: Item) -> None:
        self.signature = item.signature
        title = self._title_for(item)
        if title != self.title:
            self.title = title
            self.refresh(layout=True)
        self._body.update(Text(item.text, style="italic"))


class ToolCard(Static, ItemWidget, can_focus=True):
    """A tool call: header (status, name, main argument, duration), a diff for
    Edit/Write, the tail of the output; click or Enter shows everything."""

    DEFAULT_CSS = """
    ToolCard { margin: 1 0 0 0; padding: 0 1; border-left: thick $primary; }
    ToolCard.error { border-left: thick $error; }
    ToolCard.running { border-left: thick $warning; }
    ToolCard:focus { background: $boost; }
    """

    def __init__(self, item: Item) -> None:
        super().__init__("", classes="item tool")
        self.item_key = item.key
        self.expanded = False
        self.plain = ""
        self._item = item

    async def show(self, item: Item) -> None:
        self.signature = item.signature
        self._item = item
        self._render_card()

    def _render_card(self) -> None:
        tool = self._item.tool
        if tool is None:
            return
        self.set_class(tool.status == "error", "error")
        self.set_class(tool.status in ("running", "pending"), "running")
        width = max(20, (self.size.width or self.app.size.width) - 4)
        head = cards.header(tool, width)
        body = cards.body(tool, expanded=self.expanded)
        self.plain = head.plain + ("\n" + body.plain if body.plain else "")
        self.update(Group(head, body) if body.plain else head)

    def on_click(self) -> None:
        self.toggle()

    def on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            event.stop()
            self.toggle()

    def toggle(self) -> None:
        self.expanded = not self.expanded
        self._render_card()


class NoticeItem(Static, ItemWidget):
    DEFAULT_CSS = """
    NoticeItem { color: $text-muted; margin: 1 0 0 0; padding: 0 1; }
    NoticeItem.error { color: $error; }
    """

    def __init__(self, item: Item) -> None:
        super().__init__("", classes="item notice" + (" error" if item.kind == "error" else ""))
        self.item_key = item.key

    async def show(self, item: Item) -> None:
        self.signature = item.signature
        self.update(Text(("✗ " if item.kind == "error" else "") + item.text))


class PendingItem(Static, ItemWidget):
    """A message queued while a turn runs: sent when it ends (Esc puts it back)."""

    DEFAULT_CSS = """
    PendingItem { color: $text-muted; padding: 0 1; margin: 1 0 0 0; }
    """

    def __init__(self, item: Item) -> None:
        super().__init__(classes="item pending")
        self.item_key = item.key

    async def show(self, item: Item) -> None:
        self.signature = item.signature
        text = Text("› ", style="bold dim")
        text.append(item.text, style="dim")
        text.append("  (queued: sent when this turn ends · Esc puts it back)", style="dim italic")
        self.update(text)


def widget_for(item: Item) -> Widget:
    if item.kind == "user":
        return UserItem(item)
    if item.kind == "pending":
        return PendingItem(item)
    if item.kind == "text":
        return TextItem(item)
    if item.kind == "thinking":
        return ThinkingItem(item)
    if item.kind == "tool":
        return ToolCard(item)
    return NoticeItem(item)


class Transcript(VerticalScroll):
    """The conversation: one widget per item, kept in the items' order."""

    DEFAULT_CSS = """
    Transcript { height: 1fr; padding: 0 1 1 1; scrollbar-size-vertical: 1; }
    """

    async def sync(self, items: list[Item]) -> None:
        """Make the children show ``items``: update changed ones in place, and
        rebuild only from the first position where the keys differ."""
        children = [c for c in self.children if isinstance(c, ItemWidget)]
        keep = 0
        while (
            keep < len(children)
            and keep < len(items)
            and children[keep].item_key == items[keep].key
        ):
            keep += 1
        stale = children[keep:]
        if stale:
            await self.remove_children([c for c in stale if isinstance(c, Widget)])
        for child, item in zip(children[:keep], items[:keep], strict=True):
            if child.signature != item.signature:
                await child.show(item)
        fresh = [widget_for(item) for item in items[keep:]]
        if fresh:
            await self.mount_all(fresh)
            for widget, item in zip(fresh, items[keep:], strict=True):
                assert isinstance(widget, ItemWidget)
                await widget.show(item)


class InputOwner(Protocol):
    """What the input asks its screen, synchronously, at the moment of the key (so
    keys typed right after Enter or Tab never land in the wrong text)."""

    def completing(self, text: str) -> bool:
        """Whether ``text`` has a completion list open."""

    def on_enter(self, text: str) -> str | None:
        """The text to send, or None to keep editing (a completion was taken)."""

    def on_completion_key(self, key: str, text: str) -> None:
        """Tab (complete), Up or Down (move) while the completion list is open."""


class PromptInput(TextArea):
    """The message input: Enter sends; Ctrl+J (or ``\\`` then Enter) is a new line;
    Up on the first line and Down on the last walk the input history."""

    DEFAULT_CSS = """
    PromptInput { height: auto; max-height: 10; min-height: 3; border: round $primary; }
    PromptInput:focus { border: round $accent; }
    """

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class InputChanged(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, history: list[str] | None = None, **kwargs: Any) -> None:
        super().__init__(soft_wrap=True, show_line_numbers=False, tab_behavior="focus", **kwargs)
        self.past_inputs: list[str] = list(history or [])
        self._history_index: int | None = None
        self._draft = ""
        self.owner: InputOwner | None = None

    def _completing(self) -> bool:
        return self.owner is not None and self.owner.completing(self.text)

    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        if key == "enter":
            event.stop()
            event.prevent_default()
            row, col = self.cursor_location
            line = self.document.get_line(row)
            if col > 0 and line[:col].endswith("\\"):
                self.replace("\n", (row, col - 1), (row, col))
                return
            text: str | None = self.text
            if self.owner is not None and text is not None:
                text = self.owner.on_enter(text)
            if text is not None and text.strip():
                self.remember(text)
                self.load_text("")
                self.post_message(self.Submitted(text))
            return
        if key in ("ctrl+j", "newline", "shift+enter", "alt+enter", "ctrl+enter"):
            event.stop()
            event.prevent_default()
            self.insert("\n")
            return
        if key in ("tab", "up", "down") and self._completing():
            event.stop()
            event.prevent_default()
            assert self.owner is not None
            self.owner.on_completion_key(key, self.text)
            return
        await super()._on_key(event)

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        self.post_message(self.InputChanged(self.text))

    def action_cursor_up(self, select: bool = False) -> None:
        if self._completing():
            assert self.owner is not None
            self.owner.on_completion_key("up", self.text)
            return
        if not select and self.cursor_location[0] == 0 and self.past_inputs:
            self.walk_history(-1)
            return
        super().action_cursor_up(select)

    def action_cursor_down(self, select: bool = False) -> None:
        if self._completing():
            assert self.owner is not None
            self.owner.on_completion_key("down", self.text)
            return
        last = self.document.line_count - 1
        if not select and self.cursor_location[0] == last and self._history_index is not None:
            self.walk_history(1)
            return
        super().action_cursor_down(select)

    def walk_history(self, step: int) -> None:
        if self._history_index is None:
            if step > 0:
                return
            self._draft = self.text
            index = len(self.past_inputs) - 1
        else:
            index = self._history_index + step
        if index < 0:
            return
        if index >= len(self.past_inputs):
            self._history_index = None
            self.load_text(self._draft)
        else:
            self._history_index = index
            self.load_text(self.past_inputs[index])
        self.move_cursor(self.document.end)

    def remember(self, text: str) -> None:
        if text.strip() and (not self.past_inputs or self.past_inputs[-1] != text):
            self.past_inputs.append(text)
        self._history_index = None
        self._draft = ""


class StatusLine(Static):
    """One line: model · mode · context use · cost · state."""

    DEFAULT_CSS = """
    StatusLine { height: 1; padding: 0 1; color: $text-muted; }
    """


class ConnectionNotice(Static):
    DEFAULT_CSS = """
    ConnectionNotice { height: auto; padding: 0 1; background: $error 30%; display: none; }
    ConnectionNotice.shown { display: block; }
    ConnectionNotice.ok { background: $success 30%; }
    """


__all__ = [
    "ConnectionNotice",
    "InputOwner",
    "ItemWidget",
    "NoticeItem",
    "PendingItem",
    "PromptInput",
    "StatusLine",
    "TextItem",
    "ThinkingItem",
    "ToolCard",
    "Transcript",
    "UserItem",
    "widget_for",
]
