"""Reading a JSONL session file: one JSON object per line, with line numbers.

Agents write these files while they run, so a last line cut off by a crash is
normal, and hand-edited or merged files hold the odd broken line: those lines are
skipped and reported (the caller turns the reports into ``notice`` records). A
file that is not JSONL at all (binary, empty, mostly not JSON) raises
:class:`ImportFormatError` before anything of it is used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ._errors import ImportFormatError

__all__ = ["JsonlFile", "Line", "read_jsonl"]


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


def read_jsonl(path: Path) -> JsonlFile:
    """Parse ``path``; raise :class:`ImportFormatError` if it is not JSONL."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ImportFormatError(path, f"cannot be read ({exc.strerror or exc})") from None
    if b"\x00" in data[:4096]:
        raise ImportFormatError(path, "is a binary file, not JSONL")
    out = JsonlFile(path)
    raw_lines = data.split(b"\n")
    ends_with_newline = data.endswith(b"\n")
    bad = 0
    for index, raw in enumerate(raw_lines):
        if not raw.strip():
            continue
        number = index + 1
        last = index == len(raw_lines) - 1
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            bad += 1
            if last and not ends_with_newline:
                out.problems.append(
                    f"{path.name}:{number}: the last line is cut off (the agent was still "
                    "writing, or crashed): skipped"
                )
            else:
                out.problems.append(f"{path.name}:{number}: not valid JSON ({exc}): skipped")
            continue
        if not isinstance(value, dict):
            bad += 1
            out.problems.append(
                f"{path.name}:{number}: a JSON {type(value).__name__}, not an object: skipped"
            )
            continue
        out.lines.append(Line(number, value))
    if not out.lines:
        if bad:
            raise ImportFormatError(path, "has no valid JSON line: not a JSONL session file")
        raise ImportFormatError(path, "is empty")
    if bad > len(out.lines):
        raise ImportFormatError(
            path, f"{bad} of {bad + len(out.lines)} lines are not JSON objects: not JSONL"
        )
    return out
