"""What of an event is indexed for full-text search, and how literal queries are read.

User, assistant and system message text, thinking, tool_use and tool.call
names and arguments, tool results, compaction summaries and handoffs
(``memory.handoff``: every text field). Other event types are not indexed
(their payloads are bookkeeping, not conversation; ``memory.loaded`` repeats
the ledger and handoffs it injected, so it is not indexed either).

Both backends index the same text, bounded per event: the first
:data:`MAX_INDEXED_CHARS` characters of what :func:`search_text` extracts
(words after that are not found), so neither indexing an event nor making
its snippet can cost more than a fixed amount, however big the event. NUL
characters and lone surrogates are spaces, in the indexed text and in
literal queries alike (:func:`literal_words`).
"""

from __future__ import annotations

from typing import Any

import orjson

from ._storable import search_safe

#: The characters of an event's text that search indexes, on every backend (a
#: PostgreSQL tsvector holds at most 1 MB; FTS5's snippets cost grows with the
#: square of the matches in a text, see ``_sqlite_snippets.py``).
MAX_INDEXED_CHARS = 200_000
#: Types whose ``content`` (a string or blocks) is their text.
_CONTENT_TYPES = frozenset(
    {"message.user", "message.assistant", "message.system", "tool.result", "hook.context"}
)


class _Parts:
    """Text parts collected up to a limit: extraction stops once the joined
    text reaches it."""

    __slots__ = ("items", "limit", "size")

    def __init__(self, limit: int | None) -> None:
        self.items: list[str] = []
        self.limit = limit
        self.size = 0  # of "\n".join(items)

    @property
    def full(self) -> bool:
        return self.limit is not None and self.size >= self.limit

    def append(self, part: str) -> None:
        if not part or self.full:
            return
        self.size += len(part) + (1 if self.items else 0)
        self.items.append(part)


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def _blocks_text(content: Any, out: _Parts) -> None:
    if isinstance(content, str):
        out.append(content)
        return
    if not isinstance(content, list):
        return
    for block in content:
        if out.full:
            return
        if isinstance(block, str):
            out.append(block)
            continue
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            out.append(str(block.get("text", "")))
        elif kind == "thinking":
            out.append(str(block.get("thinking", "")))
        elif kind == "tool_use":
            out.append(str(block.get("name", "")))
            out.append(_json_text(block.get("input", {})))
        elif kind == "tool_result":
            _blocks_text(block.get("content"), out)


def _handoff_text(payload: dict[str, Any], out: _Parts) -> None:
    for key in ("summary", "currentState"):
        value = payload.get(key)
        if isinstance(value, str):
            out.append(value)
    for change in payload.get("codeChanges") or []:
        if isinstance(change, dict):
            out.append(str(change.get("path", "")))
            out.append(str(change.get("description", "")))
    for key in ("nextSteps", "blockers", "patterns"):
        for item in payload.get(key) or []:
            if isinstance(item, str):
                out.append(item)


def search_text(
    event_type: str, payload: dict[str, Any], limit: int | None = MAX_INDEXED_CHARS
) -> str:
    """The text indexed for an event ("" for types that are not indexed): at
    most ``limit`` characters (None: all of it), NULs and lone surrogates as
    spaces."""
    if event_type in _CONTENT_TYPES:
        content = payload.get("content")
        # The common shapes without the general walk (every append indexes): a
        # string, or one text block.
        if type(content) is list and len(content) == 1:
            block = content[0]
            if type(block) is dict and block.get("type") == "text":
                content = block.get("text", "")
                if type(content) is not str:
                    content = str(content)
        if type(content) is str:
            if limit is not None and len(content) > limit:
                content = content[:limit]
            if content.isascii() and "\x00" not in content:
                return content  # search_safe's common case, without the calls
            return search_safe(content)
    out = _Parts(limit)
    if event_type in _CONTENT_TYPES:
        _blocks_text(content, out)
    elif event_type == "tool.call":
        out.append(str(payload.get("name", "")))
        out.append(_json_text(payload.get("arguments", {})))
    elif event_type == "compact.summary":
        out.append(str(payload.get("summary", "")))
    elif event_type == "memory.handoff":
        _handoff_text(payload, out)
    text = "\n".join(out.items)
    if limit is not None and len(text) > limit:
        text = text[:limit]
    return search_safe(text)


def literal_words(query: str) -> list[str]:
    """The words of a literal (``raw=False``) query: whitespace-separated, with
    NULs and lone surrogates read as spaces. Every backend builds its literal
    query from these, so no string makes a literal search raise."""
    return search_safe(query).split()


def fts5_literal_query(text: str) -> str:
    """Turn user text into an FTS5 query that matches its words literally.

    Every word (:func:`literal_words`) becomes a quoted phrase (quotes
    doubled), so operators (AND, OR, NOT, NEAR), column filters, ``*``, ``-``,
    ``^`` and parentheses are plain text. Words are ANDed, as a search box would.
    """
    return " ".join('"' + word.replace('"', '""') + '"' for word in literal_words(text))
