"""The path policy's old address: it is :mod:`tron_server.paths` now (a foundation
module, so ``workspace`` and ``hooks`` need not import ``tools``). Kept so that code
written against the old path still imports; new code imports ``tron_server.paths``.
"""

from __future__ import annotations

from ..paths import (
    MAX_SYMLINKS,
    InvalidPath,
    PathError,
    PathPolicy,
    PathRefused,
    ResolvedPath,
    WriteOutcome,
    display_path,
    settings_files,
)

__all__ = [
    "MAX_SYMLINKS",
    "InvalidPath",
    "PathError",
    "PathPolicy",
    "PathRefused",
    "ResolvedPath",
    "WriteOutcome",
    "display_path",
    "settings_files",
]
