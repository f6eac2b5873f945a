"""Permission rules in Claude Code's syntax, and how a tool call matches them.

A rule is a tool name, alone or with a specifier in parentheses::

    Bash                     every Bash command (also ``Bash(*)``)
    Bash(npm run build)      exactly that command
    Bash(git push:*)         ``git push`` and ``git push <anything>`` (not ``git pushx``)
    Bash(npm *)              ``*`` is any text; a trailing `` *`` also matches the bare word
    Read(./.env)             the file .env in the working directory
    Read(.env)               any .env below the working directory (gitignore style)
    Edit                     every file edit (Edit rules cover Write, Edit, MultiEdit)
    Edit(src/**)             anything below src/
    Edit(/docs/**)           docs/ of the project that holds the settings file
    Read(//etc/hosts)        an absolute path
    Read(~/.ssh/**)          below the home folder
    Task(reviewer)           the Task tool starting that agent (also ``Agent(...)``)
    Skill(deploy)            the Skill tool loading that skill
    WebFetch(domain:x.com)   a fetch of that host (``*`` wildcards: ``domain:*.x.com``)
    Browser(domain:x.com)    the browser opening a page of that host (``navigate``)
    mcp__github              every tool of the MCP server github (``mcp__github__*`` too)
    mcp__github__get_issue   one tool of it

Path specifiers follow :mod:`._glob` and are matched against the *resolved* paths the tools
act on (:class:`~tron_server.tools.PathPolicy`: symlinks and ``..`` resolved), relative to
the rule's base folder: the working directory for ``x`` and ``./x``, the settings file's
project for ``/x``, the home folder for ``~/x``, ``/`` for ``//x``. ``Read(...)`` rules also
cover Grep and Glob (the folder they search).

Bash rules know the shell: a command line is split into the commands it runs
(:func:`tron_server.shell.split`, also those inside ``$(…)``, backticks, ``bash -c '…'``,
``sudo``, ``env``, ``timeout``…). A ``deny`` or ``ask`` rule applies when it matches the
whole line or any command in it (as written, without ``VAR=value`` prefixes, or unquoted);
an ``allow`` rule set allows a line only when every command in it is allowed
(``Bash(npm test:*)`` does not allow ``npm test && rm -rf x``), a command that runs others
inside it (``$(…)``, backticks) only by an exact rule, and a line the splitter cannot read
with certainty (``eval``, an unclosed quote, a ``$`` expansion in command position…) by no
prefix or wildcard rule: only ``Bash`` itself or a rule naming the exact line allows it.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from ..shell import split
from ._glob import PathPattern, compile_pattern
from .modes import EDIT_TOOLS, PATH_TOOLS, READ_TOOLS

__all__ = [
    "Behavior",
    "CallFacts",
    "Rule",
    "RuleSet",
    "RuleSyntaxError",
    "parse_rule",
    "suggest_rule",
    "url_host",
]

Behavior = Literal["allow", "ask", "deny"]

#: Claude Code's names for our tools.
ALIASES = {"Agent": "Task", "AskUserQuestion": "AskUser", "LS": "Glob"}

_RULE = re.compile(r"^\s*([A-Za-z_*][A-Za-z0-9_\-.*]*)\s*(?:\((.*)\))?\s*$", re.DOTALL)


class RuleSyntaxError(ValueError):
    """A rule that cannot be read; the message quotes it and says what is wrong."""


@dataclass(frozen=True)
class CallFacts:
    """What a rule looks at in one tool call.

    ``paths``: the resolved paths the call acts on, each with whether it is a folder
    (empty for tools that take none, or when a path could not be resolved).
    ``working_directory``: the session's, resolved (``os.path.realpath``).
    ``named``: the same paths as the call names them (symlinks not followed,
    :meth:`~tron_server.tools.PathPolicy.named`): deny and ask rules match them too, so a
    rule naming a symlink still refuses (or asks for) a call through it; allow rules
    match only ``paths``, so a link cannot carry an allowed name to another file."""

    tool: str
    input: Mapping[str, Any]
    working_directory: Path
    paths: tuple[tuple[Path, bool], ...] = ()
    home: Path = field(default_factory=Path.home)
    named: tuple[tuple[Path, bool], ...] = ()
    #: For a URL (WebFetch, Browser): the host's loopback/private addresses, which only a
    #: rule naming the domain allows without asking (:meth:`Rule.names_domain`).
    private: tuple[str, ...] = ()

    @property
    def command(self) -> str:
        value = self.input.get("command")
        return value if isinstance(value, str) else ""


@dataclass(frozen=True)
class Rule:
    """One rule: ``tool`` (aliases mapped) and an optional ``specifier``.

    ``source`` says where it comes from (a settings file, ``session``, a command file);
    ``base`` is the folder ``/x`` path specifiers are relative to (the settings file's
    project; None: the working directory)."""

    text: str
    tool: str
    specifier: str | None
    behavior: Behavior
    source: str = ""
    base: Path | None = None

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.text, "behavior": self.behavior, "source": self.source}

    # -- matching ----------------------------------------------------------------------

    def covers_tool(self, tool: str) -> bool:
        """Whether the rule is about ``tool`` (before looking at its specifier)."""
        name = self.tool
        if "*" in name:
            return fnmatch.fnmatchcase(tool, name)
        if name == tool:
            return True
        if self.specifier is None and name.startswith("mcp__"):
            # ``mcp__github`` is every tool of that server, as in Claude Code.
            return "__" not in name.removeprefix("mcp__") and tool.startswith(name + "__")
        # Edit covers every tool that changes files, Read every one that reads (as in
        # Claude Code), bare or with a specifier: the "allow always" rule a Write's
        # approval offers is ``Edit``, and it must cover the Write it was offered on.
        return (name == "Edit" and tool in EDIT_TOOLS) or (name == "Read" and tool in READ_TOOLS)

    def matches(
        self, call: CallFacts, segment: str | None = None, *, by_name: bool = False
    ) -> bool:
        """Whether the rule applies to ``call`` (for Bash: to ``segment`` of its command
        line when given, else to the whole line). ``by_name``: a path rule also matches
        the paths as the call names them (``CallFacts.named``; for deny and ask rules)."""
        if not self.covers_tool(call.tool):
            return False
        spec = self.specifier
        if spec is None:
            return True
        if call.tool == "Bash":
            return _text_matches(spec, segment if segment is not None else call.command)
        if call.tool in PATH_TOOLS:
            return self._path_matches(call, by_name)
        if call.tool == "Task":
            value = call.input.get("subagent_type") or "general-purpose"
            return _text_matches(spec, str(value))
        if call.tool == "Skill":
            return _text_matches(spec, str(call.input.get("name") or ""))
        if spec.startswith("domain:"):
            host = url_host(call.input.get("url"))
            return bool(host) and fnmatch.fnmatchcase(host, spec[7:].strip().lower())
        return False

    def names_domain(self) -> bool:
        """Whether the rule names a domain (``WebFetch(domain:localhost)``,
        ``domain:*.corp.example``), not every one (``domain:*``): what allows a host with
        private addresses without asking."""
        spec = self.specifier or ""
        return spec.startswith("domain:") and spec[7:].strip() not in ("", "*")

    def _path_matches(self, call: CallFacts, by_name: bool) -> bool:
        if not call.paths or self.specifier is None:
            return False
        base, pattern = self._pattern(call)
        candidates = (*call.paths, *call.named) if by_name else call.paths
        for path, is_dir in candidates:
            relative = _relative(path, base)
            if relative is not None and pattern.matches(relative, is_dir=is_dir):
                return True
        return False

    def _pattern(self, call: CallFacts) -> tuple[Path, PathPattern]:
        spec = self.specifier or ""
        if spec.startswith("//"):
            return Path("/"), _compiled(spec[1:])
        if spec == "~" or spec.startswith("~/"):
            return _real(call.home), _compiled("/" + spec[2:])
        if spec.startswith("/"):
            return _real(self.base or call.working_directory), _compiled(spec)
        if spec in (".", "./"):
            return call.working_directory, _compiled("/")
        if spec.startswith("./"):
            return call.working_directory, _compiled(spec[1:])
        return call.working_directory, _compiled(spec)


_PATTERNS: dict[str, PathPattern] = {}


def _compiled(text: str) -> PathPattern:
    found = _PATTERNS.get(text)
    if found is None:
        if len(_PATTERNS) > 4096:
            _PATTERNS.clear()
        found = _PATTERNS[text] = compile_pattern(text)
    return found


def _real(path: Path) -> Path:
    return Path(os.path.realpath(os.path.expanduser(path)))


def _relative(path: Path, base: Path) -> str | None:
    if base == Path("/"):
        return path.as_posix().lstrip("/")
    try:
        relative = path.relative_to(base)
    except ValueError:
        return None
    text = relative.as_posix()
    return "" if text == "." else text


def _text_matches(spec: str, text: str) -> bool:
    """A Bash (or agent, skill name) specifier against one command: exact, legacy prefix
    ``cmd:*``, or ``*`` wildcards (a single trailing `` *`` is optional)."""
    spec = " ".join(spec.split())
    text = " ".join(text.split())
    if spec in ("", "*"):
        return True
    if spec.endswith(":*"):
        prefix = spec[:-2].rstrip()
        return text == prefix or text.startswith(prefix + " ")
    if "*" not in spec:
        return text == spec
    if spec.endswith(" *") and spec.count("*") == 1:
        prefix = spec[:-2]
        return text == prefix or text.startswith(prefix + " ")
    regex = ".*".join(re.escape(part) for part in spec.split("*"))
    return re.fullmatch(regex, text, re.DOTALL) is not None


def parse_rule(
    text: str, behavior: Behavior, *, source: str = "", base: Path | None = None
) -> Rule:
    """Read one rule (see the module docstring). Raises :class:`RuleSyntaxError`."""
    if not isinstance(text, str) or not text.strip():
        raise RuleSyntaxError(f"a {behavior} rule is empty; write a tool name like Bash")
    found = _RULE.match(text)
    if found is None:
        raise RuleSyntaxError(
            f"cannot read the {behavior} rule {text!r}: write Tool or Tool(specifier), "
            "e.g. Bash(git push:*) or Edit(src/**)"
        )
    tool = ALIASES.get(found.group(1), found.group(1))
    spec = found.group(2)
    if spec is not None:
        spec = spec.strip()
        if spec in ("", "*"):
            spec = None
    return Rule(text.strip(), tool, spec, behavior, source, base)


class RuleSet:
    """Rules of every behavior, in the order they apply: deny, then ask, then allow."""

    def __init__(self, rules: Iterable[Rule] = ()) -> None:
        self.rules: tuple[Rule, ...] = tuple(rules)

    def __iter__(self) -> Any:
        return iter(self.rules)

    def __len__(self) -> int:
        return len(self.rules)

    def plus(self, more: Iterable[Rule]) -> RuleSet:
        return RuleSet([*self.rules, *more])

    def _of(self, behavior: Behavior, tool: str) -> list[Rule]:
        return [r for r in self.rules if r.behavior == behavior and r.covers_tool(tool)]

    def first(self, behavior: Literal["deny", "ask"], call: CallFacts) -> Rule | None:
        """The first ``deny``/``ask`` rule that applies: to the call, or for Bash to its
        whole command line or any command in it."""
        rules = self._of(behavior, call.tool)
        if not rules:
            return None
        texts: Sequence[str | None] = [None]
        if call.tool == "Bash":
            texts = [call.command, *split(call.command).texts()]
        for rule in rules:
            if any(rule.matches(call, t, by_name=True) for t in texts):
                return rule
        return None

    def naming_domain(self, call: CallFacts) -> Rule | None:
        """The allow rule that names the call's domain (:meth:`Rule.names_domain`), or None."""
        return next(
            (r for r in self._of("allow", call.tool) if r.names_domain() and r.matches(call)),
            None,
        )

    def allowing(self, call: CallFacts) -> Rule | None:
        """The allow rule that allows the call (for Bash: one that allows every command
        of the line), or None."""
        rules = self._of("allow", call.tool)
        if not rules:
            return None
        if call.tool != "Bash":
            return next((r for r in rules if r.matches(call)), None)
        whole = " ".join(call.command.split())
        exact = next((r for r in rules if r.specifier is not None and r.specifier == whole), None)
        if exact is not None:
            return exact
        bare = next((r for r in rules if r.specifier is None), None)
        if bare is not None:
            return bare
        found = split(call.command)
        if found.uncertain is not None or not found.commands:
            return None
        chosen: Rule | None = None
        for command in found.commands:
            segment = command.text
            candidates = [r for r in rules if r.matches(call, segment)]
            if command.substitution:  # it runs more than it says: exact rules only
                candidates = [r for r in candidates if r.specifier == segment]
            if not candidates:
                return None
            chosen = chosen or candidates[0]
        return chosen


