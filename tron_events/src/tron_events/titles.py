"""Session titles: a session's own title, or (untitled) one derived from its first prompt.

Nothing is stored: a title is derived when read, by this one function for every
reader (``tron-db sessions`` / ``show`` and the server's ``session.list`` / ``get``),
so a native session and an imported one are titled alike, and a rename (a title
set later) wins without rewriting anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .models import Session
    from .store import EventStore

#: The longest derived title; a longer first line is cut with "…".
TITLE_CHARS = 60


def title_from_prompt(content: Any) -> str | None:
    """A title from a prompt (text or content blocks): its first non-empty line, blanks
    collapsed, at most ``TITLE_CHARS`` characters; None when it has no text."""
    if isinstance(content, list):
        content = "\n".join(
            str(b.get("text", ""))
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        )
    if not isinstance(content, str):
        return None
    line = next((ln.strip() for ln in content.splitlines() if ln.strip()), "")
    line = " ".join(line.split())
    if not line:
        return None
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1] + "…"


def session_titles(store: EventStore, sessions: Sequence[Session]) -> list[str | None]:
    """The title of each session: its own, or its first own prompt's (``message.user``)
    when it has none. Reads one event per untitled session."""
    titles: list[str | None] = []
    for session in sessions:
        if session.title:
            titles.append(session.title)
            continue
        first = store.get_events(session.id, types=["message.user"], limit=1)
        titles.append(title_from_prompt(first[0].payload.get("content")) if first else None)
    return titles


__all__ = ["TITLE_CHARS", "session_titles", "title_from_prompt"]
