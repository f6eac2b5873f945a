"""One writer per session while the agent runs: serialized compare-and-append.

Every event a turn records (its own, the tools' ``file.read``/``todo.write``, the
hooks' ``hook.triggered``/``hook.completed``) goes through the session's
:class:`SessionWriter`. It appends with ``expected_head`` = the head it last
wrote, so nothing can branch the session by accident: if anything else moved the
head meanwhile (a rewind, a model switch from another client), the append fails
with :class:`tron_events.ConcurrencyConflict` and the turn stops instead of
writing onto a history it did not read.

The orchestrator keeps one writer per session (while anything uses it), also
between runs: events recorded from outside a run (a Stop or SessionStart hook
finishing late) go through :meth:`SessionWriter.record` and its lock, so they
never land between a new run's :meth:`~SessionWriter.sync` and its first append.

Deferred events: a commit costs a worker-thread hop and a transaction, and a tool
step used to make six of them (the assistant message, the call, an in-code hook's
two records, the result, the turn's end, the next turn's start). Events nobody waits
for before the next commit (:meth:`SessionWriter.defer`: an in-code hook's records,
the last result of a turn and the turn's end when the loop goes on) are kept in
order and committed at the front of the next append, in the same transaction, so a
tool step is two commits: the call before the tool runs, the rest after it.
:meth:`SessionWriter.flush` commits what is left (the run does at its end);
:meth:`SessionWriter.discard` drops it (a run that failed: its view is stale).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from tron_events import AsyncEventStore, Event, Session

if TYPE_CHECKING:
    from tron_events import EventStore
    from tron_events.reconstruct import SessionState

T = TypeVar("T")

__all__ = ["SessionWriter"]

Draft = tuple[str, Mapping[str, Any]]


class SessionWriter:
    """Appends to one session, one event at a time, each on top of the last."""

    def __init__(self, store: AsyncEventStore, session_id: str) -> None:
        self.store = store
        self.session_id = session_id
        self.head: str | None = None
        #: A run owns the session: :meth:`record` compares against its head.
        self.running = False
        # asyncio's lock (the server runs on asyncio): anyio's yields to the loop at
        # every acquire, taken at each commit of a turn (issue 29).
        self._lock = asyncio.Lock()
        self._deferred: list[Draft] = []
        #: Commits made through this writer (a state read before a run tells by it
        #: whether anything was recorded since).
        self.commits = 0

    @property
    def deferred(self) -> int:
        """How many deferred events wait for the next commit."""
        return len(self._deferred)

    def defer(self, type: str, payload: Mapping[str, Any]) -> None:
        """Record ``type`` with the next append (in front of it, same transaction) or
        at :meth:`flush`: for events nothing reads before then."""
        self._deferred.append((type, dict(payload)))

    def discard(self) -> None:
        """Drop the deferred events (the run that made them failed)."""
        self._deferred.clear()

    async def flush(self) -> None:
        """Commit the deferred events now (on top of the writer's head)."""
        if self._deferred:
            async with self._lock:
                await self._commit([], self.head)

    async def sync(self) -> str:
        """Re-read the session's head (at the start of a run, before any append); events
        deferred before it are committed first, at the head they were recorded on."""
        async with self._lock:
            if self._deferred:
                await self._commit([], self.head)
            session = await self.store.get_session(self.session_id)
            self.head = session.head_event_id
            return self.head

    async def sync_state(self) -> SessionState:
        """:meth:`sync` with the session's state at its head (one read: the state knows
        the head), for a run that needs both."""
        async with self._lock:
            if self._deferred:
                await self._commit([], self.head)
            state = await self.store.get_state_at_head(self.session_id)
            self.head = state.head_event_id
            return state

    async def sync_session_state(self) -> tuple[Session, SessionState]:
        """:meth:`sync_state` with the session's row (one read for both: a run's start)."""
        async with self._lock:
            if self._deferred:
                await self._commit([], self.head)
            session, state = await self.store.get_session_and_state(self.session_id)
            self.head = state.head_event_id
            return session, state

    async def adopt(self, state: SessionState, commits: int) -> bool:
        """Take ``state`` (read just before the run started, when this writer had made
        ``commits`` commits) as the synced state instead of reading it again: only while
        nothing was recorded through this writer since, nor deferred; False otherwise
        (then :meth:`sync_state`)."""
        async with self._lock:
            if self.commits != commits or self.head is not None or self._deferred:
                return False
            self.head = state.head_event_id
            return True

    async def append(self, type: str, payload: Mapping[str, Any]) -> Event:
        """Append ``type`` on top of the head this writer last saw."""
        async with self._lock:
            return (await self._commit([(type, payload)], self.head))[-1]

    async def record(self, type: str, payload: Mapping[str, Any]) -> Event:
        """Append from outside the run's own flow (hooks): on top of the run's head
        while one runs, at the session's current head otherwise."""
        async with self._lock:
            expected = self.head if self.running else None
            return (await self._commit([(type, payload)], expected))[-1]

    async def append_many(self, drafts: Sequence[Draft]) -> list[Event]:
        """Append a chain in one transaction (all or nothing); returns its events (not
        the deferred ones committed in front of it)."""
        if not drafts:
            return []
        async with self._lock:
            return await self._commit(drafts, self.head)

    async def append_many_and_state(
        self, drafts: Sequence[Draft]
    ) -> tuple[list[Event], SessionState]:
        """:meth:`append_many` (``drafts`` must not be empty), then the session's state at
        the new head, in one trip to the store's worker thread."""
        async with self._lock:
            taken = len(self._deferred)
            chain = [*self._deferred, *drafts]
            events, state = await self.store.append_many_and_state(
                self.session_id,
                [{"type": t, "payload": dict(p)} for t, p in chain],
                expected_head=self.head,
            )
            del self._deferred[:taken]
            self.head = events[-1].id
            self.commits += 1
            return events[len(events) - len(drafts) :], state

    async def append_many_and_state_after(
        self, first: Callable[[], tuple[bool, T]], drafts: Sequence[Draft]
    ) -> tuple[T, tuple[list[Event], SessionState] | None]:
        """``first()``, then (when it says to go on) :meth:`append_many_and_state`, in one
        trip to the store's worker thread: (what ``first`` gave, (``drafts``' events, the
        state) or None when nothing was committed). ``first`` runs in that thread."""
        async with self._lock:
            taken = len(self._deferred)
            chain = [{"type": t, "payload": dict(p)} for t, p in [*self._deferred, *drafts]]
            expected, session_id = self.head, self.session_id

            def work(store: EventStore) -> tuple[T, tuple[list[Event], SessionState] | None]:
                go, value = first()
                if not go:
                    return value, None
                return value, store.append_many_and_state(session_id, chain, expected_head=expected)

            value, done = await self.store.write_with(work)
            if done is None:
                return value, None
            events, state = done
            del self._deferred[:taken]
            self.head = events[-1].id
            self.commits += 1
            return value, (events[len(events) - len(drafts) :], state)

    async def _commit(self, drafts: Sequence[Draft], expected: str | None) -> list[Event]:
        """Commit the deferred events and ``drafts`` (lock held); ``drafts``' events."""
        taken = len(self._deferred)  # more may be deferred while this commits
        chain = [*self._deferred, *drafts]
        if len(chain) == 1:
            type, payload = chain[0]
            events = [
                await self.store.append(
                    self.session_id, type, dict(payload), expected_head=expected
                )
            ]
        else:
            events = await self.store.append_many(
                self.session_id,
                [{"type": t, "payload": dict(p)} for t, p in chain],
                expected_head=expected,
            )
        del self._deferred[:taken]
        self.head = events[-1].id
        self.commits += 1
        return events[len(events) - len(drafts) :]
