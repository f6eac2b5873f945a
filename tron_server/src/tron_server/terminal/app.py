"""The interactive screen (Textual).

Why Textual rather than prompt_toolkit + rich: the screen is an application,
not a prompt — a transcript whose widgets update in place while a turn streams
(Markdown appended as it arrives, tool cards with live output), a modal tree
to fork or rewind, pickers, inline question and approval prompts, a status
line and a connection notice, all at once. Textual has each of these as a
widget (``Markdown`` with streaming and highlighted code blocks, ``Tree``,
``TextArea``, ``OptionList``, ``Collapsible``), honours ``NO_COLOR``, and comes
with a test pilot that drives the real app headless. prompt_toolkit would give
a better line editor and native scrollback, but every one of those views would
have to be built on its layout primitives.

The app is thin, as Textual apps go: it owns the connection (:class:`Link`) and
the keys that act over every screen; the conversation is :class:`~.chat.ChatScreen`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from textual.app import App
from textual.binding import Binding

from ..client import Notification
from .attach import Connection, ServerAddress
from .capabilities import Capabilities
from .chat import ChatScreen
from .link import Link


class TronApp(App[None]):
    """``tron``'s interactive screen."""

    TITLE = "tron"
    BINDINGS = [
        Binding("ctrl+c", "interrupt", "Quit (twice)", priority=True, show=False),
        Binding("ctrl+t", "tree", "Session tree", priority=True, show=False),
        Binding("escape", "escape", "Abort", show=False),
        Binding("ctrl+q", "quit", "Quit", priority=True, show=False),
        Binding("shift+tab", "cycle_mode", "Permission mode", priority=True, show=False),
    ]

    def __init__(
        self,
        *,
        address: ServerAddress,
        connection: Connection,
        capabilities: Capabilities,
        cwd: Path,
        session: dict[str, Any] | None = None,
        pick_from: list[dict[str, Any]] | None = None,
        first_prompt: str | None = None,
        model: str | None = None,
        provider: str | None = None,
        permission_mode: str | None = None,
        notes: list[str] | None = None,
    ) -> None:
        super().__init__()
        self.address = address
        self.link = Link(address, self._deliver)
        self.error: BaseException | None = None
        self._first_connection: Connection | None = connection
        self._chat_options: dict[str, Any] = {
            "capabilities": capabilities,
            "home": address.home,
            "cwd": cwd,
            "session": session,
            "pick_from": pick_from,
            "first_prompt": first_prompt,
            "model": model,
            "provider": provider,
            "permission_mode": permission_mode,
            "notes": notes,
        }
        self._chat: ChatScreen | None = None

    @property
    def chat(self) -> ChatScreen:
        assert self._chat is not None, "the chat screen exists once the app is mounted"
        return self._chat

    @property
    def session_id(self) -> str | None:
        return self._chat.session_id if self._chat is not None else None

    async def on_mount(self) -> None:
        self._chat = ChatScreen(link=self.link, **self._chat_options)
        assert self._first_connection is not None
        self.link.adopt(self._first_connection)
        self._first_connection = None
        await self.push_screen(self._chat)

    def _deliver(self, n: Notification) -> None:
        if self._chat is not None:
            self._chat.on_notification(n)

    def _fatal_error(self) -> None:
        """A bug: leave the screen cleanly and let ``tron`` say what happened (no
        traceback unless TRON_DEBUG is set)."""
        if os.environ.get("TRON_DEBUG"):
            super()._fatal_error()
            return
        self.error = self._exception
        self._close_messages_no_wait()

    async def close_link(self) -> None:
        if self._chat is not None:
            self._chat.exiting = True
        await self.link.close()

    # -- keys that act over every screen ---------------------------------------------

    def action_interrupt(self) -> None:
        self.chat.action_interrupt()

    def action_tree(self) -> None:
        self.chat.action_tree()

    def action_escape(self) -> None:
        self.chat.action_escape()

    def action_cycle_mode(self) -> None:
        self.chat.action_cycle_mode()


__all__ = ["TronApp"]
