"""``tron-db`` as a user meets it: through ``main()`` in-process, and as a real
subprocess (a real terminal where it asks) for exit statuses and the absence
of tracebacks."""

from __future__ import annotations

import io
import os
import pty
import select
import shlex
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tron_events import (
    DatabaseNotFound,
    DatabaseUnreachable,
    EventStore,
    StorageError,
    UnsupportedDatabase,
    migrate,
)
from tron_events._urls import HEAD_REVISION, REVISIONS
from tron_events.cli import main
from tron_events.cli._progress import Progress

TRON_DB = shutil.which("tron-db") or "tron-db"


def tron_db(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [TRON_DB, *args], capture_output=True, input=stdin.decode() if stdin else None,
        text=True, timeout=120,
    )  # fmt: skip
    assert "Traceback" not in result.stderr, result.stderr
    return result


@pytest.fixture(autouse=True)
def _no_user_database(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test may touch the real ~/.tron."""
    monkeypatch.setenv("TRON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TRON_DATABASE_URL", raising=False)


def populated(url: str) -> dict[str, str]:
    with EventStore.open(url) as store:
        s = store.create_session(
            working_directory="/src/app", model="claude-x", provider="anthropic", title="first"
        )
        store.append(s.id, "message.user", {"content": "List the files, please.", "turn": 1})
        store.append(
            s.id,
            "message.assistant",
            {
                "content": [
                    {"type": "text", "text": "Listing them."},
                    {"type": "tool_use", "id": "tu1", "name": "bash", "input": {"cmd": "ls"}},
                ],
                "turn": 1,
            },
        )
        store.append(s.id, "tool.result", {"toolCallId": "tu1", "content": "README.md\nsrc"})
        other = store.create_session(
            working_directory="/src/other", model="gpt-x", provider="openai", title="second"
        )
        store.end_session(other.id)
        return {"first": s.id, "second": other.id}


# -- options, version, help ----------------------------------------------------


def test_options_work_before_or_after_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    migrate.upgrade(url)
    assert main(["--database-url", url, "current"]) == 0
    assert main(["current", "--database-url", url]) == 0
    assert main(["-d", str(tmp_path / "nope.db"), "current", "-d", url]) == 0  # the later wins
    assert capsys.readouterr().out.splitlines() == [f"{HEAD_REVISION} (head)"] * 3


def test_version_and_help_load_no_database_code() -> None:
    script = (
        "import sys\nfrom tron_events.cli import main\n"
        "for argv in (['--help'], ['--version'], ['export', '--help']):\n"
        "    try:\n        main(argv)\n    except SystemExit as e:\n        assert e.code == 0\n"
        "heavy = {'sqlalchemy', 'alembic', 'pydantic', 'orjson'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "tron-db (tron-events) 0.1.0" in result.stdout
    assert "--with-forks" in result.stdout and "--database-url" in result.stdout


# -- never create anything for a mistyped path ---------------------------------


@pytest.mark.parametrize(
    "command",
    [["current"], ["check"], ["export", "--all"], ["sessions"], ["show", "sess_x"],
     ["downgrade", "base", "--yes"], ["adopt"]],
)  # fmt: skip
def test_read_commands_create_nothing_for_a_missing_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    missing = tmp_path / "no" / "such" / "x.db"
    assert main([*command, "--database-url", str(missing)]) == 2
    assert f"no database at {missing}" in capsys.readouterr().err
    assert not (tmp_path / "no").exists()
    with pytest.raises(DatabaseNotFound):
        EventStore.open(str(missing), must_exist=True)
    assert not (tmp_path / "no").exists()


def test_history_lists_revisions_without_a_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["history", "-d", str(tmp_path / "none.db")]) == 0
    out = capsys.readouterr()
    assert "<base> -> 0001" in out.out and "no database at" in out.err
    assert list(tmp_path.iterdir()) == []


def test_a_url_that_looks_like_a_misspelled_absolute_path_gets_a_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["current", "-d", "sqlite:///tmp/x.db"]) == 2
    err = capsys.readouterr().err
    assert f"relative path {tmp_path}/tmp/x.db" in err and "sqlite:////tmp/x.db" in err
    assert not (tmp_path / "tmp").exists()


def test_demo_uses_its_own_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    assert "forked" in capsys.readouterr().out
    assert (tmp_path / "home" / "database" / "demo.db").exists()
    assert not (tmp_path / "home" / "database" / "prod.db").exists()


# -- errors are messages --------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["upgrade", "-d", "mysql://u@h/x"], "MySQL and MariaDB are not supported"),
        (["current", "-d", "oracle://u@h/x"], "unsupported database URL scheme 'oracle'"),
        (["upgrade", "0099", "-d", "{tmp}/x.db"],
         "unknown revision '0099': the revisions are " + ", ".join(REVISIONS)),
        (["upgrade", "-d", "postgresql://postgres@127.0.0.1:1/x"], "cannot reach PostgreSQL"),
        (["upgrade", "-d", "{tmp}/text.db"], "is not a SQLite database"),
    ],
)  # fmt: skip
def test_errors_are_one_message_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    (tmp_path / "text.db").write_text("these are my notes, not a database\n")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and "sqlalche" not in err
    assert err.count("\n") == 1
    assert not list(tmp_path.glob("*.migrate.lock"))
    assert not (tmp_path / "x.db").exists()


def test_as_subprocesses_no_traceback_and_exit_statuses(tmp_path: Path) -> None:
    notes = tmp_path / "notes.db"
    notes.write_bytes(b"SQLite? no: plain bytes\n" * 10)
    result = tron_db("check", "-d", str(notes))
    assert result.returncode == 2 and "is not a SQLite database" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.db"]
    result = tron_db("downgrade", "nonsense", "-d", str(notes))
    assert result.returncode == 2 and "unknown revision 'nonsense'" in result.stderr
    # PostgreSQL without the driver: what a `pip install tron-events` user sees.
    script = (
        "import sys\nsys.modules['psycopg'] = None\nfrom tron_events.cli import main\n"
        "sys.exit(main(['current', '-d', 'postgresql://u@localhost/db']))"
    )
    no_driver = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert no_driver.returncode == 2 and "Traceback" not in no_driver.stderr
    assert "pip install 'tron-events[postgres]'" in no_driver.stderr


def test_open_raises_typed_errors() -> None:
    with pytest.raises(UnsupportedDatabase, match="MySQL"):
        EventStore.open("mysql+pymysql://u@h/db")
    with pytest.raises(DatabaseUnreachable, match="cannot reach PostgreSQL"):
        EventStore.open("postgresql+psycopg://postgres@127.0.0.1:1/db")


def unprivileged() -> list[str]:
    """The command prefix that runs as nobody when we are root (root writes anything),
    else none; skips the test when root cannot drop its privileges."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: cannot drop privileges")
    prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    probe = subprocess.run(
        [*prefix, sys.executable, "-c", "import tron_events"], capture_output=True, timeout=60
    )
    if probe.returncode != 0:  # e.g. a checkout under /root, which nobody may read
        pytest.skip("the unprivileged user cannot import tron_events from this checkout")
    return prefix


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX permissions")
def test_a_read_only_database_is_refused_at_start() -> None:
    """Run as an unprivileged user (root writes anything) against a file it
    may read but not write: refused at open, before any work."""
    folder = Path(tempfile.mkdtemp(prefix="tron-ro-"))
    try:
        folder.chmod(0o755)
        db = folder / "ro.db"
        populated(str(db))
        db.chmod(0o444)
        script = (
            "import sys\nfrom tron_events import EventStore, DatabaseReadOnly\n"
            f"try:\n    EventStore.open({str(db)!r})\nexcept DatabaseReadOnly as e:\n"
            "    print(e)\nelse:\n    sys.exit('opened a read-only database for writing')\n"
        )
        prefix = unprivileged()
        result = subprocess.run(
            [*prefix, sys.executable, "-c", script], capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 0, result.stderr
        assert "read-only" in result.stdout
        cli = subprocess.run(
            [*prefix, TRON_DB, "upgrade", "-d", str(db)], capture_output=True, text=True
        )
        assert cli.returncode == 2 and "read-only" in cli.stderr, cli.stderr
        assert "Traceback" not in cli.stderr
        # A downgrade is refused before it asks or writes its backup.
        before = sorted(folder.iterdir())
        cli = subprocess.run(
            [*prefix, TRON_DB, "downgrade", "base", "--yes", "-d", str(db)],
            capture_output=True, text=True,
        )  # fmt: skip
        assert cli.returncode == 2 and "read-only" in cli.stderr, cli.stderr
        assert "backup" not in cli.stderr and sorted(folder.iterdir()) == before
    finally:
        shutil.rmtree(folder)


@pytest.mark.parametrize(
    "path", ["/proc/tron-nope.db", "/tmp/" + "n" * 300 + ".db", "/tmp/" + "n" * 300 + "/x.db"]
)
def test_a_database_the_system_will_not_create_is_one_clear_line(path: str) -> None:
    # /proc: root passes the access check and the kernel still refuses (ENOENT);
    # a name too long fails the first stat. Neither is an "unexpected error".
    result = tron_db("upgrade", "-d", path)
    assert result.returncode == 2, result.stderr
    [line] = [ln for ln in result.stderr.splitlines() if not ln.endswith("…")]
    assert "cannot" in line and "unexpected error" not in line, line
    with pytest.raises(StorageError, match="cannot"):
        EventStore.open(path)


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX permissions")
def test_a_database_in_a_folder_it_cannot_write_is_refused_for_reading_too() -> None:
    """A WAL database is read through its -shm file, which SQLite creates beside it:
    in a folder this user cannot write (someone else's, a read-only mount) the
    read commands say so, not "an I/O error ... check the disk"."""
    folder = Path(tempfile.mkdtemp(prefix="tron-ro-dir-"))
    try:
        db = folder / "theirs.db"
        populated(str(db))
        assert not list(folder.glob("*-shm"))  # closed cleanly: SQLite must create it
        db.chmod(0o644)
        folder.chmod(0o755)
        prefix = unprivileged()
        if not prefix:
            folder.chmod(0o555)
        before = sorted(folder.iterdir())
        for command in ("current", "sessions", "check"):
            cli = subprocess.run(
                [*prefix, TRON_DB, command, "-d", str(db)], capture_output=True, text=True,
                timeout=60,
            )  # fmt: skip
            assert cli.returncode == 2, (command, cli.stdout, cli.stderr)
            assert "Traceback" not in cli.stderr and cli.stderr.count("\n") == 1, cli.stderr
            assert f"the folder {folder} is not writable" in cli.stderr, cli.stderr
            assert "I/O error" not in cli.stderr
        assert sorted(folder.iterdir()) == before
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)


