"""What of an event is indexed for full-text search.

User, assistant and system message text, thinking, tool_use and tool.call
names and arguments, tool results and compaction summaries. Other event types
are not indexed (their payloads are bookkeeping, not conversation).
"""

from __future__ import annotations

from typing import Any

import orjson


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def _blocks_text(content: Any, out: list[str]) -> None:
    if isinstance(content, str):
        out.append(content)
        return
    if not isinstance(content, list):
        return
    for block in content:
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


def search_text(event_type: str, payload: dict[str, Any]) -> str:
    """The text indexed for an event ("" for types that are not indexed)."""
    out: list[str] = []
    if event_type in ("message.user", "message.assistant", "message.system", "tool.result"):
        _blocks_text(payload.get("content"), out)
    elif event_type == "tool.call":
        out.append(str(payload.get("name", "")))
        out.append(_json_text(payload.get("arguments", {})))
    elif event_type == "compact.summary":
        out.append(str(payload.get("summary", "")))
    return "\n".join(part for part in out if part)


def fts5_literal_query(text: str) -> str:
    """Turn user text into an FTS5 query that matches its words literally.

    Every whitespace-separated token becomes a quoted phrase (quotes doubled),
    so operators (AND, OR, NOT, NEAR), column filters, ``*``, ``-``, ``^`` and
    parentheses are plain text. Tokens are ANDed, as a search box would.
    """
    tokens = text.split()
    return " ".join('"' + token.replace('"', '""') + '"' for token in tokens)
