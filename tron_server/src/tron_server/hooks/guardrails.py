"""Guardrails: the built-in PreToolUse hook that refuses writes outside allowed paths and
clearly destructive shell commands.

What it checks
--------------
- **Write / Edit** (and MultiEdit / NotebookEdit, by their ``file_path``): the path is resolved
  by the same :class:`~tron_server.tools.PathPolicy` the tools write through (relative paths
  from the working directory, symlinks and ``..`` resolved once, physically); it must lie in
  the working directory (or below) or in one of ``guardrails.allowedWritePaths``. A symlink
  inside the working directory that points outside is therefore refused. The settings files
  themselves (:func:`~tron_server.tools.settings_files`: ``<home>/settings.json``,
  ``.tron/settings.json``, ``.claude/settings.json``, ``.claude/settings.local.json``, and
  ``~/.claude/settings.json``), and the record of trusted folders (``<home>/trust.json``),
  are refused too while ``guardrails.protectSettingsFiles`` is true, and so are the files the
  user's hook commands run (:func:`hook_programs`: ``./.tron/check.sh``), so the agent cannot
  switch its own guardrails, hooks or permissions off. A path with a NUL byte is refused.

  This hook gives the model the refusal before the tool runs; the tools enforce the same
  policy again at the moment they write (:func:`path_policy` hands it to them), through the
  folder handle they resolved, so nothing can change between the check and the write.
- **Bash** (``command``): the command is split as bash reads it (:mod:`tron_server.shell`:
  every kind of quote, ``;``, ``&&``, ``||``, ``|``, subshells, groups, ``sudo``/``env``/
  ``timeout``/``nohup`` wrappers, ``sh -c "…"`` and ``eval`` looked into) and each command
  is checked against a short list of rules, each with a name (``DEFAULT_BASH_RULES``):
  recursive ``rm`` of ``/`` or the home directory, ``mkfs``, ``dd`` onto a disk device, a
  redirection onto a disk device, recursive ``chmod``/``chown`` of ``/``, a fork bomb, and
  ``shutdown``/``reboot``/``halt``/``poweroff``. Quoted text is data (``echo "rm -rf /"``
  passes) and ordinary cleanups (``rm -rf ./build``) pass.
  ``guardrails.deniedBashPatterns`` adds regular expressions searched in the raw command.

Configuration (``settings.json``, see :mod:`tron_server.hooks.settings`)::

    {"guardrails": {"enabled": true,
                    "allowedWritePaths": ["/tmp/scratch", "~/notes"],
                    "deniedBashPatterns": ["git\\s+push\\s+(-f|--force)"],
                    "disabledBashRules": ["power"],
                    "protectSettingsFiles": true}}

Guardrails run with the lowest priority, after every other PreToolUse hook, so they judge the
final (possibly modified) input. They are a net against accidents, not a sandbox: a shell
command can still write anywhere the user can.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..paths import PathPolicy, settings_files
from ..shell import split
from ..trust import TRUST_FILE, claude_user_dir
from .base import HookContext, HookDecision, HookEngine
from .settings import GuardrailSettings, HookSettingsError

__all__ = [
    "DEFAULT_BASH_RULES",
    "GUARDRAILS_HOOK_NAME",
    "GUARDRAILS_PRIORITY",
    "BashRule",
    "Guardrails",
    "path_policy",
    "register_guardrails",
]

GUARDRAILS_HOOK_NAME = "guardrails"
GUARDRAILS_PRIORITY = -1_000_000
WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})
BASH_TOOLS = frozenset({"Bash"})

_DISK = re.compile(
    r"^/dev/(sd[a-z]+\d*|hd[a-z]+\d*|vd[a-z]+\d*|xvd[a-z]+\d*|nvme\d+(n\d+)?(p\d+)?"
    r"|mmcblk\d+(p\d+)?|disk\d+(s\d+)?)$"
)
_FORK_BOMB = re.compile(
    r"(?P<f>[\w:]+)\s*\(\s*\)\s*\{\s*(?P=f)\s*\|\s*(?P=f)\s*&\s*\}\s*;\s*(?P=f)"
)
_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "1>", "2>", "1>>", "2>>"})
_ROOT_TARGETS = frozenset({"/", "/*", "/.", "/.."})
_HOME_TARGETS = frozenset({"~", "~/*", "$HOME", "$HOME/*", "${HOME}", "${HOME}/*", "~/."})


@dataclass(frozen=True)
class BashRule:
    """A named check on one simple command (``argv`` after wrappers are removed)."""

    name: str
    description: str
    check: Callable[[list[str]], bool]


def _cmd_name(argv: list[str]) -> str:
    return os.path.basename(argv[0]) if argv else ""


def _flags_and_targets(argv: list[str]) -> tuple[list[str], list[str]]:
    flags: list[str] = []
    targets: list[str] = []
    end_of_flags = False
    for arg in argv[1:]:
        if arg == "--":
            end_of_flags = True
        elif arg.startswith("-") and not end_of_flags and arg != "-":
            flags.append(arg)
        else:
            targets.append(arg)
    return flags, targets


def _recursive(flags: list[str]) -> bool:
    return any(
        f in ("--recursive", "-R", "-r")
        or (not f.startswith("--") and ("r" in f[1:] or "R" in f[1:]))
        for f in flags
    )


def _norm_target(target: str) -> str:
    stripped = target.rstrip("/")
    return stripped if stripped else "/"


def _rm_root_or_home(argv: list[str]) -> bool:
    if _cmd_name(argv) != "rm":
        return False
    flags, targets = _flags_and_targets(argv)
    if "--no-preserve-root" in flags:
        return True
    if not _recursive(flags):
        return False
    normalized = {_norm_target(t) for t in targets} | set(targets)
    return bool(normalized & (_ROOT_TARGETS | _HOME_TARGETS | _home_by_path()))


def _home_by_path() -> frozenset[str]:
    """The user's home written out (``rm -rf /home/me``): it is ``~`` all the same."""
    home = os.path.expanduser("~").rstrip("/")
    if not home or home == "~":
        return frozenset()
    return frozenset({home, home + "/*", home + "/."})


