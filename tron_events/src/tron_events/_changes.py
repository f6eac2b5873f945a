"""Wake-ups for live subscriptions.

A ``ChangeSignal`` carries no events, only "something was committed for this
session / workspace". Subscribers always read the events themselves from the
store after their cursor, so a lost, late or duplicated wake-up can delay a
delivery but never lose or repeat an event.

Commits in this process bump the signal directly; a backend listener thread
bumps it for commits made by other processes (SQLite: ``PRAGMA data_version``
polling; PostgreSQL: LISTEN/NOTIFY).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from dataclasses import dataclass, field

#: Wake everyone (a commit whose session/workspace is unknown to the listener).
ANY = "*"
#: The key of the feed of every event (a subscription to no session or workspace).
ALL_EVENTS = "all-events"


@dataclass(eq=False)
class _Waiter:
    keys: frozenset[str]
    loop: asyncio.AbstractEventLoop
    event: asyncio.Event = field(default_factory=asyncio.Event)


class ChangeSignal:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._versions: dict[str, int] = {}
        self._waiters: set[_Waiter] = set()

    def version(self, keys: frozenset[str]) -> int:
        """A number that grows whenever one of ``keys`` (or ANY) is bumped."""
        with self._lock:
            return sum(self._versions.get(k, 0) for k in keys) + self._versions.get(ANY, 0)

    def bump(self, *keys: str) -> None:
        """Record a commit touching ``keys``; safe from any thread."""
        versions = self._versions
        with self._lock:
            for k in keys:
                versions[k] = versions.get(k, 0) + 1
            if not self._waiters:  # every append bumps: nobody waiting is the common case
                return
            woken = [w for w in self._waiters if ANY in keys or w.keys.intersection(keys)]
        _wake(woken)

    def bump_commit(self, session_id: str, workspace_id: str) -> None:
        """``bump(session_id, workspace_id, ALL_EVENTS)``, written out (every append)."""
        versions = self._versions
        with self._lock:
            versions[session_id] = versions.get(session_id, 0) + 1
            versions[workspace_id] = versions.get(workspace_id, 0) + 1
            versions[ALL_EVENTS] = versions.get(ALL_EVENTS, 0) + 1
            if not self._waiters:
                return
            keys = (session_id, workspace_id, ALL_EVENTS)
            woken = [w for w in self._waiters if ANY in keys or w.keys.intersection(keys)]
        _wake(woken)

    async def wait(self, keys: frozenset[str], seen: int, timeout: float) -> None:
        """Return once ``version(keys)`` differs from ``seen``, or after ``timeout``."""
        waiter = _Waiter(keys, asyncio.get_running_loop())
        with self._lock:
            self._waiters.add(waiter)
        try:
            if self.version(keys) != seen:
                return
            # asyncio's own timeout: anyio's cancel scope costs several times more, at
            # every commit a feed follows (issue 29).
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await waiter.event.wait()
        finally:
            with self._lock:
                self._waiters.discard(waiter)


def _wake(woken: list[_Waiter]) -> None:
    for w in woken:
        with contextlib.suppress(RuntimeError):  # a closed loop: its subscriber is gone
            w.loop.call_soon_threadsafe(w.event.set)
