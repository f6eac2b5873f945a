"""Built-in tools: Read, Write, Edit, Bash, Grep, Glob, TodoWrite.

See :mod:`tron_server.tools.base` for the contract (``Tool``, ``ToolRegistry``...).
"""

from __future__ import annotations

from .base import OutputCallback, RecordCallback, Tool, ToolContext, ToolRegistry, ToolResult

__all__ = [
    "OutputCallback",
    "RecordCallback",
    "Tool",
    "ToolContext",
    "ToolRegistry",
    "ToolResult",
    "default_tools",
]


def default_tools() -> ToolRegistry:
    """A registry with the built-in tools (Skill is added by the hooks/context layer)."""
    return ToolRegistry([])
