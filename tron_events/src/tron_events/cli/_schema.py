"""``tron-db`` schema commands: upgrade, downgrade, current, history, check,
adopt, and the demo."""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from .. import _preflight, migrate
from .._urls import normalize_url, sqlite_file
from ..errors import StorageError
from ._ask import confirm
from ._main import FAILED, OK, PARTIAL


def _err(message: str) -> None:
    print(message, file=sys.stderr)


def run(args: argparse.Namespace, raw_url: str) -> int:
    url = normalize_url(raw_url)
    command = args.command
    if command == "upgrade":
        return _upgrade(url, raw_url, args.revision)
    if command == "downgrade":
        return _downgrade(url, args.revision, args.yes)
    if command == "current":
        current = migrate.current_revision(url)
        head = migrate.head_revision()
        print(f"{current or 'base (empty)'}{' (head)' if current == head else ''}")
        return OK
    if command == "history":
        return _history(url, explicit=getattr(args, "database_url", None) is not None)
    if command == "check":
        return _check(url)
    if command == "adopt":
        return _adopt(url)
    if command == "demo":
        from ..demo import run_demo

        _relative_hint(raw_url)
        run_demo(url)
        return OK
    raise AssertionError(command)  # pragma: no cover


def _relative_hint(raw_url: str) -> None:
    """Say so when ``sqlite:///tmp/x.db`` (a relative path) probably meant /tmp/x.db."""
    if not raw_url.startswith("sqlite:///") or raw_url.startswith("sqlite:////"):
        return
    path = Path(raw_url[len("sqlite:///") :])
    if path.is_absolute() or str(path).startswith(("~", ":memory:")):
        return
    absolute = Path("/") / path
    if not path.parent.exists() and absolute.parent.is_dir():
        _err(
            f"note: {raw_url} is the relative path {Path.cwd() / path}; for {absolute} write "
            f"sqlite:///{absolute} (four slashes) or just {absolute}"
        )


def _upgrade(url: str, raw_url: str, revision: str) -> int:
    migrate.check_revision(revision)
    found = _preflight.inspect(url, writable=True, allow_original=True)
    where = sqlite_file(url) or url
    if found.kind == "original":
        _err(f"{where} is a database of the original Tron: adopting it first")
        _adopt(url)
    elif found.kind == "missing":
        _relative_hint(raw_url)
        _err(f"creating {where} …")
    _err(f"upgrading {where} to {revision} …")
    migrate.upgrade(url, revision)
    print(f"at revision {migrate.current_revision(url) or 'base (empty)'}")
    return OK


def _downgrade(url: str, revision: str, yes: bool) -> int:
    migrate.check_revision(revision)
    # Refused before anything is asked or written (a read-only file got its backup,
    # then failed).
    _preflight.inspect(url, must_exist=True, writable=True)
    dropped = migrate.data_dropped(url, revision)
    path = sqlite_file(url)
    if dropped:
        sessions, events = migrate.count_rows(url)
        if sessions or events:
            what = (
                f"downgrading to {revision} deletes {dropped}: {sessions} session(s) and "
                f"{events} event(s) in {path or url}"
            )
            if path is None:
                if not yes:
                    _err(
                        f"{what}.\nBack the database up first:\n  {pg_dump_command(url)}\n"
                        f"{_password_note(url)}then run this again with --yes. "
                        "Nothing was changed."
                    )
                    return FAILED
            elif not yes and not confirm(what, "A backup is written beside the file first."):
                return FAILED
            if path is not None:
                backup = migrate.backup_sqlite(path, "pre-downgrade")
                _err(f"backup written: {backup}")
    migrate.downgrade(url, revision)
    print(f"at revision {migrate.current_revision(url) or 'base (empty)'}")
    return OK


def pg_dump_command(url: str) -> str:
    """The shell command that backs up the PostgreSQL database of ``url`` (its
    host, port, user and name; never its password: pg_dump asks for it, or reads
    ``~/.pgpass`` or ``PGPASSWORD``), quoted to run as printed."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    query = {k: v if isinstance(v, str) else v[-1] for k, v in parsed.query.items()}
    host = parsed.host or query.pop("host", None)
    query.pop("host", None)
    port = parsed.port or query.pop("port", None)
    query.pop("port", None)
    name = parsed.database or parsed.username or "postgres"
    args = ["pg_dump", "--format=custom"]
    if host:
        args += ["--host", host]
    if port:
        args += ["--port", str(port)]
    if parsed.username:
        args += ["--username", parsed.username]
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    args += ["--file", f"{safe}-{time.strftime('%Y%m%d')}.dump"]
    # Other connection parameters (sslmode …) go with the name, as a conninfo string.
    if query:
        args += [
            " ".join(f"{k}={_conninfo_value(v)}" for k, v in {"dbname": name, **query}.items())
        ]
    else:
        args.append(name)
    return shlex.join(args)


def _password_note(url: str) -> str:
    from sqlalchemy.engine import make_url

    if make_url(url).password is None:
        return ""
    return "(pg_dump asks for the password, or reads it from ~/.pgpass or PGPASSWORD)\n"


def _conninfo_value(value: str) -> str:
    if value and not any(c.isspace() or c in "'\\" for c in value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _history(url: str, *, explicit: bool) -> int:
    current: str | None = None
    try:
        found = _preflight.inspect(url, writable=False)
        current = found.revision
        if found.kind == "missing" and explicit:
            _err(f"(no database at {sqlite_file(url) or url}: the revisions only)")
    except StorageError as exc:
        if explicit:
            _err(f"({exc}: the revisions only)")
    for rev, down, message in migrate.history():
        mark = " (current)" if rev == current else ""
        print(f"{down or '<base>'} -> {rev}{mark}: {message.splitlines()[0] if message else ''}")
    return OK


def _check(url: str) -> int:
    result = migrate.check(url)
    if result.ok:
        print(f"ok: at head {result.head}, schema matches the models")
        return OK
    if result.current != result.head:
        print(
            f"database is at {result.current or 'base (empty)'}, head is {result.head}: "
            f"run `tron-db upgrade --database-url {url}`"
        )
        if result.differences:
            # What the missing revisions add: listing it would only repeat them.
            print(f"({len(result.differences)} difference(s) from the models until then)")
        return PARTIAL
    for diff in result.differences:
        print(f"difference: {diff}")
    return PARTIAL


def _adopt(url: str) -> int:
    from .. import adopt

    found = _preflight.inspect(url, must_exist=True, writable=True, allow_original=True)
    if found.kind == "tron":
        print(
            f"{sqlite_file(url) or url} is already a Tron database "
            f"(revision {found.revision or 'base'}): nothing to adopt"
        )
        return OK
    summary = adopt.adopt(url, progress=lambda message: _err(message))
    print(summary.describe())
    return OK
