"""Reading ``settings.json``: the ``guardrails`` and ``hooks`` keys.

The files are read in this order:

- ``~/.claude/settings.json`` — Claude Code's user settings (``$CLAUDE_CONFIG_DIR`` when
  set), read as a home-level file;
- ``<home>/settings.json`` — ``home`` is Tron's home directory (``Settings.home``,
  ``~/.tron`` by default), so this is ``~/.tron/settings.json`` (after Claude Code's:
  ours win);
- ``<working directory>/.claude/settings.json`` and ``.claude/settings.local.json`` —
  Claude Code's project files, read unchanged (their hooks work here as they do there);
- ``<working directory>/.tron/settings.json`` — the project's own file (last: ours win).

**Folder trust** (:mod:`tron_server.trust`): the project files act only once the user
trusts the working directory. Until then their hooks are not registered and their
``guardrails`` may only restrict (``deniedBashPatterns`` apply; ``enabled``,
``allowedWritePaths``, ``disabledBashRules`` and ``protectSettingsFiles`` are ignored).
The home-level files always act. A project file that is the same file as a home-level
one (a session in the home folder itself) is read once, as the home-level file.

Precedence: user hooks from every file are kept (run in file order for the same event).
For ``guardrails``, a key set in a later file replaces the earlier value, except the lists
(``allowedWritePaths``, ``deniedBashPatterns``, ``disabledBashRules``), which are
concatenated. Other keys are ignored here, so a Claude Code settings file can be reused as
it is; ``permissions`` is read by :mod:`tron_server.interaction.settings` from the same files.

A file that is not valid JSON, or a ``hooks``/``guardrails`` value of the wrong shape,
raises :class:`HookSettingsError` naming the file and the problem: a user's safety hook (or
an untrusted folder's deny rule) must not be dropped silently. (An untrusted folder's
``hooks`` are not read at all.)
"""

from __future__ import annotations

import functools
import json
import logging
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from ..trust import TrustStore, claude_user_dir
from .base import HOOK_EVENTS, HookEvent, OnError

__all__ = [
    "CommandHookSpec",
    "GuardrailSettings",
    "HookSettingsError",
    "LoadedSettings",
    "folder_trusted",
    "load_settings",
    "read_settings_json",
    "settings_paths",
    "settings_stamp",
]

logger = logging.getLogger("tron_server.hooks")

DEFAULT_COMMAND_TIMEOUT = 60.0


class HookSettingsError(ValueError):
    """A settings.json file cannot be used; the message says which file and what to fix."""


@dataclass(frozen=True)
class CommandHookSpec:
    """One ``{"type": "command", ...}`` entry of a settings file."""

    event: HookEvent
    command: str
    matcher: str | None
    timeout: float
    on_error: OnError
    scope: Literal["home", "project"]
    source: Path


@dataclass(frozen=True)
class GuardrailSettings:
    """The ``guardrails`` key, merged over both files."""

    enabled: bool = True
    allowed_write_paths: tuple[str, ...] = ()
    denied_bash_patterns: tuple[str, ...] = ()
    disabled_bash_rules: tuple[str, ...] = ()
    protect_settings_files: bool = True


@dataclass(frozen=True)
class LoadedSettings:
    """What :func:`load_settings` found."""

    guardrails: GuardrailSettings = GuardrailSettings()
    hooks: tuple[CommandHookSpec, ...] = ()
    files: tuple[Path, ...] = field(default=())
    #: Whether the project files acted (the folder is trusted).
    trusted: bool = True


Scope = Literal["home", "project"]


def _candidates(working_directory: Path, home: Path) -> list[tuple[Scope, Path]]:
    """Every settings file that may be read, in reading order, none left out."""
    wd = working_directory.expanduser()
    return [
        ("home", claude_user_dir() / "settings.json"),
        ("home", home.expanduser() / "settings.json"),
        ("project", wd / ".claude" / "settings.json"),
        ("project", wd / ".claude" / "settings.local.json"),
        ("project", wd / ".tron" / "settings.json"),
    ]


def settings_paths(working_directory: Path, home: Path) -> list[tuple[Scope, Path]]:
    """The settings files in the order they are read: Claude Code's user file, the home's,
    Claude Code's project files, then the project's ``.tron/settings.json``. A project
    path that is the same file as a home-level one is left out (it is read as home)."""
    candidates = _candidates(working_directory, home)
    seen = {os.path.realpath(p) for scope, p in candidates if scope == "home"}
    return [(s, p) for s, p in candidates if s == "home" or os.path.realpath(p) not in seen]


