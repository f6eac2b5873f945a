"""Typed errors of the event store, all under one base class.

Every error says what went wrong and, where it can, what to do about it. A
store operation that raises has written nothing.
"""

from __future__ import annotations


class TronEventsError(Exception):
    """Base of every error raised by tron_events."""


class SessionNotFound(TronEventsError):
    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id!r} does not exist")
        self.session_id = session_id


class EventNotFound(TronEventsError):
    def __init__(self, event_id: str) -> None:
        super().__init__(f"event {event_id!r} does not exist")
        self.event_id = event_id


class ConcurrencyConflict(TronEventsError):
    """The session's head moved: re-read the head and retry (compare-and-append)."""

    def __init__(self, session_id: str, expected: str, actual: str) -> None:
        super().__init__(
            f"session {session_id!r}: expected head {expected!r} but the head is {actual!r}; "
            "re-read the session and retry"
        )
        self.session_id = session_id
        self.expected = expected
        self.actual = actual


class EventIdConflict(TronEventsError):
    """A client-supplied event id was already used for different content."""

    def __init__(self, event_id: str, detail: str) -> None:
        super().__init__(f"event id {event_id!r} is already used by {detail}")
        self.event_id = event_id


class InvalidRewind(TronEventsError):
    pass


class InvalidParent(TronEventsError):
    pass


class InvalidPayload(TronEventsError):
    pass


class UnknownEventType(TronEventsError):
    def __init__(self, event_type: str) -> None:
        super().__init__(
            f"unknown event type {event_type!r}; register it first with register_event_type()"
        )
        self.event_type = event_type


class SessionNotActive(TronEventsError):
    def __init__(self, session_id: str, status: str) -> None:
        super().__init__(
            f"session {session_id!r} is {status}: it takes no appends or rewinds "
            "(fork it to continue)"
        )
        self.session_id = session_id
        self.status = status


class SessionHasForks(TronEventsError):
    def __init__(self, session_id: str, fork_ids: list[str]) -> None:
        shown = ", ".join(fork_ids[:5]) + (" …" if len(fork_ids) > 5 else "")
        super().__init__(
            f"session {session_id!r} has {len(fork_ids)} fork(s) depending on it ({shown}); "
            "delete them first or pass cascade=True"
        )
        self.session_id = session_id
        self.fork_ids = fork_ids


class InvalidCursor(TronEventsError):
    pass


class InvalidQuery(TronEventsError):
    pass


class MissingContent(TronEventsError):
    """Recorded file contents that are not in the store (or are damaged): ``hashes``
    lists them all. Whatever needed them did nothing."""

    def __init__(self, hashes: list[str], detail: str | None = None) -> None:
        shown = ", ".join(h[:12] for h in hashes[:5]) + (" …" if len(hashes) > 5 else "")
        super().__init__(
            detail
            or f"{len(hashes)} recorded file content(s) are missing from the store or damaged "
            f"({shown}); nothing was restored"
        )
        self.hashes = list(hashes)


class StoreBusy(TronEventsError):
    """The database stayed locked by another writer for minutes (a stuck process?)."""

    def __init__(self, where: str) -> None:
        super().__init__(
            f"the database {where!r} stayed busy for too long; "
            "check for a stuck process holding a write transaction"
        )


class TransientConflict(StoreBusy):
    """A deadlock or serialization failure that the database resolved by aborting
    this transaction. Nothing was written; the store retries it itself a few
    times before letting it through."""

    def __init__(self, detail: str) -> None:
        # StoreBusy's own message is about a stuck writer; say what happened.
        TronEventsError.__init__(
            self,
            f"the transaction was aborted by the database ({detail}); nothing was written, "
            "retry the operation",
        )


class StoreClosed(TronEventsError):
    def __init__(self) -> None:
        super().__init__("the event store is closed")


class StorageError(TronEventsError):
    """The database could not do what was asked (missing, unreadable, full, read-only,
    unreachable, not a Tron database). Nothing was written; the message says what to do."""


class DiskFull(StorageError):
    """The disk (or the file-size limit) is full: the transaction was rolled back and
    nothing was written. The store is usable again once space is freed."""

    def __init__(self, where: str, detail: str = "") -> None:
        super().__init__(
            f"the disk holding the database {where!r} is full"
            + (f" ({detail})" if detail else "")
            + ": nothing was written; free some space and retry"
        )
        self.where = where


class StorageIOError(StorageError):
    """The operating system reported an I/O error on the database: nothing was written."""

    def __init__(self, where: str, detail: str = "") -> None:
        super().__init__(
            f"an I/O error on the database {where!r}"
            + (f" ({detail})" if detail else "")
            + ": nothing was written; check the disk (and the file-size limit, "
            "`ulimit -f`), then retry"
        )
        self.where = where


class DatabaseNotFound(StorageError):
    """No database at the given path or URL (only ``upgrade``/``open`` create one)."""


class NotATronDatabase(StorageError):
    """The file or database exists but is not a Tron event database (nor one we can adopt)."""


class DatabaseReadOnly(StorageError):
    """The database (or its folder) cannot be written by this process."""


class DatabaseUnreachable(StorageError):
    """The database server does not answer (or refused the connection)."""


class UnsupportedDatabase(StorageError):
    """A URL scheme or database kind tron_events does not support, or a missing driver."""


class OriginalTronDatabase(StorageError):
    """The database is one of the original (TypeScript) Tron: ``tron-db adopt``
    (or ``tron-db upgrade``) converts it in place, after a backup."""


class MigrationError(TronEventsError):
    """A schema migration could not run as asked (nothing was changed)."""


class UnknownRevision(MigrationError):
    """A schema revision that does not exist; the message lists the valid ones."""


__all__ = [
    "ConcurrencyConflict",
    "DatabaseNotFound",
    "DatabaseReadOnly",
    "DatabaseUnreachable",
    "DiskFull",
    "EventIdConflict",
    "EventNotFound",
    "InvalidCursor",
    "InvalidParent",
    "InvalidPayload",
    "InvalidQuery",
    "InvalidRewind",
    "MigrationError",
    "MissingContent",
    "NotATronDatabase",
    "OriginalTronDatabase",
    "SessionHasForks",
    "SessionNotActive",
    "SessionNotFound",
    "StorageError",
    "StorageIOError",
    "StoreBusy",
    "StoreClosed",
    "TransientConflict",
    "TronEventsError",
    "UnknownEventType",
    "UnknownRevision",
    "UnsupportedDatabase",
]
