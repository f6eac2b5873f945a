"""Completing ``/`` commands and ``@server:uri`` resource mentions (an MCP server's
resources, from ``mcp.list``): the list under the input and the keys that drive it.

The input asks :class:`Completer` synchronously, at the moment of the key (see
:class:`~.widgets.InputOwner`), so keys typed right after Enter or Tab never
land in the wrong text.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from . import commands as cmds
from .widgets import PromptInput


class Completer(OptionList):
    """The completion list: shown while the input holds ``/name`` (no space yet)."""

    DEFAULT_CSS = """
    Completer { height: auto; max-height: 8; display: none; border: round $secondary; }
    Completer.shown { display: block; }
    """

    def __init__(self, input: PromptInput, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.input = input
        self.commands: list[cmds.Command] = []
        #: ``@server:uri`` mentions offered after an ``@`` (names without the ``@``).
        self.mentions: list[cmds.Command] = []
        self.shown: list[cmds.Command] = []
        """The commands the list shows now (empty: hidden)."""
        self.moved = False
        """The user moved the selection (↑/↓) since the text last changed."""
        self._marked: int | None = None

    def matches(self, text: str) -> list[cmds.Command]:
        if text.startswith("/") and " " not in text and "\n" not in text:
            return cmds.matching(self.commands, text[1:])
        word = cmds.mention_word(text)
        if word is not None and self.mentions:
            return cmds.matching(self.mentions, word)
        return []

    # -- InputOwner -----------------------------------------------------------------

    def completing(self, text: str) -> bool:
        return bool(self.matches(text))

    def on_enter(self, text: str) -> str | None:
        found = self.matches(text)
        typed = cmds.mention_word(text) if not text.startswith("/") else text[1:]
        if not found or any(c.name == typed for c in found):
            return text
        chosen = self.highlighted_command(found)
        self.complete(chosen)
        if chosen.source == "mention":
            return None  # the mention is in the text; the message goes on
        return None if chosen.argument_hint else f"/{chosen.name}"

    def on_completion_key(self, key: str, text: str) -> None:
        found = self.matches(text)
        if not found:
            return
        if key == "tab":
            self.tab(text, found)
            return
        self.show(found)
        self.moved = True
        if key == "up":
            self.action_cursor_up()
        else:
            self.action_cursor_down()

    def tab(self, text: str, found: list[cmds.Command]) -> None:
        """Tab: the selected entry once the user moved to it, or when it is the only
        match; else the names' common prefix when it is longer than what is typed
        (as a shell completes), else the selected entry."""
        if self.moved or len(found) == 1:
            self.complete(self.highlighted_command(found))
            return
        typed = text[1:] if text.startswith("/") else cmds.mention_word(text) or ""
        names = [c.name for c in found if c.name.lower().startswith(typed.lower())]
        prefix = common_prefix(names)
        if len(prefix) > len(typed):
            self.input.load_text(text[: len(text) - len(typed)] + prefix)
            self.input.move_cursor(self.input.document.end)
            return
        self.complete(self.highlighted_command(found))

    # -- the list -------------------------------------------------------------------

    def follow(self, text: str) -> None:
        """The input changed: show what ``text`` matches, or hide."""
        self.moved = False
        found = self.matches(text)
        if found:
            self.show(found)
        else:
            self.hide()

    def show(self, found: list[cmds.Command]) -> None:
        if [c.name for c in found] == [c.name for c in self.shown]:
            return
        self.shown = found
        self.clear_options()
        self.add_options([Option(self._label(c, i == 0), id=c.name) for i, c in enumerate(found)])
        self._marked = 0
        self.highlighted = 0
        self.add_class("shown")

    @staticmethod
    def _label(command: cmds.Command, selected: bool) -> Text:
        # A marker as well as the highlight's colour: the selection shows on any
        # terminal, NO_COLOR included, although the input keeps the focus.
        label = Text("▸ " if selected else "  ", style="bold")
        sigil = "@" if command.source == "mention" else "/"
        label.append(f"{sigil}{command.name}", style="bold")
        if command.argument_hint:
            label.append(f" {command.argument_hint}", style="dim")
        label.append(f"  {command.description}", style="dim")
        return label

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        index = event.option_index
        if index == self._marked or not 0 <= index < len(self.shown):
            return
        if self._marked is not None and self._marked < len(self.shown):
            self.replace_option_prompt_at_index(
                self._marked, self._label(self.shown[self._marked], False)
            )
        self.replace_option_prompt_at_index(index, self._label(self.shown[index], True))
        self._marked = index

    def hide(self) -> None:
        self.shown = []
        self.remove_class("shown")

    def highlighted_command(self, found: list[cmds.Command]) -> cmds.Command:
        """The highlighted entry when the list shows ``found``, else the first match."""
        index = self.highlighted
        shown = [c.name for c in self.shown] == [c.name for c in found]
        if shown and index is not None and 0 <= index < len(found):
            return found[index]
        return found[0]

    def complete(self, command: cmds.Command) -> None:
        self.hide()
        if command.source == "mention":
            text = self.input.text
            word = cmds.mention_word(text) or ""
            self.input.load_text(f"{text[: len(text) - len(word) - 1]}@{command.name} ")
        else:
            self.input.load_text(f"/{command.name}" + (" " if command.argument_hint else ""))
        self.input.move_cursor(self.input.document.end)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        chosen = next((c for c in self.shown if c.name == event.option.id), None)
        if chosen is not None:
            self.complete(chosen)
            self.input.focus()


def common_prefix(names: list[str]) -> str:
    """The longest text every name starts with (empty for none)."""
    if not names:
        return ""
    first, last = min(names), max(names)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:n]


__all__ = ["Completer", "common_prefix"]