def _mkfs(argv: list[str]) -> bool:
    name = _cmd_name(argv)
    return name == "mkfs" or name.startswith("mkfs.")


def _dd_to_disk(argv: list[str]) -> bool:
    if _cmd_name(argv) != "dd":
        return False
    return any(a.startswith("of=") and _DISK.match(a[3:]) is not None for a in argv[1:])


def _redirect_to_disk(argv: list[str]) -> bool:
    for i, tok in enumerate(argv[:-1]):
        if tok in _REDIRECTS and _DISK.match(argv[i + 1]) is not None:
            return True
    return False


def _chmod_chown_root(argv: list[str]) -> bool:
    if _cmd_name(argv) not in ("chmod", "chown", "chgrp"):
        return False
    flags, targets = _flags_and_targets(argv)
    return _recursive(flags) and any(_norm_target(t) in _ROOT_TARGETS for t in targets)


def _power(argv: list[str]) -> bool:
    name = _cmd_name(argv)
    if name in ("shutdown", "reboot", "halt", "poweroff"):
        return True
    if name == "systemctl":
        return any(a in ("poweroff", "reboot", "halt", "kexec") for a in argv[1:])
    return name in ("init", "telinit") and any(a in ("0", "6") for a in argv[1:])


DEFAULT_BASH_RULES: tuple[BashRule, ...] = (
    BashRule("rm-root", "recursive rm of / or of the home directory", _rm_root_or_home),
    BashRule("mkfs", "formatting a filesystem (mkfs)", _mkfs),
    BashRule("dd-to-disk", "dd writing onto a disk device", _dd_to_disk),
    BashRule("redirect-to-disk", "output redirected onto a disk device", _redirect_to_disk),
    BashRule("chmod-root", "recursive chmod/chown of /", _chmod_chown_root),
    BashRule("power", "shutting down or rebooting the machine", _power),
)
FORK_BOMB_RULE = "fork-bomb"