# -- downgrade that drops data --------------------------------------------------


def test_downgrade_that_drops_data_needs_yes_and_backs_up_first(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    populated(store_url)
    assert main(["downgrade", "base", "-d", store_url]) == 2
    err = capsys.readouterr().err
    assert "deletes every workspace, session and event: 2 session(s)" in err
    assert migrate.current_revision(store_url) == HEAD_REVISION
    # Dropping a cache only (head -> 0001: the search bound, the snapshots) asks nothing.
    assert main(["downgrade", "0001", "-d", store_url]) == 0
    capsys.readouterr()
    path = store_url.removeprefix("sqlite:///")
    if store_url.startswith("postgresql"):
        assert main(["upgrade", "-d", store_url]) == 0
        assert main(["downgrade", "base", "-d", store_url]) == 2
        assert "pg_dump" in capsys.readouterr().err
    assert main(["downgrade", "base", "--yes", "-d", store_url]) == 0
    assert migrate.current_revision(store_url) is None
    if not store_url.startswith("postgresql"):
        [backup] = Path(path).parent.glob("events.db.pre-downgrade-*")
        assert f"backup written: {backup}" in capsys.readouterr().err
        conn = sqlite3.connect(backup)
        assert conn.execute("SELECT count(*) FROM sessions").fetchone() == (2,)
        conn.close()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql+psycopg://postgres@127.0.0.1:5432/test",
         ["--host", "127.0.0.1", "--port", "5432", "--username", "postgres", "test"]),
        ("postgresql+psycopg://me:s3cret%21@db.example/my%20db",
         ["--host", "db.example", "--username", "me", "my db"]),
        ("postgresql+psycopg://me:s3cret%21@/tron?host=/run/postgresql&sslmode=require",
         ["--host", "/run/postgresql", "--username", "me", "dbname=tron sslmode=require"]),
    ],
)  # fmt: skip
def test_the_pg_dump_command_names_the_database_never_its_password(
    url: str, expected: list[str]
) -> None:
    from tron_events.cli._schema import pg_dump_command

    command = pg_dump_command(url)
    assert "s3cret" not in command
    args = shlex.split(command)
    assert args[:2] == ["pg_dump", "--format=custom"]
    file_at = args.index("--file")
    assert args[file_at + 1].endswith(".dump")
    assert args[2:file_at] + args[file_at + 2 :] == expected


