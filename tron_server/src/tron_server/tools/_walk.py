"""A .gitignore-aware directory walk and glob matching, in pure Python.

Used by Glob and by Grep's fallback when ripgrep is not installed; it follows
ripgrep's rules (as run by Grep: ``--hidden --no-require-git --no-ignore-global
--no-ignore-dot``) so that both give the same results:

- ``.gitignore`` files in the search root and below, each relative to its folder,
  the deepest deciding; those of the folders above the search root up to the git
  repository root (the first folder holding ``.git``); ``.git/info/exclude``;
- hidden files are included, ``.git`` folders never;
- symbolic links are not followed (nor listed);
- entries are visited in name order, depth first (the order of ``rg --sort path``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

# pathspec (~7 ms of imports) when a walk first reads an ignore file, not at the server's
# start: the first turn does not walk (tron_server.app.import_later loads it after).
if TYPE_CHECKING:
    import pathspec


@dataclass(frozen=True)
class _Level:
    base: str  # folder of the ignore file, relative to the search root ("" = the root)
    spec: pathspec.GitIgnoreSpec


def _read_spec(path: Path) -> pathspec.GitIgnoreSpec | None:
    import pathspec

    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    spec = pathspec.GitIgnoreSpec.from_lines(text.splitlines())
    return spec if len(spec.patterns) else None


def _parent_levels(root: Path) -> list[tuple[str, pathspec.GitIgnoreSpec]]:
    """Ignore rules above the search root, lowest precedence first, as (prefix, spec):
    ``prefix`` is the search root relative to the folder of the ignore file.

    Patterns that match a folder between that folder and the search root are dropped:
    like ripgrep, searching inside an ignored folder (say node_modules) still searches.
    """
    chain: list[Path] = []
    current = root
    git_root: Path | None = None
    while True:
        if (current / ".git").exists():
            git_root = current
            break
        if current.parent == current:
            break
        current = current.parent
        chain.append(current)
    if git_root is not None and git_root != root:
        chain = [p for p in chain if p == git_root or git_root in p.parents]
    sources: list[tuple[Path, Path]] = []  # (folder the patterns are relative to, file)
    if git_root is not None:
        sources.append((git_root, git_root / ".git" / "info" / "exclude"))
    sources.extend((folder, folder / ".gitignore") for folder in reversed(chain))
    import pathspec

    levels: list[tuple[str, pathspec.GitIgnoreSpec]] = []
    for folder, file in sources:
        spec = _read_spec(file)
        if spec is None:
            continue
        prefix = root.relative_to(folder).as_posix()
        if prefix == ".":  # .git/info/exclude of a repository rooted at the search root
            levels.append(("", spec))
            continue
        parts = prefix.split("/")
        ancestors = ["/".join(parts[: i + 1]) + "/" for i in range(len(parts))]
        kept = [
            p
            for p in spec.patterns
            if p.include is None or not any(p.match_file(a) is not None for a in ancestors)
        ]
        if kept:
            levels.append((prefix, pathspec.GitIgnoreSpec(kept)))
    return levels


class IgnoreRules:
    """Decides whether a path below ``root`` is ignored."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._parents = _parent_levels(root)

    def ignored(self, rel: str, is_dir: bool, levels: list[_Level]) -> bool:
        for level in reversed(levels):
            sub = rel[len(level.base) + 1 :] if level.base else rel
            result = level.spec.check_file(sub + "/" if is_dir else sub).include
            if result is not None:
                return bool(result)
        for prefix, spec in reversed(self._parents):
            full = f"{prefix}/{rel}" if prefix else rel
            result = spec.check_file(full + "/" if is_dir else full).include
            if result is not None:
                return bool(result)
        return False


def walk_files(root: Path) -> Iterator[str]:
    """Files below ``root`` that are not ignored, as paths relative to it (``a/b.txt``)."""
    rules = IgnoreRules(root)
    yield from _visit(rules, root, "", [])


def _visit(rules: IgnoreRules, folder: Path, rel: str, levels: list[_Level]) -> Iterator[str]:
    spec = _read_spec(folder / ".gitignore")
    if spec is not None:
        levels = [*levels, _Level(rel, spec)]
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:  # unreadable folder: skipped, as ripgrep does (it warns)
        return
    for entry in entries:
        if entry.is_symlink():
            continue
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        if is_dir and entry.name == ".git":
            continue
        child = f"{rel}/{entry.name}" if rel else entry.name
        if rules.ignored(child, is_dir, levels):
            continue
        if is_dir:
            yield from _visit(rules, Path(entry.path), child, levels)
        elif entry.is_file(follow_symlinks=False):
            yield child


def path_sort_key(rel: str) -> tuple[str, ...]:
    """Order of a depth-first walk in name order (``a/b`` before ``a.txt``)."""
    return tuple(rel.split("/"))


# --- glob patterns ------------------------------------------------------------------


def expand_braces(pattern: str) -> list[str]:
    """``*.{ts,tsx}`` → ``["*.ts", "*.tsx"]`` (nested braces supported)."""
    depth = 0
    start = -1
    for i, ch in enumerate(pattern):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                inner = pattern[start + 1 : i]
                options = _split_top_level(inner)
                if len(options) < 2:
                    continue
                head, tail = pattern[:start], pattern[i + 1 :]
                out: list[str] = []
                for option in options:
                    out.extend(expand_braces(head + option + tail))
                return out
    return [pattern]


def _split_top_level(s: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current = ""
    for ch in s:
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        current += ch
    parts.append(current)
    return parts


def _translate(pattern: str) -> str:
    out: list[str] = []
    i = 0
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if pattern.startswith("**/", i) and (i == 0 or pattern[i - 1] == "/"):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i) and i + 2 == n and (i == 0 or pattern[i - 1] == "/"):
            out.append(".*")
            i += 2
        elif ch == "*":
            out.append("[^/]*")
            i += 1
            while i < n and pattern[i] == "*":
                i += 1
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "[":
            j = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^", "]") else i + 1)
            if j == -1:
                out.append(re.escape(ch))
                i += 1
                continue
            body = pattern[i + 1 : j]
            if body.startswith(("!", "^")):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = j + 1
        else:
            out.append(re.escape(ch))
            i += 1
    return "".join(out)


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """A regex that fully matches the paths ``pattern`` selects (``*``, ``?``, ``[..]``,
    ``**`` for any number of folders, ``{a,b}`` alternatives)."""
    alternatives = [_translate(p) for p in expand_braces(pattern)]
    return re.compile("(?:" + "|".join(alternatives) + r")\Z", re.DOTALL)


def glob_matcher(pattern: str) -> tuple[re.Pattern[str], bool]:
    """The compiled glob and whether it applies to the whole relative path (it has a
    ``/``) or to the file name only (like ripgrep's ``--glob`` / ``--type-add``)."""
    cleaned = pattern.removeprefix("./")
    return compile_glob(cleaned), "/" in cleaned
