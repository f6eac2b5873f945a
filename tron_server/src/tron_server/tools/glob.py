"""Glob: find files by name pattern, newest first, honouring .gitignore."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from ._paths import display_path, resolve_path
from ._walk import compile_glob, walk_files
from .base import Tool, ToolContext, ToolResult

MAX_RESULTS = 1000
_MAGIC = set("*?[{")


class GlobParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(
        min_length=1,
        description='Glob pattern, e.g. "**/*.py", "src/**/*.{ts,tsx}", "*.md" (top level only).',
    )
    path: str = Field(
        default=".", description="Folder to search in (default: the working directory)."
    )


def split_pattern(root: Path, pattern: str) -> tuple[Path, str]:
    """Move the literal leading folders of ``pattern`` into the root
    (``/abs/src/**/*.py`` → root ``/abs/src``, pattern ``**/*.py``)."""
    pattern = pattern.removeprefix("./")
    parts = PurePosixPath(pattern).parts
    base = root
    i = 0
    while i < len(parts) - 1 and not (_MAGIC & set(parts[i])):
        base = base / parts[i]
        i += 1
    rest = "/".join(parts[i:]) if parts[i:] else "*"
    return Path(os.path.normpath(base)), rest


def find(root: Path, pattern: str) -> list[tuple[float, str]]:
    """(mtime, path relative to ``root``) of files matching ``pattern``, newest first,
    ties by path."""
    regex = compile_glob(pattern)
    found: list[tuple[float, str]] = []
    for rel in walk_files(root):
        if regex.match(rel):
            try:
                mtime = os.stat(root / rel).st_mtime
            except OSError:
                continue
            found.append((mtime, rel))
    found.sort(key=lambda item: (-item[0], item[1]))
    return found


class Glob(Tool[GlobParams]):
    """List files matching a glob pattern, most recently modified first."""

    name = "Glob"
    description = (
        'Find files by glob pattern ("**" matches any number of folders, {a,b} alternatives), '
        "sorted by modification time, newest first. Honours .gitignore (ignored files are "
        f"not listed; .git never is). At most {MAX_RESULTS} paths are returned."
    )
    Params = GlobParams

    async def run(self, params: GlobParams, ctx: ToolContext) -> ToolResult:
        start = resolve_path(ctx, params.path)
        if params.pattern.startswith("/"):
            start = Path("/")
        root, pattern = split_pattern(start, params.pattern.lstrip("/"))
        shown_root = display_path(root, ctx.working_directory)
        if not root.is_dir():
            return ToolResult(f"Folder not found: {shown_root}", is_error=True)
        found = await anyio.to_thread.run_sync(find, root, pattern)
        details: dict[str, Any] = {"count": len(found), "truncated": len(found) > MAX_RESULTS}
        if not found:
            return ToolResult(
                f"No files match {params.pattern!r} in {shown_root}.", details=details
            )
        lines = [display_path(root / rel, ctx.working_directory) for _, rel in found[:MAX_RESULTS]]
        if len(found) > MAX_RESULTS:
            lines.append(
                f"[{len(found) - MAX_RESULTS} more files not shown; use a narrower pattern or path]"
            )
        return ToolResult("\n".join(lines), details=details)
