"""One line above the status line while the agent's browser runs: its URL and last action.

Fed by the ``browser.status`` notifications of the open session (``docs/protocol.md``);
the frames (``browser.frame``) are for graphical clients and are ignored here.
"""

from __future__ import annotations

from typing import Any

from textual.widgets import Static

__all__ = ["BrowserBar", "browser_line"]


def browser_line(data: dict[str, Any], width: int = 120) -> str:
    """``browser · <url> · <last action>`` (or ``browser closed · …``), cut to ``width``."""
    state = "browser" if data.get("open") else "browser closed"
    parts = [state, str(data.get("url") or ""), str(data.get("action") or "")]
    text = " · ".join(p for p in parts if p)
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"


class BrowserBar(Static):
    """Hidden until the open session's browser reports; :meth:`clear` on a session switch."""

    DEFAULT_CSS = """
    BrowserBar { height: 1; padding: 0 1; color: $text-muted; display: none; }
    BrowserBar.shown { display: block; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.session_id: str | None = None
        self.data: dict[str, Any] = {}

    def show(self, session_id: str, data: dict[str, Any]) -> None:
        """A ``browser.status`` of ``session_id`` (the session on screen)."""
        if "open" not in data:  # a frame: nothing for a terminal
            return
        self.session_id, self.data = session_id, dict(data)
        self.update(browser_line(self.data, max(20, (self.size.width or 80) - 2)))
        self.set_class(True, "shown")

    def clear(self) -> None:
        self.session_id, self.data = None, {}
        self.update("")
        self.set_class(False, "shown")
