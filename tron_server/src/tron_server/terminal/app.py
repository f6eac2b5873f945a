"""The interactive screen (Textual).

Why Textual rather than prompt_toolkit + rich: the screen is an application,
not a prompt — a transcript whose widgets update in place while a turn streams
(Markdown appended as it arrives, tool cards with live output), a modal tree
to fork or rewind, pickers, inline question and approval prompts, a status
line and a connection notice, all at once. Textual has each of these as a
widget (``Markdown`` with streaming and highlighted code blocks, ``Tree``,
``TextArea``, ``OptionList``, ``Collapsible``), honours ``NO_COLOR``, and comes
with a test pilot that drives the real app headless. prompt_toolkit would give
a better line editor and native scrollback, but every one of those views would
have to be built on its layout primitives.

Everything goes through the protocol (:class:`Link` over ``TronClient``):
the transcript is the session's stored events (deduplicated by id) plus the
live ``agent.*`` notifications, resumed after a drop with subscribe → sync →
``agent.getState``, as ``docs/protocol.md`` prescribes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ..client import ConnectionLost, Notification, RpcCallError
from . import commands as cmds
from . import sessions
from .attach import Connection, ServerAddress
from .capabilities import Capabilities, accepts_param, load
from .diffview import DiffScreen, file_lines, render_files
from .items import transcript_items
from .link import Link
from .model import SessionModel
from .screens import PickScreen, Request, RequestScreen, TreeChoice, TreeScreen
from .widgets import ConnectionNotice, PromptInput, StatusLine, Transcript

HISTORY_FILE = "terminal-history.jsonl"
HISTORY_KEEP = 500
#: Two Ctrl+C within this many seconds quit.
QUIT_WINDOW = 2.0


class InfoScreen(ModalScreen[None]):
    """Text to read (help, context, cost); any of Esc, Enter or q closes it."""

    DEFAULT_CSS = """
    InfoScreen { align: center middle; }
    InfoScreen > Vertical { width: 95%; height: auto; max-height: 90%; border: round $accent;
                            background: $surface; padding: 0 1; }
    """
    BINDINGS = [
        Binding("escape", "close", "Close"),
        Binding("enter", "close", show=False),
        Binding("q", "close", show=False),
    ]

    def __init__(self, text: str | Text) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.text)
            yield Static(Text("Esc closes", style="dim"))

    def action_close(self) -> None:
        self.dismiss(None)


def load_history(home: Path) -> list[str]:
    """The last inputs (the file is cut back to them when it has grown to twice as many)."""
    path = home / HISTORY_FILE
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    if len(lines) > 2 * HISTORY_KEEP:
        with contextlib.suppress(OSError):
            tmp = path.with_name(f".{path.name}.{os.getpid()}")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write("\n".join(lines[-HISTORY_KEEP:]) + "\n")
            os.replace(tmp, path)
    out: list[str] = []
    for line in lines[-HISTORY_KEEP:]:
        with contextlib.suppress(ValueError):
            value = json.loads(line)
            if isinstance(value, str):
                out.append(value)
    return out


def save_history(home: Path, text: str) -> None:
    """Append to the input history (user-only: prompts can hold secrets)."""
    with contextlib.suppress(OSError):
        fd = os.open(home / HISTORY_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a") as f:
            f.write(json.dumps(text) + "\n")


class TronApp(App[None]):
    """``tron``'s interactive screen."""

    TITLE = "tron"
    CSS = """
    Screen { layout: vertical; }
    #completions { height: auto; max-height: 8; display: none; border: round $secondary; }
    #completions.shown { display: block; }
    """
    BINDINGS = [
        Binding("ctrl+c", "interrupt", "Quit (twice)", priority=True, show=False),
        Binding("ctrl+t", "tree", "Session tree", priority=True, show=False),
        Binding("escape", "escape", "Abort", show=False),
        Binding("ctrl+q", "quit", "Quit", priority=True, show=False),
        Binding("shift+tab", "cycle_mode", "Permission mode", priority=True, show=False),
    ]

    def __init__(
        self,
        *,
        address: ServerAddress,
        connection: Connection,
        capabilities: Capabilities,
        cwd: Path,
        session: dict[str, Any] | None = None,
        pick_from: list[dict[str, Any]] | None = None,
        first_prompt: str | None = None,
        model: str | None = None,
        permission_mode: str | None = None,
    ) -> None:
        super().__init__()
        self.address = address
        self.link = Link(address, self._on_notification)
        self._first_connection: Connection | None = connection
        self.caps = capabilities
        self.cwd = cwd
        self.model: SessionModel | None = SessionModel(session) if session else None
        self.pick_from = pick_from
        self.first_prompt = first_prompt
        self.model_name = model
        self.permission_mode = permission_mode
        self.error: BaseException | None = None
        self.commands: list[cmds.Command] = cmds.client_commands(capabilities)
        self.context: dict[str, Any] = {}
        self._completions: list[cmds.Command] = []
        self._refresh_pending = False
        self._refresh_lock = asyncio.Lock()
        self._status_pending = False
        self._quit_armed = 0.0
        self._exiting = False
        self._request_screen: RequestScreen | None = None
        self._pending_requests: dict[str, Request] = {}
        self._restore_files: bool | None = None
        self._mode_cycle: list[str] | None = None
        # User actions (messages, commands, picks) run one after another in a worker,
        # never inside a message handler: they wait on the network and on mounts.
        self._actions: asyncio.Queue[Callable[[], Awaitable[None]]] = asyncio.Queue()

    # -- layout ---------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Transcript(id="transcript")
        yield ConnectionNotice(id="notice")
        yield OptionList(id="completions")
        yield PromptInput(history=load_history(self.address.home), id="input")
        yield StatusLine(id="status")

    @property
    def session_id(self) -> str | None:
        return self.model.id if self.model is not None else None

    @property
    def input(self) -> PromptInput:
        return self.query_one("#input", PromptInput)

    @property
    def transcript(self) -> Transcript:
        return self.query_one("#transcript", Transcript)

    async def on_mount(self) -> None:
        assert self._first_connection is not None
        self.link.adopt(self._first_connection)
        self._first_connection = None
        self.transcript.anchor()
        self.input.owner = self
        self.input.focus()
        self.run_worker(self._watch_connection(), name="connection", group="connection")
        self.run_worker(self._run_actions(), name="actions", group="actions")
        self._enqueue(self._start)

    def _enqueue(self, action: Callable[..., Awaitable[None]], *args: Any) -> None:
        """Run ``action(*args)`` after the actions before it (in the actions worker)."""
        self._actions.put_nowait(lambda: action(*args))

    def _queued(self, action: Callable[[Any], Awaitable[None]]) -> Callable[[Any], None]:
        """A screen's result callback that runs ``action(result)`` as a queued action."""
        return lambda result: self._enqueue(action, result)

    async def _run_actions(self) -> None:
        while True:
            action = await self._actions.get()
            try:
                await action()
            except ConnectionLost:
                self.notify("The connection is down: try again once it is back.",
                            severity="error")  # fmt: skip
            except RpcCallError as exc:
                self.notify(f"The server refused: {exc.message}", severity="error", timeout=8)

    async def _start(self) -> None:
        try:
            await self._load_commands()
            if self.pick_from is not None:
                choices = [(s["id"], sessions.describe(s)) for s in self.pick_from]
                self.push_screen(
                    PickScreen(f"Sessions of {self.cwd}", choices),
                    self._queued(self._picked_session),
                )
                return
            if self.model is not None:
                await self._resume_session()
                if self.permission_mode and self.caps.mode_method:
                    await self.link.call(
                        self.caps.mode_method,
                        {"sessionId": self.model.id, "mode": self.permission_mode},
                    )
            else:
                self._dirty()
            await self._send_first_prompt()
        except ConnectionLost:
            pass  # the connection watcher says so and resumes

    async def _picked_session(self, session_id: str | None) -> None:
        if session_id is None:
            self.exit()
            return
        session = next((s for s in self.pick_from or [] if s["id"] == session_id), None)
        if session is None:
            return
        if session.get("status") != "active":
            self.notify(
                "That session has ended: fork it from the tree (Ctrl+T) to continue.",
                severity="warning",
            )
        await self._switch(session)
        await self._send_first_prompt()

    async def _send_first_prompt(self) -> None:
        """The message given on the command line, once."""
        prompt, self.first_prompt = self.first_prompt, None
        if prompt:
            await self._submit(prompt)

    def _fatal_error(self) -> None:
        """A bug: leave the screen cleanly and let ``tron`` say what happened (no
        traceback unless TRON_DEBUG is set)."""
        if os.environ.get("TRON_DEBUG"):
            super()._fatal_error()
            return
        self.error = self._exception
        self._close_messages_no_wait()

    async def close_link(self) -> None:
        self._exiting = True
        await self.link.close()

    # -- notifications (called by the connection's reader, in wire order) ----------

    def _on_notification(self, n: Notification) -> None:
        m = self.model
        if m is None:
            return
        data = n.data if isinstance(n.data, dict) else {}
        method = n.method
        if method == "session.notification":  # the agent's Notify tool, any session
            self._show_user_notification(data)
            return
        if method.startswith("session."):
            session = data.get("session")
            if isinstance(session, dict) and session.get("id") == m.id:
                if "permissionMode" not in session and "permissionMode" in m.session:
                    session = {**session, "permissionMode": m.session["permissionMode"]}
                m.set_session(session, "rewind" if method == "session.rewound" else "snapshot")
                self._dirty()
            elif method == "session.deleted" and data.get("sessionId") == m.id:
                self.call_later(self._session_gone)
            return
        if n.session_id != m.id:
            child = n.session_id
            is_child = bool(child) and data.get("parentSessionId") == m.id
            if is_child and self._maybe_request(method, data):
                return  # a sub-agent asks: the prompt opens here, answered through us
            if is_child and m.apply_child_notification(method, str(child), data):
                self._dirty()
            return
        if self._maybe_request(method, data):
            return
        if method == "events.new":
            if m.add_event(data, live=True):
                self._dirty()
            return
        if m.apply_notification(method, data):
            self._dirty()
        if method == "agent.error":
            self.call_later(self.notify, str(data.get("message") or "The agent failed"),
                            severity="error", timeout=8)  # fmt: skip
        if method in ("agent.turn_end", "agent.complete", "agent.compacted"):
            self._status_soon()

    def _dirty(self) -> None:
        """Something changed: re-render soon (changes within a frame are coalesced)."""
        if not self._refresh_pending:
            self._refresh_pending = True
            self.call_later(self._schedule_refresh)

    def _schedule_refresh(self) -> None:
        self.set_timer(1 / 30, lambda: self.run_worker(self._refresh(), group="refresh"))

    async def _refresh(self) -> None:
        self._refresh_pending = False
        async with self._refresh_lock:
            items = transcript_items(self.model) if self.model is not None else []
            with contextlib.suppress(NoMatches):  # see _render_status
                await self.transcript.sync(items)
            self._render_status()

    def _status_soon(self) -> None:
        if not self._status_pending:
            self._status_pending = True
            self.call_later(lambda: self.run_worker(self._refresh_status(), group="status"))

    async def _refresh_status(self) -> None:
        self._status_pending = False
        m = self.model
        if m is None or not self.link.online:
            self._render_status()
            return
        with contextlib.suppress(ConnectionLost, RpcCallError, TimeoutError):
            session = await self.link.call("session.get", {"sessionId": m.id})
            m.set_session(session, "meta")
            if self.caps.has("context.get"):
                self.context = await self.link.call("context.get", {"sessionId": m.id})
        self._render_status()

    def _render_status(self) -> None:
        m = self.model
        width = self.size.width or 80
        parts: list[tuple[str, int]] = []  # (text, priority: lower is dropped first)
        if m is not None:
            # context.get reports the model from the session's events (model.switch
            # included); the session row's is the one it started with.
            parts.append((str(self.context.get("model") or m.session.get("model") or ""), 5))
            mode = m.session.get("permissionMode") or m.session.get("mode")
            if mode:
                parts.append((f"mode {mode}", 2))
            percent = self.context.get("percent")
            if isinstance(percent, int | float):
                used = self.context.get("usedTokens")
                window = self.context.get("contextWindow")
                detail = f" ({_k(used)}/{_k(window)})" if used and window else ""
                parts.append((f"ctx {percent:.0f}%{detail}", 3))
            # With sub-agents, the session's cost includes its children's.
            total = m.session.get("totalWithChildren")
            cost = total.get("cost") if isinstance(total, dict) else m.session.get("cost")
            parts.append((sessions.money(cost if isinstance(cost, int | float) else None), 4))
        else:
            parts.append(("new session: type a message", 5))
            if self.permission_mode:
                parts.append((f"mode {self.permission_mode}", 2))
        if not self.link.online:
            state = "⚠ offline"
        elif m is not None and m.busy:
            state = "● working · Esc aborts"
        else:
            state = "ready"
        parts.append((state, 6))
        while len(parts) > 1 and len(" · ".join(p for p, _ in parts)) > width - 2:
            parts.remove(min(parts, key=lambda p: p[1]))
        # A worker that was waiting on the server may get here while the app shuts down
        # and its widgets are already gone: then there is nothing left to show.
        with contextlib.suppress(NoMatches):
            self.query_one("#status", StatusLine).update(" · ".join(p for p, _ in parts))

    # -- connection -----------------------------------------------------------------

    def _notice(self, text: str, *, ok: bool = False) -> None:
        try:
            notice = self.query_one("#notice", ConnectionNotice)
        except NoMatches:  # shutting down (see _render_status)
            return
        notice.update(text)
        notice.set_class(bool(text), "shown")
        notice.set_class(ok, "ok")

    async def _watch_connection(self) -> None:
        while not self._exiting:
            await self.link.lost.wait()
            if self._exiting:
                return
            self._notice("Connection to tron-server lost — reconnecting…")
            self._render_status()

            def attempt(delay: float, error: str) -> None:
                self._notice(f"Connection to tron-server lost — retrying in {delay:.1f}s ({error})")

            await self.link.reconnect(attempt)
            if self._exiting:
                return
            self._restore_files = None  # the server may be another version now
            try:
                self.caps = await load(self.link.client)
                await self._load_commands()
                if self.model is not None:
                    await self._resume_session()
            except ConnectionLost:
                continue
            self._notice("Reconnected — caught up, nothing lost.", ok=True)
            self._render_status()
            self.set_timer(3, lambda: self._notice("") if self.link.online else None)

    async def _resume_session(self) -> None:
        """Subscribe to the session and catch up: its tree (once), every stored event
        after the last one seen, the head, and the running turn's snapshot."""
        m = self.model
        assert m is not None
        sid = m.id
        m.live.ignore_until_snapshot = True  # deltas before the snapshot are in it
        m.live_head = None
        try:
            await self.link.call("events.subscribe", {"sessionId": sid})
            if not m.loaded:
                tree = await self.link.call("session.getTree", {"sessionId": sid})
                for ev in tree.get("events") or []:
                    m.add_event(ev)
                if tree.get("headEventId"):
                    m.head_id = tree["headEventId"]
                m.loaded = True
            after = m.last_sequence
            while True:
                page = await self.link.call(
                    "events.sync", {"sessionId": sid, "afterSequence": after, "limit": 2000}
                )
                for ev in page.get("events") or []:
                    m.add_event(ev)
                after = page.get("nextSequence", after)
                if not page.get("hasMore") or not page.get("events"):
                    break
            m.set_session(await self.link.call("session.get", {"sessionId": sid}), "snapshot")
            if self.caps.has("agent.getState"):
                state = await self.link.call("agent.getState", {"sessionId": sid})
                m.apply_snapshot(state)
                for pending in state.get("pendingRequests") or state.get("pending") or []:
                    if isinstance(pending, dict):
                        self._maybe_request("", pending)
            else:
                m.live.ignore_until_snapshot = False
        finally:
            if m.live.ignore_until_snapshot and not self.link.online:
                m.live.ignore_until_snapshot = False
        self._dirty()
        await self._refresh_status()

    async def _load_commands(self) -> None:
        server: list[cmds.Command] = []
        if self.caps.has("command.list"):
            params = (
                {"sessionId": self.model.id}
                if self.model is not None
                else {"workingDirectory": str(self.cwd)}
            )
            with contextlib.suppress(RpcCallError):
                server = cmds.parse_server_commands(await self.link.call("command.list", params))
        self.commands = cmds.merge(cmds.client_commands(self.caps), server)

    async def _switch(self, session: dict[str, Any]) -> None:
        """Show another session (after a fork, a pick, /new)."""
        old = self.model
        if old is not None and old.id != session.get("id"):
            with contextlib.suppress(ConnectionLost, RpcCallError):
                await self.link.call("events.unsubscribe", {"sessionId": old.id})
        self.model = SessionModel(session)
        self.context = {}
        async with self._refresh_lock:
            await self.transcript.remove_children()
        await self._resume_session()
        await self._load_commands()

    async def _session_gone(self) -> None:
        self.notify("This session was deleted: the next message starts a new one.",
                    severity="warning")  # fmt: skip
        self.model = None
        self._dirty()

    # -- questions and approvals (agent.respond) --------------------------------------

    def _maybe_request(self, method: str, data: dict[str, Any]) -> bool:
        """A notification asking the user something (a question, an approval), or
        saying such a request was answered elsewhere. Shown only when the server
        has ``agent.respond`` to answer with."""
        request_id = data.get("requestId")
        if not isinstance(request_id, str) or not self.caps.has("agent.respond"):
            return False
        if any(k in data for k in ("answer", "resolved", "answeredBy", "cancelled")):
            self._pending_requests.pop(request_id, None)
            screen = self._request_screen
            if screen is not None and screen.request.request_id == request_id:
                self.call_later(screen.dismiss, None)
                self.call_later(self.notify, "Answered elsewhere.")
            return True
        if isinstance(data.get("question"), str):
            options = data.get("options") or []
            request = Request(
                request_id,
                "question",
                data["question"],
                tuple(str(o.get("label", o) if isinstance(o, dict) else o) for o in options),
                bool(data.get("multiSelect")),
            )
        elif isinstance(data.get("toolName") or data.get("tool"), str):
            name = str(data.get("toolName") or data.get("tool"))
            request = Request(request_id, "approval", f"Allow {name}?", tool_name=name,
                              tool_input=data.get("input", data.get("arguments")),
                              reason=str(data.get("reason") or ""),
                              suggestion=str(data.get("suggestion") or ""))  # fmt: skip
        else:
            return False
        self._pending_requests[request_id] = request
        self.call_later(self._show_request, request)
        return True

    def _show_request(self, request: Request) -> None:
        if self._request_screen is not None:
            return  # one at a time; the next is shown when this one is answered
        screen = RequestScreen(request)
        self._request_screen = screen

        async def answered(answer: Any) -> None:
            self._request_screen = None
            if answer is not None and self.model is not None:
                try:
                    await self.link.call(
                        "agent.respond",
                        {"sessionId": self.model.id, "requestId": request.request_id,
                         "answer": answer},
                    )  # fmt: skip
                    self._pending_requests.pop(request.request_id, None)
                except (RpcCallError, ConnectionLost) as exc:
                    self.notify(f"The answer was not taken: {exc}", severity="error")
            elif answer is None:
                self.notify("Not answered yet: /answer shows it again.", timeout=5)
                return
            rest = [r for r in self._pending_requests.values() if r is not request]
            if answer is not None and rest:
                self._show_request(rest[0])

        self.push_screen(screen, self._queued(answered))

    # -- input ----------------------------------------------------------------------

    def on_prompt_input_submitted(self, event: PromptInput.Submitted) -> None:
        self._hide_completions()
        save_history(self.address.home, event.text)
        self._enqueue(self._submit, event.text)

    async def _submit(self, text: str) -> None:
        parsed = cmds.split(text)
        if parsed is not None:
            name, args = parsed
            command = next((c for c in self.commands if c.name == name), None)
            if command is None:
                near = cmds.nearest(self.commands, name)
                hint = f" Did you mean {', '.join('/' + n for n in near)}?" if near else ""
                self.notify(f"Unknown command /{name}.{hint} /help lists them.",
                            severity="error")  # fmt: skip
                return
            if command.source == "client":
                await self._client_command(name, args)
                return
            if command.builtin and self.model is None:
                self.notify(f"/{name} needs a session: send a message first.",
                            severity="warning")  # fmt: skip
                return
        await self._send_message(text)

    async def _ensure_session(self, first: str) -> SessionModel:
        if self.model is not None:
            return self.model
        params: dict[str, Any] = {"workingDirectory": str(self.cwd)}
        if self.model_name:
            params["model"] = self.model_name
        title = sessions.title_of(first)
        if title:
            params["title"] = title
        session = await self.link.call("session.create", params)
        if self.permission_mode and self.caps.mode_method:
            await self.link.call(
                self.caps.mode_method, {"sessionId": session["id"], "mode": self.permission_mode}
            )
        await self._switch(session)
        assert self.model is not None
        return self.model

    async def _send_message(self, text: str) -> None:
        try:
            m = await self._ensure_session(text)
            result = await self.link.call(
                "agent.message", {"sessionId": m.id, "content": text, "queue": True}
            )
            if result.get("queued"):
                self.notify("Queued: it is sent when the current turn ends.", timeout=4)
            elif result.get("builtin"):
                await self._command_result(result)
        except ConnectionLost:
            self.input.load_text(text)
            self.notify(
                "Not sent: the connection is down. Your message is back in the input "
                "(check the transcript after reconnecting before sending it again).",
                severity="error",
            )
        except RpcCallError as exc:
            self.notify(f"Not sent: {exc.message}", severity="error", timeout=8)

    async def _command_result(self, result: dict[str, Any]) -> None:
        """Show what a server built-in command did (``/fork`` moves to the new session)."""
        output = str(result.get("output") or "")
        session = result.get("session")
        if result.get("command") == "fork" and isinstance(session, dict):
            await self._switch(session)
            self.notify(f"Forked: now in {session.get('id')}.")
        elif "mode" in result and self.model is not None:
            self.model.session["permissionMode"] = result["mode"]
            self._render_status()
            self.notify(output, timeout=4)
        elif "\n" in output:
            self.push_screen(InfoScreen(output))
        elif output:
            self.notify(output, timeout=6)
        self._status_soon()

    def _show_user_notification(self, data: dict[str, Any]) -> None:
        title = str(data.get("title") or "Notification")
        body = str(data.get("body") or "")
        high = data.get("urgency") == "high"
        self.call_later(
            self.notify,
            f"{title}\n{body}".strip(),
            title="tron",
            severity="warning" if high else "information",
            timeout=15 if high else 8,
        )
        if high:
            self.call_later(self.bell)

    # -- permission modes (Shift+Tab cycles, as in Claude Code) ------------------------

    def action_cycle_mode(self) -> None:
        if self.caps.mode_method is None:
            self.notify("This server has no permission modes.", timeout=3)
            return
        self._enqueue(self._cycle_mode)

    async def _cycle_mode(self) -> None:
        if self._mode_cycle is None:
            cycle = ["default", "acceptEdits", "plan"]
            if self.caps.mode_list_method is not None:
                with contextlib.suppress(RpcCallError):
                    listed = await self.link.call(self.caps.mode_list_method)
                    found = [str(m["id"]) for m in listed.get("modes") or []
                             if isinstance(m, dict) and m.get("cycle")]  # fmt: skip
                    cycle = found or cycle
            self._mode_cycle = cycle
        m = self.model
        current = (m.session.get("permissionMode") if m is not None else None) or (
            self.permission_mode or "default"
        )
        cycle = self._mode_cycle
        mode = cycle[(cycle.index(current) + 1) % len(cycle)] if current in cycle else cycle[0]
        if m is not None:
            assert self.caps.mode_method is not None
            result = await self.link.call(self.caps.mode_method, {"sessionId": m.id, "mode": mode})
            m.session["permissionMode"] = result.get("mode", mode)
        else:
            self.permission_mode = mode  # applied when the session is created
        self._render_status()
        self.notify(f"Mode: {mode}", timeout=2)

    async def _client_command(self, name: str, args: str) -> None:
        try:
            await self._run_client_command(name, args)
        except ConnectionLost:
            self.notify("The connection is down: try again once it is back.", severity="error")
        except RpcCallError as exc:
            self.notify(f"/{name}: {exc.message}", severity="error", timeout=8)

    async def _run_client_command(self, name: str, args: str) -> None:
        m = self.model
        if name == "quit":
            self.exit()
        elif name == "help":
            self.push_screen(InfoScreen(self._help_text()))
        elif name == "tree":
            self.action_tree()
        elif name == "answer":
            if not self._pending_requests:
                self.notify("Nothing is waiting for an answer.")
            else:
                self._show_request(next(iter(self._pending_requests.values())))
        elif name == "new":
            if m is not None:
                with contextlib.suppress(ConnectionLost, RpcCallError):
                    await self.link.call("events.unsubscribe", {"sessionId": m.id})
            self.model = None
            self.context = {}
            async with self._refresh_lock:
                await self.transcript.remove_children()
            self._dirty()
            self.notify("New session: it starts with your next message.")
        elif name == "sessions":
            found = await sessions.folder_sessions(self.link.client, self.cwd)
            if not found:
                self.notify("No sessions in this folder yet.")
                return
            self.pick_from = found
            choices = [(s["id"], sessions.describe(s)) for s in found]
            self.push_screen(
                PickScreen(f"Sessions of {self.cwd}", choices), self._queued(self._picked_session)
            )
        elif m is None:
            self.notify(f"/{name} needs a session: send a message first.", severity="warning")
        elif name == "model":
            if args:
                await self._switch_model(args)
            else:
                listed = await self.link.call("model.list")
                choices = [
                    (str(x["id"]), f"{x['id']}  ({x.get('provider', '')})")
                    for x in listed.get("models") or []
                ]
                self.push_screen(PickScreen("Models", choices), self._queued(self._picked_model))
        elif name == "compact":
            self.notify("Compacting…")
            result = await self.link.call("context.compact", {"sessionId": m.id}, timeout=600)
            self.notify(
                f"Compacted: {result.get('tokensBefore')} → {result.get('tokensAfter')} tokens."
            )
            self._status_soon()
        elif name == "context":
            ctx = await self.link.call("context.get", {"sessionId": m.id})
            self.context = ctx
            self.push_screen(InfoScreen(
                f"Model {ctx.get('model')}\nContext window {ctx.get('contextWindow')} tokens\n"
                f"In use {ctx.get('usedTokens')} tokens ({ctx.get('percent', 0):.1f}%)"
            ))  # fmt: skip
            self._render_status()
        elif name == "cost":
            session = await self.link.call("session.get", {"sessionId": m.id})
            m.set_session(session, "meta")
            usage = m.usage_totals()
            self.push_screen(InfoScreen(
                f"Session {m.id}\nCost {sessions.money(session.get('cost'))}\n"
                f"Input {session.get('inputTokens')} · output {session.get('outputTokens')} · "
                f"cache read {session.get('cacheReadTokens')} · "
                f"cache write {session.get('cacheCreationTokens')} tokens\n"
                f"{usage.turns} model calls, {session.get('messageCount')} messages"
            ))  # fmt: skip
        elif name == "fork":
            await self._fork(m.head_id or m.session.get("headEventId") or "")
        elif name == "diff":
            result = await self.link.call("session.diff", {"sessionId": m.id})
            files = result.get("files") or []
            root = m.session.get("workingDirectory")
            self.push_screen(DiffScreen(f"{len(files)} file(s) changed", render_files(files, root)))

    def _help_text(self) -> Text:
        text = Text("Keys\n", style="bold")
        text.append(
            "  Enter send · Ctrl+J, or \\ then Enter: new line · ↑/↓ history\n"
            "  Esc abort the running turn · Ctrl+C twice quit · Ctrl+T session tree\n"
            "  Shift+Tab next permission mode (default → acceptEdits → plan)\n"
            "  Tab completes a /command · click or Enter on a tool card: all its output\n\n"
        )
        text.append("Commands\n", style="bold")
        for c in self.commands:
            hint = f" {c.argument_hint}" if c.argument_hint else ""
            text.append(f"  /{c.name}{hint}", style="cyan")
            text.append(f"  {c.description}\n")
        return text

    async def _picked_model(self, model: str | None) -> None:
        if model:
            await self._client_command("model", model)

    async def _switch_model(self, model: str) -> None:
        m = self.model
        assert m is not None
        result = await self.link.call("model.switch", {"sessionId": m.id, "model": model})
        self.notify(f"Model: {result.get('previousModel')} → {result.get('newModel')}")
        self._status_soon()

    async def _fork(self, event_id: str) -> None:
        result = await self.link.call("session.fork", {"eventId": event_id})
        session = result["session"]
        await self._switch(session)
        self.notify(f"Forked: now in {session['id']}.")

    # -- completion (the input calls these synchronously: see InputOwner) ------------

    def _matches(self, text: str) -> list[cmds.Command]:
        if text.startswith("/") and " " not in text and "\n" not in text:
            return cmds.matching(self.commands, text[1:])
        return []

    def completing(self, text: str) -> bool:
        return bool(self._matches(text))

    def on_enter(self, text: str) -> str | None:
        found = self._matches(text)
        if not found or any(c.name == text[1:] for c in found):
            return text
        chosen = self._highlighted_completion(found)
        self._complete(chosen)
        return None if chosen.argument_hint else f"/{chosen.name}"

    def on_completion_key(self, key: str, text: str) -> None:
        found = self._matches(text)
        if not found:
            return
        if key == "tab":
            self._complete(self._highlighted_completion(found))
            return
        self._show_completions(found)
        box = self.query_one("#completions", OptionList)
        if key == "up":
            box.action_cursor_up()
        else:
            box.action_cursor_down()

    def on_prompt_input_input_changed(self, event: PromptInput.InputChanged) -> None:
        found = self._matches(event.text)
        if found:
            self._show_completions(found)
        else:
            self._hide_completions()

    def _show_completions(self, found: list[cmds.Command]) -> None:
        box = self.query_one("#completions", OptionList)
        if [c.name for c in found] == [c.name for c in self._completions]:
            return
        self._completions = found
        box.clear_options()
        for c in found:
            label = Text(f"/{c.name}", style="bold")
            if c.argument_hint:
                label.append(f" {c.argument_hint}", style="dim")
            label.append(f"  {c.description}", style="dim")
            box.add_option(Option(label, id=c.name))
        box.highlighted = 0
        box.add_class("shown")

    def _hide_completions(self) -> None:
        self._completions = []
        self.query_one("#completions", OptionList).remove_class("shown")

    def _highlighted_completion(self, found: list[cmds.Command]) -> cmds.Command:
        """The highlighted entry when the list shows ``found``, else the first match."""
        box = self.query_one("#completions", OptionList)
        index = box.highlighted
        shown = [c.name for c in self._completions] == [c.name for c in found]
        if shown and index is not None and 0 <= index < len(found):
            return found[index]
        return found[0]

    def _complete(self, command: cmds.Command) -> None:
        self._hide_completions()
        self.input.load_text(f"/{command.name}" + (" " if command.argument_hint else ""))
        self.input.move_cursor(self.input.document.end)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option_list.id == "completions":
            chosen = next((c for c in self._completions if c.name == event.option.id), None)
            if chosen is not None:
                self._complete(chosen)
                self.input.focus()

    # -- actions --------------------------------------------------------------------

    async def action_escape(self) -> None:
        if self._completions:
            self._hide_completions()
            return
        m = self.model
        if m is not None and m.busy:
            self.run_worker(self._abort(), group="abort")

    async def _abort(self) -> None:
        m = self.model
        if m is None:
            return
        try:
            result = await self.link.call("agent.abort", {"sessionId": m.id})
            self.notify("Aborted." if result.get("aborted") else "Nothing to abort.", timeout=3)
        except (ConnectionLost, RpcCallError) as exc:
            self.notify(f"Could not abort: {exc}", severity="error")

    async def action_interrupt(self) -> None:
        now = time.monotonic()
        if now - self._quit_armed < QUIT_WINDOW:
            self.exit()
            return
        self._quit_armed = now
        if self._completions:
            self._hide_completions()
        if self.input.text:
            self.input.load_text("")
        m = self.model
        if m is not None and m.busy:
            self.run_worker(self._abort(), group="abort")
        self.notify("Press Ctrl+C again to quit.", timeout=QUIT_WINDOW)

    def action_tree(self) -> None:
        m = self.model
        if m is None:
            self.notify("No session yet: send a message first.")
            return
        self.push_screen(TreeScreen(m), self._queued(self._tree_choice))

    async def _tree_choice(self, choice: TreeChoice | None) -> None:
        m = self.model
        if choice is None or m is None:
            return
        try:
            if choice.action == "fork":
                await self._fork(choice.event_id)
                return
            if await self._server_restores_files():
                await self._offer_rewind(choice.event_id)
                return
            await self._rewind(choice.event_id)
        except ConnectionLost:
            self.notify("The connection is down: try again once it is back.", severity="error")
        except RpcCallError as exc:
            self.notify(f"Could not {choice.action}: {exc.message}", severity="error", timeout=8)

    async def _offer_rewind(self, event_id: str) -> None:
        """Conversation only, or with the files: the files that would go back listed
        first (``session.previewRewind``), their diffs one choice away."""
        m = self.model
        if m is None:
            return
        title = "Rewind"
        files: list[dict[str, Any]] = []
        if self.caps.has("session.previewRewind"):
            preview = await self.link.call(
                "session.previewRewind", {"sessionId": m.id, "eventId": event_id}
            )
            files = preview.get("files") or []
            root = m.session.get("workingDirectory")
            if files:
                title = f"Rewind · {len(files)} file(s) would go back:\n{file_lines(files, root)}\n"
            else:
                title = "Rewind · no file the agent changed would go back"
        options = [
            ("conversation", "Conversation only (files stay as they are)"),
            ("files", "Conversation and files (files the agent changed go back)"),
        ]
        if files:
            options.append(("diff", "Show what the files would go back to (diffs)"))

        async def picked(how: str | None) -> None:
            if how == "diff":
                body = render_files(files, m.session.get("workingDirectory"))
                self.push_screen(
                    DiffScreen("What a rewind with files writes", body),
                    self._queued(lambda _: self._offer_rewind(event_id)),
                )
            elif how is not None:
                await self._rewind(event_id, restore_files=how == "files")

        self.push_screen(PickScreen(title, options), self._queued(picked))

    async def _server_restores_files(self) -> bool:
        """Whether ``session.rewind`` takes ``restoreFiles`` (asked once per server)."""
        if self._restore_files is None:
            self._restore_files = await accepts_param(
                self.link.client, "session.rewind", "restoreFiles", True, {"eventId": "evt_x"}
            )
        return self._restore_files

    async def _rewind(
        self, event_id: str, *, restore_files: bool = False, force: bool = False
    ) -> None:
        m = self.model
        if m is None:
            return
        params: dict[str, Any] = {"sessionId": m.id, "eventId": event_id}
        if restore_files:
            params["restoreFiles"] = True
        if force:
            params["force"] = True
        try:
            session = await self.link.call("session.rewind", params)
        except RpcCallError as exc:
            files = exc.data.get("files") or exc.data.get("conflicts")
            if restore_files and not force and exc.category == "conflict" and files:
                listed = "\n".join(
                    f"  {f.get('path', f) if isinstance(f, dict) else f}" for f in files
                )
                options = [("cancel", "Cancel"), ("force", "Restore anyway (overwrite them)")]

                async def decided(what: str | None) -> None:
                    if what == "force":
                        await self._rewind(event_id, restore_files=True, force=True)

                self.push_screen(
                    PickScreen(f"Changed outside the agent since:\n{listed}\n", options),
                    self._queued(decided),
                )
                return
            self.notify(f"Could not rewind: {exc.message}", severity="error", timeout=8)
            return
        except ConnectionLost:
            self.notify("The connection is down: try again once it is back.", severity="error")
            return
        m.set_session(session, "rewind")
        self._dirty()
        what = "Rewound conversation and files" if restore_files else "Rewound"
        self.notify(f"{what}: later messages stay in the tree (fork from them).")
        self._status_soon()


def _k(value: Any) -> str:
    if not isinstance(value, int | float):
        return "?"
    return f"{value / 1000:.0f}k" if value >= 1000 else str(int(value))


__all__ = ["InfoScreen", "TronApp"]
