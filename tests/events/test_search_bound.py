"""Search is bounded per event, the same way on both backends.

Each event is indexed in the first ``MAX_INDEXED_CHARS`` characters of its
text; snippets of long texts come from chunks on SQLite (FTS5's snippet()
costs the square of a text's matches). How long searches take against the
size of the biggest matching event is measured in
``benchmarks/bench_search_size.py``, not here.
"""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine, text

from tron_events import EventStore, migrate
from tron_events._sqlite_snippets import CHUNK_CHARS, chunks
from tron_events.search_text import MAX_INDEXED_CHARS, search_text


def new_session_id(store: EventStore) -> str:
    wd = f"/bound/{uuid.uuid4().hex}"
    return store.create_session(working_directory=wd, model="m", provider="p").id


def filler(chars: int) -> str:
    """Words that match no query below, ``chars`` characters long."""
    return ("lorem ipsum dolor " * (chars // 18 + 1))[:chars]


def test_only_the_first_characters_of_an_event_are_searched(shared_store: EventStore) -> None:
    store = shared_store
    sid = new_session_id(store)
    head = ("firstword " + filler(MAX_INDEXED_CHARS - 40) + " lastinside").ljust(MAX_INDEXED_CHARS)
    message = store.append(sid, "message.user", {"content": head + " beyondbound" * 3})
    arguments = {"path": "big.txt", "content": "toolstart " + filler(MAX_INDEXED_CHARS)}
    call = store.append(
        sid, "tool.call", {"toolCallId": "t", "name": "write", "arguments": arguments}
    )
    ids = lambda q: [h.event_id for h in store.search(q, session_id=sid)]  # noqa: E731
    assert ids("firstword") == [message.id] and ids("lastinside") == [message.id]
    assert ids("beyondbound") == []
    assert ids("toolstart") == [call.id]
    # Stored whole all the same.
    assert store.get_event(message.id).payload["content"].endswith("beyondbound")  # type: ignore[union-attr]
    assert store.get_event(call.id).payload["arguments"] == arguments  # type: ignore[union-attr]


def test_snippets_of_long_texts_mark_the_match(shared_store: EventStore) -> None:
    store = shared_store
    sid = new_session_id(store)
    lone = store.append(
        sid, "message.user", {"content": filler(120_000) + " needleword " + filler(60_000)}
    )
    [hit] = store.search("needleword", session_id=sid)
    assert hit.event_id == lone.id and "«needleword»" in hit.snippet
    if store.url.startswith("sqlite"):  # ts_headline marks no cut ends
        assert hit.snippet.startswith("…") and hit.snippet.endswith("…")
    # A text that is all matches: the snippet still marks them.
    dense = store.append(sid, "message.user", {"content": "alpha beta gamma " * 10_000})
    [hit] = store.search("alpha beta", session_id=sid)
    assert hit.event_id == dense.id and "«alpha»" in hit.snippet and "«beta»" in hit.snippet
    # Words far apart (in different chunks on SQLite): at least one is marked.
    apart = store.append(
        sid,
        "message.user",
        {"content": "northword " + filler(50_000) + " southword " + filler(9_000)},
    )
    [hit] = store.search("northword southword", session_id=sid)
    assert hit.event_id == apart.id and (
        "«northword»" in hit.snippet or "«southword»" in hit.snippet
    )
    # raw queries too.
    [hit] = store.search("needleword", session_id=sid, raw=True)
    assert "«needleword»" in hit.snippet


def test_snippets_of_short_texts_are_unchanged(shared_store: EventStore) -> None:
    store = shared_store
    sid = new_session_id(store)
    store.append(sid, "message.user", {"content": "a short note about the quokka"})
    [hit] = store.search("quokka", session_id=sid)
    assert "«quokka»" in hit.snippet and not hit.snippet.startswith("…")


@settings(max_examples=100, deadline=None)
@given(
    st.text(st.sampled_from("ab \n\x00é"), max_size=300),
    st.integers(min_value=2, max_value=64),
)
def test_chunks_cover_the_text_in_order(text_: str, size: int) -> None:
    pieces = chunks(text_, size)
    assert "".join(pieces) == text_
    assert all(0 < len(p) <= size for p in pieces)
    assert CHUNK_CHARS > 1


payload_part = st.text(st.characters(codec="utf-8"), max_size=30)


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(["message.user", "message.assistant", "tool.result", "compact.summary"]),
    st.lists(payload_part, max_size=6),
    st.integers(min_value=0, max_value=120),
)
def test_search_text_is_the_prefix_of_the_whole_text(
    kind: str, parts: list[str], limit: int
) -> None:
    blocks = [{"type": "text", "text": p} for p in parts]
    payload: dict[str, Any] = {
        "message.user": {"content": blocks},
        "message.assistant": {"content": blocks},
        "tool.result": {"content": blocks},
        "compact.summary": {"summary": "\n".join(parts)},
    }[kind]
    whole = search_text(kind, payload, limit=None)
    assert search_text(kind, payload, limit=limit) == whole[:limit]
    assert "\x00" not in whole


def _search_row_lengths(url: str) -> list[int]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            table = "events_fts" if url.startswith("sqlite") else "events_search"
            return sorted(r[0] for r in conn.execute(text(f"SELECT length(text) FROM {table}")))
    finally:
        engine.dispose()


def test_revision_0003_cuts_long_search_rows_and_downgrade_restores_them(
    store_url: str,
) -> None:
    whole = "startword " + filler(MAX_INDEXED_CHARS) + " endword"
    with EventStore.open(store_url) as store:
        sid = store.create_session(working_directory="/mig", model="m", provider="p").id
        long = store.append(sid, "message.user", {"content": whole})
        short = store.append(sid, "message.user", {"content": "short endword"})
    assert _search_row_lengths(store_url) == [len("short endword"), MAX_INDEXED_CHARS]

    migrate.downgrade(store_url, "0002")
    sqlite = store_url.startswith("sqlite")
    # SQLite at 0002 indexed everything; PostgreSQL cut at the same bound already.
    expected = len(whole) if sqlite else MAX_INDEXED_CHARS
    assert _search_row_lengths(store_url) == [len("short endword"), expected]

    migrate.upgrade(store_url)
    assert migrate.current_revision(store_url) == migrate.head_revision()
    assert _search_row_lengths(store_url) == [len("short endword"), MAX_INDEXED_CHARS]
    assert migrate.check(store_url).ok
    with EventStore.open(store_url) as store:
        assert [h.event_id for h in store.search("startword")] == [long.id]
        assert [h.event_id for h in store.search("endword")] == [short.id]
        assert store.get_event(long.id).payload["content"] == whole  # type: ignore[union-attr]


_block = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=12)}),
    st.fixed_dictionaries({"type": st.just("text"), "text": st.integers() | st.none()}),
    st.fixed_dictionaries({"type": st.just("text")}),
    st.fixed_dictionaries({"type": st.just("thinking"), "thinking": st.text(max_size=12)}),
    st.fixed_dictionaries({"type": st.just("image")}),
    st.text(max_size=12),
)


@given(
    event_type=st.sampled_from(["message.user", "message.assistant", "tool.result"]),
    content=st.one_of(
        st.text(alphabet=st.characters(codec="utf-8") | st.just("\x00"), max_size=30),
        st.lists(_block, max_size=3),
        st.none(),
    ),
    limit=st.sampled_from([None, 0, 5, MAX_INDEXED_CHARS]),
)
def test_the_common_content_shapes_index_what_the_general_walk_does(
    event_type: str, content: Any, limit: int | None
) -> None:
    """``search_text`` takes a string or a single text block without its general walk
    (every append indexes): the text is the walk's, bound and NULs included."""
    from tron_events._storable import search_safe
    from tron_events.search_text import _blocks_text, _Parts

    out = _Parts(limit)
    _blocks_text(content, out)
    expected = "\n".join(out.items)
    if limit is not None:
        expected = expected[:limit]
    assert search_text(event_type, {"content": content}, limit) == search_safe(expected)
