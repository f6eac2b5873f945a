"""Payload validation without pydantic (``_fast_payload.py``) says exactly what the
payload's pydantic model says: for every payload it vouches for, the model accepts
it too and dumps the same dict with the same JSON text (key order included); what it
does not vouch for goes to the model. Payloads are generated from each registered
type's fields, with wrong types, snake_case names, missing and extra keys mixed in."""

from __future__ import annotations

import os
import types
import typing
from typing import Any, Literal

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from tron_events._fast_payload import SLOW, plan_for
from tron_events._payload_json import exact_json_copy
from tron_events.errors import InvalidPayload
from tron_events.payloads import (
    _validated_by_model,
    get_event_type,
    registered_event_types,
    validate_payload,
    validate_payload_json,
)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
# Values the model coerces or refuses: tuples, NaN, a str subclass.
odd_values = st.sampled_from([(1, 2), float("nan"), type("S", (str,), {})("x"), b"x", 1.0, True, 3])


def _typed(annotation: Any) -> st.SearchStrategy[Any]:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is str:
        return st.text(max_size=8)
    if annotation is int:
        return st.integers(-(2**63), 2**63 - 1)
    if annotation is float:
        return st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(2**60), 2**60)
    if annotation is bool:
        return st.booleans()
    if origin is Literal:
        return st.sampled_from(args)
    if origin in (typing.Union, types.UnionType):
        return st.one_of([_typed(a) if a is not type(None) else st.none() for a in args])
    if origin is list and args and isinstance(args[0], type) and issubclass(args[0], BaseModel):
        return st.lists(payload_for(args[0]), max_size=2)
    if origin is list or annotation is list:
        return st.lists(json_values, max_size=3)
    if origin is dict or annotation is dict:
        return st.dictionaries(st.text(max_size=6), json_values, max_size=3)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return payload_for(annotation)
    return json_values


@st.composite
def _payload(draw: st.DrawFn, model: type[BaseModel]) -> dict[str, Any]:
    """Values of the fields' types, optional ones present or not, and at most one
    fault: a field with a value of another type (or an odd one), under its
    snake_case name, or missing; extra keys; any key order."""
    fields = list(model.model_fields.items())
    faulty = draw(st.integers(0, len(fields)))  # len(fields): none
    fault = draw(st.sampled_from(["value", "odd", "snake", "missing"]))
    out: dict[str, Any] = {}
    for i, (name, info) in enumerate(fields):
        key = info.alias or name
        if i == faulty:
            if fault == "missing":
                continue
            if fault == "snake":
                key = name
            out[key] = draw(
                json_values
                if fault == "value"
                else odd_values
                if fault == "odd"
                else _typed(info.annotation)
            )
        elif info.is_required() or draw(st.booleans()):
            out[key] = draw(_typed(info.annotation))
    for key, value in draw(st.dictionaries(st.text(max_size=6), json_values, max_size=2)).items():
        out.setdefault(key, value)  # extra keys
    items = list(out.items())
    order = draw(st.permutations(range(len(items))))
    return {items[i][0]: items[i][1] for i in order}


def payload_for(model: type[BaseModel]) -> st.SearchStrategy[dict[str, Any]]:
    return _payload(model)


TYPES = registered_event_types()
# Every registered type, each with a few examples in CI (HYPOTHESIS_PROFILE=dev: more).
EXAMPLES = 400 if os.environ.get("HYPOTHESIS_PROFILE") == "dev" else 40


def _containers(value: Any) -> list[int]:
    if isinstance(value, dict):
        return [id(value), *(i for v in value.values() for i in _containers(v))]
    if isinstance(value, list):
        return [id(value), *(i for v in value for i in _containers(v))]
    return []


@pytest.mark.parametrize("event_type", TYPES)
@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_the_fast_path_says_what_the_model_says(event_type: str, data: st.DataObject) -> None:
    spec = get_event_type(event_type)
    payload = data.draw(payload_for(spec.model))
    plan = plan_for(spec.model)
    found = exact_json_copy(payload)
    fast = SLOW if plan is None or found is None else plan.apply(found[0])
    try:
        slow = _validated_by_model(spec, payload)
    except InvalidPayload:
        assert fast is SLOW, f"the fast path accepted what the model refuses: {payload!r}"
        with pytest.raises(InvalidPayload):
            validate_payload(event_type, payload)
        return
    stored = validate_payload(event_type, payload)
    assert stored == slow
    again, text = validate_payload_json(event_type, payload)
    assert again == slow
    if text is not None:  # the payload's own text, used as the stored one
        assert text == orjson.dumps(slow)
    assert orjson.dumps(stored) == orjson.dumps(slow)
    # The stored dict is the store's own: nothing in it is the caller's.
    assert not set(_containers(stored)) & set(_containers(payload))
    if fast is not SLOW:
        done = fast if spec.normalizer is None else spec.normalizer(fast)
        assert orjson.dumps(done) == orjson.dumps(slow)


def test_the_fast_path_takes_the_common_payloads() -> None:
    """The point of it: the agent loop's payloads do not reach pydantic."""
    cases = {
        "message.user": {"content": "hi", "turn": 1},
        "message.assistant": {
            "content": [{"type": "text", "text": "hello"}],
            "turn": 1,
            "tokenUsage": {"inputTokens": 3, "outputTokens": 5},
            "stopReason": "end_turn",
            "model": "m",
        },
        "tool.call": {"toolCallId": "t", "name": "Bash", "arguments": {"command": "ls"}},
        "tool.result": {"toolCallId": "t", "content": "ok", "isError": False},
        "stream.turn_end": {"turn": 1, "cost": 0.01},
    }
    for event_type, payload in cases.items():
        plan = plan_for(get_event_type(event_type).model)
        assert plan is not None, event_type
        found = exact_json_copy(payload)
        assert found is not None and plan.apply(found[0]) is not SLOW, event_type
        assert validate_payload_json(event_type, payload)[1] == orjson.dumps(payload)
