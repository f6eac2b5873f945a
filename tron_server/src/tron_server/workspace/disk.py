"""A file's state on disk, and writing a recorded state back, through the tools' path
policy (:class:`~tron_server.tools.PathPolicy`): the same resolved, checked paths as
Write and Edit, so a restore can write nothing the agent itself could not.

Paths are taken as the names themselves (``follow_last=False``): a symlink is a state
of its own (its target is its content), restored as a symlink, never written through.
Folders are not states: a folder where a file was recorded reads as absent.
"""

from __future__ import annotations

import hashlib
import os
import stat as st
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from tron_events import FileState

from ..paths import PathError, PathPolicy, ResolvedPath

__all__ = [
    "OnDisk",
    "apply_state",
    "blocked",
    "capture",
    "holds_files",
    "prune_empty_folders",
    "read_entry",
    "state_of_bytes",
]


def _read_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# Read once at import: os.umask is process-wide and setting it from worker threads races.
_UMASK = _read_umask()
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class OnDisk:
    """What is at a path now: its state (None: nothing, or a folder) and, when at
    most the size limit, its content (a symlink's: its target)."""

    state: FileState | None
    data: bytes | None
    is_dir: bool = False
    mode: int | None = None


def state_of_bytes(
    data: bytes, *, kind: str = "file", executable: bool = False, limit: int
) -> FileState:
    """The state of a content (``stored``: whether it is within ``limit``)."""
    return FileState(
        "symlink" if kind == "symlink" else "file",
        hashlib.sha256(data).hexdigest(),
        len(data),
        executable and kind != "symlink",
        len(data) <= limit,
    )


def capture(entry: ResolvedPath, limit: int) -> OnDisk:
    """The state of an already resolved file (a tool's target, before it writes)."""
    info = entry.stat
    if info is None or not st.S_ISREG(info.st_mode):
        return OnDisk(None, None, is_dir=info is not None and st.S_ISDIR(info.st_mode))
    return _read_file(entry, info, limit)


def _read_file(entry: ResolvedPath, info: os.stat_result, limit: int) -> OnDisk:
    executable = bool(info.st_mode & 0o100)
    digest = hashlib.sha256()
    chunks: list[bytes] = []
    size = 0
    with entry.open_read() as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
            if size <= limit:
                chunks.append(chunk)
    data = b"".join(chunks) if size <= limit else None
    state = FileState("file", digest.hexdigest(), size, executable, size <= limit)
    return OnDisk(state, data, mode=st.S_IMODE(info.st_mode))


def blocked(path: str) -> bool:
    """Whether the nearest existing folder on the way to ``path`` is not a folder but a
    file or a symlink. Recorded paths have no symlinks on the way (they are resolved),
    so ``path`` is then not there: it reads as absent, and what is in the way, being a
    change too, goes first when restoring."""
    return blocker_of(path) is not None


def blocker_of(path: str) -> str | None:
    """The file or symlink standing where a folder on the way to ``path`` should be
    (the nearest existing entry on the way), or None (see :func:`blocked`)."""
    for parent in Path(path).parents:
        try:
            info = os.lstat(parent)
        except FileNotFoundError:
            continue
        except OSError:
            return None
        return None if st.S_ISDIR(info.st_mode) else str(parent)
    return None


def read_entry(policy: PathPolicy, path: str, limit: int) -> OnDisk:
    """The state of ``path`` on disk (the name itself: a symlink is not followed)."""
    try:
        entry = policy.resolve(path, follow_last=False)
    except PathError:
        if blocked(path):
            return OnDisk(None, None)
        raise
    with entry:
        info = entry.stat
        if info is None:
            return OnDisk(None, None)
        if st.S_ISDIR(info.st_mode):
            return OnDisk(None, None, is_dir=True)
        if st.S_ISLNK(info.st_mode):
            target = os.fsencode(os.readlink(entry.path))
            return OnDisk(state_of_bytes(target, kind="symlink", limit=limit), target)
        if not st.S_ISREG(info.st_mode):
            raise PathError(f"{path} is not a regular file, a symlink or a folder")
        return _read_file(entry, info, limit)


def _mode(current: int | None, executable: bool) -> int:
    """Permission bits for a restored file: the current file's (or a new file's)
    with the executable bits set where readable, or cleared, as git checks out."""
    mode = current if current is not None else 0o666 & ~_UMASK
    if executable:
        return mode | (mode & 0o444) >> 2
    return mode & ~0o111


def apply_state(
    policy: PathPolicy,
    path: str,
    state: FileState | None,
    data: bytes | None,
    *,
    mode: int | None = None,
) -> None:
    """Make ``path`` be ``state`` (None: remove it) with content ``data``; the policy
    checks every write. ``mode`` keeps given permission bits (a rollback). An empty
    folder in the way of a file is removed (folders are not recorded); one that holds
    files raises :class:`PathError`."""
    try:
        entry = policy.resolve(path, follow_last=False)
    except PathError:
        if state is None and blocked(path):
            return  # a file where a folder on the way was: nothing there to remove
        raise
    with entry:
        info = entry.stat
        if state is None:
            if info is not None and not st.S_ISDIR(info.st_mode):
                policy.remove(entry)
            return
        if data is None:
            raise PathError(f"no content to write {path} with")
        if info is not None and st.S_ISDIR(info.st_mode):
            policy.check_write(entry)
            remove_empty_tree(entry.path)
    with policy.resolve(path, follow_last=False) as entry:
        info = entry.stat
        if state.kind == "symlink":
            policy.write_symlink(entry, data)
            return
        regular = info is not None and st.S_ISREG(info.st_mode)
        current = st.S_IMODE(info.st_mode) if info is not None and regular else None
        if mode is None:
            mode = _mode(current, state.executable)
        policy.write_bytes(entry, data, mode=mode)


def holds_files(folder: Path, going: Collection[str] = ()) -> bool:
    """Whether anything but folders (a file, a symlink) is below ``folder``, leaving out
    the paths in ``going`` (removed first by the same restore)."""
    for dirpath, dirnames, files in os.walk(folder):
        links = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        if any(os.path.join(dirpath, name) not in going for name in [*files, *links]):
            return True
    return False


def remove_empty_tree(folder: Path) -> None:
    """Remove a tree of empty folders; :class:`PathError` if it holds anything else."""
    if holds_files(folder):
        raise PathError(f"{folder} is a folder holding files, where a file is to be restored")
    for dirpath, _, _ in sorted(os.walk(folder), key=lambda w: -len(w[0])):
        os.rmdir(dirpath)


def prune_empty_folders(path: str, stop: Path) -> None:
    """Remove the folders above ``path`` that are now empty, up to (not including)
    ``stop``: what a file that is restored to absent leaves behind."""
    folder = Path(path).parent
    while folder != stop and folder.is_relative_to(stop):
        try:
            os.rmdir(folder)
        except OSError:
            return
        folder = folder.parent
