"""Memory in the runtime: when the ledger and handoffs are read, made and put before the
model (the parts are :mod:`tron_server.memory`'s; ``docs/memory.md`` for users).

- **Session start** (:meth:`SessionMemory.at_start`): at the first message of a session a
  user started (not a sub-agent, not a fork: a fork inherits what its source was given),
  the ledgers, the most frequent lessons and the handoffs of the workspace most relevant to
  that message are composed within the budget and recorded as ``memory.loaded`` in the same
  commit as, just before, the ``message.user``; the history makes it user text in front of
  the prompt, so ``get_messages_at`` gives the request exactly as sent, after a restart too.
  Once a session is past its first message this process never checks it again (no
  per-turn work).
- **Compaction and /clear** (:meth:`SessionMemory.after_reset`): the fresh history starts
  again with the ledgers and lessons (``memory.loaded``, source ``compact`` / ``clear``).
- **Remembering** (:meth:`SessionMemory.remember`): one side call over the transcript
  (:func:`tron_server.memory.memory_call`) returns the handoff and the ledger brought up to
  date; the ledger is written like a tool writes a file (``file.write``, ``source:
  memory``: it rewinds with the tree) and the handoff is recorded as ``memory.handoff``.
  At compaction (the compacted part), at ``session.end`` (when anything happened since the
  last handoff) and on ``/handoff`` / ``memory.handoff`` (the handoff alone).

Every part follows the ``memory`` settings of the session's folder (:mod:`..memory.settings`).
A failing side call at compaction or session end is logged and changes nothing else.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from tron_events import AsyncEventStore, Event
from tron_events.messages import Message, TextBlock
from tron_llm import Provider

from ..errors import InvalidOperationError, ProviderError, SessionNotActiveError
from ..hooks.base import HookEngine
from ..hooks.guardrails import path_policy
from ..hooks.settings import HookSettingsError
from ..memory import (
    HANDOFF_TYPE,
    LedgerRefused,
    MemoryCallFailed,
    MemorySettings,
    SideCall,
    collect_lessons,
    compose,
    load_memory_settings,
    memory_call,
    project_ledger_path,
    read_ledger,
    read_ledgers,
    recent_handoffs,
    relevant_handoffs,
    with_sections,
    write_project_ledger,
)
from ..memory.loader import MAX_HANDOFFS
from ..paths import PathError, PathPolicy
from .compaction import render_transcript
from .subagents import SessionProfile

if TYPE_CHECKING:
    from ..workspace.recorder import FileRecorder
    from .writer import SessionWriter

__all__ = ["MemoryHost", "NothingToRemember", "Remembered", "SessionMemory"]

log = logging.getLogger("tron_server.agent")

Draft = tuple[str, dict[str, Any]]
#: Seconds a memory side call may take (retries included): ``session.end`` waits for it.
SIDE_CALL_TIMEOUT = 120.0


class NothingToRemember(InvalidOperationError):
    """The session has no conversation to make a handoff of."""


class MemoryHost(Protocol):
    """What memory uses of the orchestrator (which satisfies it)."""

    @property
    def store(self) -> AsyncEventStore: ...

    def providers(self, provider: str, model: str) -> Provider: ...

    def hooks_for(self, working_directory: Path) -> HookEngine | None: ...

    async def profile(self, session_id: str) -> SessionProfile: ...

    async def append_event(
        self, session_id: str, event_type: str, payload: dict[str, Any]
    ) -> Event: ...


@dataclass(frozen=True)
class Remembered:
    """What a side call recorded: the ``memory.handoff`` event and the ledger's
    ``file.write`` event (None: not asked, not changed or not written)."""

    handoff: Event | None = None
    ledger: Event | None = None


def _has_conversation(messages: list[Message]) -> bool:
    return any(
        m.role == "user" and any(isinstance(b, TextBlock) and b.text.strip() for b in m.content)
        for m in messages
    )


def _prompt_text(content: str | list[dict[str, Any]]) -> str:
    if isinstance(content, str):
        return content
    return " ".join(
        str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
    )


class SessionMemory:
    """Memory for the sessions of one runtime (see the module docstring)."""

    def __init__(
        self, host: MemoryHost, home: Path, *, recorder: FileRecorder | None = None
    ) -> None:
        self.host = host
        self.home = home
        #: Records the ledger's contents so that a rewind with files restores it.
        self.recorder = recorder
        #: Sessions known in this process to be past their start (or sub-agents).
        self._started: set[str] = set()
        #: Sessions whose start :meth:`at_start` answered, until their run recorded it.
        self._starting: set[str] = set()

    # -- settings ---------------------------------------------------------------------

    async def settings(self, working_directory: Path) -> MemorySettings:
        """The memory settings of a folder (cached until its files change)."""
        return await anyio.to_thread.run_sync(self.settings_now, working_directory)

    def settings_now(self, working_directory: Path) -> MemorySettings:
        """:meth:`settings` in this thread (reads files: in a worker thread, where a caller
        has other work for the same trip)."""
        settings = load_memory_settings(working_directory, self.home)
        if settings.error:
            log.warning("%s", settings.error)
        return settings

    # -- putting memory before the model ----------------------------------------------

    def started(self, session_id: str) -> bool:
        """Whether :meth:`at_start` answers nothing for the session without reading (its
        start is behind it)."""
        return session_id in self._started

    async def at_start(
        self, session_id: str, working_directory: Path, content: str | list[dict[str, Any]]
    ) -> list[Draft]:
        """The ``memory.loaded`` draft to record before the first message of a session (an
        empty list when it is not the first, a sub-agent's, or there is nothing to put)."""
        if session_id in self._started:
            return []
        store = self.host.store
        if (await self.host.profile(session_id)).is_child:
            self._started.add(session_id)
            return []
        session = await store.get_session(session_id)
        path = await store.get_ancestors(session.head_event_id)
        if any(e.type in ("message.user", "memory.loaded") for e in path):
            # Not a start (an earlier message, or a fork of one): never again for it. A
            # start is only marked so once its message is stored (a refused append retries).
            self._started.add(session_id)
            return []
        self._starting.add(session_id)  # past its start once its run has recorded a turn
        settings = await self.settings(working_directory)
        if not (settings.ledger or settings.handoffs or settings.lessons):
            return []
        injection = await self._compose(
            session.workspace_id, working_directory, settings, _prompt_text(content), "startup"
        )
        return [] if injection is None else [("memory.loaded", injection)]

    def run_done(self, session_id: str, turns: int) -> None:
        """A run of the session ended after ``turns`` turns: when it began with the start
        :meth:`at_start` answered and recorded a turn, its message is stored (the first
        turn's commit holds it), so the next message reads nothing to know it is no start."""
        if turns and session_id in self._starting:
            self._starting.discard(session_id)
            self._started.add(session_id)

    async def after_reset(self, session_id: str, source: str) -> None:
        """After a compaction or ``/clear``: the ledgers and lessons again (recorded as
        ``memory.loaded``), so the fresh history keeps the working memory. Never raises."""
        try:
            if (await self.host.profile(session_id)).is_child:
                return
            session = await self.host.store.get_session(session_id)
            wd = Path(session.working_directory)
            settings = await self.settings(wd)
            if not (settings.ledger or settings.lessons):
                return
            only = MemorySettings(settings.ledger, False, settings.lessons, settings.recall)
            injection = await self._compose(session.workspace_id, wd, only, "", source)
            if injection is not None:
                await self.host.append_event(session_id, "memory.loaded", injection)
        except Exception:
            log.exception("memory after %s of %s not loaded", source, session_id)

    async def _compose(
        self,
        workspace_id: str,
        working_directory: Path,
        settings: MemorySettings,
        prompt: str,
        source: str,
    ) -> dict[str, Any] | None:
        store = self.host.store
        ledgers = (
            await anyio.to_thread.run_sync(read_ledgers, working_directory, self.home)
            if settings.ledger
            else []
        )
        lessons = []
        recent: list[Event] = []
        if settings.lessons or settings.handoffs:
            recent = await recent_handoffs(store, workspace_id)  # read once for both
        if settings.lessons:
            lessons = collect_lessons(recent)
        handoffs: list[Event] = []
        if settings.handoffs:
            handoffs = await relevant_handoffs(
                store, workspace_id, prompt, limit=MAX_HANDOFFS, recent=recent
            )
        injection = compose(
            working_directory=working_directory, ledgers=ledgers, lessons=lessons,
            handoffs=handoffs, source=source,
        )  # fmt: skip
        return None if injection is None else injection.payload

    # -- making handoffs and bringing the ledger up to date ---------------------------

    async def remember(
        self,
        session_id: str,
        trigger: str,
        *,
        messages: list[Message] | None = None,
        through: str | None = None,
        writer: SessionWriter | None = None,
        handoff: bool = True,
        ledger: bool = True,
    ) -> Remembered:
        """One side call over ``messages`` (default: the history at the head) recording the
        handoff (``handoff``) and the ledger brought up to date (``ledger``), each as far as
        the folder's settings allow. ``writer``: the running loop's (a compaction inside a
        turn). Raises :class:`NothingToRemember`, :class:`ProviderError` (the call failed),
        :class:`SessionNotActiveError` (an ended session takes no events)."""
        store = self.host.store
        session = await store.get_session(session_id)
        if session.status != "active":  # checked before the model is paid for
            raise SessionNotActiveError(
                f"session {session_id!r} has ended; fork it to go on",
                {"sessionId": session_id},
            )
        wd = Path(session.working_directory)
        settings = await self.settings(wd)
        handoff = handoff and settings.handoffs
        ledger = ledger and settings.ledger
        if not (handoff or ledger):
            return Remembered()
        state = await store.get_state_at_head(session_id)
        history = state.messages if messages is None else messages
        if not _has_conversation(history):
            raise NothingToRemember(f"session {session_id!r} has no conversation to remember yet")
        current = (
            await anyio.to_thread.run_sync(
                lambda: read_ledger(project_ledger_path(wd), "project", within=wd)
            )
            if ledger
            else None
        )
        call = SideCall(
            transcript=render_transcript(history),
            handoff=handoff,
            ledger=ledger,
            current_ledger=current.text if current is not None else None,
            trigger=trigger,
        )
        extra = {"trigger": trigger, "model": state.model,
                 "throughEventId": through or state.head_event_id}  # fmt: skip
        try:
            provider = self.host.providers(state.provider, state.model)
            with anyio.fail_after(SIDE_CALL_TIMEOUT):
                parsed = await memory_call(provider, state.model, call, extra=extra)
        except TimeoutError:
            raise ProviderError(
                f"the memory call took more than {SIDE_CALL_TIMEOUT:.0f} s; nothing was recorded",
                retryable=True,
            ) from None
        except ValueError as exc:  # the provider cannot be made (no endpoint, unknown)
            raise ProviderError(f"the memory call failed: {exc}") from exc
        except MemoryCallFailed as exc:
            raise ProviderError(exc.message, retryable=exc.retryable) from exc
        ledger_event: Event | None = None
        if parsed.ledger is not None:
            text = parsed.ledger if current is not None else with_sections(parsed.ledger)
            ledger_event = await self._write_ledger(session_id, wd, text, writer)
        handoff_event: Event | None = None
        if parsed.handoff is not None:
            handoff_event = await self._record(session_id, writer, HANDOFF_TYPE, parsed.handoff)
        return Remembered(handoff_event, ledger_event)

    async def _record(
        self, session_id: str, writer: SessionWriter | None, event_type: str, payload: Any
    ) -> Event:
        if writer is not None:
            return await writer.append(event_type, payload)
        return await self.host.append_event(session_id, event_type, payload)

    def _policy(self, working_directory: Path) -> PathPolicy:
        try:
            engine = self.host.hooks_for(working_directory)
        except HookSettingsError:
            engine = None
        return path_policy(engine, working_directory)

    async def _write_ledger(
        self, session_id: str, wd: Path, text: str, writer: SessionWriter | None
    ) -> Event | None:
        try:
            payload = await write_project_ledger(
                wd, text, policy=self._policy(wd), recorder=self.recorder
            )
        except (LedgerRefused, PathError, OSError) as exc:
            log.warning("the ledger of %s was not updated: %s", wd, exc)
            return None
        if payload is None:
            return None
        return await self._record(session_id, writer, "file.write", payload)

    async def after_compaction(
        self,
        session_id: str,
        messages: list[Message],
        through: str,
        writer: SessionWriter | None,
    ) -> None:
        """The handoff of the compacted part and the ledger brought up to date (not for
        sub-agents). Never raises: a failure is logged."""
        try:
            if (await self.host.profile(session_id)).is_child:
                return
            await self.remember(
                session_id, "compaction", messages=messages, through=through, writer=writer
            )
        except NothingToRemember:
            return
        except Exception as exc:
            log.warning("memory at the compaction of %s not recorded: %s", session_id, exc)

    async def at_session_end(self, session_id: str) -> None:
        """Before ``session.end``: the handoff and the ledger, when anything was said since
        the last handoff (not for sub-agents). Never raises: a failure is logged."""
        try:
            if (await self.host.profile(session_id)).is_child:
                return
            session = await self.host.store.get_session(session_id)
            if session.status != "active":
                return
            path = await self.host.store.get_ancestors(session.head_event_id)
            last_reply = max((i for i, e in enumerate(path) if e.type == "message.assistant"),
                             default=-1)  # fmt: skip
            last_handoff = max((i for i, e in enumerate(path) if e.type == HANDOFF_TYPE),
                               default=-1)  # fmt: skip
            if last_reply < 0 or last_handoff > last_reply:
                return
            await self.remember(session_id, "session_end")
        except NothingToRemember:
            return
        except Exception as exc:
            log.warning("memory at the end of %s not recorded: %s", session_id, exc)
