"""JSON-RPC 2.0 frames: checking requests and building responses and notifications."""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
import orjson
from pydantic import BaseModel

from tron_events import Event
from tron_events.store import now as store_now

from ..errors import InvalidRequest, RpcError

#: A request id as echoed: a string, an int, or the exact JSON text of any other number.
RequestId = str | int | float | orjson.Fragment | None

#: Placeholder for "the request had no id" (a notification), distinct from ``"id": null``.
NO_ID: Any = object()


@dataclass(frozen=True, slots=True)
class Request:
    """A checked request. ``id`` is ``NO_ID`` for a notification (no reply)."""

    method: str
    params: object
    id: Any

    @property
    def is_notification(self) -> bool:
        return self.id is NO_ID


class BadRequest(Exception):
    """The frame is not a valid request; answer ``error`` with ``id``."""

    def __init__(self, error: RpcError, id: RequestId) -> None:
        super().__init__(error.message)
        self.error = error
        self.id = id


def _valid_id(value: object) -> bool:
    # JSON-RPC ids are strings, numbers or null; bools are JSON, not numbers.
    return (
        value is None
        or isinstance(value, str | orjson.Fragment)
        or (isinstance(value, int | float) and not isinstance(value, bool))
    )


# -- decoding with exact ids ----------------------------------------------------------


class _RawNumber(str):
    """A JSON number kept as its text (to echo an id exactly)."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads_request(frame: str | bytes) -> Any:
    """Decode a request frame; numeric ids that are not exact 64-bit integers
    (``1e+30``, ``1.50``, ``100000000000000000000000``) become the ``orjson.Fragment``
    of their own text, so the reply echoes them exactly.

    orjson reads a number beyond 64-bit integers as a float and refuses one beyond
    the double range: only such frames are read a second time, with the standard
    library keeping numbers as text. Raises ``ValueError`` (``orjson.JSONDecodeError``
    is one) for text that is not JSON.
    """
    try:
        obj = orjson.loads(frame)
    except orjson.JSONDecodeError as exc:
        if "number" not in str(exc):  # only a number out of range is worth a second look
            raise
        return _with_raw_ids(frame, None)
    if _has_inexact_id(obj):
        return _with_raw_ids(frame, obj)
    return obj


def _has_inexact_id(obj: object) -> bool:
    # A float was written with a fraction or an exponent, or was beyond 64 bits; an
    # integer's text is its canonical form, but for "-0".
    items = obj if isinstance(obj, list) else [obj]
    for item in items:
        if isinstance(item, dict):
            value = item.get("id")
            if isinstance(value, float) or (type(value) is int and value == 0):
                return True
    return False


def _with_raw_ids(frame: str | bytes, decoded: Any | None) -> Any:
    text = frame.decode() if isinstance(frame, bytes) else frame
    raw = json.loads(
        text,
        parse_float=_RawNumber,
        parse_int=_RawNumber,
        parse_constant=_reject_constant,
    )
    if decoded is None:
        # orjson refused a number beyond the double range: read the frame with
        # the standard library (such a number outside an id stays an infinity,
        # which the params' validation refuses like any bad value).
        decoded = json.loads(text, parse_constant=_reject_constant)
    if isinstance(decoded, dict) and isinstance(raw, dict):
        _take_raw_id(decoded, raw)
    elif isinstance(decoded, list) and isinstance(raw, list):
        for item, raw_item in zip(decoded, raw, strict=True):
            if isinstance(item, dict) and isinstance(raw_item, dict):
                _take_raw_id(item, raw_item)
    return decoded


def _take_raw_id(item: dict[str, Any], raw_item: dict[str, Any]) -> None:
    raw_id = raw_item.get("id")
    if isinstance(raw_id, _RawNumber):
        item["id"] = orjson.Fragment(str(raw_id))


def check_request(obj: object) -> Request:
    """A Request from one decoded JSON value, or BadRequest (-32600)."""
    if not isinstance(obj, dict):
        raise BadRequest(InvalidRequest("a request must be a JSON object"), None)
    has_id = "id" in obj
    raw_id = obj.get("id")
    reply_id = raw_id if has_id and _valid_id(raw_id) else None
    if has_id and not _valid_id(raw_id):
        raise BadRequest(InvalidRequest("id must be a string, a number or null"), None)
    if obj.get("jsonrpc") != "2.0":
        raise BadRequest(InvalidRequest('jsonrpc must be "2.0"'), reply_id)
    method = obj.get("method")
    if not isinstance(method, str) or not method:
        raise BadRequest(InvalidRequest("method must be a non-empty string"), reply_id)
    params = obj.get("params")
    if params is not None and not isinstance(params, dict | list):
        raise BadRequest(InvalidRequest("params must be an object or an array"), reply_id)
    extra = set(obj) - {"jsonrpc", "method", "params", "id"}
    if extra:
        raise BadRequest(
            InvalidRequest(f"unknown member(s) in the request: {', '.join(sorted(extra))}"),
            reply_id,
        )
    return Request(method=method, params=params, id=raw_id if has_id else NO_ID)


class JsonText:
    """JSON text to put in a result as is: e.g. a page of events whose JSON the
    database built. At the top level of a result, the reply frame is built around
    it as text, copying it once (a 13 MB page through ``orjson.dumps`` and back
    to ``str`` for the socket meant two more copies on the event loop, which
    every other connection waited for)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"JsonText({len(self.text)} characters)"


