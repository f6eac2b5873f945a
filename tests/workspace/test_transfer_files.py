"""tron-db export/import carry the file contents a session's file events name (``blob``
records), so an imported session can still be rewound with its files; on each backend,
into a fresh database, with the real tools and a real folder."""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests.support.stores import make_url
from tests.workspace.conftest import new_harness, read_tree
from tests.workspace.test_rewind_files import three_steps
from tron_events import AsyncEventStore, EventStore, MissingContent
from tron_events.transfer import export_jsonl, import_jsonl
from tron_server.workspace import Workspace

pytestmark = pytest.mark.anyio


@pytest.fixture
def other(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[EventStore]:
    """A second, fresh database on the same backend."""
    (tmp_path / "other").mkdir()
    gen = make_url(backend, tmp_path / "other", request)
    store = EventStore.open(next(gen))
    try:
        yield store
    finally:
        store.close()
        with pytest.raises(StopIteration):
            next(gen)


def export(store: EventStore, session_id: str, *, files: bool = True) -> list[dict[str, object]]:
    out = io.BytesIO()
    export_jsonl(store, out, session_id=session_id, files=files)
    return [orjson.loads(line) for line in out.getvalue().splitlines()]


def as_file(records: list[dict[str, object]]) -> io.BytesIO:
    return io.BytesIO(b"".join(orjson.dumps(r) + b"\n" for r in records))


async def test_an_imported_session_rewinds_with_its_files(
    store: EventStore, other: EventStore, tmp_path: Path
) -> None:
    h = await new_harness(AsyncEventStore(store), tmp_path / "home", tmp_path / "p")
    big = "".join(f"line {i}\n" for i in range(40_000))  # a large file, edited by a line
    (h.root / "big.txt").write_text(big)
    seen = await three_steps(h)
    await h.edit("big.txt", "line 20000\n", "line twenty thousand\n")
    records = export(store, h.session_id)
    blobs = [r for r in records if r.get("kind") == "blob"]
    kinds = [r.get("kind") for r in records[1:]]
    # After the session's events; each content once; the edited version names its base.
    assert kinds == sorted(kinds, key=["workspace", "session", "event", "blob"].index)
    assert len({b["hash"] for b in blobs}) == len(blobs) >= 5
    assert any(b.get("base") for b in blobs)
    # Without the blob lines the export is what it was before they existed.
    plain = export(store, h.session_id, files=False)
    assert [r for r in records[1:] if r.get("kind") != "blob"] == plain[1:]

    summary = import_jsonl(other, as_file(records))
    assert summary.ok and summary.imported == [h.session_id]
    assert summary.blobs_imported == len(blobs)
    # The edit of the large file came back as a small delta, not the file again.
    with other.recorder.read() as cur:
        cur.execute("SELECT encoding FROM file_blobs")
        assert "delta" in {row[0] for row in cur.fetchall()}
    workspace = Workspace(AsyncEventStore(other), tmp_path / "home2")
    for target, tree in [seen[1], seen[0]]:
        await workspace.rewind(h.session_id, target, restore_files=True)
        assert read_tree(h.root) == {**tree, "big.txt": ("file", big.encode(), False)}
    # Importing again stores nothing twice.
    again = import_jsonl(other, as_file(records))
    assert again.already_present == [h.session_id] and again.blobs_imported == 0


async def test_without_files_a_rewind_with_files_refuses_and_writes_nothing(
    store: EventStore, other: EventStore, tmp_path: Path
) -> None:
    h = await new_harness(AsyncEventStore(store), tmp_path / "home", tmp_path / "p")
    seen = await three_steps(h)
    records = export(store, h.session_id, files=False)
    assert all(r.get("kind") != "blob" for r in records)
    assert import_jsonl(other, as_file(records)).ok
    now = read_tree(h.root)
    with pytest.raises(MissingContent):
        await Workspace(AsyncEventStore(other), tmp_path / "h2").rewind(
            h.session_id, seen[0][0], restore_files=True
        )
    assert read_tree(h.root) == now


async def test_damaged_or_missing_contents_are_reported(
    store: EventStore, other: EventStore, tmp_path: Path
) -> None:
    h = await new_harness(AsyncEventStore(store), tmp_path / "home", tmp_path / "p")
    await three_steps(h)
    records = export(store, h.session_id)
    blobs = [r for r in records if r.get("kind") == "blob"]
    damaged = dict(blobs[0], data=base64.b64encode(b"not what the hash says").decode())
    records[records.index(blobs[0])] = damaged
    dry = import_jsonl(other, as_file(records), dry_run=True)
    assert dry.blobs_imported == len(blobs) - 1 and other.missing_blobs([blobs[1]["hash"]])
    summary = import_jsonl(other, as_file(records))
    assert summary.imported == [h.session_id] and summary.blobs_imported == len(blobs) - 1
    [(_, reason)] = summary.skipped
    assert "damaged" in reason and other.missing_blobs([damaged["hash"]])
    # A content missing at the source: the export says so in a notice and goes on.
    with store.recorder.read() as cur:
        cur.execute("SELECT base_hash FROM file_blobs")
        bases = {row[0] for row in cur.fetchall()}
    gone = next(str(b["hash"]) for b in blobs if b["hash"] not in bases)
    with store.recorder.write() as cur:
        cur.execute(store.recorder.sql("DELETE FROM file_blobs WHERE hash = ?"), (gone,))
    again = export(store, h.session_id)
    assert gone not in {r.get("hash") for r in again if r.get("kind") == "blob"}
    [notice] = [r for r in again if r.get("kind") == "notice"]
    assert "missing or damaged" in str(notice["message"])
