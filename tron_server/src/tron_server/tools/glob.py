"""Glob: find files by name pattern, newest first, honouring .gitignore."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from ..paths import PathError
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


def split_pattern(pattern: str) -> tuple[str, str]:
    """Split the literal leading folders off ``pattern``
    (``/abs/src/**/*.py`` → ``("/abs/src", "**/*.py")``, ``*.md`` → ``("", "*.md")``)."""
    absolute = pattern.startswith("/")
    parts = [p for p in PurePosixPath(pattern.removeprefix("./")).parts if p != "/"]
    i = 0
    while i < len(parts) - 1 and not (_MAGIC & set(parts[i])):
        i += 1
    literal = "/".join(parts[:i])
    rest = "/".join(parts[i:]) if parts[i:] else "*"
    return ("/" + literal if absolute else literal), rest


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
        if "\x00" in params.pattern:
            return ToolResult("Invalid pattern: it contains a NUL byte.", is_error=True)
        policy = ctx.path_policy
        literal, pattern = split_pattern(params.pattern)
        # The folder part goes through the one resolution (symlinks and ".." physically).
        start = literal if literal.startswith("/") else os.path.join(params.path, literal)
        try:
            with policy.resolve(start or ".") as resolved:
                root, is_dir = resolved.path, resolved.is_dir
        except PathError as exc:
            return ToolResult(str(exc), is_error=True)
        shown_root = policy.display(root)
        if not is_dir:
            return ToolResult(f"Folder not found: {shown_root}", is_error=True)
        found = await anyio.to_thread.run_sync(find, root, pattern)
        details: dict[str, Any] = {"count": len(found), "truncated": len(found) > MAX_RESULTS}
        if not found:
            return ToolResult(
                f"No files match {params.pattern!r} in {shown_root}.", details=details
            )
        lines = [policy.display(root / rel) for _, rel in found[:MAX_RESULTS]]
        if len(found) > MAX_RESULTS:
            lines.append(
                f"[{len(found) - MAX_RESULTS} more files not shown; use a narrower pattern or path]"
            )
        return ToolResult("\n".join(lines), details=details)
