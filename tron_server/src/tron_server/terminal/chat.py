"""The chat: a session's transcript, the input, the status line, and everything a
user does there (send, abort, complete, answer, rewind, switch sessions).

Everything goes through the protocol (:class:`~.link.Link` over ``TronClient``):
the transcript is the session's stored events (deduplicated by id) plus the
live ``agent.*`` notifications, resumed after a drop with subscribe → sync →
``agent.getState``, as ``docs/protocol.md`` prescribes.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from textual.app import ComposeResult
from textual.css.query import NoMatches
from textual.screen import Screen

from ..client import ConnectionLost, Notification, RpcCallError
from . import commands as cmds
from . import sessions
from .browserbar import BrowserBar
from .capabilities import Capabilities, load
from .completion import Completer
from .history import load_history, save_history
from .host import Then
from .items import Note, transcript_items
from .link import Link
from .model import SessionModel, user_text
from .questions import Questions
from .request_panel import Request, RequestPanel
from .rewind import Rewinder
from .screens import PickScreen
from .slash import ClientCommands, unknown_command
from .status import status_text
from .widgets import ConnectionNotice, PromptInput, StatusLine, Transcript

#: Two Ctrl+C within this many seconds quit.
QUIT_WINDOW = 2.0


class ChatScreen(Screen[None]):
    """The conversation with one session (another after a fork, a pick, ``/new``)."""

    DEFAULT_CSS = """
    ChatScreen { layout: vertical; }
    """

    def __init__(
        self,
        *,
        link: Link,
        capabilities: Capabilities,
        home: Path,
        cwd: Path,
        session: dict[str, Any] | None = None,
        pick_from: list[dict[str, Any]] | None = None,
        first_prompt: str | None = None,
        model: str | None = None,
        provider: str | None = None,
        permission_mode: str | None = None,
        notes: list[str] | None = None,
    ) -> None:
        super().__init__()
        self.link = link
        self.caps = capabilities
        self.home = home
        self.cwd = cwd
        self.model: SessionModel | None = SessionModel(session) if session else None
        self.pick_from = pick_from
        self.first_prompt = first_prompt
        self.model_name = model
        self.provider = provider
        self.permission_mode = permission_mode
        self.commands: list[cmds.Command] = cmds.client_commands(capabilities)
        self.context: dict[str, Any] = {}
        self.exiting = False
        self.notes: list[Note] = []
        self._note_count = 0
        #: Messages sent while a turn ran, not started yet: (text, runId).
        self.pending: list[tuple[str, str]] = []
        for text in notes or []:
            self.say(text)
        self.questions = Questions(self)
        self.rewinder = Rewinder(self)
        self.slash = ClientCommands(self, self.questions, self.rewinder)
        self._refresh_pending = False
        self._refresh_lock = asyncio.Lock()
        self._status_pending = False
        self._quit_armed = 0.0
        self._mode_cycle: list[str] | None = None
        # User actions (messages, commands, picks) run one after another in a worker,
        # never inside a message handler: they wait on the network and on mounts.
        self._actions: asyncio.Queue[Callable[[], Awaitable[None]]] = asyncio.Queue()
        self.input = PromptInput(history=load_history(home), id="input")
        self.completer = Completer(self.input, id="completions")
        self.panel = RequestPanel(id="request")
        self.completer.commands = self.commands

    # -- layout ---------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Transcript(id="transcript")
        yield ConnectionNotice(id="notice")
        yield self.panel
        yield self.completer
        yield self.input
        yield BrowserBar(id="browser")
        yield StatusLine(id="status")

    @property
    def session_id(self) -> str | None:
        return self.model.id if self.model is not None else None

    @property
    def transcript(self) -> Transcript:
        return self.query_one("#transcript", Transcript)

    def set_commands(self, commands: list[cmds.Command]) -> None:
        self.commands = commands
        self.completer.commands = commands

    async def on_mount(self) -> None:
        self.transcript.anchor()
        self.input.owner = self.completer
        self.input.focus()
        self.run_worker(self._watch_connection(), name="connection", group="connection")
        self.run_worker(self._run_actions(), name="actions", group="actions")
        self._enqueue(self._start)

    # -- user actions, one at a time ------------------------------------------------

    def _enqueue(self, action: Callable[..., Awaitable[None]], *args: Any) -> None:
        """Run ``action(*args)`` after the actions before it (in the actions worker)."""
        self._actions.put_nowait(lambda: action(*args))

    def open_screen(self, screen: Screen[Any], then: Then | None = None) -> None:
        if then is None:
            self.app.push_screen(screen)
        else:
            self.app.push_screen(screen, lambda result: self._enqueue(then, result))

    def say(self, text: str, *, error: bool = False) -> None:
        self._note_count += 1
        self.notes.append(Note(str(self._note_count), text, "error" if error else "notice"))
        if error:
            self.notify(text, severity="error", timeout=8)
        if self.is_mounted:
            self.dirty()

    def _pin_notes(self) -> None:
        """The notes written so far stay after the current head (a message is sent)."""
        head = self.model.head_id if self.model is not None else None
        for note in self.notes:
            if note.anchor is None and head is not None:
                note.anchor = head

    def ask(self, request: Request) -> None:
        self.call_later(self.panel.ask, request)

    async def close_request(self) -> None:
        await self.panel.close()
        self.input.focus()

    def on_request_panel_answered(self, event: RequestPanel.Answered) -> None:
        event.stop()
        self._enqueue(self.questions.answered, event.request, event.answer)

    def later(self, callback: Callable[..., object], *args: Any) -> None:
        self.call_later(callback, *args)

    def quit(self) -> None:
        self.app.exit()

    async def _run_actions(self) -> None:
        while True:
            action = await self._actions.get()
            try:
                await action()
            except ConnectionLost:
                self.say("The connection is down: try again once it is back.", error=True)
            except RpcCallError as exc:
                self.say(f"The server refused: {exc.message}", error=True)

    async def _start(self) -> None:
        try:
            await self._load_commands()
            if self.pick_from is not None:
                self.pick_session(self.pick_from)
                return
            if self.model is not None:
                await self._resume_session()
                if self.permission_mode and self.caps.mode_method:
                    await self.link.call(
                        self.caps.mode_method,
                        {"sessionId": self.model.id, "mode": self.permission_mode},
                    )
            else:
                self.dirty()
            await self._send_first_prompt()
        except ConnectionLost:
            pass  # the connection watcher says so and resumes

    def pick_session(self, found: list[dict[str, Any]]) -> None:
        self.pick_from = found
        choices = [(s["id"], sessions.describe(s)) for s in found]
        self.open_screen(PickScreen(f"Sessions of {self.cwd}", choices), self._picked_session)

    async def _picked_session(self, session_id: str | None) -> None:
        if session_id is None:
            self.quit()
            return
        session = next((s for s in self.pick_from or [] if s["id"] == session_id), None)
        if session is None:
            return
        await self.switch(session)
        if session.get("status") != "active":
            self.say("That session has ended: fork it from the tree (Ctrl+T) to continue.")
        await self._send_first_prompt()

    async def _send_first_prompt(self) -> None:
        """The message given on the command line, once."""
        prompt, self.first_prompt = self.first_prompt, None
        if prompt:
            await self._submit(prompt)

    # -- notifications (called by the connection's reader, in wire order) ----------

    def on_notification(self, n: Notification) -> None:
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
                self.dirty()
            elif method == "session.deleted" and data.get("sessionId") == m.id:
                self.call_later(self._session_gone)
            return
        if n.session_id != m.id:
            child = n.session_id
            is_child = bool(child) and data.get("parentSessionId") == m.id
            if is_child and self.questions.offer(data):
                return  # a sub-agent asks: the prompt opens here, answered through us
            if is_child and m.apply_child_notification(method, str(child), data):
                self.dirty()
            return
        if self.questions.offer(data):
            return
        if method.startswith("browser."):  # the agent's browser: its URL and last action
            with contextlib.suppress(NoMatches):
                self.query_one(BrowserBar).show(m.id, data)
            return
        if method == "events.new":
            if m.add_event(data, live=True):
                self._sent(data)
                self.dirty()
            return
        if m.apply_notification(method, data):
            self.dirty()
        if method == "agent.error":
            self.call_later(self.notify, str(data.get("message") or "The agent failed"),
                            severity="error", timeout=8)  # fmt: skip
        if method == "agent.complete" and self.pending:
            run_id = data.get("runId")
            self.pending = [p for p in self.pending if p[1] != run_id]
        if method in ("agent.turn_end", "agent.complete", "agent.compacted"):
            self.status_soon()

    def _sent(self, ev: dict[str, Any]) -> None:
        """A queued message started: it is a message of the transcript now."""
        if ev.get("type") != "message.user" or not self.pending:
            return
        text = user_text((ev.get("payload") or {}).get("content"))
        for i, (queued, _) in enumerate(self.pending):
            if queued == text:
                del self.pending[i]
                return

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
            self.call_later(self.app.bell)

    # -- rendering ------------------------------------------------------------------

    def dirty(self) -> None:
        """Something changed: re-render soon (changes within a frame are coalesced)."""
        if not self._refresh_pending:
            self._refresh_pending = True
            self.call_later(self._schedule_refresh)

    def _schedule_refresh(self) -> None:
        self.set_timer(1 / 30, lambda: self.run_worker(self.refresh_transcript(), group="refresh"))

    async def refresh_transcript(self) -> None:
        self._refresh_pending = False
        async with self._refresh_lock:
            items = transcript_items(self.model, self.notes, [t for t, _ in self.pending])
            with contextlib.suppress(NoMatches):  # see render_status
                await self.transcript.sync(items)
            self.render_status()

    def status_soon(self) -> None:
        if not self._status_pending:
            self._status_pending = True
            self.call_later(lambda: self.run_worker(self._refresh_status(), group="status"))

    async def _refresh_status(self) -> None:
        self._status_pending = False
        m = self.model
        if m is None or not self.link.online:
            self.render_status()
            return
        with contextlib.suppress(ConnectionLost, RpcCallError, TimeoutError):
            session = await self.link.call("session.get", {"sessionId": m.id})
            m.set_session(session, "meta")
            if self.caps.has("context.get"):
                self.context = await self.link.call("context.get", {"sessionId": m.id})
        self.render_status()

    def render_status(self) -> None:
        text = status_text(
            self.model,
            self.context,
            online=self.link.online,
            permission_mode=self.permission_mode,
            width=self.size.width or 80,
        )
        # A worker that was waiting on the server may get here while the app shuts down
        # and its widgets are already gone: then there is nothing left to show.
        with contextlib.suppress(NoMatches):
            self.query_one("#status", StatusLine).update(text)

    def notice(self, text: str, *, ok: bool = False) -> None:
        try:
            notice = self.query_one("#notice", ConnectionNotice)
        except NoMatches:  # shutting down (see render_status)
            return
        notice.update(text)
        notice.set_class(bool(text), "shown")
        notice.set_class(ok, "ok")

    # -- the connection and the session ---------------------------------------------

    async def _watch_connection(self) -> None:
        while not self.exiting:
            await self.link.lost.wait()
            if self.exiting:
                return
            self.notice("Connection to tron-server lost — reconnecting…")
            self.render_status()

            def attempt(delay: float, error: str) -> None:
                self.notice(f"Connection to tron-server lost — retrying in {delay:.1f}s ({error})")

            await self.link.reconnect(attempt)
            if self.exiting:
                return
            self.rewinder.forget_server()
            try:
                self.caps = await load(self.link.client)
                await self._load_commands()
                if self.model is not None:
                    await self._resume_session()
            except ConnectionLost:
                continue
            self.notice("Reconnected — caught up, nothing lost.", ok=True)
            self.render_status()
            self.set_timer(3, lambda: self.notice("") if self.link.online else None)

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
                if not m.busy:
                    self.pending = []  # the server's queue is empty: they ran, or were dropped
                for pending in state.get("pendingRequests") or state.get("pending") or []:
                    if isinstance(pending, dict):
                        self.questions.offer(pending)
            else:
                m.live.ignore_until_snapshot = False
        finally:
            if m.live.ignore_until_snapshot and not self.link.online:
                m.live.ignore_until_snapshot = False
        self.dirty()
        await self._refresh_status()

    async def _load_commands(self) -> None:
        server: list[cmds.Command] = []
        params = (
            {"sessionId": self.model.id}
            if self.model is not None
            else {"workingDirectory": str(self.cwd)}
        )
        if self.caps.has("command.list"):
            with contextlib.suppress(RpcCallError):
                server = cmds.parse_server_commands(await self.link.call("command.list", params))
        self.set_commands(cmds.merge(cmds.client_commands(self.caps), server))
        if self.caps.has("mcp.list"):
            # Resources for @ completion: what the servers listed (none is started for it).
            with contextlib.suppress(RpcCallError):
                listing = await self.link.call("mcp.list", {**params, "connect": False})
                self.completer.mentions = cmds.parse_mentions(listing)

    async def switch(self, session: dict[str, Any]) -> None:
        """Show another session (after a fork, a pick, /new)."""
        old = self.model
        if old is not None and old.id != session.get("id"):
            with contextlib.suppress(ConnectionLost, RpcCallError):
                await self.link.call("events.unsubscribe", {"sessionId": old.id})
        self.model = SessionModel(session)
        self.context = {}
        with contextlib.suppress(NoMatches):
            self.query_one(BrowserBar).clear()
        async with self._refresh_lock:
            await self.transcript.remove_children()
        await self._resume_session()
        await self._load_commands()

    async def start_new(self) -> None:
        m = self.model
        if m is not None:
            with contextlib.suppress(ConnectionLost, RpcCallError):
                await self.link.call("events.unsubscribe", {"sessionId": m.id})
        self.model = None
        self.context = {}
        self.notes = []
        self.pending = []
        with contextlib.suppress(NoMatches):
            self.query_one(BrowserBar).clear()
        async with self._refresh_lock:
            await self.transcript.remove_children()
        self.dirty()

    async def _session_gone(self) -> None:
        self.model = None
        self.pending = []
        self.say("This session was deleted: the next message starts a new one.", error=True)

    # -- input ----------------------------------------------------------------------

    def on_prompt_input_submitted(self, event: PromptInput.Submitted) -> None:
        self.completer.hide()
        save_history(self.home, event.text)
        self._enqueue(self._submit, event.text)

    def on_prompt_input_input_changed(self, event: PromptInput.InputChanged) -> None:
        self.completer.follow(event.text)

    async def _submit(self, text: str) -> None:
        parsed = cmds.split(text)
        if parsed is not None:
            name, args = parsed
            command = next((c for c in self.commands if c.name == name), None)
            if command is None:
                self.say(unknown_command(self.commands, name), error=True)
                return
            if command.source == "client":
                await self.slash.run(name, args)
                return
            if command.builtin and self.model is None:
                self.say(f"/{name} needs a session: send a message first.")
                return
        await self._send_message(text, prompt=parsed is None)

    async def _ensure_session(self, first: str) -> SessionModel:
        if self.model is not None:
            return self.model
        params: dict[str, Any] = {"workingDirectory": str(self.cwd)}
        if self.model_name:
            params["model"] = self.model_name
        if self.provider:
            params["provider"] = self.provider
        title = sessions.title_of(first)
        if title:
            params["title"] = title
        session = await self.link.call("session.create", params)
        if self.permission_mode and self.caps.mode_method:
            await self.link.call(
                self.caps.mode_method, {"sessionId": session["id"], "mode": self.permission_mode}
            )
        await self.switch(session)
        assert self.model is not None
        return self.model

    async def send(self, text: str) -> None:
        await self._send_message(text)

    def edit_text(self, text: str) -> None:
        self.input.load_text(text)
        self.input.move_cursor(self.input.document.end)
        self.input.focus()

    async def _leave_out_failed(self, m: SessionModel) -> None:
        """A prompt whose turn failed before any reply would reach the model merged
        with the next one: the next goes in its place (a rewind to before it; the
        failed attempt stays in the tree), and the transcript says so."""
        failed = m.failed_prompt(unanswered=True)
        if failed is None or m.busy or not failed.get("parentId"):
            return
        if await self.rewinder.rewind(str(failed["parentId"]), quiet=True):
            self.say(
                "The message before failed with no reply: it is left out, the model does "
                "not see it (it stays in the tree, Ctrl+T; /retry would have sent it again)."
            )

    async def _send_message(self, text: str, *, prompt: bool = True) -> None:
        """Send ``text``; a ``prompt`` (not a ``/`` command) takes the place of a
        prompt that failed with no reply (see :meth:`_leave_out_failed`)."""
        try:
            m = await self._ensure_session(text)
            if prompt:
                await self._leave_out_failed(m)
            self._pin_notes()
            result = await self.link.call(
                "agent.message", {"sessionId": m.id, "content": text, "queue": True}
            )
            if result.get("queued"):
                self.pending.append((text, str(result.get("runId") or "")))
                self.dirty()
            elif result.get("builtin"):
                await self._command_result(result)
        except ConnectionLost:
            self.input.load_text(text)
            self.say(
                "Not sent: the connection is down. Your message is back in the input "
                "(check the transcript after reconnecting before sending it again).",
                error=True,
            )
        except RpcCallError as exc:
            self.input.load_text(text)
            self.say(f"Not sent: {exc.message} (your message is back in the input)", error=True)

    async def _command_result(self, result: dict[str, Any]) -> None:
        """Show what a server built-in command did (``/fork`` moves to the new session)."""
        output = str(result.get("output") or "")
        session = result.get("session")
        if result.get("command") == "fork" and isinstance(session, dict):
            await self.switch(session)
            self.say(f"Forked: now in {session.get('id')}.")
        elif "mode" in result and self.model is not None:
            self.model.session["permissionMode"] = result["mode"]
            self.render_status()
            self.say(output)
        elif output:
            self.say(output)
        self.status_soon()

    # -- keys (bound on the app, so they act over any screen) -------------------------

    def action_cycle_mode(self) -> None:
        """Shift+Tab: the next permission mode, as in Claude Code."""
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
        self.render_status()
        self.notify(f"Mode: {mode}", timeout=2)

    def action_escape(self) -> None:
        if self.completer.shown:
            self.completer.hide()
            return
        m = self.model
        if m is not None and (m.busy or self.pending):
            self.run_worker(self._abort(), group="abort")

    async def _abort(self) -> None:
        """Abort the running turn; the messages queued behind it (the server drops
        them) go back into the input, as in Claude Code."""
        m = self.model
        if m is None:
            return
        try:
            result = await self.link.call("agent.abort", {"sessionId": m.id})
        except (ConnectionLost, RpcCallError) as exc:
            self.say(f"Could not abort: {exc}", error=True)
            return
        queued = [text for text, _ in self.pending]
        self.pending = []
        if queued:
            typed = self.input.text
            self.input.load_text("\n".join([*queued, typed] if typed.strip() else queued))
            self.input.move_cursor(self.input.document.end)
        aborted = "Aborted." if result.get("aborted") else "Nothing was running."
        back = " Your queued message is back in the input." if queued else ""
        self.say(aborted + back)

    def action_interrupt(self) -> None:
        now = time.monotonic()
        if now - self._quit_armed < QUIT_WINDOW:
            self.quit()
            return
        self._quit_armed = now
        if self.completer.shown:
            self.completer.hide()
        if self.input.text:
            self.input.load_text("")
        m = self.model
        if m is not None and (m.busy or self.pending):
            self.run_worker(self._abort(), group="abort")
        self.notify("Press Ctrl+C again to quit.", timeout=QUIT_WINDOW)

    def action_tree(self) -> None:
        self.rewinder.open_tree()


__all__ = ["QUIT_WINDOW", "ChatScreen"]