def test_the_printed_pg_dump_command_backs_up_the_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], request: pytest.FixtureRequest
) -> None:
    from tests.support import pg

    with pg.fresh_database(template=request.getfixturevalue("pg_template")) as url:
        populated(url)
        assert main(["downgrade", "base", "-d", url]) == 2
        err = capsys.readouterr().err
        [command] = [line.strip() for line in err.splitlines() if "pg_dump " in line]
        assert "DBNAME" not in command and url.rsplit("/", 1)[1] in command
        if shutil.which("pg_dump") is None:
            pytest.skip("pg_dump is not installed: the printed command was not run")
        run = subprocess.run(shlex.split(command), cwd=tmp_path, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        [dump] = tmp_path.glob("*.dump")
        listed = subprocess.run(["pg_restore", "--list", str(dump)], capture_output=True, text=True)
        assert "TABLE public events" in listed.stdout, listed.stdout
        assert migrate.current_revision(url) == HEAD_REVISION  # nothing was changed


def test_the_backup_is_no_more_readable_than_the_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "private.db"
    populated(str(db))
    db.chmod(0o600)
    export = tmp_path / "export.jsonl"
    export.write_text("an older export, readable by all\n")
    export.chmod(0o644)
    old = os.umask(0o022)  # the usual umask: SQLite alone would make the copy 0644
    try:
        assert main(["export", "--all", "-o", str(export), "-d", str(db)]) == 0
        assert main(["downgrade", "base", "--yes", "-d", str(db)]) == 0
    finally:
        os.umask(old)
    [backup] = tmp_path.glob("private.db.pre-downgrade-*")
    assert f"backup written: {backup}" in capsys.readouterr().err
    # Every file written for the database: the copy (one file, no WAL beside it), the
    # export (replacing a file that was readable by all), the WAL and SHM; the
    # migration's lock file is gone.
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()}
    assert {backup.name, "export.jsonl"} <= set(modes)
    assert "private.db.migrate.lock" not in modes
    assert not any(name.startswith(backup.name + "-") for name in modes), modes
    assert set(modes.values()) == {0o600}, modes
    conn = sqlite3.connect(f"file:{backup}?mode=ro", uri=True)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    conn.close()