def _default(value: object) -> Any:
    if isinstance(value, JsonText):
        return orjson.Fragment(value.text)
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def dumps(value: object) -> bytes:
    """JSON bytes (orjson; pydantic models dumped by alias)."""
    return orjson.dumps(value, default=_default)


#: Lists of events longer than this are encoded in a worker thread, so a big
#: page does not hold up every other connection on the event loop.
ENCODE_IN_THREAD_AT = 200


async def events_json(events: Sequence[Event]) -> orjson.Fragment:
    """A list of events as JSON (their wire form) to put in a result as is."""
    if len(events) < ENCODE_IN_THREAD_AT:
        return orjson.Fragment(_encode_events(events))
    return orjson.Fragment(await anyio.to_thread.run_sync(_encode_events, events))


def _encode_events(events: Sequence[Event]) -> bytes:
    return orjson.dumps([e.to_wire() for e in events])


def result_frame(id: RequestId, result: object) -> bytes | str:
    """The reply frame: bytes, or text when the result holds :class:`JsonText`."""
    if isinstance(result, dict) and any(isinstance(v, JsonText) for v in result.values()):
        return _spliced_result(id, result)
    return dumps({"jsonrpc": "2.0", "id": id, "result": result})


def _spliced_result(id: RequestId, result: dict[str, Any]) -> str:
    # Encode the small rest with unique placeholders, then put the texts in their place.
    mark = f"@@tron-json-{secrets.token_hex(8)}-"
    texts: list[str] = []
    shell: dict[str, Any] = {}
    for key, value in result.items():
        if isinstance(value, JsonText):
            shell[key] = f"{mark}{len(texts)}@@"
            texts.append(value.text)
        else:
            shell[key] = value
    head = dumps({"jsonrpc": "2.0", "id": id, "result": shell}).decode()
    parts: list[str] = []
    for i, text in enumerate(texts):
        before, after = head.split(f'"{mark}{i}@@"', 1)
        parts += [before, text]
        head = after
    parts.append(head)
    return "".join(parts)


def error_frame(id: RequestId, error: RpcError) -> bytes:
    return dumps({"jsonrpc": "2.0", "id": id, "error": error.to_json()})


def now_iso() -> str:
    """UTC now, the format of event timestamps (``2025-01-01T12:00:00.000Z``): the
    store's own clock (:func:`tron_events.store.now`, which formats the date part once a
    second; every notification is stamped)."""
    return store_now()


def notification_frame(
    method: str, session_id: str | None, data: object, timestamp: str | None = None
) -> bytes:
    """``{jsonrpc, method, params: {sessionId, timestamp, data}}``."""
    params = {"sessionId": session_id, "timestamp": timestamp or now_iso(), "data": data}
    return dumps({"jsonrpc": "2.0", "method": method, "params": params})


__all__ = [
    "NO_ID",
    "BadRequest",
    "JsonText",
    "Request",
    "RequestId",
    "check_request",
    "dumps",
    "error_frame",
    "events_json",
    "loads_request",
    "notification_frame",
    "now_iso",
    "result_frame",
]
