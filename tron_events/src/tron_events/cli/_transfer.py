"""``tron-db export`` and ``tron-db import``."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import itertools
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from .._urls import normalize_url, sqlite_file
from ..errors import TronEventsError
from ..store import EventStore
from ..transfer import ExportFormatError, ImportSummary
from ._browse import resolve_session, workspace_arg
from ._main import FAILED, OK, PARTIAL
from ._progress import Progress

#: ``--from`` values handled here; the others come from ``tron_events.importers``.
OWN_SOURCE = "tron"


class UnknownSource(TronEventsError):
    pass


def _err(message: str) -> None:
    print(message, file=sys.stderr)


def run(args: argparse.Namespace, raw_url: str) -> int:
    url = normalize_url(raw_url)
    if args.command == "export":
        return _export(args, url)
    return _import(args, url)


# -- export -------------------------------------------------------------------


def _export(args: argparse.Namespace, url: str) -> int:
    from ..transfer import export_jsonl

    if args.with_forks and not args.session:
        raise TronEventsError("--with-forks goes with --session")
    progress = Progress("exporting")
    with EventStore.open(url, read_only=True) as store:
        session_id = resolve_session(store, args.session) if args.session else None
        scope: dict[str, Any] = {
            "session_id": session_id,
            "workspace": workspace_arg(args.workspace) if args.workspace else None,
            "all": args.all,
            "with_forks": args.with_forks,
            "files": not args.without_files,
            "progress": progress.update,
        }
        if args.output and args.output != "-":
            target = Path(args.output).expanduser()
            # Written beside the target and renamed at the end: an export that
            # fails half-way leaves no half file under the name asked for.
            try:
                fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
            except OSError as exc:
                raise TronEventsError(
                    f"cannot write {target}: {exc.strerror or exc} (in {target.parent})"
                ) from None
            try:
                with os.fdopen(fd, "wb") as fh:
                    summary = export_jsonl(store, fh, **scope)
                os.replace(tmp, target)
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
                raise
            where = str(target)
        else:
            out = sys.stdout.buffer
            summary = export_jsonl(store, out, **scope)
            out.flush()
            where = "stdout"
    progress.close()
    _err(
        f"exported {summary.sessions} session(s), {summary.events} event(s) "
        + (f"and {summary.blobs} file content(s) " if summary.blobs else "")
        + f"in {summary.workspaces} workspace(s) to {where}"
    )
    return OK


# -- import -------------------------------------------------------------------


def _import(args: argparse.Namespace, url: str) -> int:
    source = args.source or OWN_SOURCE
    path = args.path
    if source != OWN_SOURCE:
        importer = _importer(source)
        with contextlib.ExitStack() as stack:
            if path == "-":
                folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tron-db-")))
                source_path = _stdin_file(folder)
            else:
                source_path = Path(path).expanduser()
            records = _sessions_ahead(importer(source_path), source, source_path)
            with _store(url, args.dry_run) as store:
                summary = _import_counted(store, records, args.dry_run)
        return _report(summary, args.json)
    stdin_head: bytes | None = None
    if path == "-":
        files: list[Path | None] = [None]
        stdin_head = sys.stdin.buffer.readline()
        _precheck(stdin_head, "the input")
    else:
        p = Path(path).expanduser()
        if not p.exists():
            raise TronEventsError(f"no such file or folder: {p}")
        found = sorted(p.rglob("*.jsonl")) if p.is_dir() else [p]
        if not found:
            raise TronEventsError(f"no .jsonl files under {p}")
        files = list(found)
        # Before the database is created: a file that is no export, or a folder
        # that holds none, is refused with nothing written.
        refusals: list[str] = []
        for candidate in found:
            try:
                with candidate.open("rb") as fh:
                    _precheck(fh.readline(1 << 20), str(candidate))
            except ExportFormatError as exc:
                if not p.is_dir():
                    raise
                refusals.append(str(exc))
        if len(refusals) == len(found):
            raise ExportFormatError(_nothing_in(p, "Tron export", refusals))
    total = ImportSummary(dry_run=args.dry_run)
    with _store(url, args.dry_run) as store:
        for file in files:
            try:
                summary = _import_file(store, file, args.dry_run, stdin_head)
            except ExportFormatError as exc:
                if len(files) == 1:
                    raise
                total.skipped.append((0, f"{file}: {exc}"))
                continue
            if total.source is None:
                total.source = summary.source
            total.merge(summary)
    return _report(total, args.json)


def _nothing_in(folder: Path, what: str, reasons: list[str]) -> str:
    shown = "".join(f"\n  {r}" for r in reasons[:5])
    more = f"\n  … and {len(reasons) - 5} more" if len(reasons) > 5 else ""
    return f"nothing to import under {folder}: no file there is a {what}:{shown}{more}"


def _sessions_ahead(
    records: Iterator[dict[str, Any]], source: str, path: Path
) -> Iterator[dict[str, Any]]:
    """``records`` again, once a session is among them: read up to the first one
    (only the header, workspaces and notices come before it) so that a folder
    holding no session of this format is refused before the database is created,
    rather than leaving an empty database and "imported 0 session(s)"."""
    ahead: list[dict[str, Any]] = []
    for record in records:
        ahead.append(record)
        if record.get("kind") == "session":
            return itertools.chain(ahead, records)
    skipped = [
        str(r.get("message"))[len("skipped: ") :]
        for r in ahead
        if r.get("kind") == "notice" and str(r.get("message", "")).startswith("skipped: ")
    ]
    if skipped:
        raise ExportFormatError(_nothing_in(path, f"{source} session", skipped))
    raise ExportFormatError(f"nothing to import: no {source} session in {path}")


_SAFE_NAME = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


def _stdin_file(folder: Path) -> Path:
    """Another agent's session file read from stdin, saved in ``folder`` under the
    name its agent gives it (Claude Code names a session's file by its
    ``sessionId``, which the importer derives the ids from): the same session
    imported from stdin or from its file gets the same ids. Copied in blocks,
    never held whole."""
    name = "stdin"
    partial = folder / "stdin.part"
    with partial.open("wb") as out:
        for _ in range(50):
            line = sys.stdin.buffer.readline(1 << 20)
            if not line:
                break
            out.write(line)
            if name != "stdin":
                continue
            with contextlib.suppress(orjson.JSONDecodeError):
                record = orjson.loads(line)
                sid = record.get("sessionId") if isinstance(record, dict) else None
                if isinstance(sid, str) and sid and set(sid) <= _SAFE_NAME and sid[0] != ".":
                    name = sid
        shutil.copyfileobj(sys.stdin.buffer, out, 1 << 20)
    target = folder / f"{name}.jsonl"
    partial.rename(target)
    return target


def _precheck(first: bytes, name: str) -> None:
    """Refuse a file that is not an export (by its first line) before anything
    is created."""
    try:
        data = orjson.loads(first) if first.strip() else None
    except orjson.JSONDecodeError:
        data = None
    if isinstance(data, dict) and "format" in data:
        return  # a header: import_items checks its version
    guess = _guess(data)
    hint = f"; it looks like a {guess} session: use --from {guess}" if guess else ""
    raise ExportFormatError(
        f"{name} is not a Tron export (its first line is not the format's header){hint}"
    )


def _guess(data: Any) -> str | None:
    if not isinstance(data, dict):
        return None
    kind = data.get("type")
    if "parentUuid" in data or "leafUuid" in data or kind == "file-history-snapshot":
        return "claude-code"
    if kind in ("session_meta", "response_item", "event_msg", "turn_context"):
        return "codex"
    if kind == "session" and "cwd" in data:
        return "pi"
    return None


def _importer(source: str) -> Callable[[Path], Iterator[dict[str, Any]]]:
    # Imported only when asked for (another helper's package; it may be absent).
    try:
        module = importlib.import_module("tron_events.importers")
    except ImportError:
        module = None
    registry: dict[str, Callable[[Path], Iterator[dict[str, Any]]]] = dict(
        getattr(module, "IMPORTERS", {})
    )
    if source not in registry:
        known = ", ".join(sorted([OWN_SOURCE, *registry]))
        raise UnknownSource(f"unknown source {source!r}: the sources are {known}")
    return registry[source]


@contextlib.contextmanager
def _store(url: str, dry_run: bool) -> Iterator[EventStore]:
    """The target store. A dry run against a database that does not exist yet
    runs against a throwaway one, so it creates nothing."""
    path = sqlite_file(url)
    if dry_run and path is not None and not Path(path).exists():
        with (
            tempfile.TemporaryDirectory(prefix="tron-db-dry-run-") as tmp,
            EventStore.open(f"sqlite:///{tmp}/dry-run.db") as store,
        ):
            yield store
        return
    if path is not None and not Path(path).exists():
        _err(f"creating {path} …")
    with EventStore.open(url) as store:
        yield store


def _counting(lines: Iterable[bytes], progress: Progress, total: int | None) -> Iterator[bytes]:
    done = 0
    for line in lines:
        done += len(line)
        progress.update(done, total)
        yield line


def _import_file(
    store: EventStore, file: Path | None, dry_run: bool, stdin_head: bytes | None
) -> ImportSummary:
    from ..transfer import import_items, read_items

    progress = Progress(f"importing {file.name if file else 'stdin'}", unit="bytes")
    try:
        with contextlib.ExitStack() as stack:
            lines: Iterable[bytes]
            if file is None:
                lines, total = itertools.chain([stdin_head or b""], sys.stdin.buffer), None
            else:
                lines = stack.enter_context(file.open("rb"))
                total = file.stat().st_size
            items = read_items(_counting(lines, progress, total))
            return import_items(store, items, dry_run=dry_run, header_required=True)
    finally:
        progress.close()


def _import_counted(
    store: EventStore, records: Iterable[dict[str, Any]], dry_run: bool
) -> ImportSummary:
    from ..transfer import import_records

    progress = Progress("importing", unit="records")

    def counted() -> Iterator[dict[str, Any]]:
        for n, record in enumerate(records, start=1):
            progress.update(n)
            yield record

    try:
        return import_records(store, counted(), dry_run=dry_run)
    finally:
        progress.close()


def _report(summary: ImportSummary, as_json: bool) -> int:
    if as_json:
        print(orjson.dumps(summary.to_dict(), option=orjson.OPT_INDENT_2).decode())
    else:
        print(summary.describe())
    # A file of a folder that an importer skipped (another format, unreadable)
    # is as much a partial import as a skipped record of an export.
    skipped_files = any(m.startswith("skipped: ") for _, m in summary.notices)
    if summary.refused or summary.skipped or skipped_files:
        return PARTIAL
    return OK


__all__ = ["FAILED", "run"]
