"""The question ``tron -r``/``-c`` asks on opening a session whose folder is not on this
machine (an imported session, a folder removed since): which folder to continue in
(``session.resume``'s ``workingDirectory``), or open it as it is, or quit."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, Static

from .sessions import missing_folder_note

__all__ = ["FolderPrompt"]


class FolderPrompt(App[str | None]):
    """Asks for the folder to continue a session in: a path (an existing folder), ""
    (open it as it is: Esc), None (quit: Ctrl+C)."""

    CSS = """
    Screen { align: center middle; }
    #folder-box { width: 90%; max-width: 100; height: auto; border: round $warning;
                  padding: 1 2; }
    #folder-input { margin-top: 1; }
    #folder-error { color: $error; height: auto; }
    """
    BINDINGS = [
        Binding("escape", "as_is", "Open it as it is"),
        Binding("ctrl+c", "quit_prompt", "Quit", priority=True),
    ]

    def __init__(self, session_id: str, folder: str, proposed: str) -> None:
        super().__init__()
        self.session_id = session_id
        self.folder = folder
        self.proposed = proposed

    def compose(self) -> ComposeResult:
        text = Text()
        text.append("This session's folder is not here\n", style="bold")
        text.append(missing_folder_note(self.session_id, self.folder) + "\n\n")
        text.append("Continue it in this folder (Enter), ")
        text.append("open it as it is (Esc), or quit (Ctrl+C):", style="dim")
        with Vertical(id="folder-box"):
            yield Static(text, id="folder-text")
            yield Input(self.proposed, id="folder-input", placeholder="/path/to/the/project")
            yield Static("", id="folder-error")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        typed = event.value.strip()
        path = Path(typed).expanduser()
        if not typed or not path.is_absolute() or not path.is_dir():
            reason = (
                "not an absolute path" if typed and not path.is_absolute() else "no such folder"
            )
            self.query_one("#folder-error", Static).update(f"{typed or '(empty)'}: {reason}")
            return
        self.exit(str(path.resolve()))

    def action_as_is(self) -> None:
        self.exit("")

    def action_quit_prompt(self) -> None:
        self.exit(None)
