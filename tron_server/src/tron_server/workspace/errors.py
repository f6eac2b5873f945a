"""What can go wrong with files, snapshots and worktrees; each says what to do."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "FileProblem",
    "FilesConflict",
    "MergeConflict",
    "NotAGitRepository",
    "WorkspaceError",
]


class WorkspaceError(Exception):
    """A workspace operation that cannot be done; nothing was changed. ``reason`` is a
    short code (``not_git``, ``missing_content``, ``refused``, ``git``, ``worktree``,
    ``restore_failed``...)."""

    reason = "workspace"

    def __init__(self, message: str, *, reason: str | None = None, **data: Any) -> None:
        super().__init__(message)
        if reason is not None:
            self.reason = reason
        self.data = data


class NotAGitRepository(WorkspaceError):
    reason = "not_git"


@dataclass(frozen=True, slots=True)
class FileProblem:
    """Why a file stops a rewind with files: ``changed`` (not as the agent left it),
    ``not_stored`` (its content at the target was too large to record)."""

    path: str
    reason: str
    expected: dict[str, Any] | None = None
    found: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "reason": self.reason,
            "expected": self.expected,
            "found": self.found,
        }


class FilesConflict(WorkspaceError):
    """Files a rewind would overwrite that changed outside the agent (or cannot be
    restored): nothing was written. Pass ``force`` to restore anyway."""

    reason = "conflict"

    def __init__(self, message: str, problems: list[FileProblem]) -> None:
        super().__init__(message)
        self.problems = problems


class MergeConflict(WorkspaceError):
    """``git merge`` of a worktree's branch would conflict (``reason`` ``merge``) or
    would overwrite uncommitted files (``local_changes``); the checkout was left as
    it was."""

    reason = "merge"

    def __init__(self, message: str, files: list[str], *, reason: str = "merge") -> None:
        super().__init__(message, reason=reason)
        self.files = files
