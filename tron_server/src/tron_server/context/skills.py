"""Skills: folders holding a ``SKILL.md`` (instructions, optionally with scripts or references),
offered to the model by name and description and loaded on demand with the Skill tool.

Where they live (``home`` is Tron's home, ``~/.tron`` by default)::

    ~/.claude/skills/<folder>/SKILL.md              scope "home" (Claude Code's user skills)
    <home>/skills/<folder>/SKILL.md                 scope "home" (wins over Claude Code's)
    <working directory>/.claude/skills/<folder>/SKILL.md scope "project" (Claude Code's)
    <working directory>/.tron/skills/<folder>/SKILL.md   scope "project" (wins over home by name)

A skill is text for the model: loading one returns its SKILL.md and lists its files;
nothing in it runs, and no front matter key (``allowed-tools`` …) changes what a tool
may do. So a project's skills are read whether or not the folder is trusted
(:mod:`tron_server.trust`), as its ``CLAUDE.md`` is.

``SKILL.md`` may start with a front matter block of simple ``key: value`` lines::

    ---
    name: release-notes
    description: Write release notes from the git log since the last tag.
    ---
    # Body: the instructions the model gets when it loads the skill

``name`` defaults to the folder name and ``description`` to the body's first line of text.
Values may be quoted; an indented line continues the previous value; a ``>`` or ``|`` value
takes the indented lines below it. (A full YAML parser is not needed for this, and none is
installed.)
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from . import listings
from .listings import entries, folder_name, present, user_dir

__all__ = [
    "MAX_LISTED_FILES",
    "Skill",
    "SkillNotFoundError",
    "discover_skills",
    "find_skill",
    "load_skill",
    "parse_front_matter",
    "skill_files",
]

SkillScope = Literal["home", "project"]
MAX_DESCRIPTION = 300
MAX_LISTED_FILES = 50


class SkillNotFoundError(LookupError):
    """No skill has the requested name; the message lists the ones that exist."""


@dataclass(frozen=True)
class Skill:
    """A discovered skill. ``path`` is its SKILL.md file."""

    name: str
    description: str
    path: Path
    scope: SkillScope = "project"

    @property
    def folder(self) -> Path:
        """The skill's folder (scripts and references live next to SKILL.md)."""
        return self.path.parent

    def body(self) -> str:
        """SKILL.md without its front matter."""
        _meta, body = parse_front_matter(self.path.read_text(encoding="utf-8", errors="replace"))
        return body


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def parse_front_matter(text: str) -> tuple[dict[str, str], str]:
    """Split ``text`` into (front matter as a dict of strings, body).

    Text without a leading ``---`` line has no front matter. An unterminated block is
    treated as body, so a stray ``---`` never swallows the whole file.
    """
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, text
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        return {}, text
    meta: dict[str, str] = {}
    key: str | None = None
    block: list[str] | None = None
    folded = False

    def close_block() -> None:
        if key is not None and block is not None:
            meta[key] = (" " if folded else "\n").join(block).strip()

    for line in lines[1:end]:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if line[:1] in (" ", "\t") and key is not None:
            # Continuation of the previous value (or the body of a > / | block).
            if block is not None:
                block.append(stripped)
            else:
                meta[key] = f"{meta[key]} {stripped}".strip()
            continue
        close_block()
        block = None
        if ":" not in stripped:
            key = None
            continue
        key, _, value = stripped.partition(":")
        key = key.strip()
        value = value.strip()
        if value in (">", ">-", "|", "|-"):
            block = []
            folded = value.startswith(">")
            meta[key] = ""
        else:
            meta[key] = _unquote(value)
    close_block()
    body = "\n".join(lines[end + 1 :]).lstrip("\n")
    return meta, body


def _first_line(body: str) -> str:
    for line in body.splitlines():
        text = line.strip().lstrip("#").strip()
        if text:
            return text
    return ""


def _read_skill(skill_md: Path, scope: SkillScope) -> Skill | None:
    try:
        text = skill_md.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    meta, body = parse_front_matter(text)
    name = meta.get("name") or skill_md.parent.name
    description = meta.get("description") or _first_line(body) or "(no description)"
    if len(description) > MAX_DESCRIPTION:
        description = description[: MAX_DESCRIPTION - 1] + "…"
    return Skill(name=name, description=description, path=skill_md, scope=scope)


