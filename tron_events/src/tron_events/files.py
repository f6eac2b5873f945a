"""The files an agent changed, as recorded in events: states, changes, what differs
between two events, and unified diffs of recorded contents.

Three event types record changes, each as ``(path, before, after)`` triples whose
states are :class:`FileState` objects or None (the file did not exist):

- ``file.write`` and ``file.edit`` (one file: ``path``, ``before``, ``after``);
- ``file.changes`` (what a shell command changed: ``changes: [{path, before, after}]``).

``file.restore`` (what a rewind with files wrote, same shape) is a record, not a change
of the tree: it follows the event it restored to, and the files after it *are* that
event's, so the state at it is its parent's (its ``before`` states are what was on
disk, possibly outside edits a forced restore replaced).

Between two events ``a`` and ``b`` of a tree (:func:`transitions`): take the paths to
each from their last common event; the changes after it on ``a``'s side are undone
and those on ``b``'s side done. For each file: its state at ``a`` is the last
``after`` on ``a``'s side (else the first ``before`` on ``b``'s side) and its state at
``b`` the last ``after`` on ``b``'s side (else the first ``before`` on ``a``'s side).

Pure computation: no database, no file system (the store and the server use it).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "CHANGE_TYPES",
    "RECORD_TYPES",
    "FileChange",
    "FileDiff",
    "FileState",
    "FileTransition",
    "changes_of",
    "is_binary",
    "transitions",
    "unified_diff",
]

#: Event types whose changes make the files of the tree.
CHANGE_TYPES = frozenset({"file.write", "file.edit", "file.changes"})
#: Every event type whose payload lists file changes (``file.restore`` too).
RECORD_TYPES = CHANGE_TYPES | {"file.restore"}

FileKind = Literal["file", "symlink"]
#: Contents above this size are shown as "too large to diff".
MAX_DIFF_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class FileState:
    """A file's recorded state: a regular ``file`` or a ``symlink`` (its content is the
    link's target), the SHA-256 of its content, its size, the executable bit, and
    whether the content is ``stored`` (False: larger than the recording limit, known by
    hash only, so it cannot be restored)."""

    kind: FileKind
    hash: str
    size: int
    executable: bool = False
    stored: bool = True

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind, "hash": self.hash, "size": self.size}
        if self.executable:
            data["executable"] = True
        if not self.stored:
            data["stored"] = False
        return data

    @classmethod
    def from_json(cls, data: Any) -> FileState | None:
        """The state in a payload (None: absent). Raises ValueError when malformed."""
        if data is None:
            return None
        if not isinstance(data, Mapping):
            raise ValueError(f"a file state must be an object or null, got {data!r}")
        kind, h, size = data.get("kind"), data.get("hash"), data.get("size")
        if kind not in ("file", "symlink") or not isinstance(h, str) or not isinstance(size, int):
            raise ValueError(f"malformed file state {dict(data)!r}")
        return cls(
            kind, h, size, bool(data.get("executable", False)), data.get("stored") is not False
        )

    def same(self, other: FileState | None) -> bool:
        """Whether ``other`` is the same file: kind, content and executable bit."""
        return (
            other is not None
            and other.kind == self.kind
            and other.hash == self.hash
            and other.executable == self.executable
        )


def same_state(a: FileState | None, b: FileState | None) -> bool:
    """Equal states (both absent counts as equal)."""
    return b is None if a is None else a.same(b)


@dataclass(frozen=True, slots=True)
class FileChange:
    """One recorded change of one file."""

    path: str
    before: FileState | None
    after: FileState | None


def _change(item: Any) -> FileChange | None:
    if not isinstance(item, Mapping) or not isinstance(item.get("path"), str):
        return None
    try:
        return FileChange(
            item["path"],
            FileState.from_json(item.get("before")),
            FileState.from_json(item.get("after")),
        )
    except ValueError:
        return None


def changes_of(event_type: str, payload: Mapping[str, Any]) -> list[FileChange]:
    """The changes an event lists (none for other types, or for ``file.write`` and
    ``file.edit`` events written before contents were recorded)."""
    if event_type in ("file.write", "file.edit"):
        if "after" not in payload:
            return []
        one = _change(payload)
        return [one] if one is not None else []
    if event_type in ("file.changes", "file.restore"):
        items = payload.get("changes")
        if not isinstance(items, list):
            return []
        return [c for c in map(_change, items) if c is not None]
    return []


@dataclass(frozen=True, slots=True)
class FileTransition:
    """How one file differs between two events: ``before`` at the first, ``after`` at
    the second (None: absent)."""

    path: str
    before: FileState | None
    after: FileState | None

    @property
    def status(self) -> str:
        """``added``, ``deleted``, ``modified``, ``mode`` (only the executable bit) or
        ``type`` (a file became a symlink or back)."""
        b, a = self.before, self.after
        if b is None:
            return "added"
        if a is None:
            return "deleted"
        if a.kind != b.kind:
            return "type"
        if a.hash == b.hash:
            return "mode"
        return "modified"

    @property
    def restorable(self) -> bool:
        """Whether the state at the second event can be written back (its content was
        recorded, or it is an absence)."""
        return self.after is None or self.after.stored


def transitions(undone: Iterable[FileChange], done: Iterable[FileChange]) -> list[FileTransition]:
    """Files that differ between two events, by path.

    ``undone``: the changes (oldest first) after the last common event on the first
    event's side; ``done``: those on the second event's side. Files changed and
    changed back are left out.
    """
    first_before: dict[str, FileState | None] = {}
    last_after: dict[str, FileState | None] = {}
    for c in undone:
        first_before.setdefault(c.path, c.before)
        last_after[c.path] = c.after
    done_first: dict[str, FileState | None] = {}
    done_last: dict[str, FileState | None] = {}
    for c in done:
        done_first.setdefault(c.path, c.before)
        done_last[c.path] = c.after
    out: list[FileTransition] = []
    for path in sorted(first_before.keys() | done_first.keys()):
        at_first = last_after[path] if path in last_after else done_first[path]
        at_second = done_last[path] if path in done_last else first_before[path]
        if not same_state(at_first, at_second):
            out.append(FileTransition(path, at_first, at_second))
    return out


def common_ancestor(a: Sequence[Any], b: Sequence[Any]) -> int:
    """The index of the last event the two root-first paths share (-1: none)."""
    i = 0
    n = min(len(a), len(b))
    while i < n and a[i].id == b[i].id:
        i += 1
    return i - 1


# -- unified diffs ----------------------------------------------------------------------


def is_binary(data: bytes) -> bool:
    """Git's test: a NUL byte in the first 8000 bytes; or not UTF-8 text."""
    if b"\x00" in data[:8000]:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


