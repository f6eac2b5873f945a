"""What a folder's own configuration defines: what trusting it would let act.

The user is asked to trust a folder (:mod:`tron_server.trust`) with this list in front of
them, and ``trust.get`` / ``session.create`` answer it as ``defines``::

    {"hooks": 3, "allowRules": 2, "defaultMode": "bypassPermissions",
     "shellCommands": 1, "agents": 1, "mcpServers": 0}

- ``hooks``: hook commands in the folder's settings files (``.claude/settings.json``,
  ``.claude/settings.local.json``, ``.tron/settings.json``), every event;
- ``allowRules``: their ``permissions.allow`` rules;
- ``defaultMode``: their ``permissions.defaultMode`` as written (the last file's), or None;
- ``shellCommands``: command files (``.claude/commands``, ``.tron/commands``) whose body
  runs shell commands (``!`…` ``);
- ``agents``: agent definitions (``.claude/agents``, ``.tron/agents``) that can be used;
- ``mcpServers``: MCP servers the folder defines (``mcpServers`` of its ``.mcp.json``, of
  a parent's, and of its ``.tron/settings.json``:
  :func:`~tron_server.mcp.config.project_servers`).

Counting never fails: a file that cannot be read counts for nothing here (loading it for a
session reports its problem).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..agent.subagents.definitions import AgentFileError, agent_dirs, parse_agent_file
from ..hooks.settings import settings_paths
from ..mcp.config import project_servers
from ..trust import claude_user_dir

__all__ = ["SHELL_EXPANSION", "FolderDefines", "folder_defines"]

#: A shell command in a command file's body: ``!`git status` ``.
SHELL_EXPANSION = re.compile(r"!`([^`\n]+)`")

_MAX_FILE_BYTES = 256 * 1024


@dataclass(frozen=True)
class FolderDefines:
    """Counts of what a folder's own configuration defines (see the module docstring)."""

    hooks: int = 0
    allow_rules: int = 0
    default_mode: str | None = None
    shell_commands: int = 0
    agents: int = 0
    mcp_servers: int = 0

    def __bool__(self) -> bool:
        """Whether it defines anything that trust would let act."""
        return bool(
            self.hooks
            or self.allow_rules
            or self.default_mode is not None
            or self.shell_commands
            or self.agents
            or self.mcp_servers
        )

    def to_json(self) -> dict[str, Any]:
        """The protocol's ``defines`` object."""
        return {
            "hooks": self.hooks,
            "allowRules": self.allow_rules,
            "defaultMode": self.default_mode,
            "shellCommands": self.shell_commands,
            "agents": self.agents,
            "mcpServers": self.mcp_servers,
        }


def _json_object(path: Path) -> dict[str, Any] | None:
    try:
        with path.open("rb") as f:
            raw = f.read(_MAX_FILE_BYTES + 1)
        data = json.loads(raw) if len(raw) <= _MAX_FILE_BYTES and raw.strip() else None
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _hook_count(raw: Any) -> int:
    if not isinstance(raw, dict):
        return 0
    count = 0
    for groups in raw.values():
        for group in groups if isinstance(groups, list) else ():
            entries = group.get("hooks") if isinstance(group, dict) else None
            count += (
                sum(1 for e in entries if isinstance(e, dict)) if isinstance(entries, list) else 0
            )
    return count


def _home_dirs(home: Path) -> set[str]:
    """Real paths of the home-level folders: a session in the home folder itself must not
    count the user's own files as the folder's."""
    user = claude_user_dir()
    return {
        os.path.realpath(p)
        for p in (user / "commands", user / "agents", home / "commands", home / "agents")
    }


def _markdown(folder: Path, recursive: bool) -> list[Path]:
    try:
        found = folder.rglob("*.md") if recursive else folder.glob("*.md")
        return sorted(p for p in found if p.is_file())
    except OSError:
        return []


def _runs_shell(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            text = f.read(_MAX_FILE_BYTES).decode("utf-8", "replace")
    except OSError:
        return False
    return SHELL_EXPANSION.search(text) is not None


def folder_defines(working_directory: Path, home: Path) -> FolderDefines:
    """What ``working_directory``'s own configuration defines (home-level files excluded)."""
    wd = working_directory.expanduser()
    hooks = allow = 0
    mode: str | None = None
    for where, path in settings_paths(wd, home):
        if where != "project":
            continue
        data = _json_object(path)
        if data is None:
            continue
        hooks += _hook_count(data.get("hooks"))
        permissions = data.get("permissions")
        if isinstance(permissions, dict):
            rules = permissions.get("allow")
            allow += sum(1 for r in rules if isinstance(r, str)) if isinstance(rules, list) else 0
            written = permissions.get("defaultMode")
            mode = str(written) if written is not None else mode
    skip = _home_dirs(home.expanduser())
    shell = 0
    for folder in (wd / ".claude" / "commands", wd / ".tron" / "commands"):
        if os.path.realpath(folder) not in skip:
            shell += sum(1 for p in _markdown(folder, True) if _runs_shell(p))
    agents = 0
    for scope, folder in agent_dirs(home, wd):
        if scope == "home" or os.path.realpath(folder) in skip:
            continue
        for path in _markdown(folder, False):
            try:
                parse_agent_file(path, scope)
            except (AgentFileError, OSError):
                continue
            agents += 1
    return FolderDefines(
        hooks=hooks,
        allow_rules=allow,
        default_mode=mode,
        shell_commands=shell,
        agents=agents,
        mcp_servers=len(project_servers(wd, home.expanduser())),
    )