def folder_trusted(working_directory: Path, home: Path) -> bool:
    """Whether the user trusts ``working_directory``'s own configuration
    (:class:`~tron_server.trust.TrustStore` of ``home``)."""
    return TrustStore(home).is_trusted(working_directory) is not None


def settings_stamp(working_directory: Path, home: Path) -> tuple[Any, ...]:
    """What changes when any settings file of ``working_directory`` is created, edited,
    replaced or removed, or when the folder's trust changes (cheap: one ``stat`` per
    file), so a long-running server can tell when to read them again."""
    # Every candidate, without settings_paths' dedup (a project file that is a home
    # file): stamping one file twice still tells every change, and skipping the
    # realpath calls makes this a third of the cost (it runs on the event loop, several
    # times per agent run). The candidates' names are made once per folder, home and
    # environment (what _candidates reads), and stat'ed as strings: half the cost again.
    env = (os.environ.get("HOME"), os.environ.get("CLAUDE_CONFIG_DIR"))
    home_text = str(home)
    stamp: list[Any] = [_trust_store(home_text, env[0]).is_trusted(working_directory)]
    for path in _candidate_names(str(working_directory), home_text, env):
        try:
            st = os.stat(path)
        except OSError:
            stamp.append(None)
        else:
            stamp.append((st.st_ino, st.st_mtime_ns, st.st_size))
    return tuple(stamp)


@functools.lru_cache(maxsize=64)
def _trust_store(home: str, env_home: str | None) -> TrustStore:
    """A TrustStore of ``home`` (it reads its file at each look-up: only making one,
    a user-folder expansion and paths, is saved); ``env_home`` (``HOME``, which the
    expansion reads) is part of the cache's key."""
    return TrustStore(home)


@functools.lru_cache(maxsize=256)
def _candidate_names(
    working_directory: str, home: str, env: tuple[str | None, str | None]
) -> tuple[str, ...]:
    """:func:`_candidates`' paths as strings; ``env`` (``HOME``, ``CLAUDE_CONFIG_DIR``: what
    they depend on besides the arguments) is part of the cache's key."""
    return tuple(str(p) for _scope, p in _candidates(Path(working_directory), Path(home)))


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise HookSettingsError(f"cannot read {path}: {exc}") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HookSettingsError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "fix or remove the file"
        ) from None
    if not isinstance(data, dict):
        raise HookSettingsError(f"{path} must hold a JSON object, got {type(data).__name__}")
    return data


def read_settings_json(path: Path) -> dict[str, Any] | None:
    """A settings file's object (None when the file does not exist); raises
    :class:`HookSettingsError` for one that cannot be read or is not a JSON object."""
    return _read_json(path)