_read_lock = threading.Lock()
#: SKILL.md path -> (its stamp, the skill read from it): every run lists the skills, and
#: a SKILL.md is read again only when its stamp changed.
_read_kept: dict[str, tuple[tuple[int, int, int, int, int], Skill]] = {}


def _kept_skill(skill_md: Path, scope: SkillScope) -> Skill | None:
    """The skill in ``skill_md`` (a stat, then the file only when it changed); None:
    not a file (the folder holds no skill) or not readable."""
    began = time.time_ns()
    name = str(skill_md)
    try:
        info = os.stat(name)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    key = (info.st_ctime_ns, info.st_mtime_ns, info.st_size, info.st_ino, info.st_dev)
    kept = _read_kept.get(name)
    if kept is not None and kept[0] == key and kept[1].scope == scope:
        return kept[1]
    skill = _read_skill(skill_md, scope)
    # Kept only for a file last changed well before (as folder listings are).
    if skill is not None and listings.settled(began, info):
        with _read_lock:
            if len(_read_kept) >= listings.MAX_KEPT:
                _read_kept.clear()
            _read_kept[name] = (key, skill)
    return skill


def _scan(base: str, rel: tuple[str, ...], scope: SkillScope) -> list[Skill]:
    # Most roots do not exist: the cached listings of the folders on the way say so
    # without a stat of each (every run lists the skills).
    if not present(base, *rel):
        return []
    root = Path(base, *rel)
    names = entries(root)
    if names is not None:  # its cached listing; then one stat per skill that did not change
        found: list[Skill] = []
        for name in sorted(names):
            skill = _kept_skill(root / name / "SKILL.md", scope)
            if skill is not None:
                found.append(skill)
        return found
    if not root.is_dir():
        return []
    found = []
    for folder in sorted(root.iterdir()):
        skill_md = folder / "SKILL.md"
        if folder.is_dir() and skill_md.is_file():
            skill = _read_skill(skill_md, scope)
            if skill is not None:
                found.append(skill)
    return found


def discover_skills(home: Path, working_directory: Path) -> list[Skill]:
    """Every skill, sorted by name; a project skill replaces a home skill of the same name."""
    by_name: dict[str, Skill] = {}
    # Claude Code's user skills first: the home's own (~/.tron/skills) win on a clash.
    for base in (user_dir(), folder_name(home)):
        for skill in _scan(base, ("skills",), "home"):
            by_name[skill.name] = skill
    # Claude Code's project skills, then the project's own (ours win on a clash).
    wd = folder_name(working_directory)
    for folder in (".claude", ".tron"):
        for skill in _scan(wd, (folder, "skills"), "project"):
            by_name[skill.name] = skill
    return [by_name[name] for name in sorted(by_name)]


def find_skill(name: str, skills: Sequence[Skill]) -> Skill:
    """The skill called ``name`` (exact, then case-insensitive); raises SkillNotFoundError."""
    for skill in skills:
        if skill.name == name:
            return skill
    lowered = name.strip().lower()
    for skill in skills:
        if skill.name.lower() == lowered:
            return skill
    known = ", ".join(s.name for s in skills) or "none"
    raise SkillNotFoundError(f"No skill named {name!r}. Available skills: {known}.")


def load_skill(name: str, *, home: Path, working_directory: Path) -> str:
    """The body of skill ``name`` (front matter removed); raises SkillNotFoundError."""
    return find_skill(name, discover_skills(home, working_directory)).body()


def skill_files(skill: Skill, limit: int = MAX_LISTED_FILES) -> tuple[list[str], int]:
    """Other files in the skill's folder (relative paths, sorted) and how many exist in all."""
    files: list[str] = []
    for p in skill.folder.rglob("*"):
        rel = p.relative_to(skill.folder)
        if p == skill.path or any(part.startswith(".") for part in rel.parts) or not p.is_file():
            continue
        files.append(rel.as_posix())
    files.sort()
    return files[:limit], len(files)
