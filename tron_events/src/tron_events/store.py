"""``EventStore``: the rules of the event tree, on any backend.

Every public method is one transaction. The rules live here once; the
backend (``_sqlite.py``, ``_postgres.py``) only stores and finds rows.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import orjson
from pydantic import BaseModel
from uuid_utils import uuid7

from . import _urls, ids
from ._changes import ALL_EVENTS
from ._gc import gc_paused
from ._payload_json import payload_json
from ._projection_cache import ProjectionCache
from ._recent_feed import RecentEvents
from ._recorder import (
    EVENT_COLUMNS,
    Counters,
    Cursor,
    NewEvent,
    Recorder,
    RowToAppend,
    SessionDelta,
    _event,
    event_from_row,
    page_of,
)
from ._storable import check_column_text, findable, is_storable
from .blobs import BlobRow, content_hash
from .blobs import decode_all as decode_blobs
from .blobs import encode as encode_blob
from .errors import (
    ConcurrencyConflict,
    DatabaseNotFound,
    EventIdConflict,
    EventNotFound,
    InvalidCursor,
    InvalidParent,
    InvalidPayload,
    InvalidQuery,
    InvalidRewind,
    MissingContent,
    SessionHasForks,
    SessionNotActive,
    SessionNotFound,
    TransientConflict,
    TronEventsError,
)
from .files import (
    CHANGE_TYPES,
    MAX_DIFF_BYTES,
    FileChange,
    FileDiff,
    FileTransition,
    changes_of,
    common_ancestor,
    file_diff,
    transitions,
)
from .models import (
    Event,
    EventJsonPage,
    EventPage,
    ForkResult,
    SearchHit,
    Session,
    SharedPayload,
    Workspace,
)
from .payloads import STORE_ONLY_TYPES, validate_payload, validate_payload_json
from .search_text import search_text

if TYPE_CHECKING:
    from .messages import Message
    from .reconstruct import SessionState

log = logging.getLogger(__name__)

DELETABLE_TYPES = frozenset({"message.user", "message.assistant", "tool.result"})
MESSAGE_TYPES = frozenset({"message.user", "message.assistant"})
#: How far back a state read walks the path cache for a live projection (a turn's
#: events after its start; a long tool step's records).
LIVE_CHAIN_STEPS = 64


@dataclass(frozen=True, slots=True)
class EventDraft:
    """An event to append with ``append_many`` (a plain dict works as well)."""

    type: str
    payload: Mapping[str, Any] | BaseModel
    event_id: str | None = None


_second: tuple[int, str] = (-1, "")
#: ".000Z" … ".999Z": the milliseconds' part of :func:`now`.
_MILLIS = tuple(f".{i:03d}Z" for i in range(1000))


def _malloc_trim() -> None:
    """glibc's ``malloc_trim(0)``: free heap pages back to the system (a no-op elsewhere)."""
    try:
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def now() -> str:
    """UTC time as ISO 8601 with milliseconds and a ``Z``.

    (What ``datetime.now(UTC).isoformat(timespec="milliseconds")`` says, with
    the date and time of the current second formatted once: appends call it.)"""
    global _second
    t = time.time()
    sec = int(t)
    cached = _second
    if cached[0] != sec:
        cached = _second = (sec, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)))
    return cached[1] + _MILLIS[int((t - sec) * 1000)]


def _open_recorder(url: str) -> Recorder:
    if url.startswith("sqlite:"):
        from ._sqlite import SQLiteRecorder

        return SQLiteRecorder(url)
    if url.startswith("postgresql"):
        from ._postgres import PostgresRecorder

        return PostgresRecorder(url)
    raise ValueError(
        f"unsupported database URL {url!r}: use sqlite:///path/to.db or postgresql+psycopg://…"
    )


def _raw_bytes(events: Sequence[Event]) -> int:
    """What projecting ``events`` keeps in memory, roughly (a few times their JSON)."""
    total = 0
    for e in events:
        raw = e._raw
        if isinstance(raw, SharedPayload):
            raw = raw.raw
        total += 3 * len(raw or "") + 200
    return total


def _validated_json(payload: dict[str, Any], type: str) -> str:
    """The JSON text of a payload ``validate_payload`` returned, checked as
    ``payload_json`` does but without reading it back in the common case: its
    input was checked (``check_json_value_fast``) and its model's JSON-mode output can
    differ from JSON only by a float NaN or infinity (a model may make one from
    text), which orjson writes as ``null``; only a text with a ``null`` is read
    back (the appends' hot path)."""
    try:
        text = orjson.dumps(payload)
    except orjson.JSONEncodeError:
        return payload_json(payload, type)  # says where and why
    if b"null" in text:
        return payload_json(payload, type)
    return text.decode()


def _dumps(payload: dict[str, Any], type: str) -> str:
    # The one place a payload becomes JSON text: refuses what would not come back exactly.
    return payload_json(payload, type)


_P = ParamSpec("_P")
_T = TypeVar("_T")
#: See ``_state_snapshots.py`` (kept here so the store imports no pydantic models).
DEFAULT_SNAPSHOT_MIN_EVENTS = 200
DEFAULT_SNAPSHOT_KEEP = 2
#: Sessions whose head (as this process's last append left it) the store keeps.
HEADS_KEPT = 256
#: What the store knows of a session's head: (head event id, its depth, the
#: session's event count, its workspace id). See ``EventStore._tips``.
Tip = tuple[str, int, int, str]
_new_event = object.__new__
#: Attempts of one write before a TransientConflict reaches the caller.
TRANSIENT_ATTEMPTS = 5


def _retry_transient(method: Callable[_P, _T]) -> Callable[_P, _T]:
    """Run a whole write again when the database aborted it (deadlock,
    serialization failure): nothing was written, and a transaction block cannot
    be retried from inside."""

    @functools.wraps(method)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        try:  # the first attempt outside the loop
            return method(*args, **kwargs)
        except TransientConflict:
            pass
        return _retried(method, 1, *args, **kwargs)

    return wrapper