def url_host(url: object) -> str:
    """The host of a URL (lower case, no trailing dot), or ``""``."""
    try:
        host = urlsplit(str(url or "")).hostname or ""
    except ValueError:
        return ""
    return host.rstrip(".").lower()


def suggest_rule(tool: str, tool_input: Mapping[str, Any]) -> str:
    """The rule an "allow always" answer adds for this call: for Bash the command's first
    word and its subcommand (``Bash(git push:*)``), for file edits ``Edit`` (every edit
    for the rest of the session, as Claude Code offers), else the tool name."""
    if tool == "Bash":
        command = str(tool_input.get("command") or "")
        found = split(command)
        only = found.commands[0] if len(found.commands) == 1 else None
        if found.uncertain or only is None or only.substitution or only.text != only.bare:
            return f"Bash({' '.join(command.split())})"
        words = only.text.split(" ")
        keep = words[:1]
        if len(words) > 1 and re.fullmatch(r"[A-Za-z][A-Za-z0-9-]*", words[1]):
            keep = words[:2]
        return f"Bash({' '.join(keep)}:*)"
    if tool in EDIT_TOOLS:
        return "Edit"
    if tool in ("WebFetch", "Browser") and url_host(tool_input.get("url")):
        return f"{tool}(domain:{url_host(tool_input.get('url'))})"
    return tool
