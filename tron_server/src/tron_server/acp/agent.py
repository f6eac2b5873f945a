"""The ACP agent: each method of the Agent Client Protocol as tron-server calls.

``tron acp`` is a client of tron-server like ``tron`` and the web chat: a session the
editor opens is the same session everywhere (``tron -c``, the web chat, ``tron-db``).

| ACP | tron-server |
|---|---|
| ``initialize`` | ``system.info``, ``model.list`` (is a provider configured?) |
| ``session/new`` | ``session.create`` (the editor's MCP servers: ``mcpServers``) |
| ``session/load`` | ``session.get``, ``session.getTree``: the path replayed (:mod:`.replay`) |
| ``session/list`` | ``session.list {workingDirectory}`` (paged here) |
| ``session/fork`` | ``session.fork`` at the head, or at ``_meta.messageId`` |
| ``session/resume`` | ``session.get`` (nothing replayed) |
| ``session/close`` | unsubscribes (the session stays: ``tron -c`` continues it) |
| ``session/prompt`` | ``agent.message``, its notifications streamed (:mod:`.live`) |
| ``session/cancel`` | ``agent.abort`` |
| ``session/set_mode`` | ``session.setMode`` (Tron's permission modes) |
| ``session/set_config_option`` | ``model.switch`` (config option ``model``) |

A session opened in an untrusted folder that defines configuration asks whether to trust
it before its first prompt (``trust.get`` / ``trust.set``, :mod:`.trust`); where the
editor has terminals, Bash output is shown in one (:mod:`.terminals`).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.helpers import update_available_commands, update_current_mode
from acp.schema import (
    AcpMcpServer,
    AgentCapabilities,
    AuthMethodAgent,
    AvailableCommand,
    AvailableCommandInput,
    ClientCapabilities,
    CloseSessionResponse,
    ForkSessionResponse,
    HttpMcpServer,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    McpServerStdio,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionForkCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionMode,
    SessionModeState,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    SseMcpServer,
    UnstructuredCommandInput,
)

from ..client import ConnectionLost, Notification, RpcCallError, TronClient
from ..protocol import FILES_REQUEST, SESSION_MODE_CHANGED
from ..terminal.errors import TerminalError
from . import files, trust
from .content import PromptBlock, UnsupportedContent, to_tron
from .errors import from_tron, not_open
from .link import Link
from .live import PromptRun
from .replay import Replay, head_path
from .terminals import Terminals

log = logging.getLogger("tron_server.acp")

McpServer = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio

#: ``session/list`` page size.
PAGE = 50
#: Replayed updates sent together (see ``TronAgent._send_all``).
REPLAY_BATCH = 256
#: What each permission mode is called in an editor's mode picker.
MODE_NAMES = {
    "default": "Default",
    "acceptEdits": "Accept edits",
    "plan": "Plan",
    "dontAsk": "Don't ask",
    "bypassPermissions": "Bypass permissions",
}
#: The auth method offered when tron-server has no provider key.
AUTH_METHOD = "provider-key"


@dataclass
class OpenSession:
    """A session this editor connection follows."""

    id: str
    cwd: str
    prompt: PromptRun | None = None
    #: ``trust.get``'s answer while its folder, untrusted and defining configuration,
    #: is still to be asked about (at the first prompt: :mod:`.trust`).
    untrusted: dict[str, Any] | None = None


def _not_busy(session: OpenSession) -> None:
    if session.prompt is not None:
        raise RequestError(
            -32603,
            "a prompt is already running in this session: "
            "cancel it (session/cancel) or wait for its answer",
        )


def _encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"tron:{offset}".encode()).decode()


def _decode_cursor(cursor: str) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor.encode()).decode()
        if text.startswith("tron:"):
            return max(0, int(text[5:]))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        pass
    raise RequestError(-32602, "cursor: not a cursor session/list gave", {"cursor": cursor})


def mcp_servers_of(servers: list[McpServer]) -> dict[str, dict[str, Any]]:
    """The editor's MCP servers as tron-server's ``mcpServers`` (Claude Code's
    ``.mcp.json`` shape: name → ``{type, command, args, env}`` or ``{type, url, headers}``)."""
    out: dict[str, dict[str, Any]] = {}
    for server in servers:
        if isinstance(server, McpServerStdio):
            out[server.name] = {
                "type": "stdio",
                "command": server.command,
                "args": list(server.args),
                "env": {e.name: e.value for e in server.env},
            }
        elif isinstance(server, HttpMcpServer | SseMcpServer):
            out[server.name] = {
                "type": "http" if isinstance(server, HttpMcpServer) else "sse",
                "url": server.url,
                "headers": {h.name: h.value for h in server.headers},
            }
        else:
            name = getattr(server, "name", "?")
            raise RequestError(
                -32602, f"MCP server {name!r}: Tron starts stdio, http and sse servers"
            )
    return out


class TronAgent:
    """The ACP ``Agent`` of ``tron acp`` (the SDK routes each method here)."""

    def __init__(self, link: Link, version: str) -> None:
        self.link = link
        self.version = version
        self.editor: Any = None
        self.client_caps = ClientCapabilities()
        #: The editor's terminals, when it advertises them (Bash output shown there).
        self.terminals: Terminals | None = None
        self.sessions: dict[str, OpenSession] = {}
        self._methods: set[str] = set()
        self._modes: list[dict[str, Any]] | None = None
        #: The trust question of each folder asked in this connection (one per folder).
        self._trust_asks: dict[str, asyncio.Task[bool | None]] = {}
        self._readers: set[asyncio.Task[None]] = set()
        self._background: set[asyncio.Task[Any]] = set()
        link.on_attach = self._attached

    # -- the connections ---------------------------------------------------------------

    def on_connect(self, conn: Any) -> None:
        """The SDK hands over the editor's side of the connection (``acp.Client``)."""
        self.editor = conn

    async def _attached(self, tron: TronClient) -> None:
        """A (new) connection to tron-server: read its notifications, follow every open
        session again and serve their files from the editor."""
        info = await tron.call("system.info")
        self._methods = set(info.get("methods") or [])
        task = asyncio.create_task(self._read(tron), name="acp:notifications")
        self._readers.add(task)
        task.add_done_callback(self._readers.discard)
        for session in list(self.sessions.values()):
            with contextlib.suppress(RpcCallError):
                await tron.call("events.subscribe", {"sessionId": session.id})
                await self._serve_files(tron, session.id)

    async def _read(self, tron: TronClient) -> None:
        """Mode changes made elsewhere, and the server's file requests."""
        stream = tron.notifications([SESSION_MODE_CHANGED, FILES_REQUEST])
        try:
            async for n in stream:
                self._spawn(self._on_notification(tron, n))
        finally:
            stream.close()

    async def _on_notification(self, tron: TronClient, n: Notification) -> None:
        data = n.data if isinstance(n.data, dict) else {}
        if n.method == FILES_REQUEST:
            await files.serve(tron, self.editor, data)
        elif n.method == SESSION_MODE_CHANGED:
            session_id = data.get("sessionId") or n.session_id
            if session_id in self.sessions and isinstance(data.get("mode"), str):
                await self.editor.session_update(session_id, update_current_mode(data["mode"]))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        try:
            return await self.link.call(method, params)
        except RpcCallError as exc:
            raise from_tron(exc) from None
        except TerminalError as exc:  # no server, and none could be started
            raise RequestError(-32603, exc.message) from None
        except ConnectionLost as exc:
            raise RequestError(-32603, f"lost the connection to tron-server ({exc})") from None

    async def close(self) -> None:
        """Stop following the server (stdin closed): prompts in progress are aborted."""
        for session in self.sessions.values():
            if session.prompt is not None:
                with contextlib.suppress(Exception):
                    await session.prompt.cancel()
        for task in [*self._readers, *self._background]:
            task.cancel()
        if self.terminals is not None:
            await self.terminals.aclose()
        await self.link.close()

    # -- initialize, authenticate ----------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        self.client_caps = client_capabilities or ClientCapabilities()
        if self.client_caps.terminal and self.terminals is None:
            self.terminals = Terminals(self.editor)
        await self._call("system.ping")  # attach now: a missing server is said at once
        mcp = "mcp.setSessionServers" in self._methods
        return InitializeResponse(
            # Version 1 is the one this SDK speaks; an editor asking for a later one gets
            # it named, and decides.
            protocol_version=min(protocol_version, PROTOCOL_VERSION) or PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(
                    image=True, audio=False, embedded_context=True
                ),
                mcp_capabilities=McpCapabilities(http=mcp, sse=mcp),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(),
                    fork=SessionForkCapabilities(),
                    resume=SessionResumeCapabilities(),
                    close=SessionCloseCapabilities(),
                ),
            ),
            auth_methods=await self._auth_methods(),
            agent_info=Implementation(name="tron", title="Tron", version=self.version),
        )

    async def _provider_hint(self) -> str | None:
        """None when the server has a provider configured, else what to set."""
        listed = await self._call("model.list")
        providers = listed.get("providers") or []
        if any(p.get("configured") for p in providers if isinstance(p, dict)):
            return None
        names = sorted({k for p in providers if isinstance(p, dict) for k in p.get("keyEnv") or []})
        return (
            "tron-server has no model provider: set "
            + (" or ".join(names) or "a provider key")
            + " in the environment it runs with, then `tron server restart` (or start "
            "tron-server yourself with it set)."
        )

    async def _auth_methods(self) -> list[AuthMethodAgent]:
        hint = await self._provider_hint()
        if hint is None:
            return []  # a provider key is configured: nothing to authenticate
        return [AuthMethodAgent(id=AUTH_METHOD, name="Set a provider API key", description=hint)]

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        if method_id != AUTH_METHOD:
            raise RequestError(
                -32602, f"unknown auth method {method_id!r}; Tron offers {AUTH_METHOD!r}"
            )
        hint = await self._provider_hint()
        if hint is not None:
            raise RequestError.auth_required({"message": hint})

    # -- sessions ----------------------------------------------------------------------------

    async def _open(self, session: dict[str, Any], mcp_servers: list[McpServer] | None) -> str:
        """Follow a Tron session from this connection: subscribe, serve its files from
        the editor, start the editor's MCP servers for it."""
        session_id = str(session["id"])
        opened = OpenSession(session_id, str(session["workingDirectory"]))
        self.sessions[session_id] = opened
        await self._call("events.subscribe", {"sessionId": session_id})
        opened.untrusted = await self._untrusted(opened.cwd)
        await self._serve_files(await self.link.client(), session_id)
        if mcp_servers and "mcp.setSessionServers" in self._methods:
            await self._call(
                "mcp.setSessionServers",
                {
                    "sessionId": session_id,
                    "mcpServers": mcp_servers_of(mcp_servers),
                },
            )
        elif mcp_servers:
            log.warning(
                "this tron-server has no MCP client: the editor's MCP servers are not started"
            )
        self._spawn(self._announce_commands(session_id))
        return session_id

    async def _untrusted(self, folder: str) -> dict[str, Any] | None:
        """``trust.get``'s answer when ``folder`` is untrusted and defines configuration."""
        if "trust.get" not in self._methods:
            return None
        try:
            answer: dict[str, Any] = await self._call("trust.get", {"path": folder})
        except RequestError as exc:
            log.warning("could not learn whether %s is trusted: %s", folder, exc)
            return None
        return answer if trust.needs_asking(answer) else None

    async def _settle_trust(self, session: OpenSession) -> bool:
        """Ask about the session's folder before its first prompt (once per folder);
        False when the question was cancelled (the prompt is)."""
        assert session.untrusted is not None
        folder = str(session.untrusted["path"])
        task = self._trust_asks.get(folder)
        if task is None:
            answer = await self._untrusted(session.cwd)  # trusted elsewhere meanwhile?
            if answer is None:
                session.untrusted = None
                return True
            task = asyncio.create_task(trust.ask(self.editor, self._call, session.id, answer))
            self._trust_asks[folder] = task
        decided = await asyncio.shield(task)
        if decided is None:
            self._trust_asks.pop(folder, None)  # cancelled: asked again next time
            return False
        session.untrusted = None
        return True

    async def _serve_files(self, tron: TronClient, session_id: str) -> None:
        fs = self.client_caps.fs
        reads = bool(fs and fs.read_text_file)
        writes = bool(fs and fs.write_text_file)
        if (reads or writes) and "files.register" in self._methods:
            await tron.call(
                "files.register", {"sessionId": session_id, "read": reads, "write": writes}
            )

    async def _announce_commands(self, session_id: str) -> None:
        """``available_commands_update`` from ``command.list`` (after the answer that made
        the session known to the editor)."""
        await asyncio.sleep(0)
        try:
            listed = await self._call("command.list", {"sessionId": session_id})
        except RequestError:
            return
        commands = []
        for c in listed.get("commands") or []:
            if not isinstance(c, dict) or not c.get("name"):
                continue
            hint = c.get("argumentHint")
            commands.append(
                AvailableCommand(
                    name=str(c["name"]),
                    description=str(c.get("description") or c["name"]),
                    input=AvailableCommandInput(UnstructuredCommandInput(hint=hint))
                    if hint
                    else None,
                )
            )
        await self.editor.session_update(session_id, update_available_commands(commands))

    async def _modes_state(self, session_id: str, current: str | None) -> SessionModeState | None:
        if self._modes is None:
            listed = await self._call("mode.list")
            self._modes = [m for m in listed.get("modes") or [] if isinstance(m, dict)]
        available = [
            SessionMode(
                id=str(m["id"]),
                name=MODE_NAMES.get(str(m["id"]), str(m["id"])),
                description=m.get("description"),
            )
            for m in self._modes
            if m.get("available", True) and m.get("id")
        ]
        if not available:
            return None
        if current is None:
            details = await self._call("session.get", {"sessionId": session_id})
            current = details.get("permissionMode") or "default"
        return SessionModeState(current_mode_id=str(current), available_modes=available)

    async def _config_options(self, model: str | None) -> list[SessionConfigOptionSelect]:
        listed = await self._call("model.list")
        models = [m for m in listed.get("models") or [] if isinstance(m, dict) and m.get("id")]
        available = [m for m in models if m.get("available", True)] or models
        options = [
            SessionConfigSelectOption(
                value=str(m["id"]),
                name=str(m.get("name") or m["id"]),
                description=str(m.get("provider") or "") or None,
            )
            for m in available
        ]
        current = model or (options[0].value if options else "")
        if current and all(o.value != current for o in options):
            options.insert(0, SessionConfigSelectOption(value=current, name=current))
        if not options:
            return []
        return [
            SessionConfigOptionSelect(
                id="model",
                name="Model",
                category="model",
                type="select",
                description="The model of this session's next turn (model.switch)",
                current_value=current,
                options=options,
            )
        ]

    async def _session_state(
        self, session: dict[str, Any]
    ) -> tuple[SessionModeState | None, list[SessionConfigOptionSelect]]:
        session_id = str(session["id"])
        modes = await self._modes_state(session_id, session.get("permissionMode"))
        return modes, await self._config_options(session.get("model"))

    def _session(self, session_id: str) -> OpenSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise not_open(session_id)
        return session

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServer] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        params: dict[str, Any] = {"workingDirectory": cwd}
        if mcp_servers and "mcp.setSessionServers" in self._methods:
            # Checked before the session is made: a server that cannot be used is -32602.
            params["mcpServers"] = mcp_servers_of(mcp_servers)
        created = await self._call("session.create", params)
        await self._open(created, None if "mcpServers" in params else mcp_servers)
        created = await self._call("session.get", {"sessionId": created["id"]})
        modes, options = await self._session_state(created)
        return NewSessionResponse(session_id=created["id"], modes=modes, config_options=options)

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[McpServer] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        session = await self._call("session.get", {"sessionId": session_id})
        await self._open(session, mcp_servers)
        tree = await self._call("session.getTree", {"sessionId": session_id})
        replay = Replay(str(session["workingDirectory"]))
        await self._send_all(
            session_id, replay.updates(head_path(tree["events"], tree["headEventId"]))
        )
        modes, options = await self._session_state(session)
        return LoadSessionResponse(modes=modes, config_options=options)

    async def _send_all(self, session_id: str, updates: Iterable[Any]) -> None:
        """Send updates in order, a batch at a time: each batch's sends are started
        together (the SDK queues each message as its send starts, so the order holds)
        rather than one waiting for the other's write, which costs seconds for a long
        session."""
        batch: list[Any] = []
        for update in updates:
            batch.append(self.editor.session_update(session_id, update))
            if len(batch) >= REPLAY_BATCH:
                await asyncio.gather(*batch)
                batch = []
        if batch:
            await asyncio.gather(*batch)

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServer] | None = None,
        **kwargs: Any,
    ) -> ResumeSessionResponse:
        session = await self._call("session.get", {"sessionId": session_id})
        await self._open(session, mcp_servers)
        modes, options = await self._session_state(session)
        return ResumeSessionResponse(modes=modes, config_options=options)

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServer] | None = None,
        **kwargs: Any,
    ) -> ForkSessionResponse:
        at = kwargs.get("messageId")
        if at is None:
            source = await self._call("session.get", {"sessionId": session_id})
            at = source["headEventId"]
        elif not isinstance(at, str):
            raise RequestError(
                -32602,
                "_meta.messageId: the messageId of a message of the "
                "session (as session/load sent it)",
            )
        forked = await self._call("session.fork", {"eventId": at})
        fork = await self._call("session.get", {"sessionId": forked["session"]["id"]})
        await self._open(fork, mcp_servers)
        modes, options = await self._session_state(fork)
        return ForkSessionResponse(session_id=fork["id"], modes=modes, config_options=options)

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        offset = _decode_cursor(cursor) if cursor else 0
        params: dict[str, Any] = {"limit": min(1000, offset + PAGE + 1)}
        if cwd:
            params["workingDirectory"] = cwd
        listed = await self._call("session.list", params)
        sessions = [s for s in listed.get("sessions") or [] if s.get("kind") != "subagent"]
        page = sessions[offset : offset + PAGE]
        more = len(sessions) > offset + PAGE
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=s["id"],
                    cwd=s["workingDirectory"],
                    title=s.get("title"),
                    updated_at=s.get("lastActivityAt") or s.get("createdAt"),
                )
                for s in page
            ],
            next_cursor=_encode_cursor(offset + PAGE) if more else None,
        )

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
        session = self._session(session_id)
        if session.prompt is not None:
            await session.prompt.cancel()
        del self.sessions[session_id]
        with contextlib.suppress(RequestError):
            await self._call("files.unregister", {"sessionId": session_id})
            await self._call("events.unsubscribe", {"sessionId": session_id})
        return CloseSessionResponse()

    # -- a turn --------------------------------------------------------------------------

    async def prompt(
        self, session_id: str, prompt: list[PromptBlock], **kwargs: Any
    ) -> PromptResponse:
        session = self._session(session_id)
        _not_busy(session)
        try:
            blocks = to_tron(prompt)
        except UnsupportedContent as exc:
            raise RequestError(-32602, str(exc)) from None
        content: str | list[dict[str, Any]] = blocks
        if all(b["type"] == "text" for b in blocks):
            content = "".join(b["text"] for b in blocks)  # text alone: slash commands work
        if session.untrusted is not None and not await self._settle_trust(session):
            return PromptResponse(stop_reason="cancelled")
        try:
            tron = await self.link.client()
        except TerminalError as exc:
            raise RequestError(-32603, exc.message) from None
        _not_busy(session)  # again: another prompt may have started while this one waited
        run = PromptRun(session_id, session.cwd, self.editor, tron, self.terminals)
        session.prompt = run
        try:
            return await run.run(content)
        finally:
            session.prompt = None

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.sessions.get(session_id)
        if session is not None and session.prompt is not None:
            await session.prompt.cancel()

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        self._session(session_id)
        await self._call("session.setMode", {"sessionId": session_id, "mode": mode_id})
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        self._session(session_id)
        if config_id != "model" or not isinstance(value, str):
            raise RequestError(
                -32602,
                f"unknown config option {config_id!r}: Tron has "
                "'model' (a model id from its options)",
            )
        await self._call("model.switch", {"sessionId": session_id, "model": value})
        session = await self._call("session.get", {"sessionId": session_id})
        return SetSessionConfigOptionResponse(
            config_options=await self._config_options(session.get("model"))
        )

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        log.info("ignoring the extension notification _%s", method)


__all__ = ["MODE_NAMES", "OpenSession", "TronAgent"]
