"""Alembic revisions and the tron-db command, on each backend."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

from tron_events import EventStore, migrate

TRON_DB = shutil.which("tron-db") or "tron-db"


def tron_db(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TRON_DB, *args], capture_output=True, text=True, timeout=120)


def tables(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return set(inspect(conn).get_table_names())
    finally:
        engine.dispose()


def test_upgrade_from_empty_and_check(store_url: str) -> None:
    migrate.upgrade(store_url)
    migrate.downgrade(store_url, "base")
    assert migrate.current_revision(store_url) is None
    assert "events" not in tables(store_url)
    result = tron_db("check", "--database-url", store_url)
    assert result.returncode == 1 and "run `tron-db upgrade" in result.stdout
    up = tron_db("upgrade", "--database-url", store_url)
    assert up.returncode == 0, up.stderr
    assert migrate.current_revision(store_url) == migrate.head_revision()
    assert {"events", "sessions", "workspaces"} <= tables(store_url)
    check = tron_db("check", "--database-url", store_url)
    assert check.returncode == 0 and check.stdout.startswith("ok"), check.stdout
    assert tron_db("current", "--database-url", store_url).stdout.strip().endswith("(head)")


def test_downgrade_to_base_and_back_with_data(store: EventStore) -> None:
    url = store.url
    s = store.create_session(working_directory="/m", model="m", provider="p")
    store.append(s.id, "message.user", {"content": "searchable migration words"})
    store.close()
    migrate.downgrade(url, "base")
    assert "events" not in tables(url)
    migrate.upgrade(url)
    with EventStore.open(url) as again:
        assert again.list_sessions() == []
        s2 = again.create_session(working_directory="/m", model="m", provider="p")
        again.append(s2.id, "message.user", {"content": "searchable again"})
        assert [h.session_id for h in again.search("searchable")] == [s2.id]
    assert migrate.check(url).ok


def test_open_upgrades_data_in_place(store: EventStore) -> None:
    s = store.create_session(working_directory="/m", model="m", provider="p")
    e = store.append(s.id, "message.user", {"content": "kept"})
    store.close()
    with EventStore.open(store.url) as reopened:  # already at head: nothing to do
        assert reopened.get_event(e.id) == e


def test_check_reports_drift(store_url: str) -> None:
    migrate.upgrade(store_url)
    engine = create_engine(store_url)
    with engine.begin() as conn:
        conn.execute(text("DROP INDEX ix_events_parent"))
        conn.execute(text("CREATE TABLE stray (x integer)"))
        conn.execute(text("ALTER TABLE sessions ADD COLUMN bogus text"))
    engine.dispose()
    result = migrate.check(store_url)
    assert not result.ok
    assert set(result.differences) == {
        "index ix_events_parent on events (parent_id): missing (the models have it)",
        "table stray: not in the models",
        "column sessions.bogus: not in the models",
    }
    cli = tron_db("check", "--database-url", store_url)
    assert cli.returncode == 1 and "ix_events_parent" in cli.stdout
    # Words, not SQLAlchemy's reprs.
    for raw in ("Table(", "Column(", "Index(", "MetaData(", "('add_", "('remove_"):
        assert raw not in cli.stdout, cli.stdout


def test_check_of_a_database_behind_head_says_upgrade_in_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tron_events.cli import main

    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")  # SQLite's empty database
    assert main(["check", "--database-url", str(empty)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("database is at base (empty), head is ") and "upgrade" in lines[0]
    assert len(lines) == 2 and "difference(s) from the models until then" in lines[1]


def test_differences_of_column_types_in_words() -> None:
    from sqlalchemy import String, Text

    modified = [("modify_type", None, "sessions", "model", {}, Text(), String(64))]
    assert migrate.describe_difference(modified) == (
        "column sessions.model: type is TEXT, the models say VARCHAR(64)"
    )
    nullable = ("modify_nullable", None, "events", "type", {}, True, False)
    assert migrate.describe_difference(nullable) == (
        "column events.type: nullable is True, the models say False"
    )


def test_every_command_has_help() -> None:
    for command in ([], ["upgrade"], ["downgrade"], ["current"], ["history"], ["check"], ["demo"]):
        result = tron_db(*command, "--help")
        assert (result.returncode == 0 and "--database-url" in result.stdout) or not command
        assert "usage: tron-db" in result.stdout


def test_history_lists_revisions() -> None:
    result = tron_db("history", "--database-url", "sqlite:////nonexistent/dir/x.db")
    assert result.returncode == 0
    assert "<base> -> 0001" in result.stdout


def test_cli_errors_are_messages_not_tracebacks(tmp_path: Path) -> None:
    result = tron_db("upgrade", "--database-url", "mysql://nobody@nowhere/x")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and "MySQL" in result.stderr


def test_default_database_is_under_home() -> None:
    assert migrate.DEFAULT_DATABASE_URL.endswith("/.tron/database/prod.db")


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_demo_runs(store_url: str) -> None:
    result = tron_db("demo", "--database-url", store_url)
    assert result.returncode == 0, result.stderr
    assert "forked" in result.stdout and "README" in result.stdout


def test_head_constant_matches_the_revisions() -> None:
    from tron_events._urls import HEAD_REVISION

    assert migrate.head_revision() == HEAD_REVISION


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_opening_a_current_store_does_not_load_alembic(store: EventStore) -> None:
    import sys

    script = (
        "import sys\nfrom tron_events import EventStore\n"
        f"s = EventStore.open({store.url!r})\n"
        "s.get_since(limit=1)\n"
        "assert 'alembic' not in sys.modules, 'alembic imported'\n"
        "assert 'sqlalchemy' not in sys.modules, 'sqlalchemy imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_concurrent_openers_of_a_new_sqlite_file_all_succeed(tmp_path: Path) -> None:
    """Processes opening (and so creating and migrating) one new file at once:
    the first-look checks before the migration never mistake a half-made
    database for a foreign one, and every opener gets the store."""
    import sys

    db = tmp_path / "deep" / "new.db"
    script = (
        "import sys\nfrom tron_events import EventStore\n"
        "with EventStore.open(sys.argv[1]) as s:\n"
        "    s.create_session(working_directory='/x', model='m', provider='p')\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(db)], stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, errors
    with EventStore.open(str(db)) as store:
        assert len(store.list_sessions()) == 4
    assert migrate.check(f"sqlite:///{db}").ok
