"""What a payload may hold, and the one place where a payload becomes JSON text.

A payload is a JSON value and comes back from the store exactly as it went
in, or it is refused with :class:`InvalidPayload` and nothing is written:

* objects (``dict``, string keys), arrays (``list``), strings, booleans,
  ``None``, integers from -2**63 to 2**64 - 1 and finite floats;
* at most :data:`MAX_DEPTH` arrays and objects deep (the payload object is 1);
* strings (keys too) are valid Unicode: a lone surrogate is refused; NUL is
  fine (JSON text escapes it, so it round-trips on every backend).

Refused too: NaN and ±infinity (JSON has no such numbers; they used to be
stored as ``null``), bytes, tuples and sets (they would come back as
something else), and any other object.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import orjson

from ._storable import has_lone_surrogate
from .errors import InvalidPayload

__all__ = ["MAX_DEPTH", "check_json_value", "check_json_value_fast", "payload_json"]

#: The deepest nesting of arrays and objects a payload may have. Far beyond
#: what any tool call needs, and well inside what the JSON encoders on the way
#: to a client handle (an event and a JSON-RPC frame wrap it in a few more).
MAX_DEPTH = 100
_MIN_INT = -(2**63)
_MAX_INT = 2**64 - 1


def _where(path: tuple[str | int, ...]) -> str:
    shown = "".join(f"[{_short(p)}]" for p in path[:6])
    return "payload" + shown + (f"…({len(path) - 6} more levels)" if len(path) > 6 else "")


def _short(step: object) -> str:
    try:
        text = repr(step)
    except ValueError:  # an integer too long to print
        return f"<{type(step).__name__}>"
    return text if len(text) <= 40 else text[:37] + "…"


def _refuse(what: str, path: tuple[str | int, ...], why: str) -> InvalidPayload:
    return InvalidPayload(f"invalid {what} payload: {_where(path)} {why}")


def _check_scalar(value: Any, what: str, path: tuple[str | int, ...]) -> None:
    """Refuse a non-container that is not an exact JSON scalar."""
    if isinstance(value, str):
        if has_lone_surrogate(value):
            raise _refuse(what, path, "contains a lone surrogate (not valid Unicode text)")
    elif value is None or isinstance(value, bool):
        pass
    elif isinstance(value, int):
        if not _MIN_INT <= value <= _MAX_INT:
            raise _refuse(what, path, "is an integer outside -2**63 … 2**64-1")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise _refuse(what, path, f"is {value!r}, which JSON cannot represent")
    else:
        raise _refuse(
            what, path, f"is of type {type(value).__name__}, not a JSON value (use str, int, "
            "float, bool, None, list or dict)"
        )  # fmt: skip


def check_json_value(value: Any, what: str = "event") -> None:
    """Raise :class:`InvalidPayload` unless ``value`` is a JSON value that
    round-trips exactly (see the module docstring). ``what`` names the event
    type in the message."""
    # Iterative: a payload nested 10,000 deep must be refused, not overflow the
    # stack. Paths are built only for containers; ASCII strings (nearly every
    # key and value) take one type check and one isascii().
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        node, path = stack.pop()
        if len(path) >= MAX_DEPTH:
            raise _refuse(what, path, f"is nested deeper than {MAX_DEPTH} arrays and objects")
        children: Iterable[tuple[str | int, Any]]
        if isinstance(node, dict):
            for key in node:
                if type(key) is not str or not key.isascii():
                    _check_key(key, what, path)
            children = node.items()
        elif isinstance(node, list):
            children = enumerate(node)
        else:
            _check_scalar(node, what, path)
            continue
        for step, item in children:
            kind = type(item)
            if kind is str:
                if not item.isascii() and has_lone_surrogate(item):
                    _check_scalar(item, what, (*path, step))
            elif kind is dict or kind is list or isinstance(item, dict | list):
                stack.append((item, (*path, step)))
            elif not (
                item is None or kind is bool or (kind is int and _MIN_INT <= item <= _MAX_INT)
            ):
                _check_scalar(item, what, (*path, step))


def check_json_value_fast(value: Any, what: str = "event") -> None:
    """:func:`check_json_value`, with the common case checked in C: ``value`` written by
    orjson (which refuses bytes, sets, other objects, non-string keys, lone surrogates and
    integers beyond 64 bits) and read back equal (a tuple, a NaN or an infinity would not
    be), and fewer brackets in the text than :data:`MAX_DEPTH` (no deeper nesting is then
    possible). Anything else goes through the walk, which says where and why; the walk
    was most of an append's own CPU (``benchmarks/RESULTS.md`` §11)."""
    try:
        text = orjson.dumps(value)
    except orjson.JSONEncodeError:
        check_json_value(value, what)  # says where and why
        raise InvalidPayload(f"invalid {what} payload: it is not a JSON value") from None
    if text.count(b"[") + text.count(b"{") >= MAX_DEPTH:
        check_json_value(value, what)
        return
    if orjson.loads(text) != value:
        check_json_value(value, what)
        raise InvalidPayload(f"invalid {what} payload: it would not come back as it is")


def exact_json_copy(value: Any) -> tuple[Any, bytes] | None:
    """A fresh copy of ``value`` (orjson's, written and read back) and its JSON text,
    if it holds only exact JSON types (``dict``, ``list``, ``str``, ``int`` within 64
    bits, a finite ``float``, ``bool``, ``None``; no subclasses, tuples, NaN) no deeper
    than :data:`MAX_DEPTH`, so :func:`check_json_value_fast` would pass it; else None
    (the caller then takes the checked path, which says why)."""
    try:
        text = orjson.dumps(value, option=orjson.OPT_PASSTHROUGH_SUBCLASS)
    except orjson.JSONEncodeError:
        return None
    if text.count(b"[") + text.count(b"{") >= MAX_DEPTH:
        return None
    copy = orjson.loads(text)
    return (copy, text) if copy == value else None


def _check_key(key: Any, what: str, path: tuple[str | int, ...]) -> None:
    if not isinstance(key, str):
        raise _refuse(
            what,
            path,
            f"has a key of type {type(key).__name__} ({_short(key)}); keys must be strings",
        )
    if has_lone_surrogate(key):
        raise _refuse(what, path, f"has a key with a lone surrogate: {_short(key)}")


def payload_json(value: dict[str, Any], what: str = "event") -> str:
    """The JSON text stored for a payload; :class:`InvalidPayload` for anything
    that would not come back exactly.

    Checked by reading the text back (in C, about three times cheaper than
    :func:`check_json_value`'s walk; appends run it on every payload, which
    :func:`~tron_events.payloads.validate_payload` already walked once).
    """
    try:
        text = orjson.dumps(value)
    except orjson.JSONEncodeError as exc:
        check_json_value(value, what)  # says where and why
        raise InvalidPayload(f"invalid {what} payload: {exc}") from None
    if orjson.loads(text) != value:  # NaN became null, a tuple a list, …
        check_json_value(value, what)
        raise InvalidPayload(f"invalid {what} payload: it would not come back as it is")
    return text.decode()
