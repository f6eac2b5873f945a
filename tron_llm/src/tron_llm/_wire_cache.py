"""The wire form of history messages, kept by message identity.

A history grows by a few messages a turn and the messages before them are the same
(frozen) objects from one model call to the next, so an adapter converts each message
once: what it keeps is a pure function of the message (blocks, ids made safe), never
what depends on the message's place in the request (merging, ordering, cache
breakpoints), which the adapter adds to copies.

An entry holds its message, so the ``id()`` it is keyed by cannot be reused while it
is there. Bounded with two generations: lookups that hit in the old one move the
entry to the new one; when the new one is full, the old one is dropped. Not shared
between threads beyond what a ``dict`` allows (a lost entry is only converted again).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from tron_events.messages import Message

__all__ = ["DEFAULT_MAX_ENTRIES", "WireCache", "convert_each"]

T = TypeVar("T")

DEFAULT_MAX_ENTRIES = 8192


class WireCache(Generic[T]):
    """Converted messages (``T``) by the identity of their message."""

    __slots__ = ("_new", "_old", "max_entries")

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._new: dict[int, tuple[Message, T]] = {}
        self._old: dict[int, tuple[Message, T]] = {}

    def __len__(self) -> int:
        return len(self._new) + len(self._old)

    def get(self, message: Message) -> T | None:
        """The converted form of this very ``message``, or None."""
        key = id(message)
        entry = self._new.get(key)
        if entry is not None and entry[0] is message:
            return entry[1]
        entry = self._old.pop(key, None)
        if entry is not None and entry[0] is message:
            self._put(key, entry)
            return entry[1]
        return None

    def put(self, message: Message, wire: T) -> None:
        """Keep ``wire`` as the converted form of ``message``."""
        self._put(id(message), (message, wire))

    def _put(self, key: int, entry: tuple[Message, T]) -> None:
        if len(self._new) >= self.max_entries:
            self._old, self._new = self._new, {}
        self._new[key] = entry


def convert_each(
    messages: list[Message],
    convert: Callable[[Message], list[T]],
    cache: WireCache[list[T]] | None,
) -> list[T]:
    """The concatenated ``convert(message)`` of ``messages``, each taken from ``cache``
    when it was converted before (``convert`` must be a pure function of the message;
    the items may be the cache's and must not be changed in place)."""
    out: list[T] = []
    for message in messages:
        items = cache.get(message) if cache is not None else None
        if items is None:
            items = convert(message)
            if cache is not None:
                cache.put(message, items)
        out.extend(items)
    return out
