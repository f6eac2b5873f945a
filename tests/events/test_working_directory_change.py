"""``config.working_directory``: a session continues in another folder from an event on;
the session row, the state at the head, a rewind and a fork all agree on its folder."""

from __future__ import annotations

from pathlib import Path

from tron_events import EventStore


def test_the_folder_follows_the_head(tmp_path: Path) -> None:
    with EventStore.open(str(tmp_path / "t.db")) as store:
        s = store.create_session(working_directory="/elsewhere/app", model="m", provider="p")
        first = store.append(s.id, "message.user", {"content": "hi", "turn": 1})
        moved = store.append(
            s.id,
            "config.working_directory",
            {"workingDirectory": "/here/app", "previousWorkingDirectory": "/elsewhere/app"},
        )
        assert store.get_session(s.id).working_directory == "/here/app"
        assert store.get_state_at_head(s.id).working_directory == "/here/app"
        assert store.get_state_at(first.id).working_directory == "/elsewhere/app"
        # A fork after the move continues there; one before it, in the old folder.
        assert store.fork(moved.id).session.working_directory == "/here/app"
        assert store.fork(first.id).session.working_directory == "/elsewhere/app"
        # A rewind before the move gives the old folder back, as for a model switch.
        assert store.rewind(s.id, first.id).working_directory == "/elsewhere/app"
        assert store.get_session(s.id).working_directory == "/elsewhere/app"
