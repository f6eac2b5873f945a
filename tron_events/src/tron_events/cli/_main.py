"""The parser and the dispatcher of ``tron-db``.

Only the standard library is imported here, so ``tron-db --help`` answers at
once; each command imports what it needs when it runs. Every failure is a
one-paragraph message on stderr and an exit status, never a traceback
(``-v`` adds the traceback for a bug report).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .._urls import default_database_url, tron_home

#: Exit statuses: done; done but not everything (check failed, a session
#: refused); the command could not run.
OK, PARTIAL, FAILED = 0, 1, 2

URL_HELP = (
    "database URL or SQLite file path (default: $TRON_DATABASE_URL, else "
    "$TRON_HOME/database/prod.db with TRON_HOME defaulting to ~/.tron)"
)

DESCRIPTION = """\
Manage a Tron event database (SQLite or PostgreSQL): its schema, its sessions,
and moving sessions in and out as JSONL.

examples:
  tron-db upgrade                           create or upgrade ~/.tron/database/prod.db
  tron-db sessions --limit 10               the ten sessions active most recently
  tron-db show sess_0193…                   a session's transcript
  tron-db delete sess_0193… --cascade       a session and the forks that depend on it
  tron-db export --all -o backup.jsonl      everything, as JSONL
  tron-db import backup.jsonl               restore it (into a new database too)
  tron-db import --from claude-code ~/.claude/projects
  tron-db adopt                             convert the original Tron's database in place
"""

EPILOG = (
    "URLs: a file path, sqlite:///relative.db, sqlite:////absolute.db, or "
    "postgresql+psycopg://user@host/db. Options go before or after the command."
)


class _Version(argparse.Action):
    """``--version``: the installed tron-events version (looked up only when asked)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        from importlib import metadata

        try:
            version = metadata.version("tron-events")
        except metadata.PackageNotFoundError:  # pragma: no cover - not installed
            version = "unknown"
        print(f"tron-db (tron-events) {version}")
        parser.exit()


