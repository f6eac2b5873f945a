"""Gitignore-style path patterns, as Claude Code's ``Read(...)`` / ``Edit(...)`` rules use them.

A pattern is matched against a path *relative to a base folder* (``a/b/c.py``, ``/``
separated, no leading slash):

- ``*`` is any run of characters except ``/``; ``?`` one character except ``/``;
  ``[abc]``, ``[a-z]``, ``[!a]`` a character class (never ``/``); ``\\x`` the character x;
- ``**/`` at the start or after a ``/`` is any number of folders (none included), a trailing
  ``/**`` everything inside, ``/**/`` in the middle zero or more folders;
- a pattern with a ``/`` at its start or in its middle is anchored at the base; one
  without (``.env``, ``*.key``) matches at any depth below it, as in ``.gitignore``;
- a trailing ``/`` matches folders only;
- a pattern that matches a folder matches everything in it (``src`` covers ``src/a.py``).

:func:`compile_pattern` turns a pattern into a :class:`PathPattern`; :meth:`PathPattern.matches`
takes the relative path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["PathPattern", "compile_pattern"]


@dataclass(frozen=True)
class PathPattern:
    """A compiled pattern: ``regex`` matches one relative path (a file or a folder)."""

    text: str
    regex: re.Pattern[str]
    directory_only: bool

    def matches(self, relative: str, *, is_dir: bool = False) -> bool:
        """Whether ``relative`` (or a folder it lies in) matches."""
        if relative in ("", "."):
            return self.regex.fullmatch("") is not None
        parts = relative.split("/")
        for end in range(1, len(parts) + 1):
            candidate = "/".join(parts[:end])
            whole = end == len(parts)
            if whole and self.directory_only and not is_dir:
                continue
            if self.regex.fullmatch(candidate) is not None:
                return True
        return False


def _class(pattern: str, start: int) -> tuple[str, int] | None:
    """The regex of a ``[...]`` class starting at ``start``; None when it does not close."""
    i = start + 1
    negate = i < len(pattern) and pattern[i] in "!^"
    if negate:
        i += 1
    body_start = i
    if i < len(pattern) and pattern[i] == "]":  # a leading ] is a member
        i += 1
    while i < len(pattern) and pattern[i] != "]":
        i += 1
    if i >= len(pattern):
        return None
    body = pattern[body_start:i].replace("\\", "\\\\").replace("/", "")
    if not body:
        return None
    return ("[^/" if negate else "[") + body.replace("^", "\\^") + "]", i + 1


def _translate(pattern: str) -> str:
    out: list[str] = []
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                at_start = i == 0 or pattern[i - 1] == "/"
                after = i + 2
                if at_start and after < n and pattern[after] == "/":
                    out.append("(?:.*/)?")  # **/ : zero or more folders
                    i = after + 1
                    continue
                if at_start and after == n:
                    out.append(".*")  # trailing /** (or a lone **): everything
                    i = after
                    continue
                out.append("[^/]*")
                i = after
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            translated = _class(pattern, i)
            if translated is None:
                out.append(re.escape(c))
            else:
                out.append(translated[0])
                i = translated[1]
                continue
        elif c == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def compile_pattern(text: str) -> PathPattern:
    """Compile a gitignore-style pattern (see the module docstring).

    ``text`` is relative to the base: a leading ``/`` anchors it there. Raises
    ``ValueError`` for an empty pattern."""
    pattern = text
    directory_only = pattern.endswith("/") and pattern.strip("/") != ""
    pattern = pattern.rstrip("/") if directory_only else pattern
    anchored = pattern.startswith("/")
    pattern = pattern.lstrip("/")
    if not pattern:
        # "/" (or "//"): the base folder itself, hence everything in it.
        return PathPattern(text, re.compile(".*", re.DOTALL), False)
    if "/" in pattern:
        anchored = True
    body = _translate(pattern)
    regex = body if anchored or body.startswith("(?:.*/)?") else "(?:.*/)?" + body
    return PathPattern(text, re.compile(regex, re.DOTALL), directory_only)
