"""Whether a configured server may run here: trust, the user's approval, disabling.

A project server (``.mcp.json``, ``.tron/settings.json``) is the folder speaking, so it
acts only when

1. the folder is trusted (:func:`folder_trusted`), and
2. the user approved that server for this folder.

Approvals are Claude Code's keys, read from ``<home>/settings.json``,
``.claude/settings.json``, ``.claude/settings.local.json``, ``.tron/settings.json`` and
``~/.claude.json``'s ``projects[<folder>]``: ``enableAllProjectMcpServers`` (all of them),
``enabledMcpjsonServers`` (these), ``disabledMcpjsonServers`` (not these; it wins over the
other two, as in Claude Code). The user's answers given in Tron (``mcp.approve``, ``/mcp
approve``) are remembered in ``<home>/mcp-approvals.json`` per folder (its real path) and
win over the files: they are the latest thing the user said. The same file (and
``projects[<folder>].disabledMcpServers`` of ``~/.claude.json``, Claude Code's ``/mcp``
toggle) disables a server of any scope in that folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..trust import TrustStore
from .config import ConfigError, ConfigFiles, ServerConfig, project_entry, read_json

__all__ = ["Approvals", "Decision", "approval_file", "folder_trusted", "remember"]

Decision = Literal["approved", "rejected", "pending"]

_lock = threading.Lock()


def folder_trusted(working_directory: Path, home: Path) -> bool:
    """Whether the user trusts the folder's own configuration: the folder itself or an
    ancestor is trusted in ``<home>/trust.json`` (:class:`~tron_server.trust.TrustStore`,
    by real path). The one place MCP asks about folder trust: until it says yes, the
    folder's own servers are not started, listed as usable or offered to the model, and
    its own approval keys (``enableAllProjectMcpServers`` in its settings) do not count."""
    return TrustStore(home).is_trusted(working_directory) is not None


def approval_file(home: Path) -> Path:
    """``<home>/mcp-approvals.json``: the user's answers, by folder."""
    return home / "mcp-approvals.json"


def _folder_key(working_directory: Path) -> str:
    return os.path.realpath(working_directory.expanduser())


def _names(value: Any) -> set[str]:
    if isinstance(value, list):
        return {v for v in value if isinstance(v, str)}
    return set()


@dataclass
class Approvals:
    """What the files and the user's answers say for one folder."""

    enable_all: bool = False
    enabled: set[str] = field(default_factory=set)
    disabled: set[str] = field(default_factory=set)
    #: The user's answers in Tron (win over the files).
    approved_here: set[str] = field(default_factory=set)
    rejected_here: set[str] = field(default_factory=set)
    #: Servers of any scope switched off for this folder.
    switched_off: set[str] = field(default_factory=set)

    def decision(self, server: ServerConfig) -> Decision:
        """A project server's approval (the others are always approved)."""
        if not server.needs_approval:
            return "approved"
        name = server.name
        if name in self.rejected_here:
            return "rejected"
        if name in self.approved_here:
            return "approved"
        if name in self.disabled:
            return "rejected"
        if self.enable_all or name in self.enabled:
            return "approved"
        return "pending"

    def is_switched_off(self, server: ServerConfig) -> bool:
        """A non-project server the user turned off here."""
        return not server.needs_approval and (
            server.name in self.switched_off or server.name in self.rejected_here
        )

    @classmethod
    def load(cls, working_directory: Path, files: ConfigFiles) -> tuple[Approvals, list[str]]:
        """The folder's approvals, and the errors of files that could not be read."""
        wd = working_directory.expanduser()
        out = cls()
        errors: list[str] = []
        for path in (
            files.home / "settings.json",
            wd / ".claude" / "settings.json",
            wd / ".claude" / "settings.local.json",
            wd / ".tron" / "settings.json",
        ):
            try:
                data = read_json(path)
            except ConfigError as exc:
                errors.append(str(exc))
                continue
            if data is not None:
                out._absorb(data)
        if files.claude_json is not None:
            try:
                entry = project_entry(read_json(files.claude_json), wd)
            except ConfigError as exc:
                errors.append(str(exc))
                entry = {}
            out._absorb(entry)
            out.switched_off |= _names(entry.get("disabledMcpServers"))
        try:
            stored = read_json(approval_file(files.home)) or {}
        except ConfigError as exc:
            errors.append(str(exc))
            stored = {}
        folders = stored.get("folders")
        mine = folders.get(_folder_key(wd)) if isinstance(folders, dict) else None
        if isinstance(mine, dict):
            out.approved_here = _names(mine.get("approved"))
            out.rejected_here = _names(mine.get("rejected"))
        return out, errors

    def _absorb(self, data: Mapping[str, Any]) -> None:
        if data.get("enableAllProjectMcpServers") is True:
            self.enable_all = True
        self.enabled |= _names(data.get("enabledMcpjsonServers"))
        self.disabled |= _names(data.get("disabledMcpjsonServers"))


def remember(home: Path, working_directory: Path, server: str, approved: bool) -> None:
    """Record the user's answer for ``server`` in this folder (atomically, mode 0600).
    Raises :class:`ConfigError` when the file exists but is not ours to read."""
    path = approval_file(home)
    key = _folder_key(working_directory)
    with _lock:
        data = read_json(path, fresh=True) or {}
        folders = data.setdefault("folders", {})
        if not isinstance(folders, dict):
            raise ConfigError(f"{path}: 'folders' must be an object; fix or delete the file")
        entry = folders.setdefault(key, {})
        approved_set = _names(entry.get("approved"))
        rejected_set = _names(entry.get("rejected"))
        (approved_set if approved else rejected_set).add(server)
        (rejected_set if approved else approved_set).discard(server)
        folders[key] = {"approved": sorted(approved_set), "rejected": sorted(rejected_set)}
        _write_private(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".mcp-approvals.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
