"""Imported sessions in a real database, on each backend (tron_events.transfer.import_records
fed by the importers): reconstructed histories a provider accepts, search, appending
to them, re-import recognised, dry runs; and bad input refused with clear messages,
nothing half-written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.events._importers import Stream, check_history
from tron_events import EventStore
from tron_events.errors import TronEventsError
from tron_events.importers import IMPORTERS, ImportFormatError
from tron_events.transfer import import_records

FIXTURES = Path(__file__).parent / "fixtures" / "importers"
SOURCES = {
    "claude-code": FIXTURES / "claude-code" / "projects",
    "codex": FIXTURES / "codex" / "sessions",
    "pi": FIXTURES / "pi" / "sessions",
}
CLAUDE_MAIN = (
    SOURCES["claude-code"] / "-home-dev-parser" / "5d3c2b1a-7e6f-4a5b-9c8d-0e1f2a3b4c5d.jsonl"
)
PI_TREE = next(SOURCES["pi"].rglob("2026-*.jsonl"))
CODEX_PARENT = next(SOURCES["codex"].rglob("rollout-2026-03-02T09-00-00-*.jsonl"))


def count_sessions(store: EventStore) -> int:
    return len(store.list_sessions(limit=1000))


@pytest.mark.parametrize("kind", list(SOURCES))
def test_imported_sessions_are_usable(store: EventStore, kind: str) -> None:
    stream = Stream(IMPORTERS[kind](SOURCES[kind]))
    summary = import_records(store, IMPORTERS[kind](SOURCES[kind]))
    assert summary.refused == [] and summary.skipped == []
    assert summary.imported == list(stream.sessions)
    assert summary.events_imported == len(stream.events)
    assert summary.source == {"kind": kind, "path": str(SOURCES[kind])}
    assert {message for _, message in summary.notices} == {n["message"] for n in stream.notices}
    for session_id, record in stream.sessions.items():
        session = store.get_session(session_id)
        assert session.head_event_id == record["headEventId"]
        assert session.event_count == len(stream.session_events(session_id))
        assert session.status == "active"
        # What the store reconstructs is what the records say, and providers take it.
        messages = store.get_messages_at(session.head_event_id)
        assert messages == stream.messages_at_head(session_id)
        check_history(messages)
        # A turn can go on from it.
        state = store.get_state_at_head(session_id)
        turn = state.turn_count + 1
        store.append(session_id, "message.user", {"content": "Go on, please.", "turn": turn})
        store.append(
            session_id,
            "message.assistant",
            {"content": [{"type": "text", "text": "Going on."}], "turn": turn,
             "model": state.model},
        )  # fmt: skip
        after = store.get_messages_at(store.get_session(session_id).head_event_id)
        check_history(after)
        assert [b.text for b in after[-1].content] == ["Going on."]  # type: ignore[union-attr]


def test_search_finds_imported_text(store: EventStore) -> None:
    for kind, source in SOURCES.items():
        import_records(store, IMPORTERS[kind](source))
    for query, type_ in (
        ("parser drops the last line", "message.user"),  # Claude Code
        ("charge twice", "message.user"),  # Codex
        ("launch date", "message.user"),  # pi
        ("checkout handler", "message.assistant"),  # a Codex reasoning summary
        ("Permission denied", "tool.result"),  # pi
        ("TODO comments", "message.user"),  # an old-layout Claude Code sub-agent
    ):
        hits = store.search(query, limit=20)
        assert type_ in {h.type for h in hits}, (query, hits)


def test_importing_again_changes_nothing_and_says_so(store: EventStore) -> None:
    first = import_records(store, IMPORTERS["claude-code"](SOURCES["claude-code"]))
    again = import_records(store, IMPORTERS["claude-code"](SOURCES["claude-code"]))
    assert again.imported == [] and again.refused == []
    assert again.already_present == first.imported
    assert "already holds everything" in again.describe()


def test_a_dry_run_reports_and_writes_nothing(store: EventStore) -> None:
    summary = import_records(store, IMPORTERS["pi"](SOURCES["pi"]), dry_run=True)
    assert summary.dry_run and len(summary.imported) == 3
    assert "would import 3 session(s)" in summary.describe()
    assert count_sessions(store) == 0


def test_a_file_that_grew_since_its_import_is_extended(store: EventStore, tmp_path: Path) -> None:
    """The agent went on in its own tool: importing the file again adds what is new to
    the stored session (the same ids, so the next import finds it all present)."""
    copy = tmp_path / PI_TREE.name
    shutil.copy(PI_TREE, copy)
    [main_id] = import_records(store, IMPORTERS["pi"](copy)).imported[:1]
    before = store.get_session(main_id)
    with copy.open("a") as out:
        out.write(
            '{"type":"message","id":"e0000099","parentId":"e0000026",'
            '"timestamp":"2026-03-03T09:00:00.000Z","message":{"role":"user",'
            '"content":"One more thing about the launch"}}\n'
        )
    summary = import_records(store, IMPORTERS["pi"](copy))
    assert summary.refused == [] and summary.imported == []
    assert summary.extended == [(main_id, 1)] and summary.events_imported == 1
    assert "extended 1 session(s) already here with 1 new event(s)" in summary.describe()
    after = store.get_session(main_id)
    assert after.event_count == before.event_count + 1
    assert after.message_count == before.message_count + 1
    assert after.head_event_id != before.head_event_id
    head = store.get_event(after.head_event_id)
    assert head is not None and head.sequence == before.event_count
    assert check_history(store.get_messages_at(after.head_event_id)) is None
    assert store.search("launch", session_id=main_id)
    again = import_records(store, IMPORTERS["pi"](copy))
    assert again.extended == [] and main_id in again.already_present


def _cut_before_the_second_prompt(path: Path, into: Path) -> list[str]:
    """The transcript as it was when its agent had finished its first answer (the
    lines before the second prompt); the whole file's lines."""
    lines = path.read_text().splitlines(keepends=True)
    prompts = [
        i for i, line in enumerate(lines)
        if '"type":"user"' in line.replace(" ", "") and '"tool_result"' not in line
        and '"isMeta":true' not in line.replace(" ", "")
    ]  # fmt: skip
    into.write_text("".join(lines[: prompts[1]]))
    return lines