def _str_list(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise HookSettingsError(f"{where} must be a list of strings")
    return tuple(value)


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise HookSettingsError(f"{where} must be true or false")
    return value


def _merge_guardrails(
    base: GuardrailSettings, raw: Any, path: Path, *, trusted: bool = True
) -> GuardrailSettings:
    """``base`` with a file's ``guardrails`` merged in; an untrusted file's only where
    they restrict (its ``deniedBashPatterns``)."""
    if raw is None:
        return base
    if not isinstance(raw, dict):
        raise HookSettingsError(f"{path}: 'guardrails' must be an object")
    known = {
        "enabled",
        "allowedWritePaths",
        "deniedBashPatterns",
        "disabledBashRules",
        "protectSettingsFiles",
    }
    for key in raw:
        if key not in known:
            raise HookSettingsError(
                f"{path}: unknown key guardrails.{key}; expected one of {sorted(known)}"
            )
    merged = _merged(base, raw, path)
    if trusted:
        return merged
    return replace(base, denied_bash_patterns=merged.denied_bash_patterns)


def _merged(base: GuardrailSettings, raw: dict[str, Any], path: Path) -> GuardrailSettings:
    return GuardrailSettings(
        enabled=_bool(raw["enabled"], f"{path}: guardrails.enabled")
        if "enabled" in raw
        else base.enabled,
        allowed_write_paths=base.allowed_write_paths
        + _str_list(raw.get("allowedWritePaths"), f"{path}: guardrails.allowedWritePaths"),
        denied_bash_patterns=base.denied_bash_patterns
        + _str_list(raw.get("deniedBashPatterns"), f"{path}: guardrails.deniedBashPatterns"),
        disabled_bash_rules=base.disabled_bash_rules
        + _str_list(raw.get("disabledBashRules"), f"{path}: guardrails.disabledBashRules"),
        protect_settings_files=_bool(
            raw["protectSettingsFiles"], f"{path}: guardrails.protectSettingsFiles"
        )
        if "protectSettingsFiles" in raw
        else base.protect_settings_files,
    )


def _parse_hooks(raw: Any, path: Path, scope: Literal["home", "project"]) -> list[CommandHookSpec]:
    if raw is None:
        return []
    if not isinstance(raw, dict):
        raise HookSettingsError(
            f'{path}: \'hooks\' must be an object like {{"PreToolUse": [{{"matcher": "Bash", '
            '"hooks": [{"type": "command", "command": "./check.sh"}]}]}'
        )
    specs: list[CommandHookSpec] = []
    for event, groups in raw.items():
        if event not in HOOK_EVENTS:
            logger.warning(
                "%s: ignoring hooks for unknown event %r (known: %s)",
                path,
                event,
                ", ".join(sorted(HOOK_EVENTS)),
            )
            continue
        if not isinstance(groups, list):
            raise HookSettingsError(f"{path}: hooks.{event} must be a list of matcher groups")
        for i, group in enumerate(groups):
            where = f"{path}: hooks.{event}[{i}]"
            if not isinstance(group, dict):
                raise HookSettingsError(f"{where} must be an object with 'matcher' and 'hooks'")
            matcher = group.get("matcher")
            if matcher is not None and not isinstance(matcher, str):
                raise HookSettingsError(f"{where}.matcher must be a string")
            entries = group.get("hooks")
            if not isinstance(entries, list):
                raise HookSettingsError(f"{where}.hooks must be a list")
            for j, entry in enumerate(entries):
                spec = _parse_entry(entry, f"{where}.hooks[{j}]", event, matcher, scope, path)
                if spec is not None:
                    specs.append(spec)
    return specs


def _parse_entry(
    entry: Any,
    where: str,
    event: HookEvent,
    matcher: str | None,
    scope: Literal["home", "project"],
    path: Path,
) -> CommandHookSpec | None:
    if not isinstance(entry, dict):
        raise HookSettingsError(f"{where} must be an object")
    kind = entry.get("type", "command")
    if kind != "command":
        logger.warning("%s: hook type %r is not supported (only 'command'); skipped", where, kind)
        return None
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        raise HookSettingsError(f"{where}.command must be a non-empty string")
    timeout = entry.get("timeout", DEFAULT_COMMAND_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise HookSettingsError(f"{where}.timeout must be a positive number of seconds")
    on_error = entry.get("onError", "allow")
    if on_error not in ("allow", "block"):
        raise HookSettingsError(f"{where}.onError must be 'allow' or 'block'")
    return CommandHookSpec(
        event=event,
        command=command,
        matcher=matcher,
        timeout=float(timeout),
        on_error=on_error,
        scope=scope,
        source=path,
    )


def load_settings(
    working_directory: Path, home: Path, *, trusted: bool | None = None
) -> LoadedSettings:
    """Read and merge the settings files (missing files are fine). ``trusted``: whether
    the project files may act (None: as recorded in ``home``'s trust store)."""
    if trusted is None:
        trusted = folder_trusted(working_directory, home)
    guardrails = GuardrailSettings()
    hooks: list[CommandHookSpec] = []
    files: list[Path] = []
    for scope, path in settings_paths(working_directory, home):
        data = _read_json(path)
        if data is None:
            continue
        files.append(path)
        acts = trusted or scope == "home"
        guardrails = _merge_guardrails(guardrails, data.get("guardrails"), path, trusted=acts)
        if acts:  # an untrusted folder's hooks are not even read: they cannot act
            hooks.extend(_parse_hooks(data.get("hooks"), path, scope))
    return LoadedSettings(
        guardrails=guardrails, hooks=tuple(hooks), files=tuple(files), trusted=trusted
    )
