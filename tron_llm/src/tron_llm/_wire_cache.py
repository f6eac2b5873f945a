"""The wire form of history messages, kept by message identity.

A history grows by a few messages a turn and the messages before them are the same
(frozen) objects from one model call to the next, so an adapter converts each message
once: what it keeps is a pure function of the message (blocks, ids made safe), never
what depends on the message's place in the request (merging, ordering, cache
breakpoints), which the adapter adds to copies.

An entry does not keep its message alive (a weak reference): the cache holds wire
forms only of messages something else holds (the store's live projection of a session
someone has open), and an entry goes with its message — removed by the reference's
callback as the message is freed, before its ``id()`` can be reused. A message's wire
form is kept from its second conversion on (the first only marks it seen): a history
sent once — a session resumed for one call — leaves nothing to hold (issue 29's memory
goal); one sent again — the next call of a tool loop, the next message — is kept.
Bounded with two generations too: lookups that hit in the old one move the entry to
the new one; when the new one is full, the old one is dropped. Not shared between
threads beyond what a ``dict`` allows (a lost entry is only converted again).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

from tron_events.messages import Message

__all__ = ["DEFAULT_MAX_ENTRIES", "WireCache", "convert_each"]

T = TypeVar("T")

DEFAULT_MAX_ENTRIES = 8192


class _Ref(weakref.ref[Message]):
    """A weak reference to a cached message that knows the key of its entry (one small
    object per message: no closure)."""

    __slots__ = ("key",)

    key: int

    def __new__(
        cls, message: Message, callback: Callable[[weakref.ref[Message]], None], key: int
    ) -> _Ref:
        ref = super().__new__(cls, message, callback)
        ref.key = key
        return ref

    def __init__(
        self, message: Message, callback: Callable[[weakref.ref[Message]], None], key: int
    ) -> None:
        super().__init__(message, callback)  # type: ignore[call-arg]  # ref takes these


class WireCache(Generic[T]):
    """Converted messages (``T``) by the identity of their message."""

    __slots__ = ("__weakref__", "_new", "_old", "max_entries")

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        # (the message, weakly; its wire form, or None: seen once, not kept yet)
        self._new: dict[int, tuple[weakref.ref[Message], T | None]] = {}
        self._old: dict[int, tuple[weakref.ref[Message], T | None]] = {}

    def __len__(self) -> int:
        return len(self._new) + len(self._old)

    def get(self, message: Message) -> T | None:
        """The converted form of this very ``message``, or None."""
        key = id(message)
        entry = self._new.get(key)
        if entry is not None and entry[0]() is message:
            return entry[1]
        entry = self._old.pop(key, None)
        if entry is not None and entry[0]() is message:
            self._put(key, entry)
            return entry[1]
        return None

    def put(self, message: Message, wire: T) -> None:
        """Keep ``wire`` as the converted form of ``message`` (while it lives) — from the
        second time it is converted: the first time only marks it seen. A message sent
        once (a session resumed for one call) then leaves no wire form to hold until it
        goes; a history sent again (the next call of a loop, the next message) is kept."""
        key = id(message)
        seen = self._new.get(key) or self._old.get(key)
        if seen is not None and seen[0]() is message:
            self._put(key, (seen[0], wire))
            return
        self._put(key, (_Ref(message, self._gone, key), None))

    def _gone(self, ref: weakref.ref[Message]) -> None:
        # The message was freed: its entry goes, before its id can be reused.
        if isinstance(ref, _Ref):
            self._forget(ref.key, ref)

    def _forget(self, key: int, ref: weakref.ref[Message]) -> None:
        for entries in (self._new, self._old):
            entry = entries.get(key)
            if entry is not None and entry[0] is ref:
                entries.pop(key, None)
        # A dict keeps its table when emptied: a new one gives the memory back once the
        # sessions' messages are all gone.
        if not self._new:
            self._new = {}
        if not self._old:
            self._old = {}

    def _put(self, key: int, entry: tuple[weakref.ref[Message], T | None]) -> None:
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
