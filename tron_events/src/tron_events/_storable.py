"""Text that every backend stores and finds exactly.

PostgreSQL ``text`` cannot hold NUL (``\\x00``), and neither SQLite nor
PostgreSQL takes a lone surrogate (``\\ud800``: not UTF-8 at all). Values the
store keeps in its own columns (working directory, model, provider, title,
fork name) must be *storable*: they are refused with :class:`InvalidPayload`
otherwise, on every backend alike. Payload strings are JSON text (a NUL
travels as ``\\u0000``), so they may hold NUL; see ``_payload_json.py``.

A lookup key (an event, session or workspace id, a type filter, a cursor)
that is not storable cannot name anything stored: lookups answer "not found"
for it instead of handing it to the database driver, which would raise.
"""

from __future__ import annotations

import re

from .errors import InvalidPayload

__all__ = ["check_column_text", "findable", "has_lone_surrogate", "is_storable", "search_safe"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a code point U+D800–U+DFFF (not encodable as UTF-8)."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def is_storable(text: str) -> bool:
    """Whether every backend stores ``text`` exactly (no NUL, no lone surrogate)."""
    return "\x00" not in text and not has_lone_surrogate(text)


def findable(key: object) -> bool:
    """Whether ``key`` could name a stored row (a storable string); a lookup of
    anything else finds nothing."""
    return isinstance(key, str) and is_storable(key)


def check_column_text(value: object, what: str, *, optional: bool = False) -> None:
    """Refuse a value the store would put in a column of its own unless it is
    a storable string (``None`` too when ``optional``)."""
    if value is None and optional:
        return
    if not isinstance(value, str):
        raise InvalidPayload(f"{what} must be a string, got {type(value).__name__}")
    if "\x00" in value:
        raise InvalidPayload(f"{what} cannot contain NUL (\\x00) characters")
    if has_lone_surrogate(value):
        raise InvalidPayload(f"{what} contains a lone surrogate (not valid Unicode text)")


def search_safe(text: str) -> str:
    """``text`` with NULs and lone surrogates turned into spaces: what search
    indexes and queries use (neither is part of a word on any backend)."""
    if "\x00" in text:
        text = text.replace("\x00", " ")
    if has_lone_surrogate(text):
        text = _SURROGATE.sub(" ", text)
    return text
