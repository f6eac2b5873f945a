"""``tron-db import --from claude-code|codex|pi PATH`` end to end (in process): a
folder imported with its summary, a dry run that writes nothing, a second run that
changes nothing, and a file of another format refused before a database exists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tron_events import EventStore
from tron_events.cli import main

FIXTURES = Path(__file__).parent / "fixtures" / "importers"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_import_from_each_agent_then_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "tron.db"
    url = ["--database-url", str(db)]
    code, out, _ = run(capsys, "import", "--from", "pi", str(FIXTURES / "pi"), "--dry-run", *url)
    assert code == 0 and out.startswith("would import 3 session(s)")
    assert not db.exists()  # a dry run creates no database
    for kind, folder, sessions in (
        ("claude-code", "claude-code", 7),
        ("codex", "codex", 3),
        ("pi", "pi", 3),
    ):
        code, out, _ = run(capsys, "import", "--from", kind, str(FIXTURES / folder), *url)
        assert code == 0, out
        assert out.startswith(f"imported {sessions} session(s)")
        assert "notice" in out
    code, out, _ = run(capsys, "import", "--from", "codex", str(FIXTURES / "codex"), "--json", *url)
    summary = json.loads(out)
    assert code == 0 and summary["sessionsImported"] == []
    assert len(summary["alreadyPresent"]) == 3
    with EventStore.open(f"sqlite:///{db}") as store:
        assert len(store.list_sessions(limit=100)) == 13


def test_a_file_of_another_format_is_refused_before_a_database_exists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "tron.db"
    codex = next((FIXTURES / "codex").rglob("rollout-2026-*.jsonl"))
    code, out, err = run(
        capsys, "import", "--from", "claude-code", str(codex), "--database-url", str(db)
    )
    assert code != 0 and out == ""
    assert err.startswith("tron-db import: ")
    assert "is a Codex CLI rollout, not a Claude Code transcript" in err
    assert "--from codex" in err and "Traceback" not in err
    assert not db.exists()


def test_a_folder_with_nothing_of_the_format_is_refused_before_a_database_exists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder where no file is of the format asked for (another agent's files, or
    none at all) is an error naming the files, not "imported 0 session(s)" with exit 0
    and an empty database left behind."""
    db = tmp_path / "tron.db"
    url = ("--database-url", str(db))
    code, out, err = run(capsys, "import", "--from", "pi", str(FIXTURES / "codex"), *url)
    assert code == 2 and out == "", out
    assert err.startswith("tron-db import: nothing to import under ")
    assert "no file there is a pi session" in err and "--from codex" in err
    assert not db.exists()
    # Our own format: a folder of Codex rollouts holds no Tron export.
    code, out, err = run(capsys, "import", str(FIXTURES / "codex"), *url)
    assert code == 2 and "no file there is a Tron export" in err and "--from codex" in err
    assert not db.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, err = run(capsys, "import", "--from", "codex", str(empty), *url)
    assert code == 2 and "nothing to import: no codex session in" in err
    assert not db.exists()


def test_a_folder_with_a_file_of_another_format_is_a_partial_import(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The pi sessions are imported and the Codex rollout beside them is skipped:
    said, and exit status 1 (partial), as for a skipped file of a folder of exports."""
    import shutil

    folder = tmp_path / "mixed"
    shutil.copytree(FIXTURES / "pi", folder)
    rollout = next((FIXTURES / "codex").rglob("rollout-2026-*.jsonl"))
    shutil.copy(rollout, folder / rollout.name)
    db = tmp_path / "tron.db"
    code, out, _ = run(capsys, "import", "--from", "pi", str(folder), "--database-url", str(db))
    assert code == 1, out
    assert out.startswith("imported 3 session(s)")
    assert f"skipped: {folder / rollout.name}:1: is a Codex CLI rollout" in out
