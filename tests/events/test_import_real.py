"""Every real transcript in ``../shared/transcripts`` (or ``$TRON_SHARED_DIR/transcripts``)
imports, and every session it gives reconstructs to a history the providers accept.

Each file on its own (a Claude Code main file with its sub-agents folder, and each
sub-agent file alone too), then each agent's whole folder into a real database:
nothing refused or skipped, the stored histories valid, a second import all
"already present". Skipped with the reason when the folder is absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.events._importers import Stream, check_history, shared_transcripts
from tron_events import EventStore
from tron_events.importers import IMPORTERS
from tron_events.validate import validate_history

ROOT = shared_transcripts()
KINDS = ("claude-code", "codex", "pi")

pytestmark = pytest.mark.skipif(
    ROOT is None,
    reason="no real transcripts: ../shared/transcripts (or $TRON_SHARED_DIR/transcripts) is absent",
)


def _files() -> list[tuple[str, Path]]:
    if ROOT is None:
        return []
    return [(kind, path) for kind in KINDS for path in sorted((ROOT / kind).rglob("*.jsonl"))]


@pytest.mark.parametrize(
    ("kind", "path"),
    _files(),
    ids=[f"{kind}:{path.relative_to(ROOT / kind)}" for kind, path in _files()] if ROOT else [],
)
def test_each_real_transcript_imports_to_valid_histories(kind: str, path: Path) -> None:
    stream = Stream(IMPORTERS[kind](path))
    assert stream.sessions, f"{path} gave no session"
    for session_id in stream.sessions:
        check_history(stream.messages_at_head(session_id))
    # Each source message became an event: no real file is mostly metadata.
    messages = [
        e for e in stream.events.values() if e["type"] in ("message.user", "message.assistant")
    ]
    assert messages, path


@pytest.mark.parametrize("kind", KINDS)
def test_each_agents_folder_imports_whole_into_a_database(kind: str, tmp_path: Path) -> None:
    assert ROOT is not None
    from tron_events.transfer import import_records

    with EventStore.open(f"sqlite:///{tmp_path / 'real.db'}") as store:
        summary = import_records(store, IMPORTERS[kind](ROOT / kind))
        assert summary.refused == [] and summary.skipped == []
        assert not any(m.startswith("skipped:") for _, m in summary.notices), summary.notices
        assert summary.imported
        for session_id in summary.imported:
            head = store.get_session(session_id).head_event_id
            assert validate_history(store.get_messages_at(head)) == [], session_id
        again = import_records(store, IMPORTERS[kind](ROOT / kind))
        assert again.imported == [] and again.refused == []
        assert sorted(again.already_present) == sorted(summary.imported)