def simple_commands(command: str) -> list[list[str]]:
    """The simple commands of a shell line as argv lists, each followed by its
    redirections (``[">", "/dev/sda"]``): :func:`tron_server.shell.split`'s commands, so
    wrappers (``sudo``, ``env``, ``timeout``…), ``sh -c "…"``, ``eval``, groups, subshells
    and substitutions are looked into, and quoting is bash's own (``$'…'`` too)."""
    return [[*c.argv, *(t for r in c.redirects for t in r)] for c in split(command).commands]


class Guardrails:
    """The checks, configured from :class:`GuardrailSettings`; callable as a hook."""

    def __init__(
        self,
        settings: GuardrailSettings,
        *,
        working_directory: Path,
        home: Path,
        hook_commands: Iterable[str] = (),
    ) -> None:
        self.settings = settings
        self.working_directory = working_directory.expanduser().resolve()
        self.home = home
        roots = [self.working_directory]
        for raw in settings.allowed_write_paths:
            p = Path(raw).expanduser()
            roots.append((p if p.is_absolute() else self.working_directory / p).resolve())
        self.allowed_roots: tuple[Path, ...] = tuple(roots)
        protected = (
            (
                *settings_files(working_directory, home),
                claude_user_dir() / "settings.json",
                home.expanduser() / TRUST_FILE,
                *hook_programs(hook_commands, self.working_directory),
            )
            if settings.protect_settings_files
            else ()
        )
        # Where Write/Edit may write: the policy this hook checks and the tools enforce.
        self.paths = PathPolicy(self.working_directory, tuple(roots), tuple(protected))
        unknown = (
            set(settings.disabled_bash_rules)
            - {r.name for r in DEFAULT_BASH_RULES}
            - {FORK_BOMB_RULE}
        )
        if unknown:
            names = ", ".join(sorted({r.name for r in DEFAULT_BASH_RULES} | {FORK_BOMB_RULE}))
            raise HookSettingsError(
                f"guardrails.disabledBashRules names unknown rules {sorted(unknown)}; "
                f"known rules: {names}"
            )
        self.rules = tuple(
            r for r in DEFAULT_BASH_RULES if r.name not in settings.disabled_bash_rules
        )
        self.check_fork_bomb = FORK_BOMB_RULE not in settings.disabled_bash_rules
        try:
            self.patterns = tuple(re.compile(p) for p in settings.denied_bash_patterns)
        except re.error as exc:
            raise HookSettingsError(
                f"guardrails.deniedBashPatterns holds an invalid regular expression: {exc}"
            ) from None

    # -- checks -----------------------------------------------------------------------

    def check_write(self, file_path: str, working_directory: Path | None = None) -> str | None:
        """Why writing ``file_path`` is refused, or None when it is allowed. Relative paths
        are taken from ``working_directory`` (the session's; default: the guardrails')."""
        policy = (
            self.paths if working_directory is None else self.paths.for_directory(working_directory)
        )
        reason = policy.refusal(file_path)
        if reason is not None and not reason.startswith("Guardrails refused"):
            reason = f"Guardrails refused writing {file_path!r}: {reason}"
        return reason

    def check_bash(self, command: str) -> str | None:
        """Why ``command`` is refused, or None when it is allowed."""
        how = (
            'To allow it, run it yourself, or list the rule in "guardrails": '
            '{"disabledBashRules": [...]} in .tron/settings.json.'
        )
        if self.check_fork_bomb and _FORK_BOMB.search(command):
            return (
                f"Guardrails refused this command: it is a fork bomb (rule {FORK_BOMB_RULE!r}). "
                + how
            )
        for argv in simple_commands(command):
            for rule in self.rules:
                if rule.check(argv):
                    shown = " ".join(argv)
                    return (
                        f"Guardrails refused this command: `{shown}` is {rule.description} "
                        f"(rule {rule.name!r}). {how}"
                    )
        for pattern in self.patterns:
            if pattern.search(command):
                return (
                    f"Guardrails refused this command: it matches the denied pattern "
                    f"{pattern.pattern!r} from guardrails.deniedBashPatterns in settings.json. "
                    "Remove the pattern there to allow it."
                )
        return None

    def check(
        self, tool_name: str, tool_input: dict[str, object], working_directory: Path | None = None
    ) -> str | None:
        """Why this tool call is refused, or None."""
        if tool_name in WRITE_TOOLS:
            for key in ("file_path", "notebook_path"):
                value = tool_input.get(key)
                if isinstance(value, str) and value:
                    return self.check_write(value, working_directory)
            return None
        if tool_name in BASH_TOOLS:
            command = tool_input.get("command")
            if isinstance(command, str):
                return self.check_bash(command)
        return None

    async def __call__(self, ctx: HookContext) -> HookDecision | None:
        if not self.settings.enabled or ctx.tool_name is None or ctx.tool_input is None:
            return None
        reason = self.check(ctx.tool_name, ctx.tool_input, ctx.working_directory)
        if reason is None:
            return None
        return HookDecision(action="block", reason=reason)


