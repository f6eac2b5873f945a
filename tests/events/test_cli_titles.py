"""``tron-db sessions`` and ``tron-db show`` title every session, native or imported, as
the server's ``session.list`` does (its own title, else its first prompt's first line);
``tron-db import -d NEW.db`` leaves nothing beside the new database but its own files.
Run as subprocesses, as a user runs them."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tron_events import EventStore
from tron_events.titles import title_from_prompt

TRON_DB = shutil.which("tron-db") or "tron-db"
FIXTURES = Path(__file__).parent / "fixtures" / "importers"


def tron_db(*args: str) -> str:
    result = subprocess.run([TRON_DB, *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    return result.stdout


@pytest.fixture(autouse=True)
def _no_user_database(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TRON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TRON_DATABASE_URL", raising=False)


def test_a_native_session_is_titled_from_its_first_prompt(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    with EventStore.open(str(db)) as store:
        untitled = store.create_session(working_directory="/w", model="m", provider="p")
        store.append(
            untitled.id, "message.user", {"content": "  Fix   the parser\nplease", "turn": 1}
        )
        store.append(untitled.id, "message.user", {"content": "a later prompt", "turn": 2})
        titled = store.create_session(
            working_directory="/w", model="m", provider="p", title="Named by hand"
        )
        store.append(titled.id, "message.user", {"content": "not the title", "turn": 1})
        empty = store.create_session(working_directory="/w", model="m", provider="p")
    rows = {
        r["id"]: r
        for r in map(json.loads, tron_db("sessions", "--json", "-d", str(db)).splitlines())
    }
    assert rows[untitled.id]["title"] == "Fix the parser"
    assert rows[titled.id]["title"] == "Named by hand"
    assert rows[empty.id]["title"] is None
    table = tron_db("sessions", "-d", str(db))
    assert "Fix the parser" in table and "Named by hand" in table
    shown = tron_db("show", untitled.id, "-d", str(db)).splitlines()[0]
    assert shown == f"session {untitled.id} · Fix the parser"


def test_imported_sessions_are_titled_and_no_lock_file_is_left(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    for kind in ("claude-code", "codex", "pi"):
        tron_db("import", "--from", kind, str(FIXTURES / kind), "-d", str(db))
    # Nothing but the database's own files beside it: no `.migrate.lock`.
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "home") == [
        "new.db", *(["new.db-shm"] if (tmp_path / "new.db-shm").exists() else []),
        *(["new.db-wal"] if (tmp_path / "new.db-wal").exists() else []),
    ]  # fmt: skip
    assert not (tmp_path / "new.db.migrate.lock").exists()
    rows = [
        json.loads(r)
        for r in tron_db("sessions", "--json", "--limit", "100", "-d", str(db)).splitlines()
    ]
    derived: list[tuple[str, str]] = []
    with EventStore.open(str(db), read_only=True) as store:
        for row in rows:
            session = store.get_session(row["id"])
            first = store.get_events(session.id, types=["message.user"], limit=1)
            expected = session.title or (
                title_from_prompt(first[0].payload.get("content")) if first else None
            )
            assert row["title"] == expected, row
            if not session.title and expected:
                derived.append((session.id, expected))
    assert len(derived) >= 3  # imported sessions without a title of their own are titled too
    session_id, title = derived[0]
    header = tron_db("show", session_id, "-d", str(db)).splitlines()[0]
    assert header == f"session {session_id} · {title}"
