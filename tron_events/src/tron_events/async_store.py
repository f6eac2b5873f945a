"""``AsyncEventStore``: the store's methods as coroutines.

Each call runs the synchronous store in an anyio worker thread. Writes run as
many at once as the backend can use: one at a time on SQLite (a capacity
limiter of one, so writers queue in the event loop rather than on the database
lock), several on PostgreSQL (sessions lock separately, so writers to different
sessions never wait on each other). Reads run several at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.to_thread
from pydantic import BaseModel

from . import _urls
from ._changes import ALL_EVENTS
from .errors import InvalidCursor
from .files import FileDiff, FileTransition
from .models import Event, EventJsonPage, EventPage, ForkResult, SearchHit, Session, Workspace
from .store import BlobInput, EventDraft, EventStore

if TYPE_CHECKING:
    from collections.abc import Callable

    from .messages import Message
    from .reconstruct import SessionState

T = TypeVar("T")

DEFAULT_READERS = 8


class AsyncEventStore:
    """Async facade over :class:`EventStore` (same methods, awaited)."""

    def __init__(self, store: EventStore, *, readers: int = DEFAULT_READERS) -> None:
        self.sync = store
        self._writer = anyio.CapacityLimiter(store.recorder.concurrent_writers)
        self._readers = anyio.CapacityLimiter(readers)

    @classmethod
    async def open(
        cls, url: str = _urls.DEFAULT_DATABASE_URL, *, readers: int = DEFAULT_READERS
    ) -> AsyncEventStore:
        store = await anyio.to_thread.run_sync(EventStore.open, url)
        return cls(store, readers=readers)

    async def _write(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        return await anyio.to_thread.run_sync(partial(fn, *args, **kwargs), limiter=self._writer)

    async def _read(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        return await anyio.to_thread.run_sync(partial(fn, *args, **kwargs), limiter=self._readers)

    def drop_caches(self, session_ids: Iterable[str]) -> None:
        """:meth:`EventStore.drop_caches` (memory only: no thread needed)."""
        self.sync.drop_caches(session_ids)

    async def aclose(self) -> None:
        await anyio.to_thread.run_sync(self.sync.close)

    async def __aenter__(self) -> AsyncEventStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- writes -----------------------------------------------------------

    async def get_or_create_workspace(self, path: str, name: str | None = None) -> Workspace:
        return await self._write(self.sync.get_or_create_workspace, path, name)

    async def create_session(
        self,
        *,
        working_directory: str,
        model: str,
        provider: str,
        title: str | None = None,
        system_prompt: str | None = None,
        parent_session_id: str | None = None,
        spawn: Mapping[str, Any] | None = None,
    ) -> Session:
        return await self._write(
            self.sync.create_session, working_directory=working_directory, model=model,
            provider=provider, title=title, system_prompt=system_prompt,
            parent_session_id=parent_session_id, spawn=spawn,
        )  # fmt: skip

    async def end_session(
        self, session_id: str, *, reason: str = "completed", summary: str | None = None
    ) -> Event:
        return await self._write(self.sync.end_session, session_id, reason=reason, summary=summary)

    async def delete_session(self, session_id: str, *, cascade: bool = False) -> None:
        await self._write(self.sync.delete_session, session_id, cascade=cascade)

    async def append(
        self,
        session_id: str,
        type: str,
        payload: Mapping[str, Any] | BaseModel,
        *,
        parent_id: str | None = None,
        expected_head: str | None = None,
        event_id: str | None = None,
    ) -> Event:
        return await self._write(
            self.sync.append, session_id, type, payload, parent_id=parent_id,
            expected_head=expected_head, event_id=event_id,
        )  # fmt: skip

    async def append_many(
        self,
        session_id: str,
        drafts: Iterable[EventDraft | Mapping[str, Any]],
        *,
        expected_head: str | None = None,
    ) -> list[Event]:
        return await self._write(
            self.sync.append_many, session_id, list(drafts), expected_head=expected_head
        )

    async def append_many_and_state(
        self,
        session_id: str,
        drafts: Iterable[EventDraft | Mapping[str, Any]],
        *,
        expected_head: str | None = None,
    ) -> tuple[list[Event], SessionState]:
        """:meth:`EventStore.append_many_and_state` (the state its commit made), in one
        worker-thread call: one hop instead of two (the agent loop's turn start; the
        state continues the session's live projection)."""
        return await self._write(
            self.sync.append_many_and_state, session_id, list(drafts), expected_head=expected_head
        )

    async def write_with(self, fn: Callable[[EventStore], T]) -> T:
        """``fn(store)`` in one writer worker-thread call (behind the writers' limiter):
        a commit and the reads or file reads a caller needs with it, in one trip (the
        agent's rules files, its prompt's commit and the state it made)."""
        return await self._write(fn, self.sync)

    async def fork(
        self,
        from_event_id: str,
        *,
        name: str | None = None,
        model: str | None = None,
        working_directory: str | None = None,
    ) -> ForkResult:
        return await self._write(
            self.sync.fork, from_event_id, name=name, model=model,
            working_directory=working_directory,
        )  # fmt: skip

    async def rewind(self, session_id: str, to_event_id: str) -> Session:
        return await self._write(self.sync.rewind, session_id, to_event_id)

    # -- reads ------------------------------------------------------------

    async def get_session(self, session_id: str) -> Session:
        return await self._read(self.sync.get_session, session_id)

    async def get_session_and_head(self, session_id: str) -> tuple[Session, Event]:
        """:meth:`EventStore.get_session_and_head` (one worker-thread call)."""
        return await self._read(self.sync.get_session_and_head, session_id)

    async def get_session_head_and_state(
        self, session_id: str
    ) -> tuple[Session, Event, SessionState]:
        """:meth:`EventStore.get_session_head_and_state` (one worker-thread call)."""
        return await self._read(self.sync.get_session_head_and_state, session_id)

    async def read_with(self, fn: Callable[[EventStore], T]) -> T:
        """``fn(store)`` in one reader worker-thread call: several reads, and the file
        reads a caller needs with them, in one trip (a message's start in the agent)."""
        return await self._read(fn, self.sync)

    async def get_session_and_state(self, session_id: str) -> tuple[Session, SessionState]:
        """:meth:`EventStore.get_session_and_state` (one worker-thread call)."""
        return await self._read(self.sync.get_session_and_state, session_id)

    async def list_sessions(
        self, *, workspace_id: str | None = None, status: str | None = None, limit: int = 50
    ) -> list[Session]:
        return await self._read(
            self.sync.list_sessions, workspace_id=workspace_id, status=status, limit=limit
        )

    async def find_workspace(self, path: str) -> Workspace | None:
        """:meth:`EventStore.find_workspace`: the workspace of working directory
        ``path``, or None. Never writes: for filtering reads by folder."""
        return await self._read(self.sync.find_workspace, path)

    async def get_event(self, event_id: str) -> Event | None:
        return await self._read(self.sync.get_event, event_id)

    async def get_events(
        self,
        session_id: str,
        *,
        after_sequence: int | None = None,
        types: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[Event]:
        return await self._read(
            self.sync.get_events, session_id, after_sequence=after_sequence, types=types,
            limit=limit,
        )  # fmt: skip

    async def get_events_of_sessions(
        self, session_ids: Sequence[str], *, types: Sequence[str]
    ) -> list[Event]:
        return await self._read(self.sync.get_events_of_sessions, session_ids, types=types)

    async def get_ancestors(self, event_id: str) -> list[Event]:
        return await self._read(self.sync.get_ancestors, event_id)

    async def get_children(self, event_id: str) -> list[Event]:
        return await self._read(self.sync.get_children, event_id)

    async def get_since(
        self,
        *,
        session_id: str | None = None,
        workspace_id: str | None = None,
        after_event_id: str | None = None,
        after_sequence: int | None = None,
        limit: int = 100,
    ) -> EventPage:
        return await self._read(
            self.sync.get_since, session_id=session_id, workspace_id=workspace_id,
            after_event_id=after_event_id, after_sequence=after_sequence, limit=limit,
        )  # fmt: skip

    async def get_since_json(
        self,
        *,
        session_id: str | None = None,
        workspace_id: str | None = None,
        after_event_id: str | None = None,
        after_sequence: int | None = None,
        limit: int = 100,
    ) -> EventJsonPage:
        return await self._read(
            self.sync.get_since_json, session_id=session_id, workspace_id=workspace_id,
            after_event_id=after_event_id, after_sequence=after_sequence, limit=limit,
        )  # fmt: skip

    async def search(
        self,
        query: str,
        *,
        workspace_id: str | None = None,
        session_id: str | None = None,
        types: Sequence[str] | None = None,
        limit: int = 20,
        raw: bool = False,
        include_descendants: bool = False,
    ) -> list[SearchHit]:
        return await self._read(
            self.sync.search, query, workspace_id=workspace_id, session_id=session_id,
            types=types, limit=limit, raw=raw, include_descendants=include_descendants,
        )  # fmt: skip

    async def get_child_sessions(self, session_id: str) -> list[Session]:
        return await self._read(self.sync.get_child_sessions, session_id)

    async def get_descendant_sessions(self, session_id: str) -> list[Session]:
        return await self._read(self.sync.get_descendant_sessions, session_id)

    async def get_spawning_event(self, session_id: str) -> Event | None:
        return await self._read(self.sync.get_spawning_event, session_id)

    def subscribe(
        self,
        session_id: str | None = None,
        workspace_id: str | None = None,
        after: str | int | None = None,
        *,
        page_size: int = 500,
        poll_interval: float = 1.0,
    ) -> AsyncIterator[Event]:
        """Newly committed events, in order, without gaps or duplicates.

        Of one session (in ``sequence`` order), one workspace or everything
        (in ``position`` order). ``after`` is the cursor: an event id, a
        sequence/position number (-1 for a session from its root, 0 for a
        feed from its start), or None for "from this call on". The iterator
        first catches up from the store, then goes live; commits by other
        processes are noticed too (SQLite: polling ``data_version``;
        PostgreSQL: LISTEN/NOTIFY). Wake-ups carry no events: every event is
        read from the store after the cursor, so none is lost at the seam.

        The cursor is resolved here, before iteration starts (one short read),
        so "from now" means now and a bad cursor raises at once.
        """
        if session_id is not None and workspace_id is not None:
            raise ValueError("subscribe to a session or a workspace, not both")
        if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1:
            raise InvalidCursor(f"page_size must be a positive integer, got {page_size!r}")
        self.sync.recorder.start_change_listener()
        start = self.sync.feed_start(session_id=session_id, workspace_id=workspace_id, after=after)
        return self._follow(session_id, workspace_id, start, page_size, poll_interval)

    async def _follow(
        self,
        session_id: str | None,
        workspace_id: str | None,
        cursor: int,
        page_size: int,
        poll_interval: float,
    ) -> AsyncIterator[Event]:
        if session_id is not None:
            self.sync.watch_feed(session_id)
            try:
                async for event in self._pages(session_id, None, cursor, page_size, poll_interval):
                    yield event
            finally:
                self.sync.watch_feed(session_id, watching=False)
        else:
            async for event in self._pages(None, workspace_id, cursor, page_size, poll_interval):
                yield event

    async def _pages(
        self,
        session_id: str | None,
        workspace_id: str | None,
        cursor: int,
        page_size: int,
        poll_interval: float,
    ) -> AsyncIterator[Event]:
        keys = frozenset({session_id or workspace_id or ALL_EVENTS})
        changes = self.sync.recorder.changes
        signalled = True
        while True:
            seen = changes.version(keys)  # before reading: no commit slips between
            page = None
            if session_id is not None and signalled:
                # What this process just committed, without a trip to a worker thread;
                # after a wake-up by time-out, always the store (a write nobody signalled).
                page = self.sync.recent_feed_page(session_id, cursor, page_size, seen)
            if page is None:
                page = await self._read(
                    self.sync.feed_page, session_id=session_id, workspace_id=workspace_id,
                    after=cursor, limit=page_size,
                )  # fmt: skip
            for event in page.events:
                cursor = event.sequence if session_id is not None else event.position
                yield event
            if not page.has_more:
                await changes.wait(keys, seen, poll_interval)
                signalled = changes.version(keys) != seen

    async def get_messages_at(self, event_id: str) -> list[Message]:
        return await self._read(self.sync.get_messages_at, event_id)

    async def get_state_at(self, event_id: str) -> SessionState:
        return await self._read(self.sync.get_state_at, event_id)

    async def get_state_at_head(self, session_id: str) -> SessionState:
        return await self._read(self.sync.get_state_at_head, session_id)

    # -- recorded file contents and changes ------------------------------------

    async def put_blobs(self, contents: Iterable[BlobInput]) -> list[str]:
        # Compression happens outside the store's write transaction: not under the
        # writer limiter, so appends do not wait for it.
        return await self._read(self.sync.put_blobs, list(contents))

    async def get_blobs(self, hashes: Iterable[str]) -> dict[str, bytes]:
        return await self._read(self.sync.get_blobs, list(hashes))

    async def missing_blobs(self, hashes: Iterable[str]) -> set[str]:
        return await self._read(self.sync.missing_blobs, list(hashes))

    async def file_transitions(self, from_event_id: str, to_event_id: str) -> list[FileTransition]:
        return await self._read(self.sync.file_transitions, from_event_id, to_event_id)

    async def diff(
        self, from_event_id: str, to_event_id: str, *, context: int = 3
    ) -> list[FileDiff]:
        return await self._read(self.sync.diff, from_event_id, to_event_id, context=context)

    async def rewind_and_append(
        self,
        session_id: str,
        to_event_id: str,
        drafts: Iterable[EventDraft | Mapping[str, Any]] = (),
        *,
        expected_head: str | None = None,
        allow_abandoned: bool = False,
    ) -> tuple[Session, list[Event]]:
        return await self._write(
            self.sync.rewind_and_append, session_id, to_event_id, list(drafts),
            expected_head=expected_head, allow_abandoned=allow_abandoned,
        )  # fmt: skip
