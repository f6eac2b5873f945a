"""Which MCP servers a folder has: Claude Code's files, unchanged, and Tron's own.

Read (a later line wins a name clash, as Claude Code's precedence *local > project > user*,
with Tron's file winning over Claude Code's at the same scope)::

    ~/.claude.json            mcpServers                      scope "user"
    <home>/settings.json      mcpServers                      scope "user"    (~/.tron)
    .mcp.json                 mcpServers                      scope "project" (the folder and
                                                              its parents; the nearest wins)
    .tron/settings.json       mcpServers                      scope "project"
    ~/.claude.json            projects[<folder>].mcpServers   scope "local"
    the session's own         (``session.create`` mcpServers,  scope "session"
                              an editor's through ACP)

A server is ``{"command", "args", "env"}`` (stdio; ``"type": "stdio"`` optional) or
``{"type": "http" | "sse", "url", "headers"}`` (a ``url`` without ``type`` is http).
``${VAR}`` and ``${VAR:-default}`` are expanded in command, args, env, url and headers from
the server's environment; a ``${VAR}`` that is unset and has no default makes that one
server fail with a message naming it (the rest still load). ``$VAR`` is left as written, as
Claude Code leaves it.

Project servers (scope ``project``) act only in a trusted folder and after the user approved
each one (:mod:`.approvals`); the others are the user's own and need neither.
Nothing here imports the MCP SDK: reading configuration costs a few file reads.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "CONFIG_SCOPES",
    "ConfigError",
    "ConfigFiles",
    "Scope",
    "ServerConfig",
    "Transport",
    "expand_vars",
    "load_servers",
    "parse_server",
    "project_servers",
]

Scope = Literal["user", "project", "local", "session"]
Transport = Literal["stdio", "http", "sse"]
CONFIG_SCOPES: tuple[Scope, ...] = ("user", "project", "local", "session")

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-((?:[^{}]|\{[^{}]*\})*))?\}")
_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")


class ConfigError(ValueError):
    """A server (or a whole file) that cannot be used; the message says which and why."""


@dataclass(frozen=True)
class ServerConfig:
    """One configured server, after ``${VAR}`` expansion.

    ``error`` is set (and the rest may be empty) when the entry cannot be used: the server
    is listed as failed with that message instead of being dropped silently."""

    name: str
    scope: Scope
    transport: Transport
    source: str
    """Where it is defined: a file path, or ``session``."""
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    error: str | None = None
    #: The configuration as written (before expansion), for the listing.
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def needs_approval(self) -> bool:
        """Project servers need the folder's trust and the user's approval."""
        return self.scope == "project"

    def fingerprint(self) -> str:
        """A short hash of everything that makes the connection (secrets never leave it):
        two configs with the same fingerprint talk to the same server the same way."""
        data = json.dumps(
            [self.transport, self.command, self.args, self.env, self.url, self.headers],
            sort_keys=True,
        )
        return hashlib.sha256(data.encode()).hexdigest()[:16]

    def describe(self) -> str:
        """``command args`` or the URL, for people (no environment or header values)."""
        if self.transport == "stdio":
            return " ".join([self.command, *self.args]).strip()
        return self.url


@dataclass(frozen=True)
class ConfigFiles:
    """Where configuration is read from (tests point these at temporary folders)."""

    home: Path
    """Tron's home (``~/.tron``): ``settings.json`` there."""
    claude_json: Path | None
    """Claude Code's ``~/.claude.json`` (None: not read)."""


def default_claude_json() -> Path:
    """``$CLAUDE_CONFIG_DIR/.claude.json`` when that is set, else ``~/.claude.json``."""
    base = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(base).expanduser() if base else Path.home()) / ".claude.json"


# -- ${VAR} ------------------------------------------------------------------------------


