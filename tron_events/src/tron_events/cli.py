"""``tron-db``: create, upgrade, inspect and check a Tron event database."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from . import migrate

DEFAULT_HELP = f"database URL or SQLite file path (default: {migrate.DEFAULT_DATABASE_URL})"


def _url_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--database-url", default=migrate.DEFAULT_DATABASE_URL, metavar="URL", help=DEFAULT_HELP
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tron-db",
        description="Manage the schema of a Tron event database (SQLite or PostgreSQL).",
        epilog="URLs: sqlite:///path/to.db, a plain file path, or postgresql+psycopg://user@host/db",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log what alembic does")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("upgrade", help="create the schema or upgrade it (default: to head)")
    p.add_argument("revision", nargs="?", default="head", help="target revision (default: head)")
    _url_option(p)
    p = sub.add_parser("downgrade", help="downgrade the schema to REVISION ('base' drops it)")
    p.add_argument("revision", help="target revision, e.g. 0001, -1 or base")
    _url_option(p)
    p = sub.add_parser("current", help="show the database's revision")
    _url_option(p)
    p = sub.add_parser("history", help="list the schema revisions, newest first")
    _url_option(p)
    p = sub.add_parser(
        "check", help="check that the database is at head and matches the models (exit 1 if not)"
    )
    _url_option(p)
    p = sub.add_parser("demo", help="record a small session (with a fork and a rewind) and show it")
    _url_option(p)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format='{"time":"%(asctime)s","level":"%(levelname)s","logger":"%(name)s","msg":"%(message)s"}',
    )
    url = migrate.normalize_url(args.database_url)
    try:
        return _run(args, url)
    except Exception as exc:  # a clear message, not a traceback, for the user
        print(f"tron-db {args.command}: error: {exc}", file=sys.stderr)
        if args.verbose:
            raise
        return 2


def _run(args: argparse.Namespace, url: str) -> int:
    cmd = args.command
    if cmd == "upgrade":
        print(f"upgrading {url} to {args.revision} …", file=sys.stderr)
        migrate.upgrade(url, args.revision)
        print(f"at revision {migrate.current_revision(url)}")
    elif cmd == "downgrade":
        migrate.downgrade(url, args.revision)
        print(f"at revision {migrate.current_revision(url) or 'base (empty)'}")
    elif cmd == "current":
        current = migrate.current_revision(url)
        head = migrate.head_revision()
        print(f"{current or 'base (empty)'}{' (head)' if current == head else ''}")
    elif cmd == "history":
        current = migrate.current_revision(url) if _exists(url) else None
        for rev, down, message in migrate.history():
            mark = " (current)" if rev == current else ""
            print(
                f"{down or '<base>'} -> {rev}{mark}: {message.splitlines()[0] if message else ''}"
            )
    elif cmd == "check":
        result = migrate.check(url)
        if result.ok:
            print(f"ok: at head {result.head}, schema matches the models")
            return 0
        if result.current != result.head:
            print(
                f"database is at {result.current or 'base (empty)'}, head is {result.head}: "
                f"run `tron-db upgrade --database-url {url}`"
            )
        for diff in result.differences:
            print(f"difference: {diff}")
        return 1
    elif cmd == "demo":
        from .demo import run_demo

        run_demo(url)
    return 0


def _exists(url: str) -> bool:
    return migrate.database_exists_hint(url) != "does not exist yet"


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
