"""tron_events: Tron's event store.

Immutable events in a tree, sessions as root/head pointers, fork and rewind,
full-text search, and the message history LLM APIs accept. SQLite by default,
PostgreSQL to scale::

    from tron_events import EventStore

    store = EventStore.open("sqlite:///~/.tron/database/prod.db")
    session = store.create_session(working_directory="/src/app", model="claude-sonnet-4-5",
                                   provider="anthropic")
    store.append(session.id, "message.user", {"content": "hello", "turn": 1})

Names are imported lazily, so ``import tron_events.messages`` (what tron_llm
uses) loads no database code.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .async_store import AsyncEventStore
    from .errors import (
        ConcurrencyConflict,
        DatabaseNotFound,
        DatabaseReadOnly,
        DatabaseUnreachable,
        DiskFull,
        EventIdConflict,
        EventNotFound,
        InvalidCursor,
        InvalidParent,
        InvalidPayload,
        InvalidQuery,
        InvalidRewind,
        MigrationError,
        MissingContent,
        NotATronDatabase,
        OriginalTronDatabase,
        SessionHasForks,
        SessionNotActive,
        SessionNotFound,
        StorageError,
        StorageIOError,
        StoreBusy,
        StoreClosed,
        TronEventsError,
        UnknownEventType,
        UnknownRevision,
        UnsupportedDatabase,
    )
    from .files import FileChange, FileDiff, FileState, FileTransition
    from .models import (
        Event,
        EventJsonPage,
        EventPage,
        ForkResult,
        SearchHit,
        Session,
        Workspace,
    )
    from .payloads import Payload, register_event_type
    from .store import EventDraft, EventStore

_EXPORTS = {
    "EventStore": "store",
    "EventDraft": "store",
    "AsyncEventStore": "async_store",
    "Event": "models",
    "FileChange": "files",
    "FileDiff": "files",
    "FileState": "files",
    "FileTransition": "files",
    "MissingContent": "errors",
    "EventJsonPage": "models",
    "EventPage": "models",
    "ForkResult": "models",
    "SearchHit": "models",
    "Session": "models",
    "Workspace": "models",
    "Payload": "payloads",
    "register_event_type": "payloads",
    "ConcurrencyConflict": "errors",
    "EventIdConflict": "errors",
    "EventNotFound": "errors",
    "InvalidCursor": "errors",
    "InvalidParent": "errors",
    "InvalidPayload": "errors",
    "InvalidQuery": "errors",
    "InvalidRewind": "errors",
    "SessionHasForks": "errors",
    "SessionNotActive": "errors",
    "SessionNotFound": "errors",
    "StoreBusy": "errors",
    "StoreClosed": "errors",
    "TronEventsError": "errors",
    "StorageError": "errors",
    "DiskFull": "errors",
    "StorageIOError": "errors",
    "DatabaseNotFound": "errors",
    "NotATronDatabase": "errors",
    "DatabaseReadOnly": "errors",
    "DatabaseUnreachable": "errors",
    "UnsupportedDatabase": "errors",
    "OriginalTronDatabase": "errors",
    "MigrationError": "errors",
    "UnknownRevision": "errors",
    "UnknownEventType": "errors",
}

__all__ = [
    "AsyncEventStore",
    "ConcurrencyConflict",
    "DatabaseNotFound",
    "DatabaseReadOnly",
    "DatabaseUnreachable",
    "DiskFull",
    "Event",
    "EventDraft",
    "EventIdConflict",
    "EventJsonPage",
    "EventNotFound",
    "EventPage",
    "EventStore",
    "FileChange",
    "FileDiff",
    "FileState",
    "FileTransition",
    "ForkResult",
    "InvalidCursor",
    "InvalidParent",
    "InvalidPayload",
    "InvalidQuery",
    "InvalidRewind",
    "MigrationError",
    "MissingContent",
    "NotATronDatabase",
    "OriginalTronDatabase",
    "Payload",
    "SearchHit",
    "Session",
    "SessionHasForks",
    "SessionNotActive",
    "SessionNotFound",
    "StorageError",
    "StorageIOError",
    "StoreBusy",
    "StoreClosed",
    "TronEventsError",
    "UnknownEventType",
    "UnknownRevision",
    "UnsupportedDatabase",
    "Workspace",
    "register_event_type",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tron_events' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
