"""Built-in tools: Read, Write, Edit, Bash, Grep, Glob, TodoWrite.

See :mod:`tron_server.tools.base` for the contract (``Tool``, ``ToolRegistry``...).

Two pieces other features build on:

- :class:`PathPolicy` (``ToolContext.path_policy``): the one resolution of a path
  (``resolve`` → :class:`ResolvedPath` with the absolute, symlink-free ``path``), the write
  policy (``check_write`` → :class:`PathRefused`) and checked file access through the
  resolved folder handle (``write_bytes``, ``remove``, ``ResolvedPath.open_read``). Rules
  that match paths match ``ResolvedPath.path``; anything that writes files for the agent
  writes through ``write_bytes``. See :mod:`._paths`.
- :class:`ProcessTree`: start a command so that :meth:`ProcessTree.kill` ends every process
  it started (one call, within a second). See :mod:`._proctree`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..paths import (
    InvalidPath,
    PathError,
    PathPolicy,
    PathRefused,
    ResolvedPath,
    WriteOutcome,
    display_path,
    settings_files,
)
from ._proctree import ProcessTree
from .base import OutputCallback, RecordCallback, Tool, ToolContext, ToolRegistry, ToolResult
from .bash import Bash
from .edit import Edit
from .glob import Glob
from .grep import Grep
from .read import Read
from .todo import TodoWrite
from .write import Write

if TYPE_CHECKING:
    from ..workspace.recorder import FileRecorder

__all__ = [
    "Bash",
    "Edit",
    "Glob",
    "Grep",
    "InvalidPath",
    "OutputCallback",
    "PathError",
    "PathPolicy",
    "PathRefused",
    "ProcessTree",
    "Read",
    "RecordCallback",
    "ResolvedPath",
    "TodoWrite",
    "Tool",
    "ToolContext",
    "ToolRegistry",
    "ToolResult",
    "Write",
    "WriteOutcome",
    "default_tools",
    "display_path",
    "resolve_path",
    "settings_files",
]


def resolve_path(ctx: ToolContext, path: str | os.PathLike[str]) -> Path:
    """The absolute path a tool given ``path`` acts on (``ctx.path_policy.resolve``:
    symlinks and ``..`` resolved once, physically). Raises :class:`PathError`."""
    with ctx.path_policy.resolve(path) as resolved:
        return resolved.path


def default_tools(files: FileRecorder | None = None) -> ToolRegistry:
    """A fresh registry with the built-in tools (Skill is added by the hooks/context layer).

    ``files`` (the server's :class:`~tron_server.workspace.FileRecorder`) makes Write,
    Edit and Bash record the contents they change, so a rewind can restore them."""
    return ToolRegistry(
        [Read(), Write(files), Edit(files), Bash(files), Grep(), Glob(), TodoWrite()]
    )
