"""The server's MCP client: every folder's configured servers, their connections, their use.

One :class:`McpManager` per tron-server. A connection is shared by the sessions of one
folder that configure the same server the same way (its roots are that folder); a session's
own servers (``session.create``'s ``mcpServers``, an editor's through ACP) are that
session's. Connections live until the configuration changes or the server stops; then the
stdio children are killed with their process groups.

What a session gets (:meth:`McpManager.tools_for`): the tools of each usable server — not
failed in its configuration, approved and in a trusted folder when it is a project server,
not switched off — from the connection's lists, or from the :class:`~.cache.ListCache` of
a server that is not started yet (it starts when first used). A server never listed before
is started for its list; the run waits at most ``list_wait`` seconds for it and goes on
without it after that (its tools come in a later turn).
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from .approvals import Approvals, approval_file, folder_trusted, remember
from .cache import ListCache, Lists
from .config import ConfigFiles, ServerConfig, load_servers, mcp_json_files, parse_server
from .connection import Connection, McpOptions, SampleFn, ServerError
from .names import mcp_name

__all__ = ["McpManager", "ServerView", "Usable", "server_json"]

log = logging.getLogger("tron_server.mcp")

_UNTRUSTED = (
    "the folder is not trusted: its own servers do not run until you trust it "
    "(trust.set, or `tron --trust`), then approve them"
)


@dataclass
class ServerView:
    """A configured server as a folder (or a session) sees it now."""

    config: ServerConfig
    status: str
    """``connected``, ``connecting``, ``idle`` (not started), ``failed``, ``needs-approval``
    or ``disabled``."""
    reason: str | None = None
    connection: Connection | None = None

    @property
    def usable(self) -> bool:
        return self.connection is not None


@dataclass
class Usable:
    """What a run gets: each tool (its connection and listing, wire form), and the
    failures to tell the user about."""

    tools: list[tuple[Connection, dict[str, Any]]] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)
    """(server, message with its stderr tail) of failures not told before."""


class McpManager:
    """See the module docstring. :meth:`start` before use, :meth:`aclose` at shutdown."""

    def __init__(
        self,
        home: Path,
        *,
        claude_json: Path | None,
        options: McpOptions | None = None,
        list_wait: float = 10.0,
    ) -> None:
        self.home = home
        self.files = ConfigFiles(home=home, claude_json=claude_json)
        self.options = options or McpOptions.from_environment()
        self.list_wait = list_wait
        self.cache = ListCache(home / "cache" / "mcp")
        #: Sampling (on only when the options allow it).
        self.sample: SampleFn | None = None
        self._pool: dict[tuple[str, str, str], Connection] = {}
        self._session_servers: dict[str, dict[str, Any]] = {}
        self._session_pool: dict[tuple[str, str], Connection] = {}
        self._told: dict[str, set[tuple[str, int]]] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._host: asyncio.Task[None] | None = None
        self._stop = anyio.Event()
        #: Folders with no server: (folder, its real path) -> (the stamps of every file
        #: read, the session's servers, the files' errors). See :meth:`_no_servers`.
        self._empty: dict[tuple[str, str], tuple[tuple[Any, ...], Any, list[str]]] = {}
        self._stamped_paths: dict[tuple[str, str], tuple[str, ...]] = {}

    # -- life ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the task that hosts the connections' tasks."""
        if self._host is not None:
            return
        ready = anyio.Event()

        async def host() -> None:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                ready.set()
                await self._stop.wait()
                tg.cancel_scope.cancel()

        self._host = asyncio.get_running_loop().create_task(host(), name="mcp-connections")
        await ready.wait()

    async def aclose(self, timeout: float = 10.0) -> None:
        """Close every connection (stdio children killed with their groups), then stop."""
        connections = [*self._pool.values(), *self._session_pool.values()]
        async with anyio.create_task_group() as tg:
            for connection in connections:
                tg.start_soon(connection.close, timeout)
        self._pool.clear()
        self._session_pool.clear()
        self._stop.set()
        if self._host is not None:
            with anyio.move_on_after(timeout, shield=True):
                await self._host
            self._host = None

    # -- configuration -------------------------------------------------------------------

    def set_session_servers(self, session_id: str, servers: Mapping[str, Any]) -> list[str]:
        """A session's own servers (scope ``session``, e.g. an editor's through ACP),
        replacing those it had; returns the errors of entries that cannot be used."""
        errors = []
        for name, raw in servers.items():
            parsed = parse_server(str(name), raw, "session", "session")
            if parsed.error:
                errors.append(parsed.error)
        self._session_servers[session_id] = dict(servers)
        return errors

    def session_servers(self, session_id: str | None) -> dict[str, Any]:
        return dict(self._session_servers.get(session_id or "", {}))

    def view(
        self, working_directory: Path, session_id: str | None = None
    ) -> tuple[list[ServerView], list[str]]:
        """Every server configured for the folder (and the session), with its status, and
        the errors of files that could not be read."""
        wd = working_directory.expanduser()
        extra = self._session_servers.get(session_id or "")
        key, stamps = self._files_stamp(wd)
        known = self._empty.get(key)
        if known is not None and known[0] == stamps and known[1] is extra:
            return [], list(known[2])
        configs, errors = load_servers(wd, self.files, extra)
        approvals, approval_errors = Approvals.load(wd, self.files)
        errors += approval_errors
        if not configs:
            # Nothing to run, and no ${VAR} expanded: the answer depends on these files
            # alone. Every run asks (on the event loop): ~10 stats instead of reading
            # and merging every layer again (issue 29, goal 5).
            if len(self._empty) >= 256:
                self._empty.clear()
            self._empty[key] = (stamps, extra, list(errors))
        trusted: bool | None = None
        views: list[ServerView] = []
        for config in configs:
            if config.error:
                views.append(ServerView(config, "failed", config.error))
                continue
            if config.needs_approval and trusted is None:
                trusted = folder_trusted(wd, self.home)
            blocked = self._blocked(config, approvals, trusted)
            if blocked is not None:
                # What may not run here does not keep running either: trust revoked or an
                # approval taken back stops the server this folder had started.
                self._stop_pooled(config, wd)
                views.append(ServerView(config, *blocked))
                continue
            connection = self._connection(config, wd, session_id)
            views.append(ServerView(config, connection.status, connection.error, connection))
        return views, errors

    def _files_stamp(self, wd: Path) -> tuple[tuple[str, str], tuple[Any, ...]]:
        """(folder, its real path) and the stamps of every file :func:`load_servers` and
        :meth:`Approvals.load` read for it (None for a missing one)."""
        folder = str(wd)
        root = os.path.realpath(folder)
        key = (folder, root)
        paths = self._stamped_paths.get(key)
        if paths is None:
            home = self.files.home
            claude = self.files.claude_json
            found = [
                *([str(claude)] if claude is not None else []),
                str(home / "settings.json"),
                str(approval_file(home)),
                str(wd / ".tron" / "settings.json"),
                str(wd / ".claude" / "settings.json"),
                str(wd / ".claude" / "settings.local.json"),
                *(str(p) for p in mcp_json_files(Path(root))),
            ]
            if len(self._stamped_paths) >= 256:
                self._stamped_paths.clear()
            paths = self._stamped_paths[key] = tuple(found)
        return key, tuple(_stamp(p) for p in paths)

    @staticmethod
    def _blocked(
        config: ServerConfig, approvals: Approvals, trusted: bool | None
    ) -> tuple[str, str] | None:
        """(status, reason) of a server that may not run here, or None."""
        if approvals.is_switched_off(config):
            return "disabled", "switched off for this folder"
        if not config.needs_approval:
            return None
        if not trusted:  # before the approval: an untrusted folder's own keys do not count
            return "needs-approval", _UNTRUSTED
        decision = approvals.decision(config)
        if decision == "rejected":
            return "disabled", "not approved for this folder"
        if decision == "pending":
            return "needs-approval", f"a project server: approve it with /mcp approve {config.name}"
        return None

    def _stop_pooled(self, config: ServerConfig, wd: Path) -> None:
        """Close this folder's connections to ``config``'s server, if any were started."""
        root = str(Path(os.path.realpath(wd)))
        for key in [k for k in self._pool if k[:2] == (root, config.name)]:
            self._retire(self._pool.pop(key))

    def _connection(self, config: ServerConfig, wd: Path, session_id: str | None) -> Connection:
        root = Path(os.path.realpath(wd))
        if config.scope == "session":
            key2 = (session_id or "", config.name)
            found = self._session_pool.get(key2)
            if found is None or found.config.fingerprint() != config.fingerprint():
                if found is not None:
                    self._retire(found)
                found = self._session_pool[key2] = self._new(config, root)
            return found
        key = (str(root), config.name, config.fingerprint())
        connection = self._pool.get(key)
        if connection is None:
            for old_key in [k for k in self._pool if k[:2] == key[:2]]:
                self._retire(self._pool.pop(old_key))  # the configuration changed
            connection = self._pool[key] = self._new(config, root)
        return connection

    def _new(self, config: ServerConfig, root: Path) -> Connection:
        connection = Connection(config, root=root, options=self.options, cache=self.cache,
                                sample=self.sample)  # fmt: skip
        if self._tg is None:
            raise RuntimeError("McpManager.start() was not awaited")
        connection.bind(self._tg)
        return connection

    def _retire(self, connection: Connection) -> None:
        if self._tg is not None:
            self._tg.start_soon(connection.close)

    def approve(self, working_directory: Path, server: str, approved: bool) -> None:
        """Remember the user's answer for ``server`` in this folder (``mcp.approve``)."""
        remember(self.home, working_directory, server, approved)

    # -- what a run gets -----------------------------------------------------------------

    async def tools_for(self, session_id: str, working_directory: Path) -> Usable:
        """The MCP tools of a run (see the module docstring)."""
        views, _errors = self.view(working_directory, session_id)
        usable = Usable()
        unlisted = [v.connection for v in views if v.connection is not None
                    and v.connection.lists is None]  # fmt: skip
        if unlisted:
            async with anyio.create_task_group() as tg:
                for connection in unlisted:
                    tg.start_soon(_ensure_quietly, connection, self.list_wait)
        told = self._told.setdefault(session_id, set())
        for view in views:
            if view.connection is None:
                continue
            connection = view.connection
            if connection.status == "failed":
                mark = (connection.name, connection.failures)
                if mark not in told:
                    told.add(mark)
                    usable.failures.append((connection.name, connection.describe_error()))
            for tool in (connection.lists or Lists()).tools:
                usable.tools.append((connection, tool))
        return usable

    def forget_session(self, session_id: str) -> None:
        """A session ended: its own servers are closed."""
        self._session_servers.pop(session_id, None)
        self._told.pop(session_id, None)
        for key in [k for k in self._session_pool if k[0] == session_id]:
            self._retire(self._session_pool.pop(key))

    # -- prompts and resources -----------------------------------------------------------

    def prompts(
        self, working_directory: Path, session_id: str | None = None
    ) -> list[tuple[str, Connection, dict[str, Any]]]:
        """``(command name, connection, prompt)`` of every usable server whose prompts are
        known (listed by a connection or cached)."""
        views, _ = self.view(working_directory, session_id)
        out = []
        for view in views:
            if view.connection is None or view.connection.lists is None:
                continue
            for prompt in view.connection.lists.prompts:
                out.append((mcp_name(view.config.name, str(prompt.get("name"))),
                            view.connection, prompt))  # fmt: skip
        return out

    def find_connection(
        self, working_directory: Path, session_id: str | None, server: str
    ) -> Connection:
        """A usable server's connection by name; :class:`ServerError` says why not."""
        views, _ = self.view(working_directory, session_id)
        for view in views:
            if view.config.name == server:
                if view.connection is None:
                    raise ServerError(f"MCP server {server!r} is {view.status}: {view.reason}")
                return view.connection
        known = ", ".join(v.config.name for v in views) or "none"
        raise ServerError(f"no MCP server {server!r} here (configured: {known})")

    def warm(self, working_directory: Path, session_id: str | None = None) -> None:
        """Start, in the background, the usable servers whose lists are unknown (so a
        client's listing of commands or resources fills in)."""
        views, _ = self.view(working_directory, session_id)
        if self._tg is None:
            return
        for view in views:
            connection = view.connection
            if connection is not None and connection.lists is None:
                self._tg.start_soon(_ensure_quietly, connection, None)

    async def describe(
        self, working_directory: Path, session_id: str | None = None, *, connect: bool = True
    ) -> dict[str, Any]:
        """``mcp.list``'s answer: every server with its scope, transport, status, error and
        lists. ``connect`` starts the usable servers first (waiting ``list_wait`` at most)."""
        views, errors = self.view(working_directory, session_id)
        if connect:
            async with anyio.create_task_group() as tg:
                for view in views:
                    if view.connection is not None:
                        tg.start_soon(_ensure_quietly, view.connection, self.list_wait)
        return {
            "workingDirectory": str(working_directory),
            "servers": [server_json(view) for view in views],
            "errors": errors,
        }


