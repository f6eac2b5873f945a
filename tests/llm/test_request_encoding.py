"""Request bodies are encoded with orjson (fast on a long history) and read back as the
same JSON, with json's encoding for what orjson refuses; the collector is back on after."""

from __future__ import annotations

import gc
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tron_llm._http import _encode, _gc_paused

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@given(st.dictionaries(st.text(max_size=8), json_values, max_size=6))
def test_a_body_reads_back_as_itself(body: dict[str, Any]) -> None:
    encoded = _encode(body)
    assert json.loads(encoded) == body
    assert encoded.decode("utf-8")  # UTF-8, not escaped ASCII


def test_what_orjson_refuses_is_encoded_by_json() -> None:
    assert json.loads(_encode({"n": 2**70, "text": "é"})) == {"n": 2**70, "text": "é"}
    assert json.loads(_encode({"ids": {1: "a"}})) == {"ids": {"1": "a"}}


def test_the_collector_is_paused_only_inside() -> None:
    assert gc.isenabled()
    with _gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with _gc_paused():
            pass
        assert not gc.isenabled()  # an application that turned it off keeps it off
    finally:
        gc.enable()
