"""The ``permissions`` key of the settings files, as Claude Code writes it.

Read, in this order (rules of all files apply together; for ``defaultMode`` a later file
wins: ours over Claude Code's, the project's over the home one)::

    ~/.claude/settings.json                   Claude Code's user settings (home-level)
    <home>/settings.json                      (~/.tron/settings.json)
    <project>/.claude/settings.json           Claude Code's project settings
    <project>/.claude/settings.local.json     Claude Code's personal project settings
    <project>/.tron/settings.json

``<project>`` is the session's working directory (the list is
:func:`tron_server.hooks.settings.settings_paths`). The object::

    {"permissions": {"allow": ["Bash(npm run test:*)", "Edit(src/**)"],
                     "ask":   ["Bash(git push:*)"],
                     "deny":  ["Read(./.env)", "Bash(curl:*)"],
                     "defaultMode": "acceptEdits",
                     "additionalDirectories": ["../shared"],
                     "disableBypassPermissionsMode": "disable"}}

**Folder trust**: until the user trusts the working directory (:mod:`tron_server.trust`),
the project files' keys act only where they restrict: their ``deny`` and ``ask`` rules and
``disableBypassPermissionsMode`` apply; their ``allow`` rules, ``defaultMode`` and
``additionalDirectories`` do not. The home-level files always act.

A ``/path`` rule is relative to the project the file belongs to (the working directory
for all of them). A file that is not valid JSON, a rule that cannot be read or a key of the
wrong type raises :class:`PermissionSettingsError` naming the file, trusted or not: a deny
rule must never be dropped silently. Other keys of Claude Code's (``defaultMode`` values we
do not know, ``additionalDirectories`` entries that do not exist) are kept as they are or
ignored.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ..hooks.settings import (
    HookSettingsError,
    folder_trusted,
    read_settings_json,
    settings_paths,
)
from .modes import PermissionMode, is_mode
from .rules import Behavior, Rule, RuleSyntaxError, parse_rule

__all__ = [
    "PermissionSettings",
    "PermissionSettingsError",
    "load_permission_settings",
    "permission_files",
]

_BEHAVIORS: tuple[Behavior, ...] = ("deny", "ask", "allow")


class PermissionSettingsError(HookSettingsError):
    """A settings file's ``permissions`` cannot be used; the message says which and why."""


@dataclass(frozen=True)
class PermissionSettings:
    """Rules of every file, the default mode, and the extra folders acceptEdits covers."""

    rules: tuple[Rule, ...] = ()
    default_mode: PermissionMode | None = None
    additional_directories: tuple[Path, ...] = ()
    disable_bypass: bool = False
    files: tuple[Path, ...] = field(default=())
    #: Whether the project files' allow rules, defaultMode and additionalDirectories
    #: acted (the folder is trusted).
    trusted: bool = True


def permission_files(working_directory: Path, home: Path) -> list[Path]:
    """The files read, in order."""
    return [path for _scope, path in settings_paths(working_directory, home)]


def _strings(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PermissionSettingsError(f"{where} must be a list of strings")
    return cast(list[str], value)


def load_permission_settings(
    working_directory: Path, home: Path, *, trusted: bool | None = None
) -> PermissionSettings:
    """Read every file's ``permissions`` (missing files and keys are fine). ``trusted``:
    whether the project files' widening keys act (None: as recorded in ``home``'s trust
    store)."""
    if trusted is None:
        trusted = folder_trusted(working_directory, home)
    rules: list[Rule] = []
    default_mode: PermissionMode | None = None
    directories: list[Path] = []
    disable_bypass = False
    files: list[Path] = []
    wd = Path(os.path.realpath(working_directory.expanduser()))
    for scope, path in settings_paths(working_directory, home):
        try:
            data = read_settings_json(path)
        except HookSettingsError as exc:
            raise PermissionSettingsError(str(exc)) from None
        if data is None:
            continue
        files.append(path)
        raw = data.get("permissions")
        if raw is None:
            continue
        if not isinstance(raw, dict):
            raise PermissionSettingsError(
                f'{path}: \'permissions\' must be an object like {{"allow": ["Bash(ls:*)"], '
                '"deny": ["Read(./.env)"]}'
            )
        acts = trusted or scope == "home"
        for behavior in _BEHAVIORS:
            for text in _strings(raw.get(behavior), f"{path}: permissions.{behavior}"):
                try:
                    rule = parse_rule(text, behavior, source=str(path), base=wd)
                except RuleSyntaxError as exc:
                    raise PermissionSettingsError(f"{path}: {exc}") from None
                if acts or behavior != "allow":  # deny and ask only restrict
                    rules.append(rule)
        mode = raw.get("defaultMode")
        if mode is not None:
            if not is_mode(mode):
                raise PermissionSettingsError(
                    f"{path}: permissions.defaultMode {mode!r} is not a mode; use one of "
                    "default, acceptEdits, plan, dontAsk, bypassPermissions"
                )
            if acts:
                default_mode = cast(PermissionMode, mode)
        for entry in _strings(
            raw.get("additionalDirectories"), f"{path}: permissions.additionalDirectories"
        ):
            if acts:
                folder = Path(os.path.expanduser(entry))
                directories.append(Path(os.path.realpath(wd / folder)))
        disable = raw.get("disableBypassPermissionsMode")
        if disable == "disable" or disable is True:
            disable_bypass = True
    return PermissionSettings(
        rules=tuple(rules),
        default_mode=default_mode,
        additional_directories=tuple(directories),
        disable_bypass=disable_bypass,
        files=tuple(files),
        trusted=trusted,
    )
