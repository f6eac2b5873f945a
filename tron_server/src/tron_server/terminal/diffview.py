"""The files the agent changed, as unified diffs: ``/diff`` and the rewind preview.

Both show ``session.diff`` / ``session.previewRewind`` file entries (``path``,
``status``, ``diff``, ``added``, ``removed``, ``note``, and in a preview ``problem``):
a line per file, then its diff coloured (``+`` green, ``-`` red, ``@@`` cyan).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

__all__ = ["DiffScreen", "file_lines", "render_files"]

_NOTES = {
    "binary": "binary file",
    "not_stored": "too large to have been recorded",
    "too_large": "too large to show",
    "missing": "content missing from the store",
}
_PROBLEMS = {
    "changed": "changed outside the agent since",
    "not_stored": "cannot be restored (too large to have been recorded)",
    "refused": "the path policy refuses writing it",
}


def _short(path: str, root: str | None) -> str:
    if root and path.startswith(root.rstrip("/") + "/"):
        return path[len(root.rstrip("/")) + 1 :]
    return path


def file_lines(files: Sequence[dict[str, Any]], root: str | None = None, limit: int = 12) -> str:
    """One line per file (``status path +a -r``), at most ``limit``, for a prompt."""
    out = []
    for f in files[:limit]:
        counts = f"+{f.get('added', 0)} -{f.get('removed', 0)}" if f.get("diff") else ""
        problem = _PROBLEMS.get(str(f.get("problem")), "")
        out.append(
            f"  {f.get('status', '?'):8} {_short(str(f.get('path')), root)} {counts}"
            + (f"  ! {problem}" if problem else "")
        )
    if len(files) > limit:
        out.append(f"  … and {len(files) - limit} more")
    return "\n".join(out)


def render_files(files: Sequence[dict[str, Any]], root: str | None = None) -> Text:
    """Every file's header and coloured diff."""
    text = Text()
    if not files:
        text.append("No file changed.", style="dim")
        return text
    for f in files:
        path = _short(str(f.get("path")), root)
        text.append(f"{f.get('status', '?')} {path}", style="bold")
        if f.get("diff"):
            text.append(f"  +{f.get('added', 0)} -{f.get('removed', 0)}", style="dim")
        problem = _PROBLEMS.get(str(f.get("problem")))
        if problem:
            text.append(f"  ! {problem}", style="bold red")
        text.append("\n")
        diff = f.get("diff")
        if not diff:
            note = _NOTES.get(str(f.get("note")), "no text to show")
            text.append(f"  ({note})\n\n", style="dim")
            continue
        for line in str(diff).splitlines():
            if line.startswith(("---", "+++")):
                continue
            style = (
                "green" if line.startswith("+")
                else "red" if line.startswith("-")
                else "cyan" if line.startswith("@@")
                else ""
            )  # fmt: skip
            text.append(line + "\n", style=style)
        text.append("\n")
    return text


class DiffScreen(ModalScreen[None]):
    """Diffs to read and scroll; Esc, Enter or q closes."""

    DEFAULT_CSS = """
    DiffScreen { align: center middle; }
    DiffScreen > VerticalScroll { width: 95%; height: 90%; border: round $accent;
                                  background: $surface; padding: 0 1; }
    """
    BINDINGS = [
        Binding("escape", "close", "Close"),
        Binding("enter", "close", show=False),
        Binding("q", "close", show=False),
    ]

    def __init__(self, title: str, body: Text) -> None:
        super().__init__()
        self.title_text = title
        self.body = body

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(Text(f"{self.title_text} · ↑↓ scroll · Esc closes", style="dim"))
            yield Static(self.body, id="diff-body")

    def action_close(self) -> None:
        self.dismiss(None)
