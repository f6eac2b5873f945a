"""Reading a JSONL session file: one JSON object per line, with line numbers.

Agents write these files while they run, so a last line cut off by a crash is
normal, and hand-edited or merged files hold the odd broken line: those lines are
skipped and reported (the caller turns the reports into ``notice`` records). A
file that is not JSONL at all (binary, empty, mostly not JSON) raises
:class:`ImportFormatError` before anything of it is used, and a line longer than
:data:`MAX_LINE_BYTES` raises :class:`LineTooLongError` (with its line number).
Lines are read one at a time: the file is never held whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ._errors import ImportFormatError, LineTooLongError

__all__ = ["MAX_LINE_BYTES", "JsonlFile", "Line", "iter_lines", "parse_line", "read_jsonl"]

#: The longest line (one record) an importer reads, in bytes without its newline.
#: Longer lines are refused (:class:`LineTooLongError`) without being read whole:
#: the largest real records (a tool result holding a big file, an image) are a few
#: MiB, and one line is parsed in memory at once.
MAX_LINE_BYTES = 32 << 20


@dataclass(frozen=True, slots=True)
class Line:
    """One JSON object of the file and its 1-based line number."""

    number: int
    value: dict[str, Any]


@dataclass(slots=True)
class JsonlFile:
    path: Path
    lines: list[Line] = field(default_factory=list)
    #: Lines that were skipped, and why (for ``notice`` records).
    problems: list[str] = field(default_factory=list)


def iter_lines(path: Path) -> Iterator[tuple[int, int, bytes]]:
    """``(line number, byte offset, bytes)`` of each non-blank line of ``path``,
    read one at a time (the file is never held whole).

    Raises :class:`ImportFormatError` when the file cannot be read or is binary,
    and :class:`LineTooLongError` at the first line over :data:`MAX_LINE_BYTES`
    (read no further than the limit: such a line is never held whole either).
    A last line without its newline ends without one (a cut-off write).
    """
    limit = MAX_LINE_BYTES
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise ImportFormatError(path, f"cannot be read ({exc.strerror or exc})") from None
    with handle:
        try:
            if b"\x00" in handle.read(4096):
                raise ImportFormatError(path, "is a binary file, not JSONL")
            handle.seek(0)
            offset, number = 0, 0
            while raw := handle.readline(limit + 1):
                number += 1
                if len(raw) > limit and not raw.endswith(b"\n"):
                    raise LineTooLongError(path, number, limit)
                if raw.strip():
                    yield number, offset, raw
                offset += len(raw)
        except OSError as exc:
            raise ImportFormatError(path, f"cannot be read ({exc.strerror or exc})") from None


def parse_line(path: Path, number: int, raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """The JSON object of one line, or why it is skipped (a ``notice`` message)."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if not raw.endswith(b"\n"):
            return None, (
                f"{path.name}:{number}: the last line is cut off (the agent was still "
                "writing, or crashed): skipped"
            )
        return None, f"{path.name}:{number}: not valid JSON ({exc}): skipped"
    if not isinstance(value, dict):
        return None, f"{path.name}:{number}: a JSON {type(value).__name__}, not an object: skipped"
    return value, None


def check_lines(path: Path, good: int, bad: int) -> None:
    """Refuse a file whose lines are mostly not JSON objects (or that has none)."""
    if not good:
        if bad:
            raise ImportFormatError(path, "has no valid JSON line: not a JSONL session file")
        raise ImportFormatError(path, "is empty")
    if bad > good:
        raise ImportFormatError(
            path, f"{bad} of {bad + good} lines are not JSON objects: not JSONL"
        )


def read_jsonl(path: Path) -> JsonlFile:
    """Parse ``path``; raise :class:`ImportFormatError` if it is not JSONL (and
    :class:`LineTooLongError` if a line is over :data:`MAX_LINE_BYTES`)."""
    out = JsonlFile(path)
    for number, _offset, raw in iter_lines(path):
        value, problem = parse_line(path, number, raw)
        if value is None:
            out.problems.append(str(problem))
        else:
            out.lines.append(Line(number, value))
    check_lines(path, len(out.lines), len(out.problems))
    return out
