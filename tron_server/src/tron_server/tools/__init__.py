"""Built-in tools: Read, Write, Edit, Bash, Grep, Glob, TodoWrite.

See :mod:`tron_server.tools.base` for the contract (``Tool``, ``ToolRegistry``...).
"""

from __future__ import annotations

from ._paths import resolve_path
from .base import OutputCallback, RecordCallback, Tool, ToolContext, ToolRegistry, ToolResult
from .bash import Bash
from .edit import Edit
from .glob import Glob
from .grep import Grep
from .read import Read
from .todo import TodoWrite
from .write import Write

__all__ = [
    "Bash",
    "Edit",
    "Glob",
    "Grep",
    "OutputCallback",
    "Read",
    "RecordCallback",
    "TodoWrite",
    "Tool",
    "ToolContext",
    "ToolRegistry",
    "ToolResult",
    "Write",
    "default_tools",
    "resolve_path",
]


def default_tools() -> ToolRegistry:
    """A fresh registry with the built-in tools (Skill is added by the hooks/context layer)."""
    return ToolRegistry([Read(), Write(), Edit(), Bash(), Grep(), Glob(), TodoWrite()])
