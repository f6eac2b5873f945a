"""What the chat screen offers the parts that act on its behalf (completion aside):
questions and approvals, rewind and fork, the client's ``/`` commands.

A :class:`typing.Protocol` rather than the screen's class, so those modules need
not import the screen that imports them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

from textual.notifications import SeverityLevel
from textual.screen import Screen

from .capabilities import Capabilities
from .commands import Command
from .link import Link
from .model import SessionModel
from .request_panel import Request

#: What a screen's result is handed to: runs as a queued user action.
Then = Callable[[Any], Awaitable[None]]


class ChatHost(Protocol):
    """The chat screen, as its helpers see it."""

    link: Link
    caps: Capabilities
    cwd: Path
    model: SessionModel | None
    context: dict[str, Any]
    commands: list[Command]
    pick_from: list[dict[str, Any]] | None

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """A toast."""

    def say(self, text: str, *, error: bool = False) -> None:
        """Write ``text`` into the transcript (an error is also a toast)."""

    def open_screen(self, screen: Screen[Any], then: Then | None = None) -> None:
        """Push ``screen``; ``then(result)`` runs after the actions queued before it."""

    def ask(self, request: Request) -> None:
        """Show ``request`` in the panel above the input."""

    async def close_request(self) -> None:
        """Hide the request panel (the input takes the focus again)."""

    def later(self, callback: Callable[..., object], *args: Any) -> None:
        """Run ``callback(*args)`` on the screen's message loop, soon."""

    def dirty(self) -> None:
        """The model changed: re-render the transcript soon."""

    def status_soon(self) -> None:
        """Ask the server for the session's counters and context, then re-render the status."""

    def render_status(self) -> None:
        """Re-render the status line from what is known now."""

    async def send(self, text: str) -> None:
        """Send ``text`` as a message (as if typed)."""

    def edit_text(self, text: str) -> None:
        """Put ``text`` in the input, to edit and send."""

    async def switch(self, session: dict[str, Any]) -> None:
        """Show ``session`` (after a fork, a pick, /new)."""


__all__ = ["ChatHost", "Then"]