def test_a_new_database_is_user_only_whatever_the_umask(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "new" / "deeper" / "x.db"
    old = os.umask(0)
    try:
        assert main(["upgrade", "-d", f"sqlite:///{db}?timeout=5"]) == 0  # a query is no name
        with EventStore.open(str(db)) as store:  # its WAL and SHM files exist while open
            store.create_session(working_directory="/w", model="m", provider="p")
            made = [db, *db.parent.glob("x.db*")]
            modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in made}
    finally:
        os.umask(old)
    assert {"x.db", "x.db-wal", "x.db-shm"} == set(modes), modes  # no lock file left
    assert set(modes.values()) == {0o600}, modes
    for folder in (tmp_path / "new", db.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    capsys.readouterr()


def answer_on_a_terminal(args: list[str], answer: bytes) -> tuple[bytes, int, bool]:
    """Run ``tron-db ARGS`` on a pseudo-terminal, type ``answer`` at its "Type 'yes'"
    prompt: (what it printed, its exit status, whether the prompt came)."""
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.execv(TRON_DB, [TRON_DB, *args])
    seen = b""
    deadline = time.monotonic() + 120
    answered = False
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 1)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        if not answered and b"Type 'yes'" in seen:
            os.write(fd, answer)
            answered = True
    _, code = os.waitpid(pid, 0)
    os.close(fd)
    return seen, os.waitstatus_to_exitcode(code), answered