def _common() -> argparse.ArgumentParser:
    # SUPPRESS: an option given before the command is not reset by the
    # command's parser, and one given after it wins.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--database-url", "-d", metavar="URL", default=argparse.SUPPRESS, help=URL_HELP
    )
    common.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="log what happens (and show the traceback of an unexpected error)",
    )
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _common()
    parser = argparse.ArgumentParser(
        prog="tron-db",
        description=DESCRIPTION,
        epilog=EPILOG,
        parents=[common],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help: str, description: str | None = None) -> argparse.ArgumentParser:
        return sub.add_parser(
            name,
            help=help,
            description=description or help,
            parents=[common],
            epilog=EPILOG,
        )

    p = add(
        "upgrade",
        "create the schema or upgrade it (default: to head); converts a database of "
        "the original Tron first (see adopt)",
    )
    p.add_argument("revision", nargs="?", default="head", help="target revision (default: head)")
    p = add(
        "downgrade",
        "downgrade the schema to REVISION ('base' drops every table)",
        "Downgrade the schema. A downgrade that deletes sessions asks first on a terminal "
        "(needs --yes otherwise) and backs a SQLite file up beside it first; on PostgreSQL "
        "it prints the pg_dump command to back up with, then needs --yes.",
    )
    p.add_argument("revision", help="target revision, e.g. 0001, -1 or base")
    p.add_argument("-y", "--yes", action="store_true", help="do it without asking")
    add("current", "show the database's revision")
    add("history", "list the schema revisions, newest first")
    add("check", "check that the database is at head and matches the models (exit 1 if not)")
    add(
        "adopt",
        "convert a database of the original Tron in place (a backup is written first)",
        "Convert a database of the original (TypeScript) Tron, at the same default path, "
        "into this schema in place, keeping every event. A copy of the original is written "
        "beside it first.",
    )
    p = add(
        "demo",
        "record a small session (with a fork and a rewind) and show it",
        "Record a small demo session in its own database (default: "
        "$TRON_HOME/database/demo.db, never your real one unless --database-url says so).",
    )

    p = add(
        "export",
        "write sessions as JSONL (docs/export-format.md)",
        "Write sessions as JSONL (docs/export-format.md): one session with the sessions its "
        "forks come from, so the file stands alone (--with-forks adds its forks and children), "
        "a workspace, or everything. Streams; a progress bar on a terminal.",
    )
    scope = p.add_mutually_exclusive_group(required=True)
    scope.add_argument("--session", "-s", metavar="ID", help="one session (an id or its prefix)")
    scope.add_argument("--workspace", "-w", metavar="PATH", help="every session of a workspace")
    scope.add_argument("--all", "-a", action="store_true", help="everything")
    p.add_argument(
        "--with-forks", action="store_true", help="with --session: also its forks and children"
    )
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (default: stdout)")
    p.add_argument(
        "--without-files",
        action="store_true",
        help="leave out the recorded file contents (the sessions then cannot be rewound "
        "with files where they are imported)",
    )

    p = add(
        "import",
        "import sessions: a Tron export, or another agent's sessions",
        "Import sessions into the database (created if it does not exist): a Tron export "
        "(JSONL; a file, a folder of them, or - for stdin), or with --from another agent's "
        "session files. Each session is imported whole or not at all; importing the same "
        "input again changes nothing.",
    )
    p.add_argument("path", metavar="PATH", help="a file, a folder, or - for stdin")
    p.add_argument(
        "--from",
        dest="source",
        metavar="SOURCE",
        help="tron (a Tron export: the default), claude-code, codex or pi",
    )
    p.add_argument("-n", "--dry-run", action="store_true", help="report, write nothing")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")

    p = add("sessions", "list sessions, most recently active first")
    p.add_argument("--workspace", "-w", metavar="PATH", help="only this workspace (path or id)")
    p.add_argument("--status", choices=["active", "ended"], help="only active or ended ones")
    p.add_argument("--limit", "-n", type=int, default=20, help="at most N (default: 20)")
    p.add_argument("--json", action="store_true", help="JSON lines instead of a table")

    p = add("show", "print a session's transcript (its current path)")
    p.add_argument("session", metavar="SESSION", help="a session id or a unique prefix of one")
    p.add_argument(
        "--all-events", action="store_true", help="every event, not just the conversation"
    )
    p.add_argument("--json", action="store_true", help="the path's events as JSON lines")
    p.add_argument("--width", type=int, default=0, help="wrap at this width (default: terminal)")

    p = add(
        "delete",
        "delete a session and its events (asks first)",
        "Delete a session, its events and their search rows. Asks on a terminal (--yes "
        "otherwise); no backup is made (export the session first to keep a copy). A session "
        "that forks or sub-agent sessions depend on is refused, naming them, unless "
        "--cascade, which deletes them too. While tron-server runs, delete from a client "
        "instead (session.delete waits for the session's agent to be idle).",
    )
    p.add_argument("session", metavar="SESSION", help="a session id or a unique prefix of one")
    p.add_argument(
        "--cascade",
        action="store_true",
        help="also delete the forks and sub-agent sessions that depend on it",
    )
    p.add_argument("-y", "--yes", action="store_true", help="do it without asking")
    return parser


#: command -> module (in this package) with ``run(args, url) -> int``.
COMMANDS = {
    "upgrade": "_schema",
    "downgrade": "_schema",
    "current": "_schema",
    "history": "_schema",
    "check": "_schema",
    "adopt": "_schema",
    "demo": "_schema",
    "export": "_transfer",
    "import": "_transfer",
    "sessions": "_browse",
    "show": "_browse",
    "delete": "_delete",
}


def database_url(args: argparse.Namespace) -> str:
    url: str | None = getattr(args, "database_url", None)
    if url:
        return url
    if args.command == "demo":
        return "sqlite:///" + str(tron_home() / "database" / "demo.db")
    return default_database_url()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    verbose = bool(getattr(args, "verbose", False))
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format='{"time":"%(asctime)s","level":"%(levelname)s","logger":"%(name)s",'
        '"msg":"%(message)s"}',
    )
    command = args.command
    try:
        run: Callable[[argparse.Namespace, str], int] = importlib.import_module(
            f".{COMMANDS[command]}", __package__
        ).run
        return run(args, database_url(args))
    except KeyboardInterrupt:
        print(f"tron-db {command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (``tron-db export --all | head``): not an error.
        _quiet_stdout()
        return OK
    except Exception as exc:
        from ..errors import TronEventsError

        if isinstance(exc, TronEventsError):
            print(f"tron-db {command}: {exc}", file=sys.stderr)
        else:
            print(
                f"tron-db {command}: unexpected error ({type(exc).__name__}): "
                f"{_first_line(exc)}" + ("" if verbose else " (run with -v for details)"),
                file=sys.stderr,
            )
        if verbose:
            import traceback

            traceback.print_exc()
        return FAILED


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def _quiet_stdout() -> None:
    # Python flushes stdout at exit; a closed pipe would print a second error.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a real file: nothing to flush
        pass
