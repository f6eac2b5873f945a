"""Expanding a command file's body into the message sent to the model.

In this order, as Claude Code does:

1. ``$ARGUMENTS`` becomes everything after the command name; ``$1``, ``$2`` … its words
   (quotes group words: ``/fix "the login page" high`` gives ``$1`` = ``the login page``);
   a missing one becomes empty. A body that uses none of them gets the arguments appended
   as ``ARGUMENTS: …`` (when there are any);
2. ``!`command` `` runs the command with Bash in the session's working directory — after the
   guardrails and the permissions (the file's ``allowed-tools`` count as allow rules; what
   would need an approval is refused, since nobody is asked in the middle of a command) —
   and is replaced by its output;
3. ``@path`` (at the start or after a space) includes that file: the mention stays in the
   text and the file's content is appended in a ``<file path="…">`` block (a folder: its
   listing). The path goes through the same resolution as the tools' (symlinks, ``..``) and
   ``Read`` deny rules; a path that does not exist is left as written (``@someone``).

Anything refused raises :class:`ExpansionError` (the message says what and why), and
nothing is sent.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..interaction.folder import SHELL_EXPANSION
from ..paths import PathError, PathPolicy

__all__ = ["ExpandEnv", "Expansion", "ExpansionError", "expand_body", "split_arguments"]

MAX_FILE_BYTES = 256 * 1024
MAX_LISTING = 200
_ARGUMENTS = re.compile(r"\$ARGUMENTS\b")
_POSITIONAL = re.compile(r"\$(\d+)")
_BANG = SHELL_EXPANSION
_MENTION = re.compile(r"(?:(?<=\s)|^)@([^\s`'\"<>]+)", re.MULTILINE)
_TRAILING = ".,;:!?)]}"


class ExpansionError(Exception):
    """The command cannot be expanded (a refused ``!`…` `` or ``@path``)."""


@dataclass
class Expansion:
    """The text for the model, and what was included to make it."""

    text: str
    files: list[str] = field(default_factory=list)
    commands: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class ExpandEnv:
    """What expansion needs from the session: its path policy, and Bash with its checks.

    ``check_bash(command)`` returns why a command is refused (guardrails, hooks,
    permissions) or None; ``run_bash(command)`` returns (output, exit code);
    ``check_read(path, is_dir, named)`` why reading a resolved path, which the text names
    ``named`` (symlinks not followed), is refused (a deny rule) or None."""

    paths: PathPolicy
    check_bash: Callable[[str], Awaitable[str | None]]
    run_bash: Callable[[str], Awaitable[tuple[str, int | None]]]
    check_read: Callable[[Path, bool, Path], Awaitable[str | None]]


def split_arguments(arguments: str) -> list[str]:
    """The words of the arguments (shell quoting; plain split when quotes do not close)."""
    try:
        return shlex.split(arguments)
    except ValueError:
        return arguments.split()


def substitute(body: str, arguments: str) -> str:
    """Step 1 of the module docstring."""
    words = split_arguments(arguments)
    used = bool(_ARGUMENTS.search(body) or _POSITIONAL.search(body))
    text = _ARGUMENTS.sub(lambda _m: arguments, body)

    def positional(match: re.Match[str]) -> str:
        index = int(match.group(1))
        return words[index - 1] if 1 <= index <= len(words) else ""

    text = _POSITIONAL.sub(positional, text)
    if not used and arguments.strip():
        text = f"{text}\n\nARGUMENTS: {arguments.strip()}"
    return text


async def expand_body(
    body: str, arguments: str, env: ExpandEnv, *, shell_refused: str | None = None
) -> Expansion:
    """Expand ``body`` for ``arguments`` (see the module docstring). ``shell_refused``:
    why no ``!`…` `` may run (a file from a folder the user has not trusted), raised as
    :class:`ExpansionError` when the text has one; None: they run after their checks."""
    text = substitute(body, arguments)
    if shell_refused is not None and _BANG.search(text):
        raise ExpansionError(shell_refused)
    out = Expansion(text)
    # Commands first, each once, in order; their output is not scanned again.
    pieces: list[str] = []
    last = 0
    for match in _BANG.finditer(text):
        command = match.group(1).strip()
        refusal = await env.check_bash(command)
        if refusal is not None:
            raise ExpansionError(f"!`{command}` was not run: {refusal}")
        output, code = await env.run_bash(command)
        out.commands.append({"command": command, "exitCode": code})
        pieces.append(text[last : match.start()])
        pieces.append(output.rstrip("\n"))
        last = match.end()
    pieces.append(text[last:])
    template = "".join(pieces) if out.commands else text
    blocks: list[str] = []
    seen: set[Path] = set()
    scanned = "".join(pieces[0::2]) if out.commands else text  # outputs are not scanned
    for match in _MENTION.finditer(scanned):
        included = await _include(match.group(1), env, seen)
        if included is not None:
            path, block = included
            out.files.append(str(path))
            blocks.append(block)
    out.text = template + ("\n\n" + "\n\n".join(blocks) if blocks else "")
    return out


async def _include(raw: str, env: ExpandEnv, seen: set[Path]) -> tuple[Path, str] | None:
    candidates = [raw]
    stripped = raw.rstrip(_TRAILING)
    if stripped and stripped != raw:
        candidates.append(stripped)
    for candidate in candidates:
        try:
            resolved = env.paths.resolve(candidate)
        except PathError:
            continue  # not a path (or one that cannot be walked): plain text
        try:
            with resolved:
                if not resolved.exists:
                    continue
                path = resolved.path
                if path in seen:
                    return None
                refusal = await env.check_read(path, resolved.is_dir, env.paths.named(candidate))
                if refusal is not None:
                    raise ExpansionError(f"@{candidate} was not included: {refusal}")
                seen.add(path)
                shown = env.paths.display(path)
                if resolved.is_dir:
                    names = sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir())
                    listing = "\n".join(names[:MAX_LISTING])
                    if len(names) > MAX_LISTING:
                        listing += f"\n[{len(names) - MAX_LISTING} more]"
                    return path, f'<folder path="{shown}">\n{listing}\n</folder>'
                data = resolved.read_bytes(MAX_FILE_BYTES)
        except PathError as exc:
            raise ExpansionError(f"@{candidate} was not included: {exc}") from None
        except OSError:
            continue
        try:
            content = data.decode("utf-8")
        except UnicodeDecodeError:
            return path, f'<file path="{shown}">\n[binary file, not included]\n</file>'
        return path, f'<file path="{shown}">\n{content.rstrip()}\n</file>'
    return None
