"""The commands a Bash command line runs, for permission rules, hooks and guardrails.

:func:`split` reads a line (:mod:`.reader`), looks into the commands that run others
(:mod:`.wrappers`: ``sudo``, ``env``, ``timeout``, ``xargs``, ``bash -c '…'``…) and returns
every command found, with :attr:`Split.uncertain` saying why the line could not be read with
certainty (None when it could). Callers treat an uncertain line conservatively: no allow rule
matches it, while deny rules are still checked against every command found.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .reader import (
    ASSIGNMENT,
    LEADING,
    MAX_DEPTH,
    UNREAD,
    Reading,
    Redirect,
    Simple,
    Word,
    read_line,
)
from .wrappers import unwrap

__all__ = ["Command", "Split", "split"]

#: Builtins that run a string later or change what a name runs (``alias ls=rm``,
#: ``hash -p ./x ls``, ``trap 'rm x' EXIT``, ``enable -f x.so ls``).
_REDEFINING = frozenset({"trap", "alias", "hash", "enable", "bind", "complete"})


@dataclass(frozen=True)
class Command:
    """One command the line runs.

    ``text``: as written (whitespace normalized; redirections and leading ``VAR=value``
    assignments kept, reserved words such as ``{`` or ``if`` before it dropped), what
    allow rules match. ``bare``: ``text`` without the assignments. ``argv``: its words as
    bash passes them (quotes removed; a word that expands keeps its ``$…`` text).
    ``substitution``: it runs other commands inside its words (``$(…)``, backticks,
    ``<(…)``), which are reported as commands of their own too."""

    text: str
    bare: str
    argv: tuple[str, ...]
    substitution: bool = False
    #: Its redirections: (operator with its file descriptor, target), e.g. ``("2>", "x")``.
    redirects: tuple[tuple[str, str], ...] = ()

    @property
    def name(self) -> str:
        """The program it runs (``/usr/bin/rm`` → ``rm``)."""
        return os.path.basename(self.argv[0]) if self.argv else ""

    @property
    def forms(self) -> tuple[str, ...]:
        """Every way a deny rule may name it: as written, without assignments, and its
        words unquoted (``'rm' -rf /`` is ``rm -rf /``)."""
        unquoted = " ".join(" ".join(self.argv).split())
        return tuple(dict.fromkeys((self.text, self.bare, unquoted)))


@dataclass(frozen=True)
class Split:
    """The commands of a line, in the order bash reads them (a substitution before the
    command whose words hold it), and why the line is uncertain (None: it is not)."""

    commands: tuple[Command, ...]
    uncertain: str | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.commands)

    def texts(self) -> tuple[str, ...]:
        """Every form of every command (:attr:`Command.forms`), for deny and ask rules."""
        return tuple(dict.fromkeys(f for c in self.commands for f in c.forms))


def split(line: str) -> Split:
    """The commands ``line`` runs (see the module docstring). Never raises."""
    reading = read_line(line)
    found: list[Command] = []
    for simple in reading.commands:
        _command(simple, reading, found, 0)
    return Split(tuple(found), reading.uncertain)


def _join(parts: list[Word | Redirect]) -> str:
    raw = " ".join(p.raw for p in parts)
    return " ".join(raw.replace("\\\n", "").split())


def _command(simple: Simple, reading: Reading, found: list[Command], depth: int) -> None:
    parts = list(simple.parts)
    while parts and isinstance(parts[0], Word) and parts[0].raw in LEADING:
        keyword = parts.pop(0)
        if keyword.raw == "time":
            while parts and isinstance(parts[0], Word) and parts[0].raw == "-p":
                parts.pop(0)
    words = [p for p in parts if isinstance(p, Word)]
    if words and words[0].raw in UNREAD:
        reading.doubt(f"{words[0].raw} (this reader does not follow it)")
        return
    k = 0
    while k < len(words) and ASSIGNMENT.match(words[k].raw):
        k += 1
    if k == len(words):
        return  # assignments and redirections only: their substitutions are commands
    text = _join(parts)
    bare = _join([p for p in parts if not (isinstance(p, Word) and p in words[:k])])
    redirects = tuple(
        (p.op, p.target.value if p.target is not None else "")
        for p in parts
        if isinstance(p, Redirect)
    )
    _add(words[k:], text, bare, reading, found, depth, redirects)


def _add(
    words: list[Word],
    text: str,
    bare: str,
    reading: Reading,
    found: list[Command],
    depth: int,
    redirects: tuple[tuple[str, str], ...] = (),
) -> None:
    head = words[0]
    substitution = any(w.substitution for w in words)
    argv = tuple(w.value for w in words)
    found.append(Command(text, bare, argv, substitution, redirects))
    if head.dynamic or "\x00" in head.value:
        reading.doubt(f"an expansion in command position ({head.raw})")
        return
    if head.value in _REDEFINING:
        reading.doubt(f"{head.value}, which runs or redefines commands")
    if os.path.basename(head.value) == "eval":
        reading.doubt("eval")
        if len(words) > 1 and not any(w.dynamic for w in words[1:]) and depth < MAX_DEPTH:
            # What it evaluates, when written out: for deny rules and guardrails.
            _script(" ".join(w.value for w in words[1:]), reading, found, depth + 1)
        return
    if head.value in LEADING or head.value in UNREAD:
        reading.doubt(f"a quoted reserved word ({head.raw})")
    inner = unwrap(words)
    if inner is None:
        return
    if inner.doubt is not None:
        reading.doubt(inner.doubt)
    if depth >= MAX_DEPTH:
        reading.doubt("commands wrapped too deep")
        return
    if inner.implicit is not None:
        found.append(Command(inner.implicit, inner.implicit, (inner.implicit,)))
    for wrapped in [inner.words, *inner.also] if inner.words else []:
        k = 0
        while k < len(wrapped) and ASSIGNMENT.match(wrapped[k].raw):
            k += 1  # env NAME=value cmd
        rest = wrapped[k:]
        if rest:
            text = _join(list(wrapped))
            _add(rest, text, _join(list(rest)), reading, found, depth + 1, redirects)
    if inner.script is not None:
        _script(inner.script, reading, found, depth + 1)
        if os.path.basename(head.value) != "bash" and (
            "$'" in inner.script or '$"' in inner.script
        ):
            reading.doubt("bash's quoting in a sh script")  # dash reads it otherwise


def _script(text: str, reading: Reading, found: list[Command], depth: int) -> None:
    """The commands of a script another command runs (``bash -c``, ``eval``)."""
    nested = read_line(text, depth)
    if nested.uncertain is not None:
        reading.doubt(nested.uncertain)
    for simple in nested.commands:
        _command(simple, reading, found, depth)