def test_a_claude_code_session_that_went_on_is_extended_unless_it_went_on_here(
    store: EventStore, tmp_path: Path
) -> None:
    copy = tmp_path / CLAUDE_MAIN.name
    lines = _cut_before_the_second_prompt(CLAUDE_MAIN, copy)
    [main_id] = [
        s for s in import_records(store, IMPORTERS["claude-code"](copy)).imported
        if store.get_session(s).fork_from_event_id is None
        and store.get_session(s).parent_session_id is None
    ]  # fmt: skip
    copy.write_text("".join(lines))
    summary = import_records(store, IMPORTERS["claude-code"](copy))
    assert summary.refused == [], summary.refused
    assert main_id in dict(summary.extended)
    head = store.get_session(main_id).head_event_id
    assert check_history(store.get_messages_at(head)) is None
    fresh = tmp_path / "fresh.db"
    with EventStore.open(f"sqlite:///{fresh}") as whole:
        import_records(whole, IMPORTERS["claude-code"](copy))
        # Extended or imported at once: the same session.
        assert [e.id for e in whole.get_ancestors(whole.get_session(main_id).head_event_id)] == [
            e.id for e in store.get_ancestors(head)
        ]

    # The session went on under Tron too: the file's new part cannot follow it.
    store.append(main_id, "message.user", {"content": "a Tron turn", "turn": 99})
    with copy.open("a") as out:
        out.write(lines[-1])  # the source grew again (a repeated line is still new)
    refused = dict(import_records(store, IMPORTERS["claude-code"](copy)).refused)
    assert "neither repeats nor continues" in refused[main_id]


def test_an_ended_session_is_not_extended(store: EventStore, tmp_path: Path) -> None:
    copy = tmp_path / PI_TREE.name
    lines = PI_TREE.read_text().splitlines(keepends=True)
    copy.write_text("".join(lines[:-1]))
    [main_id] = import_records(store, IMPORTERS["pi"](copy)).imported[:1]
    store.end_session(main_id)  # its session.end is not in the file
    count = store.get_session(main_id).event_count
    copy.write_text("".join(lines))
    refused = dict(import_records(store, IMPORTERS["pi"](copy)).refused)
    assert "neither repeats nor continues" in refused[main_id]
    assert store.get_session(main_id).event_count == count


