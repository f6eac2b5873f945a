"""Bad input never escapes the typed errors, on every backend.

* A payload round-trips exactly or is refused with ``InvalidPayload``, and a
  refused write leaves nothing behind (a hypothesis property over JSON-like
  values and values that only look like JSON: NaN, ±infinity, bytes, tuples,
  integers beyond 64 bits, lone surrogates, NUL, deep nesting), through every
  entry point that takes caller text or payloads.
* Any string is a valid literal query; a raw query that no backend can take
  is ``InvalidQuery``.
* A key no row can have (ids, cursors, type filters holding NUL or a lone
  surrogate, or not strings at all) finds nothing: the not-found error of the
  call, never a driver's ``ValueError``/``UnicodeEncodeError``/``DataError``.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.events.test_store import new_session, user
from tron_events import (
    EventNotFound,
    EventStore,
    InvalidCursor,
    InvalidParent,
    InvalidPayload,
    InvalidQuery,
    InvalidRewind,
    SessionNotFound,
    register_event_type,
)
from tron_events.errors import ConcurrencyConflict, TronEventsError
from tron_events.payloads import Payload

MAX_DEPTH = 100  # the documented limit (README, _payload_json.py)
PROPERTY = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Every code point, lone surrogates and NUL included (hypothesis leaves out
# surrogates unless asked).
any_char = st.characters(codec=None, exclude_categories=())
any_text = st.text(any_char, max_size=12)
json_scalar = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.integers()  # sometimes beyond 64 bits
    | st.sampled_from([2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**30])
    | st.floats()  # NaN and ±infinity included
    | any_text
)
json_like = st.recursive(
    json_scalar,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text, inner, max_size=4),
    max_leaves=12,
)
# Values that only look like JSON: each must be refused, nothing converted.
not_json = st.sampled_from(
    [b"bytes", bytearray(b"x"), (1, 2), {1, 2}, frozenset(), object(), 1 + 2j, Ellipsis]
)
value_or_impostor = st.recursive(
    json_scalar | not_json,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(any_text | st.integers(0, 3), inner, max_size=3)
    ),
    max_leaves=8,
)


def nested(depth: int) -> Any:
    """Arrays nested ``depth`` deep (``[]`` is 1)."""
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


def exact_json(value: Any, depth: int = 1) -> bool:
    """The specification: what must come back exactly (everything else is refused)."""
    if depth > MAX_DEPTH and isinstance(value, list | dict):
        return False
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, int):
        return -(2**63) <= value <= 2**64 - 1
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, str):
        return valid_unicode(value)
    if isinstance(value, list):
        return all(exact_json(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(
            isinstance(k, str) and valid_unicode(k) and exact_json(v, depth + 1)
            for k, v in value.items()
        )
    return False


def type_name(value: Any) -> str:
    return type(value).__name__


def valid_unicode(text: str) -> bool:
    return not any(0xD800 <= ord(c) <= 0xDFFF for c in text)


class Custom(Payload):
    label: str
    data: Any = None


register_event_type("test.bad_input_custom", Custom)


class Measured(Payload):
    value: float


register_event_type("test.bad_input_measured", Measured)


@pytest.fixture
def store(shared_store: EventStore) -> EventStore:
    return shared_store


@pytest.fixture
def sid(store: EventStore) -> str:
    return new_session(store, wd=f"/bad/{uuid.uuid4().hex}").id


def snapshot(store: EventStore) -> list[tuple[str, str, int, str | None]]:
    """What a refused write must leave as it was: every session's head,
    event count and status (any write changes one of them)."""
    return sorted(
        (s.id, s.head_event_id, s.event_count, s.status)
        for s in store.list_sessions(limit=1_000_000)
    )


def stored_or_refused(store: EventStore, sid: str, type: str, payload: dict[str, Any]) -> None:
    before = store.get_session(sid).event_count
    if exact_json(payload):
        event = store.append(sid, type, payload)
        assert event.payload == payload
        assert store.get_event(event.id).payload == payload  # type: ignore[union-attr]
        assert store.get_session(sid).event_count == before + 1
    else:
        with pytest.raises(InvalidPayload):
            store.append(sid, type, payload)
        assert store.get_session(sid).event_count == before


@PROPERTY
@given(value=json_like | value_or_impostor)
def test_a_payload_round_trips_exactly_or_is_refused(
    store: EventStore, sid: str, value: Any
) -> None:
    stored_or_refused(store, sid, "message.user", {"content": "x", "data": value})
    stored_or_refused(store, sid, "test.bad_input_custom", {"label": "y", "data": [value]})
    stored_or_refused(store, sid, "metadata.update", {"v": value})


@pytest.mark.parametrize(
    "value",
    [
        nested(10_000),
        {"a": nested(MAX_DEPTH)},  # the payload object makes it one too deep
        b"\xff\x00",
        b"utf-8 bytes",
        object(),
        2**64,
        -(2**63) - 1,
        "lone \ud800 surrogate",
        {"\udfff": 1},
        {1: "an integer key"},
        {10**5000: "an integer key too long to print"},
        float("nan"),
        float("inf"),
        float("-inf"),
        (1, 2),
    ],
    ids=type_name,
)
def test_each_kind_of_bad_value_is_refused(store: EventStore, sid: str, value: Any) -> None:
    before = snapshot(store)
    with pytest.raises(InvalidPayload):
        store.append(sid, "message.user", {"content": "x", "data": value})
    assert snapshot(store) == before


def test_deepest_allowed_payload_and_extreme_numbers_round_trip(
    store: EventStore, sid: str
) -> None:
    payload = {
        "content": "x\x00y",  # NUL is JSON-escaped, on PostgreSQL too
        "deep": nested(MAX_DEPTH - 1),
        "numbers": [2**64 - 1, -(2**63), 5e-324, 1.7976931348623157e308, -0.0],
    }
    event = store.append(sid, "message.user", payload)
    assert store.get_event(event.id).payload == payload  # type: ignore[union-attr]
    assert [h.event_id for h in store.search("x y", session_id=sid)] == [event.id]


BAD_TEXT = ["nul\x00inside", "lone \ud800 surrogate", "\udfff"]


@pytest.mark.parametrize("bad", BAD_TEXT, ids=["nul", "surrogate", "only_surrogate"])
def test_every_entry_point_refuses_unstorable_text_and_writes_nothing(
    store: EventStore, sid: str, bad: str
) -> None:
    """Text the store keeps in its own columns is refused even with NUL (the
    same on both backends: PostgreSQL text cannot hold it); payload text only
    when it is not valid Unicode."""
    head = store.get_session(sid).head_event_id
    calls: dict[str, Callable[[], object]] = {
        "create_session title": lambda: new_session(store, title=bad),
        "create_session working_directory": lambda: new_session(store, wd="/w/" + bad),
        "create_session model": lambda: new_session(store, model=bad),
        "fork name": lambda: store.fork(head, name=bad),
        "fork model": lambda: store.fork(head, model=bad),
        "workspace path": lambda: store.get_or_create_workspace("/ws/" + bad),
        "append_many, one bad of three": lambda: store.append_many(
            sid,
            [
                {"type": "message.user", "payload": {"content": "fine"}},
                {"type": "message.user", "payload": {"content": "x", "v": float("nan")}},
                {"type": "message.user", "payload": {"content": "fine"}},
            ],
        ),
    }
    if "\x00" not in bad:  # payload text: NUL is fine, a lone surrogate is not
        calls.update(
            {
                "create_session system_prompt": lambda: new_session(store, system_prompt=bad),
                "end_session summary": lambda: store.end_session(sid, summary=bad),
                "end_session reason": lambda: store.end_session(sid, reason=bad),
                "append": lambda: store.append(sid, "message.user", {"content": bad}),
                "custom type": lambda: store.append(sid, "test.bad_input_custom", {"label": bad}),
            }
        )
    before = snapshot(store)
    for name, call in calls.items():
        with pytest.raises(InvalidPayload):
            call()
        assert snapshot(store) == before, name
    assert store.get_session(sid).status == "active"


def test_nul_in_payload_text_round_trips_through_every_entry_point(store: EventStore) -> None:
    s = store.create_session(
        working_directory="/w", model="m", provider="p", system_prompt="be\x00brief"
    )
    root = store.get_event(s.root_event_id)
    assert root is not None and root.payload["systemPrompt"] == "be\x00brief"
    end = store.end_session(s.id, reason="done\x00", summary="sum\x00mary")
    assert store.get_event(end.id).payload == {"reason": "done\x00", "summary": "sum\x00mary"}  # type: ignore[union-attr]


BAD_KEYS: list[Any] = ["nul\x00", "\ud800", "evt_\udfff", 42, None, ["evt_x"]]


@pytest.mark.parametrize("key", BAD_KEYS, ids=repr)
def test_keys_no_row_can_have_find_nothing(store: EventStore, sid: str, key: Any) -> None:
    user(store, sid, "findable words")
    head = store.get_session(sid).head_event_id
    before = snapshot(store)
    not_found: dict[str, tuple[type[TronEventsError], Callable[[], object]]] = {
        "get_session": (SessionNotFound, lambda: store.get_session(key)),
        "get_events": (SessionNotFound, lambda: store.get_events(key)),
        "append": (SessionNotFound, lambda: user(store, key, "x")),
        "append_many": (
            SessionNotFound,
            lambda: store.append_many(key, [{"type": "message.user", "payload": {"content": "x"}}]),
        ),
        "end_session": (SessionNotFound, lambda: store.end_session(key)),
        "delete_session": (SessionNotFound, lambda: store.delete_session(key)),
        "rewind session": (SessionNotFound, lambda: store.rewind(key, head)),
        "rewind target": (InvalidRewind, lambda: store.rewind(sid, key)),
        "fork": (EventNotFound, lambda: store.fork(key)),
        "get_ancestors": (EventNotFound, lambda: store.get_ancestors(key)),
        "get_state_at": (EventNotFound, lambda: store.get_state_at(key)),
        "get_state_at_head": (SessionNotFound, lambda: store.get_state_at_head(key)),
        "parent_id": (InvalidParent, lambda: user(store, sid, "x", parent_id=key)),
        "get_since session": (SessionNotFound, lambda: store.get_since(session_id=key)),
        "get_since cursor": (InvalidCursor, lambda: store.get_since(after_event_id=key)),
        "get_since_json cursor": (
            InvalidCursor,
            lambda: store.get_since_json(session_id=sid, after_event_id=key),
        ),
        "feed_start": (
            InvalidCursor,
            lambda: store.feed_start(session_id=None, workspace_id=None, after=key),
        ),
        "deletion target": (
            InvalidPayload,
            lambda: store.append(sid, "message.deleted", {"targetEventId": key}),
        ),
    }
    if key is None:  # None means "no filter" / "from now" / "the head" to these
        for name in ("get_since session", "get_since cursor", "get_since_json cursor"):
            del not_found[name]
        del not_found["feed_start"], not_found["parent_id"]
    if isinstance(key, int):
        del not_found["feed_start"]  # a number is a position there
    for name, (error, call) in not_found.items():
        with pytest.raises(error):
            call()
        assert snapshot(store) == before, name
    if isinstance(key, str):
        with pytest.raises(ConcurrencyConflict):
            user(store, sid, "x", expected_head=key)
    assert store.get_event(key) is None
    assert store.get_children(key) == []
    assert store.list_sessions(workspace_id=key) == [] or key is None
    assert store.list_sessions(status=key) == [] or key is None
    if isinstance(key, str):
        ws = store.get_session(sid).workspace_id
        assert store.get_since(workspace_id=key).events == []
        assert store.search("findable", workspace_id=key) == []
        assert store.search("findable", session_id=key) == []
        assert store.search("findable", types=[key]) == []
        assert store.get_events(sid, types=[key]) == []
        # A bad entry among good ones does not hide the good ones.
        assert len(store.search("findable", types=[key, "message.user"], workspace_id=ws)) == 1
        assert [e.type for e in store.get_events(sid, types=[key, "message.user"])] == [
            "message.user"
        ]
    assert snapshot(store) == before


@pytest.mark.parametrize("value", ["5", 2**70, -(2**64), 10**5000, 1.5, True], ids=type_name)
def test_counts_and_sequence_cursors_must_be_64_bit_integers(
    store: EventStore, sid: str, value: Any
) -> None:
    with pytest.raises(InvalidCursor):
        store.get_since(session_id=sid, after_sequence=value)
    with pytest.raises(InvalidCursor):
        store.get_since(session_id=sid, limit=value)
    with pytest.raises(InvalidCursor):
        store.get_events(sid, after_sequence=value)
    with pytest.raises(InvalidCursor):
        store.list_sessions(limit=value)
    with pytest.raises(InvalidCursor):
        store.feed_start(session_id=sid, workspace_id=None, after=value)
    with pytest.raises(InvalidQuery):
        store.search("x", limit=value)


SEED_TEXTS = [
    "quartz \x00 nebula",
    'parenthesis (NEAR OR "quoted") star*',
    "emoji \U0001f600 café naïve",
]
SEED_WORDS = ["quartz", "nebula", "parenthesis", "quoted", "café", "naïve"]


@PROPERTY
@given(query=st.text(any_char, max_size=40) | st.sampled_from(SEED_WORDS))
def test_any_string_is_a_valid_literal_query(store: EventStore, sid: str, query: str) -> None:
    if store.get_session(sid).event_count == 1:  # the first example seeds the session
        for text in SEED_TEXTS:
            user(store, sid, text)
    hits = store.search(query, session_id=sid)
    if query in SEED_WORDS:
        assert hits, query
    raw_words = query.split()
    if raw_words and all(w in SEED_WORDS for w in raw_words):
        assert hits, query


@pytest.mark.parametrize(
    "query",
    ["a\x00b", "\x00", "\ud800", "x\udfff y", "\ud83d", '"', "NEAR(", "*", "-x", "a OR", "^", ":"],
    ids=repr,
)
def test_literal_queries_that_used_to_raise(store: EventStore, sid: str, query: str) -> None:
    found = user(store, sid, "alpha\x00beta gamma")
    hits = store.search(query, session_id=sid)
    assert all(h.event_id == found.id for h in hits)
    # NUL and lone surrogates read as spaces in the text and in the query alike.
    assert [h.event_id for h in store.search("alpha\ud800beta", session_id=sid)] == [found.id]
    assert [h.event_id for h in store.search("beta\x00gamma", session_id=sid)] == [found.id]


@pytest.mark.parametrize("query", ["a\x00b", "\ud800"], ids=repr)
def test_raw_queries_the_backend_cannot_take_are_invalid_queries(
    store: EventStore, query: str
) -> None:
    with pytest.raises(InvalidQuery):
        store.search(query, raw=True)
    with pytest.raises(InvalidQuery):
        store.search(123, raw=False)  # type: ignore[arg-type]


def test_event_types_must_be_storable_names() -> None:
    for name in ["bad\x00.type", "bad.\ud800", "a." + "x" * 70, "no_dot", "spa ce.x", ".x", "x."]:
        with pytest.raises(ValueError):
            register_event_type(name)


def test_unknown_or_unhashable_types_are_typed(store: EventStore, sid: str) -> None:
    from tron_events import UnknownEventType

    for t in [["message.user"], None, 5, "message.\x00"]:
        with pytest.raises(UnknownEventType):
            store.append(sid, t, {"content": "x"})  # type: ignore[arg-type]


def test_a_model_that_makes_nan_from_text_is_refused_not_stored_as_null(
    store: EventStore, sid: str
) -> None:
    """The checked input "nan" is a string; the model turns it into a float
    NaN, which the JSON text would hold as null: the stored form is checked too."""
    before = snapshot(store)
    for text_ in ("nan", "inf", "-Infinity"):
        with pytest.raises(InvalidPayload, match="JSON cannot represent"):
            store.append(sid, "test.bad_input_measured", {"value": text_})
    assert snapshot(store) == before
    event = store.append(sid, "test.bad_input_measured", {"value": "1.5"})
    assert store.get_event(event.id).payload == {"value": 1.5}  # type: ignore[union-attr]
