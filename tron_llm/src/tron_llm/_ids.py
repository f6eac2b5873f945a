"""Tool-call ids every provider accepts: ``[A-Za-z0-9_-]{1,40}``, deterministically."""

from __future__ import annotations

import hashlib
import re

__all__ = ["ToolIdMap", "safe_tool_id"]

_SAFE = re.compile(r"[A-Za-z0-9_-]{1,40}")
_MAX = 40


def safe_tool_id(tool_id: str) -> str:
    """``tool_id`` itself when every provider accepts it, else a stable stand-in.

    The stand-in keeps a readable prefix and adds a hash of the whole id, so two
    different ids never map to the same one in practice and the same id always maps
    the same way (a resumed session sends the same ids as before).
    """
    if _SAFE.fullmatch(tool_id):
        return tool_id
    digest = hashlib.sha256(tool_id.encode()).hexdigest()[:16]
    prefix = re.sub(r"[^A-Za-z0-9_-]", "_", tool_id)[: _MAX - len(digest) - 2]
    return f"{prefix}_h{digest}" if prefix else f"t_h{digest}"


class ToolIdMap:
    """Maps ids to safe ids for one request and back for the response."""

    def __init__(self) -> None:
        self._back: dict[str, str] = {}

    def out(self, tool_id: str) -> str:
        """The id to send."""
        safe = safe_tool_id(tool_id)
        self._back.setdefault(safe, tool_id)
        return safe

    def back(self, safe: str) -> str:
        """The original id of a sent id (ids the provider made up come back as is)."""
        return self._back.get(safe, safe)
