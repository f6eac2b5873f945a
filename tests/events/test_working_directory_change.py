"""``config.working_directory``: a session continues in another folder from an event on;
the session row, the state at the head, a rewind, a fork and an export/import round
trip all agree on its folder (both backends)."""

from __future__ import annotations

import io
from pathlib import Path

from tron_events import EventStore
from tron_events.transfer import export_jsonl, import_jsonl


def test_the_folder_follows_the_head(store: EventStore, tmp_path: Path) -> None:
    s = store.create_session(working_directory="/elsewhere/app", model="m", provider="p")
    first = store.append(s.id, "message.user", {"content": "hi", "turn": 1})
    moved = store.append(
        s.id,
        "config.working_directory",
        {"workingDirectory": "/here/app", "previousWorkingDirectory": "/elsewhere/app"},
    )
    store.append(s.id, "message.user", {"content": "go on", "turn": 2})
    assert store.get_session(s.id).working_directory == "/here/app"
    assert store.get_state_at_head(s.id).working_directory == "/here/app"
    assert store.get_state_at(first.id).working_directory == "/elsewhere/app"

    # Exported and imported elsewhere, the session is still in its new folder.
    out = io.BytesIO()
    export_jsonl(store, out, session_id=s.id)
    with EventStore.open(str(tmp_path / "copy.db")) as copy:
        assert import_jsonl(copy, io.BytesIO(out.getvalue())).ok
        assert copy.get_session(s.id).working_directory == "/here/app"

    # A fork after the move continues there; one before it, in the old folder.
    assert store.fork(moved.id).session.working_directory == "/here/app"
    assert store.fork(first.id).session.working_directory == "/elsewhere/app"
    # A rewind before the move gives the old folder back, as for a model switch.
    assert store.rewind(s.id, first.id).working_directory == "/elsewhere/app"
    assert store.get_session(s.id).working_directory == "/elsewhere/app"
