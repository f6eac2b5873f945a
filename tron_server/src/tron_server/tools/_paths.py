"""Path resolution shared by the tools (and by H's guardrail)."""

from __future__ import annotations

import os
from pathlib import Path

from .base import ToolContext


def resolve_path(ctx: ToolContext, path: str | os.PathLike[str]) -> Path:
    """The absolute path a tool acts on: ``~`` expanded, relative paths joined to the
    session's working directory, ``.``/``..`` normalized lexically.

    Symlinks are NOT resolved here (the tools act on the path as the user named it);
    a guardrail deciding where writes may go should call ``.resolve()`` on the result.
    """
    p = Path(os.path.expanduser(os.fspath(path)))
    if not p.is_absolute():
        p = Path(ctx.working_directory) / p
    return Path(os.path.normpath(p))


def display_path(path: Path, working_directory: Path) -> str:
    """``path`` relative to the working directory when it lies below it, else absolute."""
    try:
        rel = path.relative_to(working_directory)
    except ValueError:
        return str(path)
    return rel.as_posix() or "."