def expand_vars(text: str, env: Mapping[str, str], where: str) -> str:
    """``${VAR}`` → its value, ``${VAR:-default}`` → its value or ``default`` (expanded in
    turn). Raises :class:`ConfigError` for a ``${VAR}`` that is unset with no default."""

    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        value = env.get(name)
        if value is not None and (value != "" or default is None):
            return value
        if default is not None:
            return expand_vars(default, env, where)
        raise ConfigError(
            f"{where}: the environment variable {name} is not set; set it, or write "
            f"${{{name}:-default}} to give a default"
        )

    return _VAR.sub(one, text)


# -- one server ----------------------------------------------------------------------------


def _strings(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} must be a list of strings")
    return list(value)


def _pairs(value: Any, where: str, env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be an object of strings")
    out: list[tuple[str, str]] = []
    for key, item in value.items():
        if not isinstance(item, str | int | float | bool) or item is None:
            raise ConfigError(f"{where}.{key} must be a string")
        text = item if isinstance(item, str) else json.dumps(item)
        out.append((str(key), expand_vars(text, env, f"{where}.{key}")))
    return tuple(out)


def parse_server(
    name: str, raw: Any, scope: Scope, source: str, env: Mapping[str, str] | None = None
) -> ServerConfig:
    """One ``mcpServers`` entry; never raises: an unusable entry carries ``error``."""
    environ = os.environ if env is None else env
    where = f"{source}: mcpServers.{name}"
    try:
        if not _NAME.match(name):
            raise ConfigError(f"{where}: a server name is 1 to 64 letters, digits, '_', '-' or '.'")
        if not isinstance(raw, dict):
            raise ConfigError(f"{where} must be an object with command or url")
        kind = raw.get("type")
        if kind is None:
            kind = "http" if "url" in raw and "command" not in raw else "stdio"
        if kind == "streamable-http" or kind == "streamableHttp":
            kind = "http"
        if kind == "stdio":
            command = raw.get("command")
            if not isinstance(command, str) or not command.strip():
                raise ConfigError(f"{where}.command must be the program to run")
            return ServerConfig(
                name=name,
                scope=scope,
                transport="stdio",
                source=source,
                command=expand_vars(command, environ, f"{where}.command"),
                args=tuple(
                    expand_vars(a, environ, f"{where}.args")
                    for a in _strings(raw.get("args"), f"{where}.args")
                ),
                env=_pairs(raw.get("env"), f"{where}.env", environ),
                raw=raw,
            )
        if kind in ("http", "sse"):
            url = raw.get("url")
            if not isinstance(url, str) or not url.strip():
                raise ConfigError(f"{where}.url must be the server's URL")
            expanded = expand_vars(url, environ, f"{where}.url")
            if not re.match(r"^https?://", expanded):
                raise ConfigError(f"{where}.url must start with http:// or https://")
            return ServerConfig(
                name=name,
                scope=scope,
                transport="http" if kind == "http" else "sse",
                source=source,
                url=expanded,
                headers=_pairs(raw.get("headers"), f"{where}.headers", environ),
                raw=raw,
            )
        raise ConfigError(
            f"{where}: unknown type {kind!r}; use stdio (command, args, env), http or sse (url)"
        )
    except ConfigError as exc:
        return ServerConfig(
            name=name, scope=scope, transport="stdio", source=source, error=str(exc),
            raw=raw if isinstance(raw, dict) else {},
        )  # fmt: skip


# -- the files -----------------------------------------------------------------------------


#: (path) → (its stat, its object): a file is parsed again only when it changed.
_READ: dict[str, tuple[tuple[int, int, int], dict[str, Any] | None]] = {}


def read_json(path: Path, *, fresh: bool = False) -> dict[str, Any] | None:
    """The JSON object in ``path``; None when the file does not exist. Raises
    :class:`ConfigError` for a file that is not a JSON object. The object is shared
    between callers (never change it) unless ``fresh``."""
    key = os.fspath(path)
    try:
        st = os.stat(key)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc}") from None
    if not stat.S_ISREG(st.st_mode):  # a FIFO or /dev/zero planted as .mcp.json would hang
        raise ConfigError(f"{path}: not a regular file; it is not read")
    stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
    known = _READ.get(key)
    if known is not None and known[0] == stamp and not fresh:
        return known[1]
    data = _parse(path)
    if not fresh:
        if len(_READ) > 1024:
            _READ.clear()
        _READ[key] = (stamp, data)
    return data


