"""Claude Code's names for MCP things: ``mcp__<server>__<tool>``, ``/mcp__<server>__<prompt>``.

Each part keeps letters, digits, ``_`` and ``-``; anything else becomes ``_`` (Claude Code's
``normalizeNameForMCP``): server ``my.db`` and tool ``run query`` give
``mcp__my_db__run_query``. Every provider takes names of at most 64 of those characters, so
a longer one keeps its first 55 and ends in ``_`` and 8 hex digits of its hash: stable, and
the same in permission rules, hooks and events.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from collections.abc import Iterable

__all__ = ["MAX_NAME", "PREFIX", "mcp_allowed", "mcp_name", "normalize", "split_name"]

PREFIX = "mcp__"
MAX_NAME = 64
_BAD = re.compile(r"[^A-Za-z0-9_-]")


def normalize(part: str) -> str:
    """One part of a name, as Claude Code writes it."""
    return _BAD.sub("_", part) or "_"


def mcp_name(server: str, name: str) -> str:
    """``mcp__<server>__<name>`` (a tool, or a prompt's command), at most 64 characters."""
    full = f"{PREFIX}{normalize(server)}__{normalize(name)}"
    if len(full) <= MAX_NAME:
        return full
    digest = hashlib.sha1(full.encode()).hexdigest()[:8]
    return f"{full[: MAX_NAME - 9]}_{digest}"


def split_name(name: str) -> tuple[str, str] | None:
    """``("server", "tool")`` of ``mcp__server__tool`` (normalized parts), None otherwise."""
    if not name.startswith(PREFIX):
        return None
    server, sep, rest = name[len(PREFIX) :].partition("__")
    if not sep or not server or not rest:
        return None
    return server, rest


def mcp_allowed(name: str, allowed: Iterable[str] | None) -> bool:
    """Whether an allow-list (a sub-agent's ``tools:``) lets ``name`` through: every tool
    when there is no list; else an entry naming the tool, its server (``mcp__server``) or a
    pattern (``mcp__server__*``)."""
    if allowed is None:
        return True
    for entry in allowed:
        if entry == name or (entry.startswith(PREFIX) and name.startswith(entry + "__")):
            return True
        if "*" in entry and fnmatch.fnmatchcase(name, entry):
            return True
    return False