def server_json(view: ServerView) -> dict[str, Any]:
    """One server of ``mcp.list``."""
    config = view.config
    connection = view.connection
    status = connection.status if connection is not None else view.status
    out: dict[str, Any] = {
        "name": config.name,
        "scope": config.scope,
        "source": config.source,
        "transport": config.transport,
        "target": config.describe(),
        "status": status,
        "error": (connection.error if connection is not None else view.reason)
        if status in ("failed", "needs-approval", "disabled")
        else None,
        "stderrTail": (connection.stderr_tail or None) if connection is not None else None,
        "needsApproval": config.needs_approval,
        "tools": [],
        "prompts": [],
        "resources": [],
        "resourceTemplates": [],
    }
    if connection is not None:
        out["serverInfo"] = connection.server_info
        out["protocolVersion"] = connection.protocol_version
        retry = connection.retry_in()
        if connection.status == "failed" and retry > 0:
            # Rounded up: a server still in its backoff never reads as ready to retry.
            out["retryIn"] = math.ceil(retry * 10) / 10
    lists = connection.lists if connection is not None else None
    if lists is not None:
        out["listed"] = "live" if connection is not None and connection.connected else "cache"
        out["tools"] = [
            {"name": mcp_name(config.name, str(t.get("name"))), "tool": t.get("name"),
             "description": t.get("description") or t.get("title") or "",
             "annotations": t.get("annotations") or {}}
            for t in lists.tools
        ]  # fmt: skip
        out["prompts"] = [
            {"name": p.get("name"), "command": "/" + mcp_name(config.name, str(p.get("name"))),
             "description": p.get("description") or "",
             "arguments": [{"name": a.get("name"), "description": a.get("description") or "",
                            "required": bool(a.get("required"))}
                           for a in p.get("arguments") or []]}
            for p in lists.prompts
        ]  # fmt: skip
        out["resources"] = [
            {"uri": r.get("uri"), "name": r.get("name"),
             "mention": f"@{config.name}:{r.get('uri')}", "mimeType": r.get("mimeType"),
             "description": r.get("description") or ""}
            for r in lists.resources
        ]  # fmt: skip
        out["resourceTemplates"] = [
            {"uriTemplate": r.get("uriTemplate"), "name": r.get("name"),
             "description": r.get("description") or ""}
            for r in lists.templates
        ]  # fmt: skip
    return out


def _stamp(path: str) -> tuple[int, int, int, int] | str | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return type(exc).__name__
    return (st.st_mode, st.st_mtime_ns, st.st_size, st.st_ino)


async def _ensure_quietly(connection: Connection, wait: float | None) -> None:
    try:
        await connection.ensure(wait)
    except Exception:  # a failed start is the connection's status, not an error here
        log.exception("starting MCP server %s failed", connection.name)
