"""Reading JSONL: one decoded record per line, and the payload's exact text.

An event line written by ``export`` ends with ``"payload":<the stored JSON>}``;
keeping that text (when it decodes to the same value) lets the import store
the very bytes that were exported rather than a re-encoding of them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from ..store import EventStore
from ._import import ImportSummary, Item, import_items
from .format import ExportFormatError

__all__ = ["import_jsonl", "read_items"]

_PAYLOAD_KEY = b'"payload":'


def _raw_payload(line: bytes, payload: Any) -> str | None:
    # In compact JSON the first '"payload":' is the top-level key when it comes
    # after scalar fields only (a quote inside a string is escaped as \").
    at = line.find(_PAYLOAD_KEY)
    if at < 0:
        return None
    raw = line[at + len(_PAYLOAD_KEY) : -1]
    if not (raw.startswith(b"{") and raw.endswith(b"}") and line.endswith(b"}")):
        return None
    try:
        same = orjson.loads(raw) == payload
    except orjson.JSONDecodeError:
        return None
    return raw.decode() if same else None


def read_items(lines: Iterable[bytes]) -> Iterator[Item]:
    """The records of a JSONL stream (a binary file, or its lines); blank
    lines are ignored."""
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped:
            continue
        try:
            data = orjson.loads(stripped)
        except orjson.JSONDecodeError as exc:
            cut = "" if line.endswith(b"\n") else " (the line is cut short: a truncated file?)"
            yield Item(number, error=f"not valid JSON: {exc}{cut}")
            continue
        raw = None
        if isinstance(data, dict) and data.get("kind") == "event":
            raw = _raw_payload(stripped, data.get("payload"))
        yield Item(number, data, raw)


def import_jsonl(
    store: EventStore, source: str | os.PathLike[str] | IO[bytes], *, dry_run: bool = False
) -> ImportSummary:
    """Import an export file (a path, or a binary file object such as
    ``sys.stdin.buffer``). Its first line must be the format's header
    (:class:`ExportFormatError` otherwise, before anything is written)."""
    with contextlib.ExitStack() as stack:
        if isinstance(source, str | os.PathLike):
            path = Path(source)
            if path.is_dir():
                raise ExportFormatError(f"{path} is a folder: import its files one by one")
            fh: IO[bytes] = stack.enter_context(path.open("rb"))
        else:
            fh = source
        return import_items(store, read_items(fh), dry_run=dry_run, header_required=True)
    raise AssertionError("unreachable")  # pragma: no cover
