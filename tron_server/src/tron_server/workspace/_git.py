"""Running git: a clean environment, bytes in and out, errors that say what failed.

Every git command the workspace runs goes through :func:`run`: the user's ``GIT_*``
variables that would point git at another repository, index or object store are
removed (a server started from inside a git hook would otherwise snapshot into the
wrong repository), prompts and pagers are off, and the output is bytes (paths are
``-z`` separated, never quoted).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["GitError", "find_repository", "git_available", "run"]

#: Variables that change which repository, index or objects git uses.
_REPOSITORY_VARIABLES = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_COMMON_DIR",
    "GIT_PREFIX",
    "GIT_QUARANTINE_PATH",
)
DEFAULT_TIMEOUT = 120.0


class GitError(Exception):
    """A git command failed: ``args``, ``returncode`` and git's own ``stderr``."""

    def __init__(self, args: Sequence[str], returncode: int, stderr: str) -> None:
        detail = stderr.strip().splitlines()
        shown = detail[-1] if detail else f"exit code {returncode}"
        super().__init__(f"git {' '.join(args[:2])} failed: {shown}")
        self.args_ = list(args)
        self.returncode = returncode
        self.stderr = stderr


def _environment(extra: Mapping[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _REPOSITORY_VARIABLES}
    env.update(
        {
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_PAGER": "cat",
            "GIT_OPTIONAL_LOCKS": "0",
            "LC_ALL": "C",
        }
    )
    if extra:
        env.update(extra)
    return env


def run(
    args: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    check: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git <args>`` in ``cwd``; raises :class:`GitError` on failure when ``check``."""
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=_environment(env),
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError:
        raise GitError(args, 127, "git is not installed (or not on PATH)") from None
    except subprocess.TimeoutExpired:
        raise GitError(args, -1, f"timed out after {timeout:g} s") from None
    if check and done.returncode != 0:
        raise GitError(args, done.returncode, done.stderr.decode("utf-8", "replace"))
    return done


def git_available() -> bool:
    """Whether a ``git`` executable is on PATH."""
    return shutil.which("git") is not None


def find_repository(path: Path) -> Path | None:
    """The top folder of the git checkout holding ``path`` (the nearest folder with a
    ``.git`` entry, a folder or a worktree's file), or None outside git."""
    current = path
    while True:
        if (current / ".git").exists():
            return current
        if current.parent == current:
            return None
        current = current.parent
