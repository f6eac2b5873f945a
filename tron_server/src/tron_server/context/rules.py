"""Rules files (AGENTS.md / CLAUDE.md): the user's standing instructions, loaded hierarchically.

Order (each file once, most general first):

1. ``global`` — ``~/.claude/CLAUDE.md`` (Claude Code's user memory, ``$CLAUDE_CONFIG_DIR``
   when set), then ``<home>/rules/AGENTS.md`` (``home`` is Tron's home, ``~/.tron`` by
   default; later files come later in the prompt, so ours have the last word);
2. ``project`` — in the working directory: ``.claude/AGENTS.md``, ``.tron/AGENTS.md``,
   ``CLAUDE.md``, ``AGENTS.md`` (every one that exists);
3. ``directory`` — ``AGENTS.md`` and ``CLAUDE.md`` in subfolders of the working directory,
   added when the agent first touches a path below them (:meth:`RulesLoader.on_path_touched`),
   outermost folder first.

A file reached twice (a symlink ``AGENTS.md -> CLAUDE.md``, or the same text copied) is loaded
once. Paths outside the working directory (symlinks resolved) are ignored, and so are folders
that hold other people's code or tooling state (``node_modules``, ``.git``, virtualenvs…).
Files larger than :data:`MAX_RULES_BYTES` are cut with a marker. The caller records a
``rules.loaded`` event with :func:`rules_loaded_payload` (``{"files": [{path, scope, bytes}]}``;
the type is registered in tron_events as a free-form payload).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .listings import present, user_dir

__all__ = [
    "MAX_RULES_BYTES",
    "RulesFile",
    "RulesLoader",
    "RulesScope",
    "rules_loaded_payload",
]

RulesScope = Literal["global", "project", "directory"]
MAX_RULES_BYTES = 100_000
PROJECT_FILES = (
    Path(".claude") / "AGENTS.md",
    Path(".tron") / "AGENTS.md",
    Path("CLAUDE.md"),
    Path("AGENTS.md"),
)
DIRECTORY_FILES = ("AGENTS.md", "CLAUDE.md")
SKIPPED_DIRS = frozenset(
    {".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache", "site-packages"}
)


@dataclass(frozen=True)
class RulesFile:
    """One loaded rules file. ``size`` is the file's size in bytes (before any cut)."""

    path: Path
    content: str
    scope: RulesScope
    size: int = 0

    def to_payload(self) -> dict[str, Any]:
        """This file as an entry of ``rules.loaded``'s ``files``."""
        return {"path": str(self.path), "scope": self.scope, "bytes": self.size}


def rules_loaded_payload(files: Iterable[RulesFile]) -> dict[str, Any]:
    """The ``rules.loaded`` payload for ``files``."""
    return {"files": [f.to_payload() for f in files]}


def _read(path: Path, scope: RulesScope) -> RulesFile | None:
    try:
        if not path.is_file():
            return None
        raw = path.read_bytes()
    except OSError:
        return None
    size = len(raw)
    cut = raw[:MAX_RULES_BYTES]
    text = cut.decode("utf-8", errors="replace")
    if size > MAX_RULES_BYTES:
        text += f"\n[truncated: {size - MAX_RULES_BYTES} more bytes in {path}]"
    return RulesFile(path=path, content=text, scope=scope, size=size)


