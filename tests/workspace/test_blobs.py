"""File contents by hash in the event store: every encoding reads back exactly, contents
are stored once, a small edit of a large file costs little, and a missing or damaged
row is an error naming it, never wrong bytes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine, text

from tron_events import EventStore, MissingContent
from tron_events.blobs import MAX_DELTA_DEPTH, BlobRow, content_hash, decode_all, encode

EDIT = st.tuples(st.integers(0, 10_000), st.integers(0, 50), st.binary(max_size=40))


def edited(base: bytes, at: int, cut: int, new: bytes) -> bytes:
    at = min(at, len(base))
    return base[:at] + new + base[at + cut :]


@settings(max_examples=150)
@given(
    base=st.binary(max_size=3000) | st.text(max_size=3000).map(str.encode),
    edits=st.lists(EDIT, max_size=20),
)
def test_every_version_of_a_chain_reads_back_exactly(
    base: bytes, edits: list[tuple[int, int, bytes]]
) -> None:
    rows: dict[str, BlobRow] = {}
    versions = [base]
    row = encode(base)
    rows[row.hash] = row
    for at, cut, new in edits:
        prev = versions[-1]
        content = edited(prev, at, cut, new)
        row = encode(content, base=(content_hash(prev), prev, rows[content_hash(prev)].depth))
        rows.setdefault(row.hash, row)
        versions.append(content)
        assert rows[row.hash].depth <= MAX_DELTA_DEPTH
    fetched = decode_all(
        [content_hash(v) for v in versions], lambda hs: {h: rows[h] for h in hs if h in rows}
    )
    assert [fetched[content_hash(v)] for v in versions] == versions


def test_a_small_edit_of_a_large_file_is_stored_as_a_small_delta() -> None:
    big = b"".join(b"line %d of a large file\n" % i for i in range(50_000))
    changed = big.replace(b"line 25000 of", b"LINE 25000 of", 1)
    row = encode(changed, base=(content_hash(big), big, 0))
    assert row.encoding == "delta" and row.depth == 1 and len(row.data) < 200


def test_contents_are_stored_once_and_read_back(store: EventStore) -> None:
    a = b"x" * 10_000
    b = a[:5000] + b"changed" + a[5000:]
    assert store.put_blobs([a, (b, a)]) == [content_hash(a), content_hash(b)]
    assert store.put_blobs([a, (b, a), a]) == [content_hash(a), content_hash(b), content_hash(a)]
    assert store.get_blobs([content_hash(b), content_hash(a)]) == {
        content_hash(b): b,
        content_hash(a): a,
    }
    engine = create_engine(store.url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM file_blobs")).scalar() == 2
    engine.dispose()
    assert store.missing_blobs([content_hash(a), "0" * 64]) == {"0" * 64}


def test_missing_or_damaged_rows_are_named_and_nothing_is_returned(store: EventStore) -> None:
    base = b"base content " * 1000
    child = base + b"one more line\n"
    other = b"unrelated"
    store.put_blobs([base, (child, base), other])
    engine = create_engine(store.url)
    with engine.begin() as conn:  # the delta's base goes: the delta cannot be read either
        conn.execute(text("DELETE FROM file_blobs WHERE hash = :h"), {"h": content_hash(base)})
    engine.dispose()
    try:
        store.get_blobs([content_hash(other), content_hash(child), "f" * 64])
    except MissingContent as exc:
        assert sorted(exc.hashes) == sorted([content_hash(child), "f" * 64])
        assert "nothing was restored" in str(exc)
    else:  # pragma: no cover - the assertion is the point
        raise AssertionError("MissingContent was not raised")
    assert store.get_blobs([content_hash(other)]) == {content_hash(other): other}


def test_a_downgrade_below_0004_names_the_recorded_contents(store_url: str) -> None:
    from tron_events import migrate

    with EventStore.open(store_url) as store:
        assert migrate.data_dropped(store_url, "0003") is None  # nothing recorded yet
        store.put_blobs([b"recorded"])
    assert "recorded file contents" in (migrate.data_dropped(store_url, "0003") or "")
    migrate.downgrade(store_url, "0003")
    migrate.upgrade(store_url)
    with EventStore.open(store_url) as store:
        assert store.missing_blobs([content_hash(b"recorded")]) == {content_hash(b"recorded")}
        assert migrate.check(store_url).ok
