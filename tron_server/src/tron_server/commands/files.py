"""Command files: Markdown in Claude Code's custom slash command format.

Where they are read (a later folder wins on a name clash: ours over Claude Code's, the
project's over the home one)::

    ~/.claude/commands/**/*.md                 scope "home" (Claude Code's user commands)
    <home>/commands/**/*.md                    scope "home" (~/.tron/commands)
    <working directory>/.claude/commands/**/*.md   scope "claude"
    <working directory>/.tron/commands/**/*.md     scope "project"

**Folder trust** (:mod:`tron_server.trust`): the working directory's command files are
listed whether or not the user trusts the folder, but until then one that runs shell
commands (``!`…` ``) is refused with the reason (:attr:`CommandFile.refusal`), and the
``allowed-tools`` of the others are ignored (a folder may not allow itself tools).

A file ``review.md`` is the command ``/review``; in a subfolder, ``frontend/component.md``
is ``/frontend:component`` (and ``/component`` works too while no other command has that
last part). Front matter is optional::

    ---
    description: Review the staged change
    argument-hint: [focus]
    allowed-tools: Bash(git diff:*), Bash(git status:*)
    model: haiku
    ---
    Review this change, focusing on $ARGUMENTS: !`git diff --cached`

Without ``description`` the first line of the body is used. Keys Claude Code knows that we
do not use (``disable-model-invocation`` …) are ignored. A file that cannot be read is
skipped with a log line naming it.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from ..agent.subagents.definitions import AgentFileError, parse_front_matter
from ..interaction.folder import SHELL_EXPANSION
from ..trust import TrustStore, claude_user_dir

__all__ = [
    "CommandFile",
    "CommandFileError",
    "command_dirs",
    "discover_commands",
    "parse_command_file",
    "split_tools",
]

log = logging.getLogger("tron_server.commands")

Scope = Literal["home", "claude", "project"]
MAX_FILE_BYTES = 256 * 1024
_NAME_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class CommandFileError(ValueError):
    """A command file cannot be used; the message names the file and the problem."""


@dataclass(frozen=True)
class CommandFile:
    """One command from a file. ``name`` is namespaced (``frontend:component``)."""

    name: str
    description: str
    body: str
    path: Path
    scope: Scope
    argument_hint: str = ""
    allowed_tools: tuple[str, ...] = ()
    model: str | None = None
    #: Whether the folder it comes from may act (home-level files always may).
    trusted: bool = True

    @property
    def runs_shell(self) -> bool:
        """Whether its body runs shell commands (``!`…` ``)."""
        return SHELL_EXPANSION.search(self.body) is not None

    @property
    def shell_refused(self) -> str | None:
        """Why a shell command (``!`…` ``) in it may not run (None: it may, after its
        checks): it comes from a folder the user has not trusted."""
        if self.trusted:
            return None
        return (
            f"it runs shell commands (!`…`) from {self.path.parent}, in a folder you have "
            "not trusted; trust the folder first (`tron --trust`, or trust.set) to run it"
        )

    @property
    def refusal(self) -> str | None:
        """Why it cannot run now (None: it can)."""
        return self.shell_refused if self.runs_shell else None

    @property
    def short_name(self) -> str:
        return self.name.rsplit(":", 1)[-1]

    @property
    def label(self) -> str:
        """Where it comes from, as Claude Code shows it: ``(project)``, ``(user:frontend)``."""
        where = "user" if self.scope == "home" else "project"
        namespace = self.name.rpartition(":")[0]
        return f"({where}:{namespace})" if namespace else f"({where})"


def command_dirs(home: Path, working_directory: Path) -> list[tuple[Scope, Path]]:
    """The folders read, in order (later wins)."""
    return [
        ("home", claude_user_dir() / "commands"),
        ("home", home / "commands"),
        ("claude", working_directory / ".claude" / "commands"),
        ("project", working_directory / ".tron" / "commands"),
    ]


def split_tools(value: str | list[str]) -> tuple[str, ...]:
    """``allowed-tools``: a list, or one string of rules separated by commas outside
    parentheses (``Bash(git add:*), Bash(git commit:*)``)."""
    if isinstance(value, list):
        return tuple(v.strip() for v in value if v.strip())
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for c in value:
        if c == "(":
            depth += 1
        elif c == ")":
            depth = max(0, depth - 1)
        if c == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(c)
    parts.append("".join(current).strip())
    return tuple(p for p in parts if p)


def _raw_scalar(text: str, key: str) -> str | None:
    """A front matter value as written (``argument-hint: [pr] [priority]`` is text, not a
    YAML list)."""
    lines = text.splitlines()
    for line in lines[1:]:
        if line.strip() in ("---", "..."):
            return None
        name, sep, value = line.partition(":")
        if sep and name.strip() == key:
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            return value
    return None


def parse_command_file(path: Path, scope: Scope, name: str) -> CommandFile:
    """Read one command file. Raises :class:`CommandFileError`."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise CommandFileError(f"{path}: larger than {MAX_FILE_BYTES} bytes")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandFileError(f"{path}: cannot be read ({exc})") from None
    meta: dict[str, str | list[str]] = {}
    body = text.strip()
    if text.lstrip("\ufeff").startswith("---"):
        try:
            meta, body = parse_front_matter(text.lstrip("\ufeff"), str(path))
        except AgentFileError as exc:
            raise CommandFileError(str(exc)) from None
    description = meta.get("description")
    if not isinstance(description, str) or not description.strip():
        first = next((line.strip() for line in body.splitlines() if line.strip()), "")
        description = first.lstrip("# ").strip()[:120]
    hint = _raw_scalar(text, "argument-hint") if meta else None
    tools = meta.get("allowed-tools", meta.get("allowedTools", ""))
    model = meta.get("model")
    return CommandFile(
        name=name,
        description=description.strip(),
        body=body,
        path=path,
        scope=scope,
        argument_hint=(hint or "").strip(),
        allowed_tools=split_tools(tools) if tools else (),
        model=model.strip() if isinstance(model, str) and model.strip() else None,
    )


def _name_of(relative: Path) -> str | None:
    parts = [*relative.parent.parts, relative.stem]
    if not all(_NAME_PART.fullmatch(p) for p in parts):
        return None
    return ":".join(parts)


def discover_commands(
    home: Path, working_directory: Path, *, trusted: bool | None = None
) -> dict[str, CommandFile]:
    """Every usable command file by name (see the module docstring). ``trusted``: whether
    the working directory's files may act (None: as recorded in ``home``'s trust store)."""
    if trusted is None:
        trusted = TrustStore(home).is_trusted(working_directory) is not None
    found: dict[str, CommandFile] = {}
    for scope, folder in command_dirs(home, working_directory):
        try:
            files = sorted(p for p in folder.rglob("*.md") if p.is_file())
        except OSError:
            continue
        for path in files:
            name = _name_of(path.relative_to(folder))
            if name is None:
                log.warning("command file skipped: %s: its name is not a command name", path)
                continue
            try:
                command = parse_command_file(path, scope, name)
            except CommandFileError as exc:
                log.warning("command file skipped: %s", exc)
                continue
            if scope != "home" and not trusted:
                command = replace(command, trusted=False, allowed_tools=())
            found[name] = command
    return dict(sorted(found.items()))