class RulesLoader:
    """Finds the rules files of one session; remembers what it already returned."""

    def __init__(self, home: Path, working_directory: Path) -> None:
        self.home = home.expanduser()
        self.working_directory = working_directory.expanduser().resolve()
        self._seen_paths: set[Path] = set()
        self._seen_digests: set[str] = set()
        self._visited_dirs: set[Path] = {self.working_directory}
        self._below = os.path.join(str(self.working_directory), "")
        self._loaded: list[RulesFile] = []
        #: The candidates of :meth:`initial` under the home and the working directory
        #: (they do not change; Claude Code's user file is looked up at each call).
        #: (a folder, the path below it, the file, the scope)
        fixed: list[tuple[Path, tuple[str, ...], RulesScope]] = [
            (self.home, ("rules", "AGENTS.md"), "global")
        ]
        fixed += [(self.working_directory, rel.parts, "project") for rel in PROJECT_FILES]
        self._fixed_candidates = [(str(b), rel, b.joinpath(*rel), scope) for b, rel, scope in fixed]

    @property
    def loaded(self) -> list[RulesFile]:
        """Every file returned so far, in load order (for rebuilding the system prompt)."""
        return list(self._loaded)

    def _accept(self, path: Path, scope: RulesScope, *, is_file: bool = False) -> RulesFile | None:
        """``is_file``: the caller saw that ``path`` is a file (no second ``stat``)."""
        if not is_file:
            try:
                if not path.is_file():  # most candidates: one stat, no symlink walk
                    return None
            except OSError:
                return None
        resolved = self._resolved(path)
        if resolved in self._seen_paths:
            return None
        found = _read(path, scope)
        if found is None:
            return None
        digest = hashlib.sha256(found.content.encode()).hexdigest()
        self._seen_paths.add(resolved)
        if digest in self._seen_digests or not found.content.strip():
            return None
        self._seen_digests.add(digest)
        self._loaded.append(found)
        return found

    def _resolved(self, path: Path) -> Path:
        """``path.resolve()``. Below the working directory (resolved when the session
        started) a path none of whose parts below it is a link is its own resolution:
        an ``lstat`` of those parts (one or two) instead of realpath's walk from the
        root, for the files every run looks at again."""
        name = str(path)
        if name.startswith(self._below):
            parts = name[len(self._below) :].split(os.sep)
            current = str(self.working_directory)
            for part in parts:
                if part in ("", ".", ".."):
                    break
                current = os.path.join(current, part)
                try:
                    if stat.S_ISLNK(os.lstat(current).st_mode):
                        break
                except OSError:
                    break
            else:
                return path
        return path.resolve()

    def initial(self) -> list[RulesFile]:
        """The global and project rules files, most general first (each only once)."""
        out: list[RulesFile] = []
        user = user_dir()  # Claude Code's user memory: its CLAUDE.md
        candidates: list[tuple[str, tuple[str, ...], Path | None, RulesScope]] = [
            (user, ("CLAUDE.md",), None, "global"),
            *self._fixed_candidates,
        ]
        for base, rel, known, scope in candidates:
            # Most candidates do not exist: the cached listings of the folders on the way
            # say so (a stat of each such folder, shared by the candidates in it).
            if not present(base, *rel):
                continue
            path = known if known is not None else Path(base, *rel)
            if not os.path.isfile(path):
                continue
            found = self._accept(path, scope, is_file=True)
            if found is not None:
                out.append(found)
        return out

    def on_path_touched(self, path: str | Path) -> list[RulesFile]:
        """Rules files of the folders between the working directory and ``path`` not seen yet.

        ``path`` may be relative to the working directory; a directory counts as touched
        itself, a file through its parent. Paths outside the working directory give ``[]``.
        """
        try:
            raw = Path(path).expanduser()
            target = (raw if raw.is_absolute() else self.working_directory / raw).resolve()
        except (OSError, ValueError):  # a NUL byte, a symlink loop: no folder was touched
            return []
        if not target.is_relative_to(self.working_directory):
            return []
        folder = target if target.is_dir() else target.parent
        rel_parts = folder.relative_to(self.working_directory).parts
        out: list[RulesFile] = []
        current = self.working_directory
        for part in rel_parts:
            if part in SKIPPED_DIRS or part.endswith(".egg-info"):
                break
            current = current / part
            if current in self._visited_dirs:
                continue
            self._visited_dirs.add(current)
            for name in DIRECTORY_FILES:
                found = self._accept(current / name, "directory")
                if found is not None:
                    out.append(found)
        return out

    def restore(self, paths: Iterable[str | Path]) -> list[RulesFile]:
        """Reload files an earlier run of this session recorded in ``rules.loaded`` (a resume),
        so they are neither lost from the prompt nor announced again. Missing files are skipped."""
        out: list[RulesFile] = []
        for p in paths:
            path = Path(p)
            try:
                resolved = path.resolve()
            except OSError:
                continue
            if resolved.is_relative_to(self.working_directory):
                scope: RulesScope = (
                    "project" if resolved.parent in self._project_dirs() else "directory"
                )
                self._visited_dirs.add(resolved.parent)
            else:
                scope = "global"
            found = self._accept(path, scope)
            if found is not None:
                out.append(found)
        return out

    def _project_dirs(self) -> set[Path]:
        wd = self.working_directory
        return {wd, wd / ".claude", wd / ".tron"}
