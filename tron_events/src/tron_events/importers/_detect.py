"""Which agent wrote a JSONL file: a guess from the shape of its first records.

Used to refuse a file given with the wrong ``--from`` with a message that names
the right one.
"""

from __future__ import annotations

from typing import Any

from ._jsonl import JsonlFile

__all__ = ["FORMAT_NAMES", "guess_format"]

FORMAT_NAMES = {
    "claude-code": "a Claude Code transcript",
    "codex": "a Codex CLI rollout",
    "pi": "a pi session",
    "tron": "a Tron export",
}

_CODEX_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
_CODEX_LEGACY_ITEMS = {"message", "function_call", "function_call_output", "reasoning"}
_PI_ENTRIES = {"message", "model_change", "thinking_level_change", "compaction", "custom"}
_CLAUDE_TYPES = {
    "user",
    "assistant",
    "system",
    "progress",
    "attachment",
    "summary",
    "file-history-snapshot",
    "queue-operation",
}


def _kind(value: dict[str, Any], first: bool) -> str | None:
    kind = value.get("type")
    if first and value.get("format") == "tron-events-export":
        return "tron"
    if kind in _CODEX_TYPES and "payload" in value:
        return "codex"
    if first and kind is None and "id" in value and "timestamp" in value:
        return "codex"  # the legacy rollout header
    if (kind in _CODEX_LEGACY_ITEMS and "role" in value) or value.get("record_type") == "state":
        return "codex"
    if kind == "session" and "cwd" in value and "id" in value:
        return "pi"
    message = value.get("message")
    if (
        kind in _PI_ENTRIES
        and isinstance(message, dict)
        and "role" in message
        and "uuid" not in value
        and "sessionId" not in value
    ):
        return "pi"
    if kind in ("model_change", "thinking_level_change") and "uuid" not in value:
        return "pi"
    if kind in _CLAUDE_TYPES and (
        "uuid" in value or "sessionId" in value or kind in ("summary", "file-history-snapshot")
    ):
        return "claude-code"
    return None


def guess_format(file: JsonlFile) -> str | None:
    """The most likely writer of ``file`` (a key of :data:`FORMAT_NAMES`), or None."""
    votes: dict[str, int] = {}
    for index, line in enumerate(file.lines[:50]):
        kind = _kind(line.value, index == 0 and line.number == file.lines[0].number)
        if kind is not None:
            votes[kind] = votes.get(kind, 0) + 1
    if not votes:
        return None
    return max(votes, key=lambda k: votes[k])
