"""Imports stream (issue 26 item 6): a line over the importers' limit is refused
with its line number and nothing of its session stored (in a folder, the other
sessions still are), and the importers read a file one line at a time instead of
holding it, so their memory does not grow with the file.

The figures (RSS per line of ``tron-db import``, before and after) are
``benchmarks/bench_import.py``'s, in ``benchmarks/RESULTS_import.md``.
"""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path
from typing import Any

import orjson
import pytest

from tron_events import EventStore
from tron_events.cli import main
from tron_events.importers import IMPORTERS, LineTooLongError, _builder, _jsonl

SESSION = "0b0e8a52-7c1e-4f3a-9d6b-2a4c6e8f0a1b"
OTHER = "1c1f9b63-8d2f-4a4b-8e7c-3b5d7f9a1b2c"


def _transcript(path: Path, turns: int, session: str = SESSION) -> Path:
    """A Claude Code transcript: ``turns`` prompts, each answered by one response
    split over a text and a tool_use record, the tool's result and a last answer."""
    context = {"cwd": "/tmp/project", "sessionId": session, "version": "2.1.39"}
    parent: str | None = None
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:

        def put(record: dict[str, Any]) -> None:
            nonlocal parent
            record = {"parentUuid": parent, "isSidechain": False, **context, **record}
            record["timestamp"] = "2026-01-01T00:00:00.000Z"
            out.write(orjson.dumps(record) + b"\n")
            parent = record["uuid"]

        for n in range(turns):
            uid = f"{session[:8]}-0000-4000-8000-{n:011x}0"
            put({"type": "user", "uuid": uid[:-1] + "1",
                 "message": {"role": "user", "content": f"prompt {n} " + "x" * 200}})  # fmt: skip
            for k, block in (
                ("2", {"type": "text", "text": "let me look " + "y" * 200}),
                ("3", {"type": "tool_use", "id": f"toolu_{n}", "name": "Read",
                       "input": {"file_path": f"/tmp/project/f{n}.py"}}),
            ):  # fmt: skip
                put({"type": "assistant", "uuid": uid[:-1] + k,
                     "message": {"id": f"msg_{n}", "role": "assistant", "model": "claude-x",
                                 "content": [block]}})  # fmt: skip
            put({"type": "user", "uuid": uid[:-1] + "4",
                 "message": {"role": "user", "content": [
                     {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": "z" * 300}]},
                 "toolUseResult": {"type": "text"}})  # fmt: skip
            put({"type": "assistant", "uuid": uid[:-1] + "5",
                 "message": {"id": f"msg_{n}b", "role": "assistant", "model": "claude-x",
                             "content": [{"type": "text", "text": "w" * 200}]}})  # fmt: skip
    return path


def _with_long_line(path: Path, at: int, size: int) -> None:
    """Put a user record of about ``size`` bytes after line ``at - 1``."""
    lines = path.read_bytes().splitlines(keepends=True)
    long = orjson.dumps(
        {
            "type": "user",
            "uuid": "long",
            "parentUuid": None,
            "sessionId": SESSION,
            "message": {"role": "user", "content": "a" * size},
        }
    )
    lines.insert(at - 1, long + b"\n")
    path.write_bytes(b"".join(lines))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- the line limit ------------------------------------------------------------------------


def test_a_line_over_the_real_limit_is_refused_without_being_read_whole(tmp_path: Path) -> None:
    """32 MiB + 1 byte: refused at its line, reading at most limit + 1 bytes of it."""
    path = _transcript(tmp_path / f"{SESSION}.jsonl", 1)
    _with_long_line(path, 3, _jsonl.MAX_LINE_BYTES + 1)
    assert _jsonl.MAX_LINE_BYTES == 32 << 20
    numbers: list[int] = []
    with pytest.raises(LineTooLongError) as caught:
        for number, _offset, _raw in _jsonl.iter_lines(path):
            numbers.append(number)
    assert numbers == [1, 2]
    assert caught.value.line == 3 and caught.value.limit == 32 << 20
    assert f"{path}:3: the line is longer than 33,554,432 bytes (32 MiB)" in str(caught.value)
    # A line of exactly the limit is read.
    exact = tmp_path / "exact.jsonl"
    exact.write_bytes(b'"' + b"a" * (_jsonl.MAX_LINE_BYTES - 2) + b'"\n{}\n')
    assert [n for n, _, _ in _jsonl.iter_lines(exact)] == [1, 2]


@pytest.mark.parametrize("source", ["claude-code", "codex", "pi"])
def test_every_importer_refuses_an_over_limit_line_before_yielding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    monkeypatch.setattr(_jsonl, "MAX_LINE_BYTES", 4096)
    path = _transcript(tmp_path / f"{SESSION}.jsonl", 3)
    _with_long_line(path, 7, 5000)
    with pytest.raises(LineTooLongError) as caught:
        IMPORTERS[source](path)
    assert caught.value.line == 7


def test_the_cli_refuses_the_file_in_one_line_and_stores_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_jsonl, "MAX_LINE_BYTES", 4096)
    path = _transcript(tmp_path / f"{SESSION}.jsonl", 3)
    _with_long_line(path, 9, 5000)
    db = tmp_path / "tron.db"
    code, out, err = run(
        capsys, "import", "--from", "claude-code", str(path), "--database-url", str(db)
    )
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"tron-db import: {path}:9: the line is longer than 4,096 bytes")
    assert not db.exists()


def test_in_a_folder_only_the_file_with_the_long_line_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The other session of the same import is stored; the refused one is not, and
    the exit status says the import was partial."""
    monkeypatch.setattr(_jsonl, "MAX_LINE_BYTES", 4096)
    folder = tmp_path / "projects" / "-tmp-project"
    bad = _transcript(folder / f"{SESSION}.jsonl", 3)
    _with_long_line(bad, 12, 5000)
    _transcript(folder / f"{OTHER}.jsonl", 2, session=OTHER)
    db = tmp_path / "tron.db"
    code, out, _ = run(
        capsys, "import", "--from", "claude-code", str(tmp_path / "projects"), "--database-url",
        str(db),
    )  # fmt: skip
    assert code == 1, out
    assert out.startswith("imported 1 session(s)")
    assert f"skipped: {bad}:12: the line is longer than 4,096 bytes" in out
    with EventStore.open(f"sqlite:///{db}") as store:
        sessions = store.list_sessions(limit=10)
        assert len(sessions) == 1
        start = store.get_events(sessions[0].id, limit=1)[0]
        assert start.payload["imported"]["context"]["sessionId"] == OTHER


# -- reading incrementally -----------------------------------------------------------------


def _peak_bytes(path: Path) -> int:
    """Peak traced memory while the file's records are made and consumed one by one
    (not kept)."""
    gc.collect()
    tracemalloc.start()
    try:
        for _ in IMPORTERS["claude-code"](path):
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_claude_code_importer_does_not_hold_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four times the lines, nearly the same peak: what grows with the file is a
    small index per line (about 100 bytes), not the lines or the events (the old
    reader kept every line parsed, about 5 KB of memory per line here)."""
    small = _transcript(tmp_path / "a" / f"{SESSION}.jsonl", 100)
    large = _transcript(tmp_path / "b" / f"{SESSION}.jsonl", 400)
    lines = 400 * 5 - 100 * 5
    # Both sessions past the events a builder keeps before writing them out.
    monkeypatch.setattr(_builder, "SPILL_AFTER", 50)
    for _ in IMPORTERS["claude-code"](_transcript(tmp_path / "c" / f"{SESSION}.jsonl", 5)):
        pass  # the first import also loads modules and builds validators: not measured
    small_peak = _peak_bytes(small)
    large_peak = _peak_bytes(large)
    growth = large_peak - small_peak
    assert growth < lines * 300, (small_peak, large_peak, growth / lines)


def test_a_spilling_builder_gives_back_every_event_in_order(tmp_path: Path) -> None:
    """Past SPILL_AFTER events a Claude Code session's events wait in a temporary
    file (below it, in memory: a transcript may have a thousand short forks); the
    records are the same either way."""
    from tron_events.importers._builder import SPILL_AFTER, ImportStream, SessionBuilder

    def build(spill: bool, events: int) -> tuple[list[dict[str, Any]], bool]:
        stream = ImportStream("claude-code", str(tmp_path))
        builder = SessionBuilder(
            stream, key="k", working_directory="/tmp/w", millis=1_767_225_600_000, spill=spill
        )
        for n in range(events):
            builder.add("message.user", {"content": f"m{n}", "turn": n + 1}, key=f"u{n}")
        builder.add("message.user", {"content": "again", "turn": 1}, key="u0")  # key used twice
        on_disk = builder._spill is not None
        return list(builder.records()), on_disk

    for events in (SPILL_AFTER - 2, SPILL_AFTER * 2 + 7):
        kept, kept_on_disk = build(False, events)
        spilled, spilled_on_disk = build(True, events)
        assert spilled == kept and not kept_on_disk
        assert spilled_on_disk == (events + 1 >= SPILL_AFTER)
        assert [r["sequence"] for r in spilled if r.get("kind") == "event"] == list(
            range(events + 2)
        )