# --- bad input ------------------------------------------------------------------------------


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def test_a_cut_off_last_line_loses_only_that_line(store: EventStore, tmp_path: Path) -> None:
    text = CLAUDE_MAIN.read_text()
    cut = write(tmp_path / "cut" / CLAUDE_MAIN.name, text[: len(text) - 40])
    summary = import_records(store, IMPORTERS["claude-code"](cut))
    assert summary.refused == [] and len(summary.imported) == 2  # main and fork
    notices = " ".join(m for _, m in summary.notices)
    assert f"{CLAUDE_MAIN.name}:{len(text.splitlines())}: the last line is cut off" in notices
    head = store.get_session(summary.imported[0]).head_event_id
    assert store.get_event(head).payload["content"] == (  # type: ignore[union-attr]
        "Put the test in tests/test_parser.py instead"
    )


def test_broken_lines_are_skipped_and_reported(store: EventStore, tmp_path: Path) -> None:
    lines = PI_TREE.read_text().splitlines()
    lines.insert(5, '{"type": "message", "id": "broken", ')
    lines.insert(7, "[1, 2, 3]")
    bad = write(tmp_path / "bad.jsonl", "\n".join(lines) + "\n")
    summary = import_records(store, IMPORTERS["pi"](bad))
    assert summary.refused == [] and len(summary.imported) == 2
    notices = " ".join(m for _, m in summary.notices)
    assert "bad.jsonl:6: not valid JSON" in notices
    assert "bad.jsonl:8: a JSON list, not an object: skipped" in notices


@pytest.mark.parametrize(
    ("kind", "source", "guess"),
    [
        ("claude-code", PI_TREE, "pi"),
        ("claude-code", CODEX_PARENT, "codex"),
        ("codex", CLAUDE_MAIN, "claude-code"),
        ("pi", CLAUDE_MAIN, "claude-code"),
        ("pi", CODEX_PARENT, "codex"),
        ("codex", PI_TREE, "pi"),
    ],
)
def test_a_file_of_another_format_names_the_right_one(kind: str, source: Path, guess: str) -> None:
    with pytest.raises(ImportFormatError) as caught:
        IMPORTERS[kind](source)  # raised at the call, before any record
    error = caught.value
    assert isinstance(error, TronEventsError)
    assert error.path == str(source) and error.line == 1
    assert f"import it with `--from {guess}`" in str(error)
    assert str(error).startswith(f"{source}:1: ")


def test_a_refused_file_writes_nothing(store: EventStore) -> None:
    with pytest.raises(ImportFormatError, match="--from pi"):
        import_records(store, IMPORTERS["claude-code"](PI_TREE))
    assert count_sessions(store) == 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "is empty"),
        ("\n\n", "is empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "is a binary file"),
        ("hello\nworld\n", "has no valid JSON line"),
        ('{"a": 1}\n{"b": 2}\n', "not a"),
        ('# notes\n{"type": "user"}\nnot json\nnor this\n', "not JSON objects: not JSONL"),
    ],
)
@pytest.mark.parametrize("kind", list(SOURCES))
def test_files_that_are_no_session_at_all(
    tmp_path: Path, kind: str, content: str | bytes, message: str
) -> None:
    path = write(tmp_path / "input.jsonl", content)
    with pytest.raises(ImportFormatError, match=message) as caught:
        list(IMPORTERS[kind](path))
    assert caught.value.path == str(path)


def test_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ImportFormatError, match="cannot be read"):
        list(IMPORTERS["codex"](tmp_path / "nowhere.jsonl"))


def test_a_bad_file_in_a_folder_is_skipped_and_the_rest_imported(
    store: EventStore, tmp_path: Path
) -> None:
    folder = tmp_path / "projects"
    shutil.copytree(SOURCES["claude-code"] / "-srv-app", folder / "-srv-app")
    write(folder / "-broken" / "notes.jsonl", "just some text\n")
    shutil.copy(PI_TREE, folder / "-broken" / "from-pi.jsonl")
    summary = import_records(store, IMPORTERS["claude-code"](folder))
    assert len(summary.imported) == 3 and summary.refused == []
    notices = [m for _, m in summary.notices]
    assert any(m.startswith("skipped: ") and "notes.jsonl" in m for m in notices)
    assert any("from-pi.jsonl:1: is a pi session" in m for m in notices)