#: Programs that run the script named after their options (``python3 .tron/check.py``).
_INTERPRETERS = frozenset(
    {"python", "python3", "bash", "sh", "zsh", "dash", "node", "deno", "bun", "ruby", "perl"}
)


def hook_programs(commands: Iterable[str], working_directory: Path) -> tuple[Path, ...]:
    """The files the hook commands run, protected like the settings that name them:
    rewriting ``./.tron/check.sh`` switches that hook off as surely as editing
    settings.json. Of each simple command, the program when it is named by a path
    (``./.tron/check.sh``, ``~/bin/x``, ``$TRON_PROJECT_DIR/...``) and, for an
    interpreter, the script it runs (``python3 .tron/hooks/guard.py``), taken from the
    working directory as the hook runs. Other arguments are data (``black src/app.py``
    leaves ``src/app.py`` writable)."""
    found: list[Path] = []
    project = str(working_directory)
    for command in commands:
        for argv in simple_commands(command):
            words = [argv[0]]
            if os.path.basename(argv[0]) in _INTERPRETERS and "-c" not in argv[1:]:
                words += [a for a in argv[1:] if not a.startswith("-")][:1]
            for word in words:
                word = word.replace("${TRON_PROJECT_DIR}", project)
                word = word.replace("$TRON_PROJECT_DIR", project)
                if "/" not in word or "\x00" in word:
                    continue
                path = Path(os.path.expanduser(word))
                path = path if path.is_absolute() else working_directory / path
                try:
                    if path.is_file():
                        found.append(path)
                except OSError:
                    continue
    return tuple(found)


def register_guardrails(
    engine: HookEngine,
    settings: GuardrailSettings,
    *,
    working_directory: Path,
    home: Path,
    tools: Iterable[str] = (),
    hook_commands: Iterable[str] = (),
) -> Guardrails:
    """Register the guardrails hook (lowest priority, fails closed) and return it.
    ``hook_commands``: the user's hook commands, whose programs are protected too."""
    guard = Guardrails(
        settings, working_directory=working_directory, home=home, hook_commands=hook_commands
    )
    matcher = "|".join(sorted(WRITE_TOOLS | BASH_TOOLS | set(tools)))
    engine.register(
        GUARDRAILS_HOOK_NAME,
        "PreToolUse",
        guard,
        priority=GUARDRAILS_PRIORITY,
        matcher=matcher,
        timeout=10.0,
        on_error="block",
    )
    return guard


def path_policy(engine: HookEngine | None, working_directory: Path) -> PathPolicy:
    """The path policy a session's tools enforce: the guardrails' registered in ``engine``
    (write roots and protected files) when they are enabled, else resolution only."""
    guard = engine.get(GUARDRAILS_HOOK_NAME) if engine is not None else None
    if isinstance(guard, Guardrails) and guard.settings.enabled:
        return guard.paths.for_directory(working_directory)
    return PathPolicy(working_directory)