def _retried(call: Callable[_P, _T], failed: int, *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """``call(*args, **kwargs)``, a write of which ``failed`` attempts were aborted
    already, run until it is not, TRANSIENT_ATTEMPTS attempts in all."""
    attempt = failed
    while True:
        if attempt:
            time.sleep(random.uniform(0, 0.01 * 2 ** (attempt - 1)))
        try:
            return call(*args, **kwargs)
        except TransientConflict:
            attempt += 1
            if attempt >= TRANSIENT_ATTEMPTS:
                raise


class EventStore:
    """The event store. Thread-safe; open one per process with :meth:`open`.

    State snapshots (``_state_snapshots.py``): a ``get_state_at*`` call that
    projected at least ``snapshot_min_events`` events (and an eighth of the
    path) stores its projection by event id, keeping the ``snapshot_keep``
    newest per session; later calls, in any process, continue from the nearest
    snapshotted ancestor. ``snapshot_min_events = 0`` turns writing them off.
    """

    def __init__(self, recorder: Recorder) -> None:
        self._rec = recorder
        #: Write a state snapshot after projecting at least this many events (0: never).
        self.snapshot_min_events = DEFAULT_SNAPSHOT_MIN_EVENTS
        #: State snapshots kept per session.
        self.snapshot_keep = DEFAULT_SNAPSHOT_KEEP
        self._snapshots_usable: bool | None = None  # None: not checked yet
        #: The last projection of each recently resumed session (``_projection_cache.py``).
        self._projections = ProjectionCache()
        #: The heads of the sessions this process appended to last, as its appends
        #: left them: an append to one writes after it without reading the session
        #: row or the head event, moving the row on only if it still says the same
        #: (``Recorder.append_after_head``; else the general path reads them).
        self._tips: dict[str, Tip] = {}
        #: The last events this process committed to each session: the session feeds'
        #: next page without a read when it is certainly them (``_recent_feed.py``).
        self._recent = RecentEvents()

    @classmethod
    def open(
        cls,
        url: str = _urls.DEFAULT_DATABASE_URL,
        *,
        upgrade: bool = True,
        must_exist: bool = False,
        read_only: bool = False,
    ) -> EventStore:
        """Open the store at ``url``, creating or upgrading the schema to head.

        ``url`` is ``sqlite:///path/to.db`` (a bare path works too) or
        ``postgresql+psycopg://user@host/db``. ``must_exist``: raise
        ``DatabaseNotFound`` rather than create a missing database.
        ``read_only`` (for readers: implies ``must_exist``, no upgrade): a
        database this process cannot write still opens.

        Checked before anything is written (see ``_preflight.py``), each a
        ``StorageError``: ``UnsupportedDatabase`` (a URL scheme, a missing
        driver), ``DatabaseNotFound``, ``NotATronDatabase`` (left untouched),
        ``OriginalTronDatabase`` (``tron-db adopt`` converts it),
        ``DatabaseReadOnly``, ``DatabaseUnreachable``.
        """
        url = _urls.normalize_url(url)
        from . import _preflight  # no SQLAlchemy: cheap

        if _urls.sqlite_is_current(url):
            if not read_only:
                _preflight.check_writable(url)
        else:
            found = _preflight.inspect(
                url, must_exist=must_exist or read_only, writable=not read_only
            )
            if read_only and found.revision is None:
                raise DatabaseNotFound(
                    f"{_urls.sqlite_file(url) or url} holds no Tron schema yet "
                    "(create it with `tron-db upgrade`)"
                )
            if upgrade and not read_only and not found.at_head:
                from . import migrate  # Alembic and SQLAlchemy load only when needed

                migrate.ensure_head(url)
        return cls(_open_recorder(url))

    @property
    def url(self) -> str:
        return self._rec.url

    @property
    def recorder(self) -> Recorder:
        return self._rec

    def close(self) -> None:
        self._rec.close()
        self._projections.clear()
        self._recent.clear()

    def drop_caches(self, session_ids: Iterable[str]) -> None:
        """Forget what this process keeps in memory for these sessions (their rows
        for ancestor walks, their live projections); later reads build it again.
        For a server whose last client of a session left."""
        ids = list(session_ids)
        self._rec.path_cache.forget(ids)
        self._projections.forget(ids)
        self._recent.forget(ids)
        for sid in ids:
            self._tips.pop(sid, None)
        if ids:
            # Off the caller's thread (a server's event loop): a connection busy with a
            # long read would make it wait.
            threading.Thread(target=self._release_memory, daemon=True).start()

    def _release_memory(self) -> None:
        """The connections' page caches, then the allocator's free memory, back to the
        system (what is left of a resumed session once its caches are dropped;
        ``benchmarks/RESULTS_peers.md``, memory)."""
        self._rec.shrink_memory()
        _malloc_trim()

    def __enter__(self) -> EventStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- workspaces and sessions ------------------------------------------

    @_retry_transient
    def get_or_create_workspace(self, path: str, name: str | None = None) -> Workspace:
        with self._rec.write() as cur:
            return self._workspace(cur, path, name)

    def find_workspace(self, path: str) -> Workspace | None:
        """The workspace of working directory ``path``, or None when no session was
        created there; never writes (unlike :meth:`get_or_create_workspace`).

        ``path`` is looked up as :meth:`create_session` names a workspace (trailing
        slashes dropped), then as tron-server's ``session.create`` names a working
        directory (``~`` expanded; ``..`` and symlinks resolved), so ``/src/app/``,
        ``~/app`` or a symlink to the folder find its workspace."""
        if not findable(path) or not path.strip():
            return None
        candidates = [path.rstrip("/") or "/"]
        try:
            folder = Path(path).expanduser()
            if folder.is_absolute():
                candidates.append(str(folder.resolve()))
        except (OSError, RuntimeError):  # no home for ~, a symlink loop: as given only
            pass
        with self._rec.read() as cur:
            for candidate in dict.fromkeys(candidates):
                workspace = self._rec.get_workspace_by_path(cur, candidate)
                if workspace is not None:
                    return workspace
        return None

    def _workspace(self, cur: Cursor, path: str, name: str | None) -> Workspace:
        if not isinstance(path, str) or not path.strip():
            raise InvalidPayload("a workspace path must be a non-empty string")
        check_column_text(path, "a workspace path")
        check_column_text(name, "a workspace name", optional=True)
        path = path.rstrip("/") or "/"
        ws = self._rec.get_workspace_by_path(cur, path)
        if ws is not None:
            return ws
        when = now()
        self._rec.insert_workspace_if_absent(
            cur,
            Workspace(ids.new_workspace_id(), path, name or PurePath(path).name, when, when),
        )
        ws = self._rec.get_workspace_by_path(cur, path)
        assert ws is not None
        return ws

    @_retry_transient
    def create_session(
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
        """Create a session (and its workspace if new) with its root ``session.start``.

        ``parent_session_id`` makes it a *child* (a sub-agent's session): the
        parent must exist (:class:`SessionNotFound`), and ``spawn`` adds what
        spawned it to ``session.start`` (``parentToolCallId``,
        ``spawnedByEventId`` — an event of the parent, else
        :class:`InvalidParent` — ``subagentType``, ``tools``). A child has
        ``parent_session_id`` set and ``fork_from_event_id`` None (a fork has
        both); its history starts empty, nothing of the parent is inherited.

        The working directory, model, provider and title are kept in the
        session row too: they must be text without NUL (``InvalidPayload``).
        """
        check_column_text(working_directory, "working_directory")
        check_column_text(model, "model")
        check_column_text(provider, "provider")
        check_column_text(title, "title", optional=True)
        extra = dict(spawn or {})
        if parent_session_id is not None:
            extra["parentSessionId"] = parent_session_id
        elif extra:
            raise InvalidPayload("spawn details need a parent_session_id")
        payload = validate_payload(
            "session.start",
            {
                "workingDirectory": working_directory,
                "model": model,
                "provider": provider,
                **({"systemPrompt": system_prompt} if system_prompt is not None else {}),
                **({"title": title} if title is not None else {}),
                **extra,
            },
        )
        with self._rec.write() as cur:
            if parent_session_id is not None:
                self._check_spawn(cur, parent_session_id, payload.get("spawnedByEventId"))
            ws = self._workspace(cur, working_directory, None)
            when = now()
            session_id = ids.new_session_id()
            root = NewEvent(
                id=ids.new_event_id(), parent_id=None, session_id=session_id,
                workspace_id=ws.id, sequence=0, depth=0, type="session.start",
                timestamp=when, payload_json=_dumps(payload, "session.start"), search_text="",
            )  # fmt: skip
            session = Session(
                id=session_id, workspace_id=ws.id, root_event_id=root.id,
                head_event_id=root.id, status="active", model=model, provider=provider,
                working_directory=working_directory, title=title,
                parent_session_id=parent_session_id,
                fork_from_event_id=None, created_at=when, last_activity_at=when,
                ended_at=None, event_count=1, message_count=0, turn_count=0,
                input_tokens=0, output_tokens=0, cache_read_tokens=0,
                cache_creation_tokens=0, cost=0.0,
            )  # fmt: skip
            self._rec.insert_session(cur, session)
            [position] = self._rec.insert_events(cur, [root])
            self._rec.touch_workspace(cur, ws.id, when)
        # With its root: it starts the session's cached rows, which its appends then extend
        # (a turn's state read walks them instead of reading: _live_chain), and the change
        # listener knows the root's position for this process's (_sqlite.py).
        root_event = Event(
            id=root.id, parent_id=None, session_id=session_id, workspace_id=ws.id,
            sequence=0, depth=0, type=root.type, timestamp=when, payload=payload,
            raw_payload=root.payload_json, position=position,
        )  # fmt: skip
        self._committed(session.id, session.workspace_id, [root_event])
        self._set_tip(session.id, (root.id, 0, 1, ws.id))
        return session

    def _check_spawn(self, cur: Cursor, parent_session_id: str, spawned_by: Any) -> None:
        if self._rec.get_session(cur, parent_session_id) is None:
            raise SessionNotFound(parent_session_id)
        if spawned_by is None:
            return
        event = self._rec.get_event(cur, str(spawned_by))
        if event is None or event.session_id != parent_session_id:
            raise InvalidParent(
                f"spawning event {spawned_by!r} is not an event of session {parent_session_id!r}"
            )

    def get_session(self, session_id: str) -> Session:
        with self._rec.read() as cur:
            session = self._rec.get_session(cur, session_id)
        if session is None:
            raise SessionNotFound(session_id)
        return session

    def get_session_and_head(self, session_id: str) -> tuple[Session, Event]:
        """The session's row and its head event, in one read (a caller that looks at the
        last event, e.g. whether a stopped run left a request, needs no second trip)."""
        with self._rec.read() as cur:
            return self._session_and_head(cur, session_id)

    def _session_and_head(self, cur: Cursor, session_id: str) -> tuple[Session, Event]:
        """:meth:`get_session_and_head` within a read: one statement in the common case,
        the row then the head to tell which one is missing."""
        both = self._rec.get_session_and_head(cur, session_id)
        if both is not None:
            return both
        session = self._rec.get_session(cur, session_id)
        if session is None:
            raise SessionNotFound(session_id)
        head = self._rec.get_event(cur, session.head_event_id)
        if head is None:
            raise EventNotFound(session.head_event_id)
        return session, head

    def get_session_head_and_state(self, session_id: str) -> tuple[Session, Event, SessionState]:
        """:meth:`get_session_and_head` and the state at that head, in one call (a new
        message is checked against the head event, and its run starts from the state)."""
        session, head = self.get_session_and_head(session_id)
        return session, head, self._state_at_read(head)

    def get_session_and_state(self, session_id: str) -> tuple[Session, SessionState]:
        """The session's row and the state at the head that row names (so both agree),
        in one call: the agent runtime starts a run from both."""
        session, head = self.get_session_and_head(session_id)
        return session, self._state_at_read(head)

    def list_sessions(
        self, *, workspace_id: str | None = None, status: str | None = None, limit: int = 50
    ) -> list[Session]:
        """Sessions, most recently active first."""
        _check_int(limit, "limit", InvalidCursor)
        with self._rec.read() as cur:
            return self._rec.list_sessions(cur, workspace_id, status, limit)

    @_retry_transient
    def end_session(
        self, session_id: str, *, reason: str = "completed", summary: str | None = None
    ) -> Event:
        """Append ``session.end`` and mark the session ended (no more appends)."""
        payload: dict[str, Any] = {"reason": reason}
        if summary is not None:
            payload["summary"] = summary
        payload = validate_payload("session.end", payload)
        with self._rec.write() as cur:
            session, head = self._active_session(cur, session_id)
            [event] = self._append_chain(cur, session, [("session.end", payload, None)], head)
            self._rec.mark_ended(cur, session_id, event.timestamp)
        self._committed(session.id, session.workspace_id, [event])
        return event

    @_retry_transient
    def delete_session(self, session_id: str, *, cascade: bool = False) -> None:
        """Delete a session, its own events and their search rows.

        Refuses with :class:`SessionHasForks` while forks depend on it, unless
        ``cascade=True``, which deletes those forks (and theirs) too.
        """
        with self._rec.write() as cur:
            if self._rec.get_session(cur, session_id) is None:
                raise SessionNotFound(session_id)
            forks = self._rec.fork_ids(cur, session_id)
            if forks and not cascade:
                raise SessionHasForks(session_id, forks)
            # Dependents first: a fork's events point into its source.
            order: list[str] = []
            stack = [session_id]
            while stack:
                sid = stack.pop()
                order.append(sid)
                stack.extend(self._rec.fork_ids(cur, sid))
            self._rec.delete_sessions(cur, list(reversed(order)))
        self._rec.path_cache.forget(order)
        self._projections.forget(order)
        self._recent.forget(order)

    def _committed(self, session_id: str, workspace_id: str, events: Sequence[Event] = ()) -> None:
        """After a commit: cache the new rows for ancestor walks and for the session's
        feeds, and wake live subscribers of this session and workspace."""
        self._rec.remember(events)
        self._signal(session_id, workspace_id, events)

    def _signal(self, session_id: str, workspace_id: str, events: Sequence[Event]) -> None:
        """Wake the live subscribers of the session and workspace, keeping ``events`` for
        the session's feeds in the same step (``_recent_feed.py``)."""
        changes = self._rec.changes
        if not self._recent.watching(session_id):  # no live feed of it here: the bump
            changes.bump_commit(session_id, workspace_id)
        else:

            def bump() -> int:
                changes.bump(session_id, workspace_id, ALL_EVENTS)
                return changes.version(frozenset({session_id}))

            self._recent.committed(session_id, events, bump)
        self._rec.committed_here(events)

    def watch_feed(self, session_id: str, watching: bool = True) -> None:
        """A live feed of ``session_id`` starts (``watching``) or ends here: while one
        runs, the session's commits are kept for :meth:`recent_feed_page`."""
        if watching:
            self._recent.watch(session_id)
        else:
            self._recent.unwatch(session_id)

    def recent_feed_page(
        self, session_id: str, after: int, limit: int, version: int
    ) -> EventPage | None:
        """:meth:`feed_page` of a session from what this process committed, without a
        read, when that is certainly the page (the session's change signal still at
        ``version``, taken before the call; see ``_recent_feed.py``); None: call
        :meth:`feed_page`. Cheap: for an event loop."""
        return self._recent.page(session_id, after, limit, version)

    # -- appending --------------------------------------------------------

    def append(
        self,
        session_id: str,
        type: str,
        payload: Mapping[str, Any] | BaseModel,
        *,
        parent_id: str | None = None,
        expected_head: str | None = None,
        event_id: str | None = None,
    ) -> Event:
        """Append one event; the session's head moves to it.

        ``parent_id`` defaults to the head and must lie on the session's tree.
        ``expected_head`` makes it a compare-and-append (``ConcurrencyConflict``).
        A repeated ``event_id`` with the same type and payload returns the
        stored event, so a client can retry safely.
        """
        if payload.__class__ is dict and type.__class__ is str and type not in STORE_ONLY_TYPES:
            data, text = validate_payload_json(type, payload)  # _prepare_json's common case
        else:
            data, text = self._prepare_json(type, payload)
        if (
            event_id is None
            and parent_id is None
            and type not in CHECKED_TYPES
            and not self._rec.has_append_at_head
            and isinstance(session_id, str)
        ):
            # The agent loop's append: to the head this process left (SQLite).
            tip = self._tips.get(session_id)
            if tip is not None and (expected_head is None or expected_head == tip[0]):
                try:
                    event = self._append_one_to_tip(session_id, tip, type, data, text)
                except TransientConflict:  # nothing written: its next attempts, as below
                    return _retried(
                        self._append_validated, 1,
                        session_id, type, data, parent_id, expected_head, event_id,
                    )  # fmt: skip
                if event is not None:
                    return event
        return self._append_checked(session_id, type, data, parent_id, expected_head, event_id)

    def _append_validated(
        self,
        session_id: str,
        type: str,
        data: dict[str, Any],
        parent_id: str | None,
        expected_head: str | None,
        event_id: str | None,
    ) -> Event:
        """One attempt of :meth:`append` of a validated payload, but for an append to
        the head this process knows."""
        if event_id is not None:
            ids.check_client_event_id(event_id)
        elif (
            parent_id is None
            and type not in CHECKED_TYPES
            and self._rec.has_append_at_head
            and findable(session_id)
            and (expected_head is None or findable(expected_head))
        ):
            fast = self._append_at_head(session_id, type, data, expected_head)
            if fast is not None:
                return fast
        with self._rec.write() as cur:
            # Lock the session before looking for the id: a retry racing its
            # original then sees the stored event instead of a duplicate key.
            session, head = self._locked_session(cur, session_id)
            if event_id is not None:
                existing = self._existing(cur, event_id, session_id, type, data)
                if existing is not None:
                    return existing
            self._check_active(session)
            self._check_head(session, expected_head)
            parent = head
            if parent_id is not None and parent_id != head.id:
                parent = self._parent_on_tree(cur, session, parent_id)
            events = self._append_chain(cur, session, [(type, data, event_id)], parent)
        self._committed(session.id, session.workspace_id, events)
        self._remember_tip(session, events)
        return events[0]

    #: :meth:`_append_validated`, retried (TRANSIENT_ATTEMPTS attempts in all).
    _append_checked = _retry_transient(_append_validated)

    def _append_at_head(
        self, session_id: str, type: str, data: dict[str, Any], expected_head: str | None
    ) -> Event | None:
        """The backend's one-statement append to the head, if it has one and
        every check passes (else None, and nothing was written)."""
        when = now()
        row = NewEvent(
            id=ids.new_event_id(), parent_id=None, session_id=session_id, workspace_id="",
            sequence=0, depth=0, type=type, timestamp=when,
            payload_json=_validated_json(data, type), search_text=search_text(type, data),
        )  # fmt: skip
        delta = SessionDelta(head_event_id=row.id, events=1, last_activity_at=when)
        _count(delta, type, data)
        found = self._rec.append_at_head(row, delta, expected_head)
        if found is None:
            return None
        position, parent, workspace_id, sequence, depth = found
        event = Event(
            id=row.id, parent_id=parent, session_id=session_id, workspace_id=workspace_id,
            sequence=sequence, depth=depth, type=type, timestamp=when, payload=data,
            raw_payload=row.payload_json, position=position,
        )  # fmt: skip
        self._committed(session_id, workspace_id, [event])
        self._set_tip(session_id, (event.id, depth, sequence + 1, workspace_id))
        return event

    def _append_one_to_tip(
        self, session_id: str, tip: Tip, type: str, data: dict[str, Any], text: bytes | None
    ) -> Event | None:
        """``_append_to_tip`` of one event, written out (every append of the agent
        loop): ``text`` is its payload's JSON when validation had it already."""
        head_id, depth, sequence, workspace_id = tip
        when = now()
        eid = "evt_" + str(uuid7())  # ids.new_event_id
        depth += 1
        raw = _validated_json(data, type) if text is None else text.decode()
        values = (eid, head_id, session_id, workspace_id, sequence, depth, type, when, raw)
        rec = self._rec
        position = rec.append_one_after_head(
            session_id, head_id, sequence, values, search_text(type, data), _counters(type, data)
        )
        if position is None:
            self._tips.pop(session_id, None)
            return None
        e: Event = _new_event(Event)
        (e.id, e.parent_id, e.session_id, e.workspace_id, e.sequence, e.depth, e.type,
         e.timestamp, e._raw) = values  # fmt: skip
        e._payload = data
        e.position = position
        # _committed, written out: the path cache takes the row as it is.
        rec.path_cache.extend_one(
            session_id, workspace_id,
            (position, eid, head_id, sequence, depth, type, when, SharedPayload(raw, data)),
        )  # fmt: skip
        if self._recent.watching(session_id):
            self._signal(session_id, workspace_id, (e,))
        else:  # _signal, written out
            rec.changes.bump_commit(session_id, workspace_id)
            rec.committed_here((e,))
        # _set_tip, written out
        tips = self._tips
        tips.pop(session_id, None)  # the newest last: the oldest go first
        tips[session_id] = (eid, depth, sequence + 1, workspace_id)
        if len(tips) > HEADS_KEPT:
            with contextlib.suppress(StopIteration, KeyError, RuntimeError):
                tips.pop(next(iter(tips)))
        return e

    def _append_to_tip(
        self,
        session_id: str,
        tip: Tip,
        items: Sequence[tuple[str, dict[str, Any], str | None]],
    ) -> list[Event] | None:
        """Append ``items`` (validated, none of ``CHECKED_TYPES``, no client ids) as a
        chain after ``tip``, in one transaction, if the session row still says what
        ``tip`` says (else None, nothing written: the caller takes the general
        path). The appends' hot path: plain tuples, no session or head objects."""
        head_id, depth, sequence, workspace_id = tip
        when = now()
        rows: list[RowToAppend] = []
        parent_id = head_id
        for t, data, _ in items:
            eid = ids.new_event_id()
            depth += 1
            values = (eid, parent_id, session_id, workspace_id, sequence, depth, t, when,
                      _validated_json(data, t))  # fmt: skip
            rows.append((values, search_text(t, data)))
            parent_id = eid
            sequence += 1
        if len(items) == 1:
            counters = _counters(items[0][0], items[0][1])
        else:
            counters = _sum_counters(_counters(t, data) for t, data, _ in items)
        positions = self._rec.append_after_head(session_id, head_id, tip[2], rows, counters)
        if positions is None:
            self._tips.pop(session_id, None)
            return None
        events: list[Event] = []
        cached: list[tuple[Any, ...]] = []
        for (values, _), (_, data, _), position in zip(rows, items, positions, strict=True):
            e: Event = _new_event(Event)
            (e.id, e.parent_id, e.session_id, e.workspace_id, e.sequence, e.depth, e.type,
             e.timestamp, e._raw) = values  # fmt: skip
            e._payload = data
            e.position = position
            events.append(e)
            cached.append((position, *values[:2], *values[4:8], SharedPayload(values[8], data)))
        # _committed, written out: the path cache takes the rows as they are.
        self._rec.path_cache.extend(session_id, workspace_id, tip[2] - 1, cached)
        self._signal(session_id, workspace_id, events)
        self._set_tip(session_id, (parent_id, depth, sequence, workspace_id))
        return events

    def append_many_and_state(
        self,
        session_id: str,
        drafts: Iterable[EventDraft | Mapping[str, Any]],
        *,
        expected_head: str | None = None,
    ) -> tuple[list[Event], SessionState]:
        """:meth:`append_many`, then the state at the head the commit made (its last
        event; the session's head when ``drafts`` is empty). The agent loop's turn start:
        the live projection of the event the chain follows goes on over the chain, so
        no read is needed when this process kept it (as after its own last append)."""
        events = self.append_many(session_id, drafts, expected_head=expected_head)
        if not events:
            return events, self.get_state_at_head(session_id)
        last, start = events[-1], events[0].parent_id
        state = self._state_went_on(start, events, last) if start is not None else None
        return events, state or self._state_at(event_id=last.id)

    def _live_chain(self, head: Event) -> tuple[str, list[Event]] | None:
        """(the nearest ancestor of ``head`` with a live projection, the events after it
        up to ``head``) from memory: the head itself, or a walk back over the path
        cache's rows of its session (as a turn's last commit leaves it: the state was
        made at its start). ``head`` was read or written by the caller, which proves its
        session; rows are immutable. None: not within a few steps (then a read)."""
        live = self._projections
        if head.id in live:
            return head.id, []
        entry = self._rec.path_cache.get(head.session_id)
        if entry is None:
            return None
        rows, sid, wid = entry.by_id, head.session_id, head.workspace_id
        chain = [head]
        parent = head.parent_id
        for _ in range(LIVE_CHAIN_STEPS):
            if parent is None:
                return None
            if parent in live:
                chain.reverse()
                return parent, chain
            row = rows.get(parent)
            if row is None:  # another session's (a fork's root), or not cached
                return None
            chain.append(_event(row, sid, wid))
            parent = row[2]
        return None

    def _state_went_on(
        self, start: str, events: Sequence[Event], last: Event
    ) -> SessionState | None:
        """The state at ``last`` (the end of ``events``, the chain after ``start``; or
        ``start`` itself when empty), continued from the live projection at ``start``
        without reading; None when there is none (or it cannot go on: it is dropped,
        and :meth:`_state_at` projects the path)."""
        from . import reconstruct

        live = self._projections
        taken = live.take(start)
        if taken is None:
            return None
        proj, nbytes, unsaved = taken
        with gc_paused():
            try:
                reconstruct.detach_last(proj)  # states handed out keep their messages
                reconstruct.advance(proj, events, resuming=True)
            except reconstruct.NeedsFullPath as exc:
                log.debug("state at %s: not going on from %s: %s", last.id, start, exc)
                return None
            state = reconstruct.state_of(proj, last.id)
            nbytes += _raw_bytes(events)
            unsaved += len(events)
            snapshot = bool(events) and self._snapshots_enabled()
            self._keep_live(last, proj, nbytes, unsaved, snapshot=snapshot)
        return state

    def _keep_live(
        self, event: Event, proj: Any, nbytes: int, unsaved: int, *, snapshot: bool
    ) -> None:
        """Keep ``proj`` as the live projection at ``event``; with ``snapshot``, stored
        first once as many events were projected as a snapshot is worth (``unsaved``,
        over one call or over the calls that went on from the live projection)."""
        from . import _state_snapshots as snapshots

        if (
            snapshot
            and snapshots.should_snapshot(unsaved, event.depth + 1, self.snapshot_min_events)
            and self._save_snapshot(event, proj)
        ):
            unsaved = 0
        self._projections.put(event.id, event.session_id, event.sequence, proj, nbytes, unsaved)

    def _state_at_read(self, head: Event) -> SessionState:
        """The state at ``head``, an event the caller just read: from memory when it
        can (:meth:`_live_chain`), else :meth:`_state_at`."""
        found = self._live_chain(head)
        if found is not None:
            state = self._state_went_on(found[0], found[1], head)
            if state is not None:
                return state
        return self._state_at(event_id=head.id)

    @_retry_transient
    def append_many(
        self,
        session_id: str,
        drafts: Iterable[EventDraft | Mapping[str, Any]],
        *,
        expected_head: str | None = None,
    ) -> list[Event]:
        """Append a chain (each event the parent of the next), all or nothing.

        A retried batch whose drafts all carry event ids that are already
        stored with the same content returns the stored events.
        """
        items = [self._draft(d) for d in drafts]
        if not items:
            return []
        if isinstance(session_id, str) and all(
            eid is None and t not in CHECKED_TYPES for t, _, eid in items
        ):
            tip = self._tips.get(session_id)
            if tip is not None and (expected_head is None or expected_head == tip[0]):
                appended = self._append_to_tip(session_id, tip, items)
                if appended is not None:
                    return appended
        with self._rec.write() as cur:
            session, head = self._locked_session(cur, session_id)
            if all(eid is not None for _, _, eid in items):
                stored = [self._existing(cur, eid, session_id, t, p) for t, p, eid in items]  # type: ignore[arg-type]
                if all(e is not None for e in stored):
                    return [e for e in stored if e is not None]
                if any(e is not None for e in stored):
                    raise EventIdConflict(
                        next(eid for (_, _, eid), e in zip(items, stored, strict=True) if e) or "",
                        "an event of an earlier, different batch",
                    )
            else:
                for t, p, eid in items:
                    if eid is not None and self._existing(cur, eid, session_id, t, p):
                        raise EventIdConflict(eid, "an event stored earlier")
            self._check_active(session)
            self._check_head(session, expected_head)
            events = self._append_chain(cur, session, items, head)
        self._committed(session.id, session.workspace_id, events)
        self._remember_tip(session, events)
        return events

    def _draft(self, d: EventDraft | Mapping[str, Any]) -> tuple[str, dict[str, Any], str | None]:
        if isinstance(d, EventDraft):
            t, p, eid = d.type, d.payload, d.event_id
        elif isinstance(d, Mapping):
            if "type" not in d or "payload" not in d:
                raise InvalidPayload(f"a draft needs 'type' and 'payload' keys, got {sorted(d)}")
            t, p, eid = d["type"], d["payload"], d.get("event_id")
        else:
            raise InvalidPayload(f"a draft must be an EventDraft or a dict, got {type(d).__name__}")
        if eid is not None:
            ids.check_client_event_id(eid)
        return t, self._prepare(t, p), eid

    def _prepare(self, type: str, payload: Mapping[str, Any] | BaseModel) -> dict[str, Any]:
        return self._prepare_json(type, payload)[0]

    def _prepare_json(
        self, type: str, payload: Mapping[str, Any] | BaseModel
    ) -> tuple[dict[str, Any], bytes | None]:
        """The validated payload, and its JSON text when validation had it already."""
        if isinstance(type, str) and type in STORE_ONLY_TYPES:
            raise InvalidPayload(
                f"{type} events are written by the store itself "
                "(create_session, fork, end_session), not appended"
            )
        if payload.__class__ is not dict and isinstance(payload, Mapping):
            payload = dict(payload)
        return validate_payload_json(type, payload)

    def _existing(
        self, cur: Cursor, event_id: str, session_id: str, type: str, data: dict[str, Any]
    ) -> Event | None:
        stored = self._rec.get_event(cur, event_id)
        if stored is None:
            return None
        if stored.session_id != session_id or stored.type != type or stored.payload != data:
            raise EventIdConflict(
                event_id, f"a different {stored.type} event in session {stored.session_id}"
            )
        return stored

    def _locked_session(self, cur: Cursor, session_id: str) -> tuple[Session, Event]:
        """The session and its head event, locked against other writers."""
        if not findable(session_id):
            raise SessionNotFound(session_id)
        locked = self._rec.lock_session(cur, session_id)
        if locked is None:
            raise SessionNotFound(session_id)
        return locked

    def _remember_tip(self, session: Session, events: Sequence[Event]) -> None:
        """After an append's commit under the session row's lock (``session``, as the
        lock found it): the head it left (its rows moved the head to the last one
        and added their count, whichever event they followed)."""
        if events:
            last = events[-1]
            self._set_tip(
                session.id,
                (last.id, last.depth, session.event_count + len(events), session.workspace_id),
            )

    def _set_tip(self, session_id: str, tip: Tip) -> None:
        tips = self._tips
        tips.pop(session_id, None)  # the newest last: the oldest go first
        tips[session_id] = tip
        if len(tips) > HEADS_KEPT:
            # another thread may get there first
            with contextlib.suppress(StopIteration, KeyError, RuntimeError):
                tips.pop(next(iter(tips)))

    @staticmethod
    def _check_active(session: Session) -> None:
        if session.status != "active":
            raise SessionNotActive(session.id, session.status)

    def _active_session(self, cur: Cursor, session_id: str) -> tuple[Session, Event]:
        locked = self._locked_session(cur, session_id)
        self._check_active(locked[0])
        return locked

    @staticmethod
    def _check_head(session: Session, expected_head: str | None) -> None:
        if expected_head is not None and expected_head != session.head_event_id:
            raise ConcurrencyConflict(session.id, expected_head, session.head_event_id)

    def _parent_on_tree(self, cur: Cursor, session: Session, parent_id: str) -> Event:
        parent = self._rec.get_event(cur, parent_id)
        if parent is None:
            raise InvalidParent(f"parent {parent_id!r} does not exist")
        if parent.session_id == session.id:
            return parent
        root = self._rec.get_event(cur, session.root_event_id)
        assert root is not None
        if root.parent_id is not None and parent.depth < root.depth:
            inherited = self._rec.get_path(cur, root)
            if any(e.id == parent_id for e in inherited):
                return parent
        raise InvalidParent(
            f"parent {parent_id!r} is not on session {session.id!r}'s tree "
            "(its own events and the ancestors of its root)"
        )

    def _append_chain(
        self,
        cur: Cursor,
        session: Session,
        items: Sequence[tuple[str, dict[str, Any], str | None]],
        parent: Event,
    ) -> list[Event]:
        for t, data, _ in items:
            if t == "message.deleted":
                self._check_deletion(cur, parent, data)
        when = now()
        delta = SessionDelta(head_event_id=parent.id, last_activity_at=when)
        rows: list[NewEvent] = []
        events: list[Event] = []
        parent_id, depth, sequence = parent.id, parent.depth, session.event_count
        for t, data, eid in items:
            depth += 1
            row = NewEvent(
                id=eid or ids.new_event_id(), parent_id=parent_id, session_id=session.id,
                workspace_id=session.workspace_id, sequence=sequence, depth=depth, type=t,
                timestamp=when, payload_json=_validated_json(data, t),
                search_text=search_text(t, data),
            )  # fmt: skip
            rows.append(row)
            events.append(
                Event(
                    id=row.id, parent_id=parent_id, session_id=session.id,
                    workspace_id=session.workspace_id, sequence=sequence, depth=depth,
                    type=t, timestamp=when, payload=data, raw_payload=row.payload_json,
                )
            )  # fmt: skip
            _count(delta, t, data)
            parent_id = row.id
            sequence += 1
        delta.head_event_id = parent_id
        delta.events = len(rows)
        for event, position in zip(events, self._rec.insert_events(cur, rows), strict=True):
            event.position = position
        self._rec.apply_session_delta(cur, session.id, delta)
        self._follow_model(cur, session, parent, events)
        return events

    def _follow_model(
        self, cur: Cursor, session: Session, parent: Event, events: Sequence[Event]
    ) -> None:
        """Keep the session row's model and provider those of its new head (what
        ``get_state_at_head`` says the next turn uses): they change with a
        ``config.model_switch``, and with a branch off an earlier event."""
        if parent.id == session.head_event_id and all(
            e.type not in HEAD_MODEL_TYPES for e in events
        ):
            return
        path = [*self._rec.get_path(cur, parent), *events]
        model, provider = _model_and_provider_at(path)
        model, provider = model or session.model, provider or session.provider
        if (model, provider) != (session.model, session.provider):
            self._rec.set_session_model(cur, session.id, model, provider)
        _follow_directory(self._rec, cur, session, path)

    def _check_deletion(self, cur: Cursor, parent: Event, data: dict[str, Any]) -> None:
        target_id = data["targetEventId"]
        target = self._rec.get_event(cur, target_id)
        if target is None:
            raise InvalidPayload(f"message.deleted: target {target_id!r} does not exist")
        if target.type not in DELETABLE_TYPES:
            raise InvalidPayload(
                f"message.deleted: target {target_id!r} is a {target.type}; only "
                "message.user, message.assistant and tool.result events can be deleted"
            )
        if target.depth > parent.depth or all(
            e.id != target_id for e in self._rec.get_path(cur, parent)
        ):
            raise InvalidPayload(
                f"message.deleted: target {target_id!r} is not on the path being appended to"
            )

    # -- reading ----------------------------------------------------------

    def get_event(self, event_id: str) -> Event | None:
        with self._rec.read() as cur:
            return self._rec.get_event(cur, event_id)

    def get_events(
        self,
        session_id: str,
        *,
        after_sequence: int | None = None,
        types: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[Event]:
        """A session's own events in sequence order (orphaned branches included)."""
        if after_sequence is not None:
            _check_int(after_sequence, "after_sequence", InvalidCursor)
        if limit is not None:
            _check_int(limit, "limit", InvalidCursor)
        with self._rec.read() as cur:
            if self._rec.get_session(cur, session_id) is None:
                raise SessionNotFound(session_id)
            return self._rec.get_events(cur, session_id, after_sequence, types, limit)

    def get_events_of_sessions(
        self, session_ids: Sequence[str], *, types: Sequence[str]
    ) -> list[Event]:
        """The events of ``types`` among the own events of each of ``session_ids``
        (orphaned branches included), by session then sequence, in one read; a session
        that does not exist contributes nothing. (Memory reads a workspace's handoffs so.)"""
        if isinstance(session_ids, str) or isinstance(types, str):
            raise TypeError("session_ids and types are sequences of strings, not a string")
        with self._rec.read() as cur:
            return self._rec.get_events_of_sessions(cur, list(session_ids), list(types))

    def get_ancestors(self, event_id: str) -> list[Event]:
        """The path from the root to ``event_id`` (root first), crossing forks."""
        with gc_paused(), self._rec.read() as cur:
            return self._path(cur, event_id)

    def _path(self, cur: Cursor, event_id: str) -> list[Event]:
        event = self._rec.get_event(cur, event_id)
        if event is None:
            raise EventNotFound(event_id)
        return self._rec.get_path(cur, event)

    def get_children(self, event_id: str) -> list[Event]:
        with self._rec.read() as cur:
            return self._rec.get_children(cur, event_id)

    def get_since(
        self,
        *,
        session_id: str | None = None,
        workspace_id: str | None = None,
        after_event_id: str | None = None,
        after_sequence: int | None = None,
        limit: int = 100,
    ) -> EventPage:
        """Events after a cursor, a page at a time.

        With ``session_id``: the session's own events in sequence order, after
        an event id or a sequence number. Otherwise the feed in global
        ``position`` order, of one workspace or of everything. Pass
        ``next_cursor`` back as ``after_event_id``. An unknown cursor raises
        :class:`InvalidCursor`.
        """
        rows = self._since_rows(
            EVENT_COLUMNS, session_id, workspace_id, after_event_id, after_sequence, limit
        )
        return page_of([event_from_row(row) for row in rows], limit)

    def get_since_json(
        self,
        *,
        session_id: str | None = None,
        workspace_id: str | None = None,
        after_event_id: str | None = None,
        after_sequence: int | None = None,
        limit: int = 100,
    ) -> EventJsonPage:
        """:meth:`get_since`'s page as JSON text built by the database (see
        :class:`EventJsonPage`): no event object is made and nothing is
        encoded in Python, for servers that forward pages of events unread
        (about twice as fast as ``get_since`` plus encoding its events)."""
        rows = self._since_rows(
            self._rec.wire_json_columns(),
            session_id, workspace_id, after_event_id, after_sequence, limit,
        )  # fmt: skip
        has_more = len(rows) > limit
        rows = rows[:limit]
        last = rows[-1] if rows else None
        return EventJsonPage(
            events_json="[" + ",".join([row[3] for row in rows]) + "]",
            count=len(rows),
            last_sequence=last[1] if last else None,
            last_position=last[2] if last else None,
            next_cursor=last[0] if last else None,
            has_more=has_more,
        )

    def _since_rows(
        self,
        columns: str,
        session_id: str | None,
        workspace_id: str | None,
        after_event_id: str | None,
        after_sequence: int | None,
        limit: int,
    ) -> list[Any]:
        _check_int(limit, "limit", InvalidCursor)
        if limit < 1:
            raise InvalidCursor(f"limit must be at least 1, got {limit}")
        if after_sequence is not None:
            _check_int(after_sequence, "after_sequence", InvalidCursor)
        with self._rec.read() as cur:
            if session_id is not None:
                if self._rec.get_session(cur, session_id) is None:
                    raise SessionNotFound(session_id)
                after = -1 if after_sequence is None else after_sequence
                if after_event_id is not None:
                    cursor = self._rec.resolve_cursor(cur, after_event_id)
                    if cursor.session_id != session_id:
                        raise InvalidCursor(
                            f"cursor {after_event_id!r} belongs to session "
                            f"{cursor.session_id!r}, not {session_id!r}"
                        )
                    after = cursor.sequence
                return self._rec.session_feed_rows(cur, columns, session_id, after, limit)
            if after_sequence is not None:
                raise InvalidCursor("after_sequence needs a session_id")
            position = 0
            if after_event_id is not None:
                cursor = self._rec.resolve_cursor(cur, after_event_id)
                if workspace_id is not None and cursor.workspace_id != workspace_id:
                    raise InvalidCursor(f"cursor {after_event_id!r} belongs to another workspace")
                position = cursor.position
            return self._rec.position_feed_rows(cur, columns, workspace_id, position, limit)

    # -- live feeds (used by AsyncEventStore.subscribe) ---------------------

    def feed_start(
        self, *, session_id: str | None, workspace_id: str | None, after: str | int | None
    ) -> int:
        """Resolve a subscription cursor: a sequence for a session feed, a
        position otherwise. ``after`` is an event id, a number (sequence or
        position; -1 / 0 for "from the beginning") or None ("from now")."""
        if isinstance(after, int):
            _check_int(after, "after", InvalidCursor)
        with self._rec.read() as cur:
            if session_id is not None:
                if self._rec.get_session(cur, session_id) is None:
                    raise SessionNotFound(session_id)
                if after is None:
                    return self._rec.last_sequence(cur, session_id)
                if isinstance(after, int):
                    return after
                cursor = self._rec.resolve_cursor(cur, after)
                if cursor.session_id != session_id:
                    raise InvalidCursor(f"cursor {after!r} belongs to another session")
                return cursor.sequence
            if after is None:
                return self._rec.current_position(cur)
            if isinstance(after, int):
                return after
            cursor = self._rec.resolve_cursor(cur, after)
            if workspace_id is not None and cursor.workspace_id != workspace_id:
                raise InvalidCursor(f"cursor {after!r} belongs to another workspace")
            return cursor.position

    def feed_page(
        self, *, session_id: str | None, workspace_id: str | None, after: int, limit: int
    ) -> EventPage:
        """The page after a number returned by :meth:`feed_start` (or the last
        event's sequence / position)."""
        with self._rec.read() as cur:
            if session_id is not None:
                return self._rec.session_feed(cur, session_id, after, limit)
            return self._rec.position_feed(cur, workspace_id, after, limit)

    # -- fork and rewind --------------------------------------------------

    @_retry_transient
    def fork(
        self,
        from_event_id: str,
        *,
        name: str | None = None,
        model: str | None = None,
        working_directory: str | None = None,
    ) -> ForkResult:
        """A new session continuing from ``from_event_id``; nothing is copied.

        ``working_directory`` gives the fork another folder than its source's (its own
        git worktree); it is recorded in the ``session.fork`` event. ``name`` (the
        new session's title), ``model`` and ``working_directory`` must be text
        without NUL (``InvalidPayload``).
        """
        check_column_text(name, "name", optional=True)
        check_column_text(model, "model", optional=True)
        check_column_text(working_directory, "working_directory", optional=True)
        with self._rec.write() as cur:
            source_event = self._rec.get_event(cur, from_event_id)
            if source_event is None:
                raise EventNotFound(from_event_id)
            source = self._rec.get_session(cur, source_event.session_id)
            assert source is not None
            path = self._rec.get_path(cur, source_event)
            model_at, provider_at = _model_and_provider_at(path)
            fork_model = model or model_at or source.model
            payload: dict[str, Any] = {
                "sourceSessionId": source.id,
                "sourceEventId": source_event.id,
            }
            if name is not None:
                payload["name"] = name
            if model is not None:
                payload["model"] = model
            if working_directory is not None:
                payload["workingDirectory"] = working_directory
            payload = validate_payload("session.fork", payload)
            when = now()
            session_id = ids.new_session_id()
            row = NewEvent(
                id=ids.new_event_id(), parent_id=source_event.id, session_id=session_id,
                workspace_id=source.workspace_id, sequence=0, depth=source_event.depth + 1,
                type="session.fork", timestamp=when,
                payload_json=_dumps(payload, "session.fork"),
                search_text="",
            )  # fmt: skip
            session = Session(
                id=session_id, workspace_id=source.workspace_id, root_event_id=row.id,
                head_event_id=row.id, status="active", model=fork_model,
                provider=provider_at or source.provider,
                working_directory=working_directory
                or _directory_at(path)
                or source.working_directory,
                title=name or source.title,
                parent_session_id=source.id, fork_from_event_id=source_event.id,
                created_at=when, last_activity_at=when, ended_at=None, event_count=1,
                message_count=0, turn_count=0, input_tokens=0, output_tokens=0,
                cache_read_tokens=0, cache_creation_tokens=0, cost=0.0,
            )  # fmt: skip
            self._rec.insert_session(cur, session)
            [position] = self._rec.insert_events(cur, [row])
            fork_event = Event(
                id=row.id, parent_id=row.parent_id, session_id=session_id,
                workspace_id=source.workspace_id, sequence=0, depth=row.depth,
                type="session.fork", timestamp=when, payload=payload, position=position,
            )  # fmt: skip
        self._committed(session.id, session.workspace_id)
        self._rec.committed_here([fork_event])  # this process's: the listener knows it
        return ForkResult(session=session, fork_event=fork_event)

    @_retry_transient
    def rewind(self, session_id: str, to_event_id: str) -> Session:
        """Move the head back to an ancestor of the current head (or the head).

        Later events stay stored and searchable; the next append continues
        from ``to_event_id``.
        """
        with self._rec.write() as cur:
            session, head = self._active_session(cur, session_id)
            target = self._rec.get_event(cur, to_event_id)
            if target is None:
                raise InvalidRewind(f"rewind target {to_event_id!r} does not exist")
            if target.id != head.id and (
                target.depth >= head.depth
                or all(e.id != target.id for e in self._rec.get_path(cur, head))
            ):
                raise InvalidRewind(
                    f"cannot rewind session {session_id!r} to {to_event_id!r}: "
                    "it is not the head or one of its ancestors"
                )
            self._rec.set_head(cur, session_id, target.id, now())
            # The row shows the model of the new head (a rewind past a switch undoes it).
            path = self._rec.get_path(cur, target)
            model, provider = _model_and_provider_at(path)
            if model and provider and (model, provider) != (session.model, session.provider):
                self._rec.set_session_model(cur, session_id, model, provider)
            _follow_directory(self._rec, cur, session, path)  # a rewind past a move undoes it
            updated = self._rec.get_session(cur, session_id)
            assert updated is not None
            return updated

    # -- search -----------------------------------------------------------

    def search(
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
        """Full-text search, best match first (``score`` higher is better).

        ``query`` is literal user text: no string makes it raise (NUL and lone
        surrogates read as spaces). ``raw=True`` passes the backend's query
        syntax through (``InvalidQuery`` if malformed). Terms found in very
        many events are ranked among their most recent matches (see the
        backend). Each event is searched in the first ``MAX_INDEXED_CHARS``
        (200,000) characters of its text (``search_text.py``), which also
        bounds what indexing it and making its snippet cost.
        ``include_descendants`` (with ``session_id``) searches the session and
        its sub-agent sessions at any depth (:meth:`get_descendant_sessions`;
        forks are not included).
        """
        if not isinstance(query, str):
            raise InvalidQuery(f"a search query must be a string, got {type(query).__name__}")
        if raw and not is_storable(query):
            raise InvalidQuery("a raw full-text query cannot contain NUL or lone surrogates")
        _check_int(limit, "limit", InvalidQuery)
        if limit < 1:
            return []
        if include_descendants and session_id is None:
            raise ValueError("include_descendants needs a session_id")
        # No stored id or type holds NUL or a lone surrogate: nothing to find.
        if session_id is not None and not findable(session_id):
            if include_descendants:
                raise SessionNotFound(session_id)
            return []
        if workspace_id is not None and not findable(workspace_id):
            return []
        if types:
            types = [t for t in types if findable(t)]
            if not types:
                return []
        with self._rec.read() as cur:
            if include_descendants and session_id is not None:
                if self._rec.get_session(cur, session_id) is None:
                    raise SessionNotFound(session_id)
                subtree = [session_id] + [
                    s.id for s in self._rec.child_sessions(cur, session_id, recursive=True)
                ]
                return self._rec.search(
                    cur, query, raw=raw, workspace_id=workspace_id, session_id=None,
                    types=types, limit=limit, session_ids=subtree,
                )  # fmt: skip
            return self._rec.search(
                cur, query, raw=raw, workspace_id=workspace_id, session_id=session_id,
                types=types, limit=limit,
            )  # fmt: skip

    # -- sub-agent sessions (children) ------------------------------------

    def get_child_sessions(self, session_id: str) -> list[Session]:
        """The sub-agent sessions a session spawned, oldest first.

        A child is a session created with ``parent_session_id`` (its root is a
        ``session.start``; ``fork_from_event_id`` is None). Forks also set
        ``parent_session_id`` but have ``fork_from_event_id``: they are not
        children and are not listed.
        """
        with self._rec.read() as cur:
            if self._rec.get_session(cur, session_id) is None:
                raise SessionNotFound(session_id)
            return self._rec.child_sessions(cur, session_id, recursive=False)

    def get_descendant_sessions(self, session_id: str) -> list[Session]:
        """Children, their children and so on (not forks), oldest first."""
        with self._rec.read() as cur:
            if self._rec.get_session(cur, session_id) is None:
                raise SessionNotFound(session_id)
            return self._rec.child_sessions(cur, session_id, recursive=True)

    def get_spawning_event(self, session_id: str) -> Event | None:
        """For a child session, the event of its parent that spawned it (the
        parent's ``tool.call`` of the Task, as recorded in the child's
        ``session.start`` ``spawnedByEventId``); None for any other session."""
        with self._rec.read() as cur:
            session = self._rec.get_session(cur, session_id)
            if session is None:
                raise SessionNotFound(session_id)
            if session.parent_session_id is None or session.fork_from_event_id is not None:
                return None
            root = self._rec.get_event(cur, session.root_event_id)
            spawned_by = root.payload.get("spawnedByEventId") if root is not None else None
            if not isinstance(spawned_by, str):
                return None
            return self._rec.get_event(cur, spawned_by)

    # -- reconstruction ---------------------------------------------------

    def get_messages_at(self, event_id: str) -> list[Message]:
        """The message history an LLM API accepts, as of ``event_id``."""
        return self._state_at(event_id=event_id).messages

    def get_state_at(self, event_id: str) -> SessionState:
        """Messages, model, prompt, reasoning level, tokens and turns at ``event_id``."""
        return self._state_at(event_id=event_id)

    def get_state_at_head(self, session_id: str) -> SessionState:
        if not findable(session_id):
            raise SessionNotFound(session_id)
        return self._state_at(session_id=session_id)

    def _state_at(
        self, *, event_id: str | None = None, session_id: str | None = None
    ) -> SessionState:
        """The state at an event (or a session's head): continued from the
        nearest ancestor with a live projection in memory or a stored snapshot,
        else projected from the whole path; stored as a snapshot when that took
        many events, and kept in memory to go on from (``_projection_cache.py``)."""
        from . import _state_snapshots as snapshots
        from . import reconstruct

        live = self._projections
        use_snapshots = self._snapshots_enabled()
        with gc_paused():
            with self._rec.read() as cur:
                event: Event | None
                if session_id is not None:
                    event = self._session_and_head(cur, session_id)[1]
                else:
                    # event_id is a caller's, possibly None or not a string: not found.
                    event = self._rec.get_event(cur, event_id)  # type: ignore[arg-type]
                    if event is None:
                        raise EventNotFound(event_id)  # type: ignore[arg-type]
                events: list[Event]
                stop: str | None
                found = self._live_chain(event)
                if found is not None:  # a live projection at or just before it: no read
                    stop, events = found
                else:
                    stops = (
                        self._rec.snapshot_stops(cur, event.session_id, snapshots.FORMAT)
                        if use_snapshots
                        else {}
                    )
                    stops.update(live.stops())
                    events, stop = self._rec.get_path_after(cur, event, stops)
                taken = live.take(stop) if stop is not None else None
                data = (
                    self._rec.read_snapshot(cur, stop, snapshots.FORMAT)
                    if stop is not None and taken is None
                    else None
                )
            proj = None
            nbytes = _raw_bytes(events)
            unsaved = len(events)  # projected here and not in a stored snapshot
            if taken is not None:
                proj, before, unsaved_before = taken
                nbytes += before
                unsaved += unsaved_before
                try:
                    reconstruct.detach_last(proj)  # states handed out keep their messages
                    reconstruct.advance(proj, events, resuming=True)
                except reconstruct.NeedsFullPath as exc:
                    log.debug("state at %s: not going on from %s: %s", event.id, stop, exc)
                    proj = None
            elif data is not None:
                nbytes += len(data)
                try:
                    proj = snapshots.loads(data)
                    reconstruct.advance(proj, events, resuming=True)
                except (snapshots.SnapshotError, reconstruct.NeedsFullPath) as exc:
                    log.debug("state at %s: not resuming from snapshot %s: %s", event_id, stop, exc)
                    proj = None
            if proj is None:
                if stop is not None:  # only the events after the stop were read
                    with self._rec.read() as cur:
                        events = self._rec.get_path(cur, event)
                proj = reconstruct.project(events)
                nbytes = _raw_bytes(events)
                unsaved = len(events)
            state = reconstruct.state_of(proj, event.id)
            self._keep_live(event, proj, nbytes, unsaved, snapshot=use_snapshots)
        return state

    def _snapshots_enabled(self) -> bool:
        usable = self._snapshots_usable
        if usable is None:
            usable = self._snapshots_usable = self._rec.has_snapshot_table()
        return usable

    def _save_snapshot(self, event: Event, proj: Any) -> bool:
        """Store a projection (True if stored); a failure (busy database,
        anything) only costs the next resume some time, so it is logged and never
        raised."""
        from . import _state_snapshots as snapshots

        try:
            data = snapshots.dumps(proj)
            with self._rec.try_write() as cur:
                self._rec.write_snapshot(
                    cur, event, snapshots.FORMAT, data, self.snapshot_keep, now()
                )
        except Exception:  # a cache write must never fail a read
            log.info("state snapshot at %s not stored", event.id, exc_info=True)
            return False
        return True

    # -- recorded file contents and changes (blobs.py, files.py) -------------------

    def put_blobs(self, contents: Iterable[BlobInput]) -> list[str]:
        """Store file contents by hash (SHA-256, hex); returns their hashes in order.

        Each item is the content, or ``(content, base)`` where ``base`` is a content
        it resembles (the file's previous version), stored earlier or earlier in the
        same call: the content is then kept as the difference from it when that is
        much smaller (see :mod:`tron_events.blobs`). A content already stored costs
        nothing more; the compression happens outside the write transaction.
        """
        items: list[tuple[bytes, str, bytes | None, str | None]] = []
        for item in contents:
            content, base = (item, None) if isinstance(item, bytes) else item
            items.append(
                (
                    bytes(content),
                    content_hash(content),
                    base,
                    content_hash(base) if base is not None else None,
                )
            )
        if not items:
            return []
        keys = list(dict.fromkeys([h for _, h, _, _ in items] + [b for *_, b in items if b]))
        with self._rec.read() as cur:
            depths = self._rec.blob_depths(cur, keys)
        rows: list[BlobRow] = []
        for content, h, base, base_h in items:
            if h in depths:
                continue
            known = (base_h, base, depths[base_h]) if base_h in depths and base else None
            row = encode_blob(content, base=known, content_id=h)
            rows.append(row)
            depths[h] = row.depth
        if rows:
            self._insert_blobs(rows)
        return [h for _, h, _, _ in items]

    @_retry_transient
    def _insert_blobs(self, rows: Sequence[BlobRow]) -> None:
        with self._rec.write() as cur:
            self._rec.insert_blobs(cur, rows, now())

    def get_blobs(self, hashes: Iterable[str]) -> dict[str, bytes]:
        """The contents of ``hashes``, each checked against its hash. Raises
        :class:`MissingContent` naming every one that is missing or damaged."""
        wanted = list(dict.fromkeys(hashes))
        if not wanted:
            return {}
        with self._rec.read() as cur:
            return decode_blobs(wanted, partial(self._rec.get_blob_rows, cur))

    def missing_blobs(self, hashes: Iterable[str]) -> set[str]:
        """Which of ``hashes`` are not stored (chains are not followed: see get_blobs)."""
        wanted = list(dict.fromkeys(hashes))
        with self._rec.read() as cur:
            return set(wanted) - set(self._rec.blob_depths(cur, wanted))

    def file_transitions(self, from_event_id: str, to_event_id: str) -> list[FileTransition]:
        """Every file whose recorded state differs between two events of a tree, with
        its state at each (see :mod:`tron_events.files`): what a rewind from
        ``from_event_id`` to ``to_event_id`` with files writes. Changes made by
        sub-agent sessions during a Task call count as the calling session's."""
        with gc_paused(), self._rec.read() as cur:
            a = self._path(cur, from_event_id)
            b = self._path(cur, to_event_id)
            i = common_ancestor(a, b)
            undone = self._changes_along(cur, a[i + 1 :])
            done = self._changes_along(cur, b[i + 1 :])
        return transitions(undone, done)

    def _changes_along(self, cur: Cursor, events: Sequence[Event]) -> list[FileChange]:
        """The file changes recorded by ``events`` and by the sub-agent sessions they
        spawned (between the spawn and its end), in commit order."""
        found = self._positioned_changes(cur, events, 0)
        found.sort(key=lambda item: (item[0], item[1]))
        return [c for *_, c in found]

    def _positioned_changes(
        self, cur: Cursor, events: Sequence[Event], depth: int
    ) -> list[tuple[int, int, FileChange]]:
        found: list[tuple[int, int, FileChange]] = []
        ends = {
            e.payload.get("toolCallId"): e.position
            for e in events
            if e.type in ("subagent.completed", "subagent.failed")
        }
        for e in events:
            if e.type in CHANGE_TYPES:
                found.extend((e.position, len(found), c) for c in changes_of(e.type, e.payload))
            elif e.type == "subagent.spawned" and depth < _MAX_SUBAGENT_DEPTH:
                child = e.payload.get("childSessionId")
                if not isinstance(child, str):
                    continue
                end = ends.get(e.payload.get("toolCallId"))
                inside = [
                    c
                    for c in self._rec.get_events(cur, child, None, _CHILD_TYPES, None)
                    if c.position > e.position and (end is None or c.position < end)
                ]
                for position, _, change in self._positioned_changes(cur, inside, depth + 1):
                    found.append((position, len(found), change))
        return found

    def diff(self, from_event_id: str, to_event_id: str, *, context: int = 3) -> list[FileDiff]:
        """The per-file unified diffs between the recorded states of two events of a
        tree (text files whose contents were recorded; others say why not in
        ``note``: ``binary``, ``not_stored``, ``too_large``, ``missing``)."""
        changed = self.file_transitions(from_event_id, to_event_id)
        wanted = [
            s.hash
            for t in changed
            for s in (t.before, t.after)
            if s is not None and s.stored and s.size <= MAX_DIFF_BYTES
        ]
        contents = self._blobs_found(wanted)
        return [file_diff(t, contents, context=context) for t in changed]

    def _blobs_found(self, hashes: list[str]) -> dict[str, bytes]:
        """The contents of those ``hashes`` that are stored intact."""
        try:
            return self.get_blobs(hashes)
        except MissingContent as exc:
            bad = set(exc.hashes)
            return self.get_blobs([h for h in hashes if h not in bad])

    @_retry_transient
    def rewind_and_append(
        self,
        session_id: str,
        to_event_id: str,
        drafts: Iterable[EventDraft | Mapping[str, Any]] = (),
        *,
        expected_head: str | None = None,
        allow_abandoned: bool = False,
    ) -> tuple[Session, list[Event]]:
        """Rewind, then append ``drafts`` after ``to_event_id``, in one transaction.

        What a rewind with files records (the restore, as events). ``expected_head``
        refuses (:class:`ConcurrencyConflict`) if the head moved since the caller
        planned. ``allow_abandoned`` also accepts one of the session's own events
        that is not an ancestor of the head (a branch an earlier rewind left): that
        is how a rewind is undone.
        """
        items = [self._draft(d) for d in drafts]
        with self._rec.write() as cur:
            session, head = self._active_session(cur, session_id)
            self._check_head(session, expected_head)
            target = self._rec.get_event(cur, to_event_id)
            if target is None:
                raise InvalidRewind(f"rewind target {to_event_id!r} does not exist")
            on_path = target.id == head.id or (
                target.depth < head.depth
                and any(e.id == target.id for e in self._rec.get_path(cur, head))
            )
            if not on_path and not (allow_abandoned and target.session_id == session_id):
                raise InvalidRewind(
                    f"cannot rewind session {session_id!r} to {to_event_id!r}: it is not "
                    "the head or one of its ancestors"
                    + ("" if not allow_abandoned else ", nor one of the session's own events")
                )
            self._rec.set_head(cur, session_id, target.id, now())
            events = self._append_chain(cur, session, items, target) if items else []
            updated = self._rec.get_session(cur, session_id)
            assert updated is not None
        if events:
            self._committed(session_id, session.workspace_id, events)
        return updated, events


#: A content to store, or (content, a stored content it resembles).
BlobInput = bytes | tuple[bytes, bytes | None]
_MAX_SUBAGENT_DEPTH = 8
_CHILD_TYPES = sorted(CHANGE_TYPES | {"subagent.spawned", "subagent.completed", "subagent.failed"})


def _check_int(value: object, what: str, error: type[TronEventsError]) -> None:
    """Refuse a count or cursor number that is not a 64-bit integer (a driver
    would raise on it, or compare it as text)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise error(f"{what} must be an integer, got {type(value).__name__}")
    if not -(2**63) <= value < 2**63:
        raise error(f"{what} is out of range (a 64-bit integer is expected)")


_NO_COUNTS: Counters = (0, 0, 0, 0, 0, 0, 0.0)


def _counters(type: str, data: dict[str, Any]) -> Counters:
    """What one event adds to its session row: (messages, its turn (0: none),
    input, output, cache-read and cache-creation tokens, cost)."""
    if type in MESSAGE_TYPES:
        turn = data.get("turn")
        if not isinstance(turn, int) or turn < 0:
            turn = 0
        if type == "message.assistant" and isinstance(usage := data.get("tokenUsage"), dict):
            return (
                1,
                turn,
                usage.get("inputTokens") or 0,
                usage.get("outputTokens") or 0,
                usage.get("cacheReadTokens") or 0,
                usage.get("cacheCreationTokens") or 0,
                0.0,
            )
        return (1, turn, 0, 0, 0, 0, 0.0)
    if type == "stream.turn_end":
        # What a turn cost (tron_llm's price of its usage); None when unknown.
        cost = data.get("cost")
        if isinstance(cost, int | float) and not isinstance(cost, bool) and cost > 0:
            return (0, 0, 0, 0, 0, 0, 0.0 + cost)
    return _NO_COUNTS


def _sum_counters(each: Iterable[Counters]) -> Counters:
    messages = turn = input_tokens = output_tokens = cache_read = cache_creation = 0
    cost = 0.0
    for c in each:
        messages += c[0]
        turn = max(turn, c[1])
        input_tokens += c[2]
        output_tokens += c[3]
        cache_read += c[4]
        cache_creation += c[5]
        cost += c[6]
    return (messages, turn, input_tokens, output_tokens, cache_read, cache_creation, cost)


def _count(delta: SessionDelta, type: str, data: dict[str, Any]) -> None:
    """Fold one event into the session-row counters."""
    c = _counters(type, data)
    if c is _NO_COUNTS:
        return
    delta.messages += c[0]
    delta.max_turn = max(delta.max_turn, c[1])
    delta.input_tokens += c[2]
    delta.output_tokens += c[3]
    delta.cache_read_tokens += c[4]
    delta.cache_creation_tokens += c[5]
    delta.cost += c[6]


#: Events that change the model (and provider) the next turn uses, or its folder: the
#: session row follows its head's (appends of these take the slow path).
HEAD_MODEL_TYPES = frozenset({"config.model_switch", "config.working_directory"})
#: Events an append checks against the session's tree or moves its model or folder
#: with: they take the general path, which reads the session row and the head.
CHECKED_TYPES = HEAD_MODEL_TYPES | {"message.deleted"}


def _directory_at(path: Iterable[Event]) -> str | None:
    """The working directory at the end of ``path`` (root first), folded as
    reconstruction does (``session.start``, a fork's own folder, ``config.working_directory``)."""
    directory: str | None = None
    for e in path:
        if e.type in ("session.start", "session.fork", "config.working_directory"):
            directory = _str(e.payload.get("workingDirectory"), directory)
    return directory


def _follow_directory(rec: Recorder, cur: Cursor, session: Session, path: Iterable[Event]) -> None:
    """Keep the session row's folder its head's (``config.working_directory`` moves it, a
    rewind or a branch before one moves it back)."""
    directory = _directory_at(path)
    if directory and directory != session.working_directory:
        rec.set_session_directory(cur, session.id, directory)


def _model_and_provider_at(path: Iterable[Event]) -> tuple[str | None, str | None]:
    """The model and provider at the end of ``path`` (root first), folded as
    reconstruction does (``session.start``, a fork's ``model``/``provider``,
    ``config.model_switch``'s ``newModel`` and optional ``provider``)."""
    model: str | None = None
    provider: str | None = None
    for e in path:
        if e.type in ("session.start", "session.fork"):
            model = _str(e.payload.get("model"), model)
            provider = _str(e.payload.get("provider"), provider)
        elif e.type == "config.model_switch":
            model = _str(e.payload.get("newModel"), model)
            provider = _str(e.payload.get("provider"), provider)
    return model, provider


def _str(value: Any, default: str | None) -> str | None:
    return value if isinstance(value, str) and value else default
