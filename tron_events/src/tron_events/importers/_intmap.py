"""Compact tables for per-record indexes of files with millions of lines.

A ``dict`` of strings costs about 150 bytes an entry (the string, the entry, the
value object); the importers index every record of a transcript (its uuid, its
message id, each event key), so they keep 64-bit hashes of the strings in flat
``array`` tables instead: 15–22 bytes an entry. The hash is a BLAKE2b digest, not
Python's salted ``hash``, so that the (astronomically unlikely) collision of two
source ids is at least the same on every run: imported ids must not change
between imports of the same file.
"""

from __future__ import annotations

import hashlib
from array import array

__all__ = ["IntMap", "IntSet", "stable_hash"]


def stable_hash(text: str) -> int:
    """A signed 64-bit hash of ``text``, never 0 (0 marks an empty slot)."""
    value = int.from_bytes(
        hashlib.blake2b(text.encode(), digest_size=8).digest(), "big", signed=True
    )
    return value or 1


#: Most entries per slot before a table grows (by half): 0.53–0.8 full, about
#: 15 bytes an entry for a set and 22 for a map.
_LOAD = 0.8


class _Table:
    """Open addressing with linear probing over ``array`` columns; 0 marks a free slot."""

    __slots__ = ("_count", "_keys", "_size")

    def __init__(self) -> None:
        self._size = 16
        self._keys = array("q", bytes(8 * self._size))
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def _slot(self, key: int) -> int:
        keys, size = self._keys, self._size
        slot = key % size
        while True:
            found = keys[slot]
            if found == key or found == 0:
                return slot
            slot = slot + 1 if slot + 1 < size else 0

    def _claim(self, slot: int, key: int) -> None:
        self._keys[slot] = key
        self._count += 1
        if self._count > self._size * _LOAD:
            self._grow()

    def _grow(self) -> None:
        raise NotImplementedError


class IntSet(_Table):
    """A set of non-zero 64-bit integers."""

    __slots__ = ()

    def __contains__(self, key: int) -> bool:
        return self._keys[self._slot(key)] != 0

    def add(self, key: int) -> bool:
        """Add ``key``; False if it was there already."""
        slot = self._slot(key)
        if self._keys[slot] != 0:
            return False
        self._claim(slot, key)
        return True

    def _grow(self) -> None:
        old = self._keys
        self._size = self._size * 3 // 2
        self._keys = array("q", bytes(8 * self._size))
        for key in old:
            if key:
                self._keys[self._slot(key)] = key


class IntMap(_Table):
    """A map of non-zero 64-bit integers to 32-bit integers."""

    __slots__ = ("_values",)

    def __init__(self) -> None:
        super().__init__()
        self._values = array("i", bytes(4 * self._size))

    def get(self, key: int, default: int = -1) -> int:
        slot = self._slot(key)
        return self._values[slot] if self._keys[slot] != 0 else default

    def __setitem__(self, key: int, value: int) -> None:
        slot = self._slot(key)
        self._values[slot] = value
        if self._keys[slot] == 0:
            self._claim(slot, key)

    def setdefault(self, key: int, value: int) -> int:
        slot = self._slot(key)
        if self._keys[slot] != 0:
            return self._values[slot]
        self._values[slot] = value
        self._claim(slot, key)
        return value

    def _grow(self) -> None:
        keys, values = self._keys, self._values
        self._size = self._size * 3 // 2
        self._keys = array("q", bytes(8 * self._size))
        self._values = array("i", bytes(4 * self._size))
        for key, value in zip(keys, values, strict=True):
            if key:
                slot = self._slot(key)
                self._keys[slot] = key
                self._values[slot] = value