def _shift(line: str, offset: int) -> str:
    """A hunk header of a diff of a slice starting ``offset`` lines into the file,
    numbered as in the whole file (difflib's numbers, empty ranges included, all
    move by the same offset)."""
    m = _HUNK.match(line)
    if m is None or offset == 0:
        return line
    a, b = int(m.group(1)) + offset, int(m.group(3)) + offset
    return f"@@ -{a}{m.group(2) or ''} +{b}{m.group(4) or ''} @@" + line[m.end() :]


def unified_diff(
    path: str, before: bytes | None, after: bytes | None, *, context: int = 3
) -> tuple[str, int, int] | None:
    """``(diff text, lines added, lines removed)`` between two contents of ``path``
    (None: absent), or None when either is binary. Common leading and trailing lines
    are set aside first, so a small edit of a large file diffs quickly."""
    if (before is not None and is_binary(before)) or (after is not None and is_binary(after)):
        return None
    a = (before or b"").decode("utf-8").splitlines(keepends=True)
    b = (after or b"").decode("utf-8").splitlines(keepends=True)
    start = 0
    while start < len(a) and start < len(b) and a[start] == b[start]:
        start += 1
    end = 0
    while end < len(a) - start and end < len(b) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    lo = max(0, start - context)
    a_mid = a[lo : len(a) - max(0, end - context)]
    b_mid = b[lo : len(b) - max(0, end - context)]
    lines = list(
        difflib.unified_diff(
            a_mid,
            b_mid,
            fromfile="/dev/null" if before is None else path,
            tofile="/dev/null" if after is None else path,
            n=context,
        )
    )
    added = removed = 0
    out: list[str] = []
    for line in lines:
        if line.startswith("@@"):
            line = _shift(line, lo)
        elif line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        out.append(line)
    return "".join(out), added, removed


@dataclass(frozen=True, slots=True)
class FileDiff:
    """One file's difference between two events, with its unified diff when both
    contents are recorded text (``note`` says why not otherwise: ``binary``,
    ``not_stored``, ``too_large``)."""

    path: str
    status: str
    before: FileState | None
    after: FileState | None
    diff: str | None
    added: int = 0
    removed: int = 0
    note: str | None = None

    @property
    def restorable(self) -> bool:
        return self.after is None or self.after.stored

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "status": self.status,
            "before": self.before.to_json() if self.before else None,
            "after": self.after.to_json() if self.after else None,
            "diff": self.diff,
            "added": self.added,
            "removed": self.removed,
            "note": self.note,
            "restorable": self.restorable,
        }


def file_diff(t: FileTransition, contents: Mapping[str, bytes], *, context: int = 3) -> FileDiff:
    """The diff of one transition, from the contents read so far (by hash)."""
    sides: list[bytes | None] = []
    note: str | None = None
    for state in (t.before, t.after):
        if state is None:
            sides.append(None)
        elif not state.stored:
            note = "not_stored"
            sides.append(None)
        elif state.size > MAX_DIFF_BYTES:
            note = note or "too_large"
            sides.append(None)
        elif state.hash not in contents:
            note = note or "missing"
            sides.append(None)
        else:
            sides.append(contents[state.hash])
    if note is not None:
        return FileDiff(t.path, t.status, t.before, t.after, None, note=note)
    before, after = sides
    if t.before is not None and t.before.kind == "symlink":
        before = b"-> " + (before or b"") + b"\n"
    if t.after is not None and t.after.kind == "symlink":
        after = b"-> " + (after or b"") + b"\n"
    result = unified_diff(t.path, before, after, context=context)
    if result is None:
        return FileDiff(t.path, t.status, t.before, t.after, None, note="binary")
    text, added, removed = result
    return FileDiff(t.path, t.status, t.before, t.after, text, added, removed)
