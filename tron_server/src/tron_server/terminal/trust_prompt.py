"""The question ``tron`` asks on opening an untrusted folder that defines configuration
(:mod:`.trust`): "Trust this folder" / "Continue without its settings"."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from .trust import defined_items

__all__ = ["TrustPrompt"]


class TrustPrompt(App[bool | None]):
    """Asks whether to trust a folder before the conversation opens: True (trust it),
    False (continue without its settings), None (quit: Ctrl+C)."""

    CSS = """
    Screen { align: center middle; }
    #trust-box { width: 90%; max-width: 100; height: auto; border: round $warning;
                 padding: 1 2; }
    #trust-choices { height: auto; margin-top: 1; }
    """
    BINDINGS = [
        Binding("escape", "without", "Continue without its settings"),
        Binding("ctrl+c", "quit_prompt", "Quit", priority=True),
    ]

    def __init__(self, folder: str, defines: dict[str, Any], home: str) -> None:
        super().__init__()
        self.folder = folder
        self.defines = defines
        self.home = home

    def compose(self) -> ComposeResult:
        text = Text()
        text.append("Do you trust this folder?\n", style="bold")
        text.append(f"{self.folder}\n\n")
        text.append(
            "It has configuration of its own that can run commands on this machine or "
            "widen what the agent may do without asking:\n"
        )
        for item in defined_items(self.defines):
            text.append(f"  • {item}\n")
        text.append(
            "\nTrust it only if you trust its contents (your own code, or a project you "
            f"know). Trust covers its subfolders and is recorded in {self.home}/trust.json. "
            "Without it, its deny rules still apply and the rest is ignored.",
            style="dim",
        )
        with Vertical(id="trust-box"):
            yield Static(text, id="trust-text")
            yield OptionList(
                Option("Trust this folder", id="trust"),
                Option("Continue without its settings", id="without"),
                id="trust-choices",
            )

    def on_mount(self) -> None:
        choices = self.query_one(OptionList)
        choices.highlighted = 1  # the safe answer is the default
        choices.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.exit(event.option.id == "trust")

    def action_without(self) -> None:
        self.exit(False)

    def action_quit_prompt(self) -> None:
        self.exit(None)
