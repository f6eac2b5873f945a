"""Persisted projections ("state snapshots"): resuming a session without
projecting its whole path.

Events are immutable, so the projection at an event id never changes. The
store keeps some of them in the ``state_snapshots`` table (revision 0002),
keyed by event id, and ``get_state_at`` continues the nearest snapshotted
ancestor over the events after it (``reconstruct.advance(resuming=True)``,
which falls back to the whole path when a rule reaches back before the
snapshot). A cold resume then reads one row and the few events after it
instead of the whole path.

The format: orjson of the :class:`~tron_events.reconstruct.Projection` (the
messages so far, the open tool bookkeeping, the folded state). Rows carry
:data:`FORMAT`; a row of any other format is ignored (and replaced when that
event is snapshotted again). FORMAT changes with this module's format number
AND with the source of ``reconstruct.py`` and this module, so a release that
changes how events project never resumes from what an older one stored.
Downgrading below revision 0002 drops the table.

When: after a ``get_state_at*`` that projected many events (see
``EventStore.snapshot_min_events`` and ``SNAPSHOT_FRACTION``), in its own
short transaction that never waits long for a lock and never fails the read.
Per session only the ``keep`` newest (by sequence) stay, which bounds the
table to about twice the size of each session's current history.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from . import reconstruct as _r
from .messages import Message

#: Bump when the layout below changes (the source hash covers most changes anyway).
FORMAT_NUMBER = 1
#: Snapshots kept per session (the newest by sequence).
DEFAULT_KEEP = 2
#: A snapshot is written when a call projected at least this many events ...
DEFAULT_MIN_EVENTS = 200
#: ... and at least this fraction (1/N) of the path: the events projected after
#: a snapshot then stay a small part of the work, and each write (which copies
#: the whole history) is amortized over many appended events.
SNAPSHOT_FRACTION = 8


def _source_hash() -> str:
    digest = hashlib.sha256()
    for module_file in (_r.__file__, __file__):
        try:
            digest.update(Path(module_file).read_bytes())
        except OSError:  # no source shipped: the format number alone
            digest.update(b"?")
    return digest.hexdigest()[:16]


FORMAT = f"{FORMAT_NUMBER}-{_source_hash()}"

_STATE_FIELDS = _r._State.__slots__


class SnapshotError(ValueError):
    """A stored snapshot that cannot be read (corrupt, or another layout)."""


def should_snapshot(projected: int, path_length: int, min_events: int) -> bool:
    """Is a projection of ``projected`` events, ending a path of ``path_length``
    events, worth storing?"""
    return min_events > 0 and projected >= max(min_events, path_length // SNAPSHOT_FRACTION)


# -- encoding --------------------------------------------------------------------------


def _fields(obj: Any) -> dict[str, Any]:
    # Block models hold exactly their fields in __dict__ (see reconstruct's
    # constructors), and that is what the decoder hands back to them.
    fields: dict[str, Any] = obj.__dict__
    return fields


def dumps(proj: _r.Projection) -> bytes:
    """The snapshot bytes of a projection."""
    state = proj.state
    if state is None:
        raise ValueError("only projections with state are snapshotted")
    return orjson.dumps(
        {
            "format": FORMAT,
            "messages": [[m.role, m.content, m.event_ids] for m in proj.messages],
            "uses": proj.uses,
            "results": proj.results,
            "result_ids": proj.result_ids,
            "seen_uses": list(proj.seen_uses),
            "pending": proj.pending,
            "ack_event": proj.ack_event,
            "truncated": list(proj.truncated),
            "called": list(proj.called),
            "state": {name: getattr(state, name) for name in _STATE_FIELDS},
        },
        default=_fields,
    )


# -- decoding --------------------------------------------------------------------------


def _image(fields: dict[str, Any]) -> Any:
    source = fields["source"]
    kind = source["type"]
    if kind == "base64":
        fields["source"] = _r._new_base64(source)
    elif kind == "url":
        fields["source"] = _r._new_url(source)
    else:
        raise SnapshotError(f"unknown image source {kind!r}")
    return _r._new_image(fields)


def _tool_result(fields: dict[str, Any]) -> Any:
    content = fields["content"]
    if type(content) is list:
        fields["content"] = _blocks(content)
    return _r._new_tool_result(fields)


_DECODERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "text": _r._new_text,
    "thinking": _r._new_thinking,
    "redacted_thinking": _r._new_redacted,
    "native": _r._new_native,
    "tool_use": _r._new_tool_use,
    "tool_result": _tool_result,
    "image": _image,
}


def _blocks(items: list[dict[str, Any]]) -> list[Any]:
    decoders = _DECODERS
    try:
        return [decoders[b["type"]](b) for b in items]
    except (KeyError, TypeError) as exc:
        raise SnapshotError(f"malformed block in a snapshot: {exc!r}") from None


def loads(data: bytes | bytearray | memoryview | str) -> _r.Projection:
    """The projection stored in snapshot bytes (SnapshotError if unreadable)."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise SnapshotError(f"a snapshot is not valid JSON: {exc}") from None
    if type(doc) is not dict or doc.get("format") != FORMAT:
        raise SnapshotError("a snapshot of another format")
    try:
        state = _r._State()
        for name, value in doc["state"].items():
            if name not in _STATE_FIELDS:
                raise SnapshotError(f"unknown state field {name!r}")
            setattr(state, name, value)
        proj = _r.Projection(state)
        new_message = _r._new_message
        messages: list[Message] = [
            new_message({"role": role, "content": _blocks(content), "event_ids": ids})
            for role, content, ids in doc["messages"]
        ]
        proj.messages = messages
        proj.uses = doc["uses"]
        proj.results = {k: _tool_result(v) for k, v in doc["results"].items()}
        proj.result_ids = doc["result_ids"]
        proj.seen_uses = set(doc["seen_uses"])
        proj.pending = {k: (_tool_result(b), eid) for k, (b, eid) in doc["pending"].items()}
        proj.ack_event = doc["ack_event"]
        proj.truncated = set(doc["truncated"])
        proj.called = set(doc["called"])
    except SnapshotError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise SnapshotError(f"malformed snapshot: {exc!r}") from None
    return proj