def _parse(path: Path) -> dict[str, Any] | None:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read: {exc}") from None
    if not text.strip():
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must hold a JSON object")
    return data


def project_entry(claude: Mapping[str, Any] | None, folder: Path) -> Mapping[str, Any]:
    """``projects[<folder>]`` of ``~/.claude.json`` (the path as given or resolved)."""
    if not claude:
        return {}
    projects = claude.get("projects")
    if not isinstance(projects, dict):
        return {}
    for key in (str(folder), os.path.realpath(folder)):
        entry = projects.get(key)
        if isinstance(entry, dict):
            return entry
    return {}


def _servers_of(
    data: Mapping[str, Any] | None, scope: Scope, source: str, errors: list[str]
) -> list[ServerConfig]:
    if not data or "mcpServers" not in data:
        return []
    servers = data.get("mcpServers")
    if not isinstance(servers, dict):
        errors.append(f"{source}: mcpServers must be an object of servers by name")
        return []
    return [parse_server(str(name), raw, scope, source) for name, raw in servers.items()]


def mcp_json_files(working_directory: Path) -> list[Path]:
    """``.mcp.json`` of the folder and of each parent, farthest first (the nearest wins)."""
    folder = Path(os.path.realpath(working_directory.expanduser()))
    chain = [folder, *folder.parents]
    return [d / ".mcp.json" for d in reversed(chain)]


def project_servers(working_directory: Path, home: Path) -> list[str]:
    """Names of the servers the folder itself defines (``.mcp.json`` of it and its parents,
    its ``.tron/settings.json``) that win over the user's own: what trusting the folder
    would let run once approved. Never fails: an unreadable file defines nothing here."""
    configs, _errors = load_servers(working_directory, ConfigFiles(home=home, claude_json=None))
    return [c.name for c in configs if c.scope == "project"]


def load_servers(
    working_directory: Path,
    files: ConfigFiles,
    extra: Mapping[str, Any] | None = None,
) -> tuple[list[ServerConfig], list[str]]:
    """Every server the folder has (one per name, by precedence), and the errors of files
    that could not be read at all (a broken ``.mcp.json`` loses its servers, never the
    others'). ``extra``: the session's own servers (scope ``session``, highest)."""
    errors: list[str] = []

    def read(path: Path) -> dict[str, Any] | None:
        try:
            return read_json(path)
        except ConfigError as exc:
            errors.append(str(exc))
            return None

    wd = working_directory.expanduser()
    claude = read(files.claude_json) if files.claude_json is not None else None
    claude_source = str(files.claude_json)
    layers: list[list[ServerConfig]] = [
        _servers_of(claude, "user", claude_source, errors),
        _servers_of(read(files.home / "settings.json"), "user",
                    str(files.home / "settings.json"), errors),
    ]  # fmt: skip
    for path in mcp_json_files(wd):
        layers.append(_servers_of(read(path), "project", str(path), errors))
    tron_project = wd / ".tron" / "settings.json"
    # In the folder holding the home (``~`` for ``~/.tron``) that file is the user's own,
    # read above as such: it is not the folder speaking.
    if os.path.realpath(tron_project) != os.path.realpath(files.home / "settings.json"):
        layers.append(_servers_of(read(tron_project), "project", str(tron_project), errors))
    local = project_entry(claude, wd)
    layers.append(_servers_of(local, "local", f"{claude_source} (projects[{wd}])", errors))
    if extra:
        layers.append(_servers_of({"mcpServers": dict(extra)}, "session", "session", errors))
    merged: dict[str, ServerConfig] = {}
    for layer in layers:
        for server in layer:
            merged.pop(server.name, None)  # keep the winner's place at the end
            merged[server.name] = server
    return sorted(merged.values(), key=lambda s: s.name), errors