@pytest.mark.parametrize(("answer", "status"), [(b"no\n", 2), (b"yes\n", 0)])
def test_downgrade_asks_on_a_terminal(tmp_path: Path, answer: bytes, status: int) -> None:
    db = tmp_path / "t.db"
    populated(str(db))
    seen, code, answered = answer_on_a_terminal(["downgrade", "base", "-d", str(db)], answer)
    assert answered, seen
    assert code == status, seen
    tables = sqlite3.connect(db).execute("SELECT name FROM sqlite_master").fetchall()
    assert (("sessions",) in tables) is (status == 2)
    assert bool(list(tmp_path.glob("t.db.pre-downgrade-*"))) is (status == 0)


# -- sessions and show -----------------------------------------------------------


def test_sessions_lists_and_filters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "s.db")
    ids = populated(db)
    assert main(["sessions", "-d", db]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:4] == ["ID", "LAST", "ACTIVE", "STATUS"]
    assert [line.split()[0] for line in out[1:]] == [ids["second"], ids["first"]]
    assert main(["sessions", "--status", "active", "-d", db]) == 0
    assert ids["second"] not in capsys.readouterr().out
    assert main(["sessions", "-w", "/src/other", "--json", "-d", db]) == 0
    [row] = [orjson.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert row["id"] == ids["second"] and row["status"] == "ended"


def test_show_prints_the_transcript(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "s.db")
    ids = populated(db)
    assert main(["show", ids["first"][:-6], "-d", db, "--width", "80"]) == 0  # a prefix
    out = capsys.readouterr().out
    for expected in ("user (turn 1)", "List the files, please.", "→ bash {\"cmd\":\"ls\"}",
                     "tool result tu1", "README.md"):  # fmt: skip
        assert expected in out, out
    assert main(["show", "sess_nope", "-d", db]) == 2
    assert "does not exist" in capsys.readouterr().err


# -- export and import ------------------------------------------------------------


def test_export_import_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = str(tmp_path / "src.db")
    ids = populated(src)
    dump = tmp_path / "all.jsonl"
    assert main(["export", "--all", "-o", str(dump), "-d", src]) == 0
    assert "exported 2 session(s), 6 event(s)" in capsys.readouterr().err
    target = tmp_path / "new" / "dst.db"
    assert main(["import", str(dump), "-n", "-d", str(target)]) == 0  # dry run: creates nothing
    assert "would import 2 session(s)" in capsys.readouterr().out
    assert not target.parent.exists()
    assert main(["import", str(dump), "-d", str(target)]) == 0
    assert "imported 2 session(s), 6 event(s)" in capsys.readouterr().out
    assert main(["import", str(dump), "--json", "-d", str(target)]) == 0
    summary = orjson.loads(capsys.readouterr().out)
    assert summary["sessionsImported"] == [] and len(summary["alreadyPresent"]) == 2
    with EventStore.open(str(target)) as store:
        assert store.get_session(ids["first"]).event_count == 4


def test_import_of_another_format_says_which_source_to_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    transcript = tmp_path / "abc.jsonl"
    transcript.write_text(
        '{"parentUuid":null,"sessionId":"abc","type":"user","uuid":"u1","message":{}}\n'
    )
    db = tmp_path / "x.db"
    assert main(["import", str(transcript), "-d", str(db)]) == 2
    assert "use --from claude-code" in capsys.readouterr().err
    assert not db.exists()
    assert main(["import", "--from", "nosuch", str(transcript), "-d", str(db)]) == 2
    assert "unknown source 'nosuch': the sources are" in capsys.readouterr().err


def test_an_export_that_cannot_start_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unknown workspace, or an output folder that does not exist: one line saying
    so, and nothing on stdout (not even the header a pipe would take for an export)."""
    src = str(tmp_path / "src.db")
    populated(src)
    capsys.readouterr()
    assert main(["export", "--workspace", "/nowhere", "-d", src]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "no workspace '/nowhere'" in err
    missing = tmp_path / "no-such-folder" / "x.jsonl"
    assert main(["export", "--all", "-o", str(missing), "-d", src]) == 2
    out, err = capsys.readouterr()
    assert out == "" and f"cannot write {missing}: No such file or directory" in err
    assert "unexpected" not in err and not missing.parent.exists()


def test_export_piped_into_import(tmp_path: Path) -> None:
    src = str(tmp_path / "src.db")
    populated(src)
    exported = subprocess.run(
        [TRON_DB, "export", "--all", "-d", src], capture_output=True, timeout=120
    )
    assert exported.returncode == 0 and exported.stdout.count(b"\n") == 11
    imported = tron_db("import", "-", "-d", str(tmp_path / "dst.db"), stdin=exported.stdout)
    assert imported.returncode == 0 and "imported 2 session(s)" in imported.stdout


def test_progress_draws_on_a_terminal_only() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty, pipe = Tty(), io.StringIO()
    for stream in (tty, pipe):
        bar = Progress("exporting", stream=stream)
        bar.update(500, 1000, force=True)
        bar.close()
    assert "exporting  50% [############" in tty.getvalue() and "500/1,000 events" in tty.getvalue()
    assert pipe.getvalue() == ""


def test_import_from_another_agent_goes_through_the_importers_registry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--from NAME`` calls ``tron_events.importers.IMPORTERS[NAME](path)`` and
    imports the records it yields (the registry is another module's: a
    stand-in here, with the contract's signature)."""
    import types

    seen: list[Path] = []

    def fake(path: Path) -> Iterator[dict[str, Any]]:
        seen.append(path)
        yield {"format": "tron-events-export", "version": 1, "source": {"kind": "fake"}}
        yield {"kind": "session", "id": "sess_fake"}
        yield {"kind": "event", "id": "evt_f0", "type": "session.start",
               "timestamp": "2026-01-01T00:00:00Z",
               "payload": {"workingDirectory": "/f", "model": "m", "provider": "p"}}  # fmt: skip
        yield {"kind": "notice", "sessionId": "sess_fake", "message": "kept a thing"}

    module = types.ModuleType("tron_events.importers")
    module.IMPORTERS = {"fake": fake}  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tron_events.importers", module)
    db = tmp_path / "x.db"
    assert main(["import", "--from", "fake", str(tmp_path), "-n", "-d", str(db)]) == 0
    assert "would import 1 session(s)" in capsys.readouterr().out and not db.exists()
    assert main(["import", "--from", "fake", str(tmp_path), "-d", str(db)]) == 0
    assert "notice (sess_fake): kept a thing" in capsys.readouterr().out
    assert seen == [tmp_path, tmp_path]
    assert main(["import", "--from", "other", str(tmp_path), "-d", str(db)]) == 2
    assert "the sources are fake, tron" in capsys.readouterr().err


def test_import_of_a_folder_of_exports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = str(tmp_path / "src.db")
    ids = populated(src)
    folder = tmp_path / "exports"
    (folder / "nested").mkdir(parents=True)
    for n, sid in enumerate(ids.values()):
        assert (
            main(["export", "-s", sid, "-o", str(folder / "nested" / f"{n}.jsonl"), "-d", src]) == 0
        )
    (folder / "notes.jsonl").write_text('{"hello": "world"}\n')
    capsys.readouterr()
    assert main(["import", str(folder), "-d", str(tmp_path / "dst.db")]) == 1  # partial
    out = capsys.readouterr().out
    assert "imported 2 session(s), 6 event(s)" in out and "notes.jsonl" in out


def test_another_agents_session_from_stdin(tmp_path: Path) -> None:
    """``--from claude-code -`` reads the transcript from stdin; its session gets the
    ids the file itself gives (Claude Code names the file by its sessionId), so
    importing the file afterwards finds it present."""
    main = (
        Path(__file__).parent / "fixtures" / "importers" / "claude-code" / "projects"
        / "-srv-app" / "7f8e9d0c-1b2a-4c3d-8e4f-5a6b7c8d9e0f.jsonl"
    )  # fmt: skip
    db = str(tmp_path / "x.db")
    piped = tron_db("import", "--from", "claude-code", "-", "-d", db, stdin=main.read_bytes())
    assert piped.returncode == 0 and "imported 3 session(s)" in piped.stdout, piped.stderr
    again = tron_db("import", "--from", "claude-code", str(main), "-d", db)
    assert again.returncode == 0 and "imported 0 session(s)" in again.stdout, again.stdout
    assert "3 session(s) already present" in again.stdout  # the main one and its sidechains
