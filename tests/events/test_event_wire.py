"""``Event.to_wire`` (stored JSON passed through) encodes to exactly ``to_dict``,
and ``get_since_json`` (the wire form built by the database) is the same page."""

from __future__ import annotations

import uuid
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


# Extra keys beside the typed fields (prefixed, so they never replace ``content`` or
# ``turn`` with a value the payload model refuses).
@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    extra=st.dictionaries(st.text(min_size=1, max_size=8).map("x".__add__), json_values, max_size=4)
)
def test_wire_form_equals_the_dict_form_whether_or_not_payloads_were_decoded(
    store: EventStore, extra: dict[str, Any]
) -> None:
    session = store.create_session(working_directory="/w", model="m", provider="p")
    store.append(session.id, "message.user", {"content": "héllo ✓", "turn": 1, **extra})
    fresh = store.get_events(session.id)  # payloads not decoded yet
    wire = [orjson.loads(orjson.dumps(e.to_wire())) for e in fresh]
    assert wire == [e.to_dict() for e in store.get_events(session.id)]
    assert wire == [orjson.loads(orjson.dumps(e.to_wire())) for e in fresh]  # now decoded


text_with_anything = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=30)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    contents=st.lists(
        st.tuples(
            text_with_anything,
            st.dictionaries(
                st.text(min_size=1, max_size=8).map("x".__add__), json_values, max_size=3
            ),
        ),
        max_size=12,
    ),
    event_id=st.from_regex(r"evt_[A-Za-z0-9_-]{1,12}", fullmatch=True),
    limit=st.integers(1, 6),
    by_workspace=st.booleans(),
)
def test_the_json_page_is_the_wire_form_of_the_same_page(
    store: EventStore,
    contents: list[tuple[str, dict[str, Any]]],
    event_id: str,
    limit: int,
    by_workspace: bool,
) -> None:
    title = "".join(text for text, _ in contents[:2]) or None  # not in events; any text
    session = store.create_session(
        working_directory=f"/w/é ✓/{uuid.uuid4()}", model="m", provider="p", title=title
    )
    for i, (text, extra) in enumerate(contents):
        store.append(
            session.id,
            "message.user",
            {"content": text, "turn": i + 1, **extra},
            event_id=f"{event_id}-{i}-{session.id[-12:]}" if i % 3 == 0 else None,
        )
    where: dict[str, Any] = (
        {"workspace_id": session.workspace_id} if by_workspace else {"session_id": session.id}
    )
    cursor: dict[str, Any] = {}
    pages = 0
    while True:
        page = store.get_since(**where, **cursor, limit=limit)
        raw = store.get_since_json(**where, **cursor, limit=limit)
        wire = [orjson.loads(orjson.dumps(e.to_wire())) for e in page.events]
        assert orjson.loads(raw.events_json) == wire
        assert raw.count == len(page.events)
        assert raw.next_cursor == page.next_cursor
        assert raw.has_more == page.has_more
        last = page.events[-1] if page.events else None
        assert raw.last_sequence == (last.sequence if last else None)
        assert raw.last_position == (last.position if last else None)
        pages += 1
        if not page.has_more:
            break
        cursor = {"after_event_id": page.next_cursor}
    assert pages == -(-(len(contents) + 1) // limit)  # session.start and the messages
