"""``Event.to_wire`` (stored JSON passed through) encodes to exactly ``to_dict``."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tron_events import EventStore

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(extra=st.dictionaries(st.text(min_size=1, max_size=8), json_values, max_size=4))
def test_wire_form_equals_the_dict_form_whether_or_not_payloads_were_decoded(
    store: EventStore, extra: dict[str, Any]
) -> None:
    session = store.create_session(working_directory="/w", model="m", provider="p")
    store.append(session.id, "message.user", {"content": "héllo ✓", "turn": 1, **extra})
    fresh = store.get_events(session.id)  # payloads not decoded yet
    wire = [orjson.loads(orjson.dumps(e.to_wire())) for e in fresh]
    assert wire == [e.to_dict() for e in store.get_events(session.id)]
    assert wire == [orjson.loads(orjson.dumps(e.to_wire())) for e in fresh]  # now decoded
