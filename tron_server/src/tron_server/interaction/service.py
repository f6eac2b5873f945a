"""The user in the loop, for the whole server: permission modes, the approval gate before
each tool, questions, notifications, and answers (live or after a restart).

State lives in the events, so it follows forks and rewinds and survives restarts:

- ``config.permission_mode`` sets a session's mode from there on; a session without one
  uses ``permissions.defaultMode`` of its settings, else the server's default mode
  (``--default-permission-mode``, ``default`` unless set). A sub-agent's session
  (a child) without one follows its parent's mode *as it is now* (the user switching the
  parent to plan mode switches its running children too).
- ``config.permission_rule`` adds a rule for the rest of the session (an approval answered
  "allow always"). A child's "allow always" is recorded in its top-level session, whose
  rules its children inherit: approving once covers the whole task.
- ``interaction.requested`` / ``interaction.resolved`` are the requests (:mod:`.requests`).

While a run is going, its permission state is kept in memory (:class:`_Live`, loaded at its
first tool call), and a mode switch from a client (``session.setMode``) updates it and is
recorded through the run's writer, so the very next tool call follows it.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import anyio

from tron_events import AsyncEventStore, Event, Session, SessionNotFound
from tron_events.messages import ToolUseBlock

from ..browser.urls import UrlRefused, UrlVerdict, non_public, parse_web_url, resolve_host
from ..errors import (
    AgentBusyError,
    InvalidOperationError,
    InvalidParams,
    SessionNotActiveError,
    SessionNotFoundError,
)
from ..hooks.base import HookContext, HookDecision
from ..hooks.guardrails import path_policy
from ..paths import PathError
from ..protocol import SESSION_NOTIFICATION
from ..tools.base import ToolContext, ToolResult
from .modes import CYCLE, MODE_DESCRIPTIONS, MODES, PATH_TOOLS, PermissionMode, is_mode
from .pending import PendingTurn, find_pending_turn
from .policy import HookPermission, decide
from .preview import change_preview
from .requests import AlreadyAnswered, Answer, Requests, new_request_id, parse_answer
from .resume import Resumption
from .rules import (
    Behavior,
    CallFacts,
    Rule,
    RuleSet,
    RuleSyntaxError,
    parse_rule,
    suggest_rule,
    url_host,
)
from .settings import PermissionSettings, PermissionSettingsError, load_permission_settings

if TYPE_CHECKING:
    from ..agent.orchestrator import Orchestrator
    from ..agent.turn import AgentRun

__all__ = ["AlreadyAnswered", "Interaction"]

log = logging.getLogger("tron_server.interaction")

Publish = Callable[[str, str, dict[str, Any]], None]


@dataclass
class _Live:
    """A running session's permission state (valid while ``run`` is its current run)."""

    run: AgentRun
    settings: PermissionSettings
    explicit_mode: PermissionMode | None
    grants: list[Rule]
    parent: str | None
    run_rules: list[Rule] = field(default_factory=list)
    #: tool call id → (host, whether it had private addresses) of a URL call the gate let
    #: through (by a rule, a hook or the user): what ``check_url`` allows for that call.
    approved_urls: dict[str, tuple[str, bool]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Stored:
    explicit_mode: PermissionMode | None
    grants: list[Rule]


class Interaction:
    """One per server. ``timeout``: seconds a question or an approval waits (None: until
    answered, aborted or the server stops); ``allow_bypass``: whether bypassPermissions
    may be used at all (the server's ``--allow-bypass-permissions``); ``default_mode``: the
    mode of sessions that recorded none and whose settings name none."""

    def __init__(
        self,
        store: AsyncEventStore,
        orchestrator: Orchestrator,
        *,
        home: Path,
        timeout: float | None = None,
        allow_bypass: bool = False,
        default_mode: PermissionMode = "default",
    ) -> None:
        self.store = store
        self.orchestrator = orchestrator
        self.home = home
        self.timeout = timeout if timeout and timeout > 0 else None
        self.allow_bypass = allow_bypass
        self.default_mode: PermissionMode = default_mode
        self.requests = Requests()
        self._live: dict[str, _Live] = {}
        self._preapproved: set[str] = set()
        self._claimed: set[str] = set()

    # -- modes -------------------------------------------------------------------------

    def modes(self) -> list[dict[str, Any]]:
        """Every mode with its description, whether this server allows it, and the order
        Shift+Tab cycles through."""
        cycle = [*CYCLE, *(["bypassPermissions"] if self.allow_bypass else [])]
        return [
            {
                "id": mode,
                "description": MODE_DESCRIPTIONS[mode],
                "available": mode != "bypassPermissions" or self.allow_bypass,
                "cycle": mode in cycle,
            }
            for mode in MODES
        ]

    async def mode(self, session_id: str) -> PermissionMode:
        """The session's mode now (see the module docstring)."""
        live = self._current(session_id)
        if live is not None:
            return await self._effective(live)
        stored = await self._stored(session_id)
        if stored.explicit_mode is not None:
            return self._usable(stored.explicit_mode)
        parent = (await self.orchestrator.profile(session_id)).parent_session_id
        if parent is not None:
            return await self.mode(parent)
        session = await self.store.get_session(session_id)
        try:
            settings = load_permission_settings(Path(session.working_directory), self.home)
        except PermissionSettingsError:
            return "default"
        return self._usable(settings.default_mode or self.default_mode)

    async def set_mode(self, session_id: str, mode: str) -> tuple[str, str]:
        """Record ``config.permission_mode``; (previous mode, new mode). Raises
        :class:`InvalidParams` for an unknown mode or bypassPermissions on a server that
        does not allow it."""
        if not is_mode(mode):
            raise InvalidParams(f"unknown permission mode {mode!r}; use one of {', '.join(MODES)}")
        session = await self._active_session(session_id)
        if mode == "bypassPermissions":
            disabled = False
            try:
                wd = Path(session.working_directory)
                disabled = load_permission_settings(wd, self.home).disable_bypass
            except PermissionSettingsError:
                disabled = True
            if not self.allow_bypass or disabled:
                raise InvalidParams(
                    "bypassPermissions is not available: start tron-server with "
                    "--allow-bypass-permissions (TRON_ALLOW_BYPASS_PERMISSIONS=1), and do not "
                    "set permissions.disableBypassPermissionsMode"
                )
        previous = await self.mode(session_id)
        new = cast(PermissionMode, mode)
        await self.orchestrator.record_event(
            session_id, "config.permission_mode", {"previousMode": previous, "newMode": new}
        )
        live = self._current(session_id)
        if live is not None:
            live.explicit_mode = new
        return previous, new

    def _usable(self, mode: PermissionMode) -> PermissionMode:
        # A bypass recorded while the server allowed it does not outlive that permission.
        return "default" if mode == "bypassPermissions" and not self.allow_bypass else mode

    async def _effective(self, live: _Live) -> PermissionMode:
        if live.explicit_mode is not None:
            mode = live.explicit_mode
        elif live.parent is not None:
            return await self.mode(live.parent)
        else:
            mode = live.settings.default_mode or self.default_mode
        if mode == "bypassPermissions" and live.settings.disable_bypass:
            return "default"
        return self._usable(mode)

    # -- state -------------------------------------------------------------------------

    def _current(self, session_id: str) -> _Live | None:
        live = self._live.get(session_id)
        if live is None:
            return None
        if self.orchestrator.current_run(session_id) is not live.run:
            del self._live[session_id]  # that run has ended
            return None
        return live

    async def _stored(self, session_id: str) -> _Stored:
        """The mode and session rules recorded on the session's path."""
        try:
            session = await self.store.get_session(session_id)
        except SessionNotFound:
            raise SessionNotFoundError(
                f"session {session_id!r} does not exist", {"sessionId": session_id}
            ) from None
        mode: PermissionMode | None = None
        grants: list[Rule] = []
        for event in await self.store.get_ancestors(session.head_event_id):
            if event.type == "config.permission_mode":
                value = event.payload.get("newMode")
                mode = cast(PermissionMode, value) if is_mode(value) else mode
            elif event.type == "config.permission_rule":
                grants.extend(_grant(event.payload))
        return _Stored(mode, grants)

    async def _load(self, run: AgentRun) -> _Live:
        live = self._current(run.session_id)
        if live is not None and live.run is run:
            return live
        settings = load_permission_settings(run.working_directory, self.home)
        stored = await self._stored(run.session_id)
        parent = (await self.orchestrator.profile(run.session_id)).parent_session_id
        run_rules = [
            parse_rule(text, "allow", source="the command's allowed-tools")
            for text in run.request.allowed_tools
        ]
        live = _Live(run, settings, stored.explicit_mode, stored.grants, parent, run_rules)
        self._live[run.session_id] = live
        return live

    async def _grants(self, session_id: str | None) -> list[Rule]:
        """The "allow always" rules of a session and of its parents."""
        out: list[Rule] = []
        while session_id is not None:
            live = self._current(session_id)
            out.extend(live.grants if live is not None else (await self._stored(session_id)).grants)
            session_id = (await self.orchestrator.profile(session_id)).parent_session_id
        return out

    async def _root(self, session_id: str) -> str:
        while True:
            parent = (await self.orchestrator.profile(session_id)).parent_session_id
            if parent is None:
                return session_id
            session_id = parent

    async def _active_session(self, session_id: str) -> Any:
        try:
            session = await self.store.get_session(session_id)
        except SessionNotFound:
            raise SessionNotFoundError(
                f"session {session_id!r} does not exist", {"sessionId": session_id}
            ) from None
        if session.status != "active":
            raise SessionNotActiveError(
                f"session {session_id!r} has ended; fork it to continue", {"sessionId": session_id}
            )
        return session

    async def describe(self, session_id: str) -> dict[str, Any]:
        """The session's mode and every rule that applies, with where it comes from, and
        whether the folder is trusted (else its allow rules, defaultMode and
        additionalDirectories are not among them)."""
        session = await self.store.get_session(session_id)
        wd = Path(session.working_directory)
        try:
            settings = load_permission_settings(wd, self.home)
            error = None
        except PermissionSettingsError as exc:
            settings, error = PermissionSettings(), str(exc)
        grants = await self._grants(session_id)
        return {
            "mode": await self.mode(session_id),
            "defaultMode": settings.default_mode,
            "rules": [r.to_json() for r in [*settings.rules, *grants]],
            "additionalDirectories": [str(p) for p in settings.additional_directories],
            "files": [str(p) for p in settings.files],
            "bypassAvailable": self.allow_bypass and not settings.disable_bypass,
            "trusted": settings.trusted,
            "error": error,
        }

    # -- the gate ----------------------------------------------------------------------

    def preapprove(self, tool_call_id: str) -> None:
        """The user approved this call already (an answer after a restart)."""
        self._preapproved.add(tool_call_id)

    async def gate(
        self, run: AgentRun, use: ToolUseBlock, arguments: dict[str, Any], hook: HookDecision
    ) -> ToolResult | None:
        """The :data:`~tron_server.agent.turn.ToolGate`: None to run the call, else the
        refusal the model sees. Waits for the user's approval when the verdict is "ask"."""
        if use.id in self._preapproved:
            self._preapproved.discard(use.id)
            if use.name in URL_TOOLS:  # approved as it was shown, private address or not
                with contextlib.suppress(PermissionSettingsError, RuleSyntaxError):
                    live = await self._load(run)
                    live.approved_urls[use.id] = (url_host(arguments.get("url")), True)
            return None
        try:
            live = await self._load(run)
        except (PermissionSettingsError, RuleSyntaxError) as exc:
            return ToolResult(
                f"The permission settings cannot be used, so {use.name} was not run: {exc}",
                is_error=True,
            )
        mode = await self._effective(live)
        rules = RuleSet(live.settings.rules).plus(await self._grants(run.session_id))
        rules = rules.plus(live.run_rules)
        hook_permission: HookPermission = (
            "ask" if hook.action == "ask" else "allow" if hook.approved else None
        )
        facts = await _with_addresses(self._facts(run, use.name, arguments))
        verdict = decide(
            facts,
            mode=mode,
            rules=rules,
            hook=hook_permission,
            hook_reason=hook.reason,
            edit_roots=live.settings.additional_directories,
        )
        if verdict.behavior != "deny" and facts.tool in URL_TOOLS:
            # Remembered before asking: an answer "allow" lets the call run as it was shown.
            live.approved_urls[use.id] = (url_host(arguments.get("url")), bool(facts.private))
        if verdict.behavior == "allow":
            return None
        if verdict.behavior == "deny":
            return ToolResult(f"Permission denied: {verdict.reason}.", is_error=True)
        suggestion = suggest_rule(use.name, arguments)
        info = {
            "requestId": new_request_id(),
            "kind": "approval",
            "toolCallId": use.id,
            "turn": run.progress.turn,
            "toolName": use.name,
            "input": arguments,
            "reason": verdict.reason,
            "suggestion": suggestion,
        }
        # The diff the call would make to the file as it is now (clients show it;
        # it is not stored: the approval's event keeps the arguments).
        policy = path_policy(run.hooks, run.working_directory)
        preview = await anyio.to_thread.run_sync(change_preview, policy, use.name, arguments)
        if preview is not None:
            info["preview"] = preview
        self._notification_hooks(
            run, "permission_prompt", f"Tron needs your permission to use {use.name}"
        )
        answer = await self.requests.wait(
            run, info, sessions=await self._sessions(run.session_id), timeout=self.timeout
        )
        if answer.outcome == "timeout":
            return ToolResult(
                f"The permission request timed out after {self.timeout:g} s with no answer: "
                f"{use.name} was not run.",
                is_error=True,
            )
        if answer.decision == "deny_always":
            await self.grant(run, suggestion, str(info["requestId"]), behavior="deny")
        if answer.decision in ("deny", "deny_always"):
            return self.denied_result(use.name, answer.reason)
        if answer.decision == "allow_always":
            await self.grant(run, suggestion, str(info["requestId"]))
        return None

    async def check_url(
        self, session_id: str, tool: str, url: str, tool_call_id: str | None = None
    ) -> UrlVerdict:
        """The verdict for ``tool`` reaching ``url`` in ``session_id`` now (its rules, mode
        and the host's addresses, resolved again), without asking: the
        :data:`~tron_server.browser.urls.UrlCheck` tools get. With ``tool_call_id``, what
        the gate let that call do (the user's "allow once" included) is allowed too."""
        run = self.orchestrator.current_run(session_id)
        try:
            if run is not None:
                live = await self._load(run)
                mode = await self._effective(live)
                rules = RuleSet(live.settings.rules).plus(await self._grants(session_id))
                rules = rules.plus(live.run_rules)
                wd = Path(os.path.realpath(run.working_directory))
                roots = live.settings.additional_directories
            else:
                live = None
                session = await self.store.get_session(session_id)
                wd = Path(os.path.realpath(session.working_directory))
                settings = load_permission_settings(wd, self.home)
                mode = await self.mode(session_id)
                rules = RuleSet(settings.rules).plus(await self._grants(session_id))
                roots = settings.additional_directories
        except (PermissionSettingsError, RuleSyntaxError, SessionNotFound) as exc:
            return UrlVerdict("deny", f"the permission settings cannot be used: {exc}")
        facts = await _with_addresses(CallFacts(tool, {"url": url, "action": "navigate"}, wd, ()))
        verdict = decide(facts, mode=mode, rules=rules, edit_roots=roots)
        if verdict.behavior == "ask" and live is not None and tool_call_id is not None:
            approved = live.approved_urls.get(tool_call_id)
            host = url_host(url)
            if approved is not None and approved[0] == host and (approved[1] or not facts.private):
                return UrlVerdict("allow", "approved for this call", facts.private)
        return UrlVerdict(verdict.behavior, verdict.reason, facts.private)

    def _facts(self, run: AgentRun, tool: str, arguments: dict[str, Any]) -> CallFacts:
        wd = Path(os.path.realpath(run.working_directory))
        paths: tuple[tuple[Path, bool], ...] = ()
        named: tuple[tuple[Path, bool], ...] = ()
        key = PATH_TOOLS.get(tool)
        if key is not None:
            raw = arguments.get(key)
            if raw is None and tool in ("Grep", "Glob"):
                raw = "."
            if isinstance(raw, str) and raw:
                policy = path_policy(run.hooks, run.working_directory)
                try:
                    with policy.resolve(raw) as resolved:
                        paths = ((resolved.path, resolved.is_dir),)
                        named = ((policy.named(raw), resolved.is_dir),)
                except (PathError, OSError, ValueError):
                    paths = ()  # the tool reports the bad path itself
        return CallFacts(tool, arguments, wd, paths, named=named)

    async def grant(
        self, run: AgentRun, rule: str, request_id: str, *, behavior: Behavior = "allow"
    ) -> None:
        """Record an "allow always" rule (``behavior="deny"``: a "deny always" one) in the
        run's top-level session (children inherit it) and apply it at once."""
        root = await self._root(run.session_id)
        payload: dict[str, Any] = {"rule": rule, "behavior": behavior, "requestId": request_id}
        if root != run.session_id:
            payload["fromSessionId"] = run.session_id
            await self.orchestrator.record_event(root, "config.permission_rule", payload)
        else:
            await run.writer.append("config.permission_rule", payload)
        live = self._current(root)
        if live is not None:
            live.grants.extend(_grant(payload))

    @staticmethod
    def denied_result(tool: str, reason: str | None) -> ToolResult:
        text = f"The user denied permission to run {tool}"
        text += f": {reason}" if reason else "."
        text += " Do not try it again as is: change your approach, or ask the user how to go on."
        return ToolResult(text, is_error=True)

    async def _sessions(self, session_id: str) -> tuple[str, ...]:
        out = [session_id]
        parent = (await self.orchestrator.profile(session_id)).parent_session_id
        while parent is not None:
            out.append(parent)
            parent = (await self.orchestrator.profile(parent)).parent_session_id
        return tuple(out)

    # -- questions and notifications ---------------------------------------------------

    async def ask(
        self, ctx: ToolContext, question: str, options: list[str], multi_select: bool
    ) -> ToolResult:
        """The AskUser tool: wait for the user's answer and hand it to the model."""
        run = self.orchestrator.current_run(ctx.session_id)
        if run is None:
            return ToolResult("AskUser works only inside a running turn.", is_error=True)
        info: dict[str, Any] = {
            "kind": "question",
            "toolCallId": ctx.tool_call_id,
            "turn": run.progress.turn,
            "question": question,
            "multiSelect": multi_select,
        }
        if options:
            info["options"] = options
        ctx.on_output(f"Waiting for the user's answer: {question}\n")
        self._notification_hooks(run, "elicitation_dialog", f"Tron asks: {question}")
        answer = await self.requests.wait(
            run, info, sessions=await self._sessions(run.session_id), timeout=self.timeout
        )
        if answer.outcome == "timeout":
            return ToolResult(
                f"The user did not answer within {self.timeout:g} s. Go on without the answer "
                "if you can, or ask again later.",
                is_error=True,
            )
        return self.question_result(info, answer)

    @staticmethod
    def question_result(info: dict[str, Any], answer: Answer) -> ToolResult:
        value = answer.value
        if isinstance(value, list):
            text = "The user chose: " + ", ".join(value) if value else "The user chose none."
        elif info.get("options") and value in info["options"]:
            text = f"The user chose: {value}"
        else:
            text = f"The user answered: {value}"
        return ToolResult(text, details={"answer": value, "requestId": info.get("requestId")})

    async def notify_user(
        self, ctx: ToolContext, title: str, body: str, urgency: str
    ) -> ToolResult:
        """The Notify tool: record ``notification.user`` and tell every client."""
        payload = {"title": title, "body": body, "urgency": urgency, "toolCallId": ctx.tool_call_id}
        await ctx.record("notification.user", payload)
        run = self.orchestrator.current_run(ctx.session_id)
        data = dict(payload)
        if run is not None:
            run.notify_client(SESSION_NOTIFICATION, data)
            self._notification_hooks(run, "notify", body or title, title=title)
        else:
            self.orchestrator.emit(SESSION_NOTIFICATION, ctx.session_id, data)
        return ToolResult(f"Notified the user: {title}")

    @staticmethod
    def _notification_hooks(
        run: AgentRun, kind: str, message: str, *, title: str | None = None
    ) -> None:
        """Fire the ``Notification`` hooks (Claude Code's event: the agent waits for the
        user, or tells them something) in the background: the run does not wait for them."""
        engine = run.hooks
        if engine is None:
            return
        data: dict[str, Any] = {"message": message, "notification_type": kind}
        if title:
            data["title"] = title
        engine.fire_background(
            HookContext(
                event="Notification",
                session_id=run.session_id,
                working_directory=run.working_directory,
                data=data,
            )
        )

    # -- pending requests and answers --------------------------------------------------

    def waiting_runs(self) -> list[AgentRun]:
        return self.requests.waiting_runs()

    async def pending(self, session_id: str) -> list[dict[str, Any]]:
        """Requests waiting for an answer in the session or its sub-agents: those of live
        runs, and (when the session is not running) those a stopped run left."""
        live = [dict(p.info, waiting=True) for p in self.requests.for_session(session_id)]
        if live or self.orchestrator.is_running(session_id):
            return live
        found = []
        for pt in await self._stopped(session_id):
            found.append(dict(pt.info(), waiting=False))
        return found

    async def _stopped(self, session_id: str) -> list[PendingTurn]:
        out: list[PendingTurn] = []
        candidates = [session_id]
        try:
            descendants = await self.store.get_descendant_sessions(session_id)
        except SessionNotFound:
            descendants = []
        candidates += [s.id for s in descendants if s.status == "active"]
        for sid in candidates:
            if sid != session_id and self.orchestrator.is_running(sid):
                continue
            pt = await find_pending_turn(self.store, sid)
            if pt is not None and pt.request_id not in self._claimed:
                out.append(pt)
        return out

    async def respond(
        self, session_id: str, request_id: str, raw: Any, responder: str | None
    ) -> dict[str, Any]:
        """``agent.respond``: answer a request of ``session_id`` (or of one of its
        sub-agents). The first answer wins; a later one raises :class:`AlreadyAnswered`."""
        await self.store_session(session_id)
        self.requests.check_open(request_id)
        pending = self.requests.get(request_id)
        if pending is not None:
            if session_id not in pending.sessions:
                raise InvalidParams(
                    f"request {request_id} belongs to session {pending.info['sessionId']}, "
                    f"not to {session_id}"
                )
            self.requests.answer(pending, parse_answer(pending.info, raw, responder))
            return {"accepted": True, "requestId": request_id, "kind": pending.info["kind"],
                    "resumed": False}  # fmt: skip
        if request_id in self._claimed:
            raise AlreadyAnswered(f"request {request_id} was already answered",
                                  {"requestId": request_id})  # fmt: skip
        stopped = next((p for p in await self._stopped(session_id) if p.request_id == request_id),
                       None)  # fmt: skip
        if stopped is None:
            raise InvalidOperationError(
                f"no request {request_id} is waiting in session {session_id}: it was answered, "
                "timed out or cancelled (agent.getState lists pendingRequests)",
                {"requestId": request_id},
            )
        answer = parse_answer(stopped.info(), raw, responder)
        if request_id in self._claimed:  # another answer got here during the awaits
            raise AlreadyAnswered(f"request {request_id} was already answered",
                                  {"requestId": request_id})  # fmt: skip
        if self.orchestrator.is_running(stopped.session_id):
            raise AgentBusyError(
                f"session {stopped.session_id!r} is running; its request is answered when the "
                "running turn ends or is aborted",
                {"sessionId": stopped.session_id},
            )
        self._claimed.add(request_id)
        try:
            started = await self.orchestrator.send_message(
                stopped.session_id, "", resume=Resumption(self, stopped, answer)
            )
        except BaseException:
            self._claimed.discard(request_id)
            raise
        return {"accepted": True, "requestId": request_id, "kind": stopped.request["kind"],
                "resumed": True, "runId": started.get("runId")}  # fmt: skip

    async def store_session(self, session_id: str) -> None:
        try:
            await self.store.get_session(session_id)
        except SessionNotFound:
            raise SessionNotFoundError(
                f"session {session_id!r} does not exist", {"sessionId": session_id}
            ) from None

    async def cancel_pending(
        self,
        session_id: str,
        outcome: Literal["cancelled", "aborted"] = "cancelled",
        session: Session | None = None,
        head: Event | None = None,
    ) -> Resumption | None:
        """For a new message to an idle session whose stopped run left a request: the
        :class:`Resumption` that cancels it (None when nothing is pending); with
        ``outcome="aborted"``, for ``agent.abort`` of that session, the one that ends it
        as an abort. Call :meth:`release` with its request id if it is then not run.
        ``session`` and ``head``: the row and its head event when the caller read them."""
        if self.orchestrator.is_running(session_id):
            return None
        pt = await find_pending_turn(self.store, session_id, session, head)
        if pt is None or pt.request_id in self._claimed:
            return None
        self._claimed.add(pt.request_id)
        return Resumption(self, pt, Answer(outcome))

    def release(self, request_id: str) -> None:
        self._claimed.discard(request_id)


#: Tools whose calls name a URL the permission rules look at (``domain:`` rules).
URL_TOOLS = frozenset({"WebFetch", "Browser"})


async def _with_addresses(facts: CallFacts) -> CallFacts:
    """``facts`` with the non-public addresses of its URL's host (WebFetch, Browser
    navigate to http/https). A host that does not resolve has none: the tool reports it."""
    if facts.tool not in URL_TOOLS:
        return facts
    try:
        target = parse_web_url(str(facts.input.get("url") or ""))
    except UrlRefused:
        return facts
    try:
        addresses = await resolve_host(target.host, target.port)
    except OSError:
        return facts
    return replace(facts, private=non_public(addresses))


def _grant(payload: Any) -> list[Rule]:
    rule = payload.get("rule") if hasattr(payload, "get") else None
    behavior = payload.get("behavior", "allow") if hasattr(payload, "get") else "allow"
    if not isinstance(rule, str) or behavior not in ("allow", "ask", "deny"):
        return []
    try:
        return [parse_rule(rule, cast(Behavior, behavior), source="this session")]
    except RuleSyntaxError:
        log.warning("ignoring an unreadable session rule %r", rule)
        return []
