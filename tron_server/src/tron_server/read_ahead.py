"""Read-ahead for ``events.sync``: while a client decodes one page, the next is read.

A catching-up client asks for page after page, each request waiting for the
previous answer, so without read-ahead the database read and the client's
decode never overlap. After a full page, the next one (same session and page
size, after the page's last sequence) is read in the background, and the
connection's next request that asks for exactly that page gets it.

A read-ahead page is used only when it was full (``has_more``): a full page of
a session's own events is final, since events are immutable and a session's
sequences have no gaps, so it is exactly what a fresh read would return. A
short page (the end of the session) is read again, because events may have
been appended since; and the session must still exist.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tron_events import AsyncEventStore, EventJsonPage

_Key = tuple[str, int, int]


class ReadAhead:
    """At most one page read ahead per owner (a connection)."""

    def __init__(self) -> None:
        self._pending: weakref.WeakKeyDictionary[
            object, tuple[_Key, asyncio.Task[EventJsonPage]]
        ] = weakref.WeakKeyDictionary()

    async def page(
        self,
        store: AsyncEventStore,
        owner: object | None,
        session_id: str,
        after_sequence: int,
        limit: int,
    ) -> EventJsonPage:
        """The page of ``session_id`` after ``after_sequence``, as ``get_since_json``
        returns it now; starts reading the next one when this one is full."""
        page = await self._take(store, owner, (session_id, after_sequence, limit))
        if page is None:
            page = await store.get_since_json(
                session_id=session_id, after_sequence=after_sequence, limit=limit
            )
        if owner is not None and page.has_more and page.last_sequence is not None:
            key = (session_id, page.last_sequence, limit)
            task = asyncio.ensure_future(
                store.get_since_json(session_id=session_id, after_sequence=key[1], limit=limit)
            )
            task.add_done_callback(_retrieve)  # a failed read-ahead is simply not used
            self._pending[owner] = (key, task)
        return page

    async def _take(
        self, store: AsyncEventStore, owner: object | None, key: _Key
    ) -> EventJsonPage | None:
        entry = self._pending.pop(owner, None) if owner is not None else None
        if entry is None:
            return None
        ahead_key, task = entry
        if ahead_key != key:
            task.cancel()
            return None
        try:
            ahead = await task
        except Exception:  # read again, and raise what a fresh read raises
            return None
        if not ahead.has_more:
            return None
        await store.get_session(key[0])  # SessionNotFound if it was deleted meanwhile
        return ahead


def _retrieve(task: asyncio.Task[EventJsonPage]) -> None:
    if not task.cancelled():
        task.exception()


__all__ = ["ReadAhead"]
