"""Cached folder listings: whether a file the agent's runs look for exists, in one ``stat``
of each folder on its way instead of one ``stat`` (or a failed one) per candidate file.

Every run looks up its rules files, skills, agent definitions and memory settings in
the same few folders (Tron's home, Claude Code's user folder, the working directory),
and most candidates do not exist. A folder's listing is kept while the folder's
``stat`` (ctime, mtime, inode, device) stays the same: adding, removing or renaming an
entry changes its mtime and ctime, so the next lookup lists it again. File systems
stamp a change with a coarse clock (a tick of a few ms), so a listing is kept only when
the folder was last changed well before it was taken: a change right after it always
gets a later stamp. A file's *content* is not covered (editing a file changes its own
stamps, not its folder's): callers stat or read a file that is present.

Within :func:`shared` (one worker-thread trip's lookups) each folder is looked at once:
the rules files, the skills and the agents all look in the same three folders.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from ..trust import claude_user_dir

__all__ = ["entries", "folder_name", "present", "settled", "shared", "user_dir"]

RACY_NS = 100_000_000
"""A listing is kept only for a folder last changed more than this before the lookup
began (0.1 s: many clock ticks; a change after the listing gets a later stamp)."""

MAX_KEPT = 1024

_lock = threading.Lock()
#: folder -> (its stamp, its entries, the same lower-cased)
_kept: dict[str, tuple[tuple[int, int, int, int], frozenset[str], frozenset[str]]] = {}
_local = threading.local()

Listing = tuple[frozenset[str], frozenset[str]] | None

#: A folder that cannot be listed (searchable, not readable: its entries may still be
#: reached by name), so its lookups are left to the caller's own checks.
_UNLISTED: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())


def settled(began: int, info: os.stat_result) -> bool:
    """Whether what ``info`` stamps last changed more than :data:`RACY_NS` before
    ``began`` (when the lookup began): only then may what was read be kept, since a change
    in the same clock tick would leave the stamps as they were."""
    return began - max(info.st_ctime_ns, info.st_mtime_ns) > RACY_NS


def folder_name(path: str | os.PathLike[str]) -> str:
    """``path`` as a string, ``~`` expanded (``Path.expanduser``'s, without a new path)."""
    name = os.fspath(path)
    return os.path.expanduser(name) if name.startswith("~") else name


_user_dirs: dict[tuple[str | None, str | None], str] = {}


def user_dir() -> str:
    """:func:`tron_server.trust.claude_user_dir` as a string, worked out once per value of
    the variables it depends on (each run's lookups ask for it several times)."""
    key = (os.environ.get("CLAUDE_CONFIG_DIR"), os.environ.get("HOME"))
    found = _user_dirs.get(key)
    if found is None:
        if len(_user_dirs) >= 16:
            _user_dirs.clear()
        found = _user_dirs[key] = str(claude_user_dir())
    return found


@contextmanager
def shared() -> Iterator[None]:
    """Within this (in this thread), each folder is stat'ed and listed at most once: for
    the lookups of one worker-thread trip, which take microseconds (what changes later is
    seen by the next trip)."""
    if getattr(_local, "memo", None) is not None:  # an outer one already shares
        yield
        return
    _local.memo = {}
    try:
        yield
    finally:
        _local.memo = None


def _listing(folder: str) -> Listing:
    memo: dict[str, Listing] | None = getattr(_local, "memo", None)
    if memo is None:
        return _look(folder)
    try:
        return memo[folder]
    except KeyError:
        found = memo[folder] = _look(folder)
        return found


def _look(folder: str) -> Listing:
    began = time.time_ns()
    try:
        info = os.stat(folder)
    except (OSError, ValueError):  # missing, not reachable, a NUL byte
        return None
    if not stat.S_ISDIR(info.st_mode):
        return None
    key = (info.st_ctime_ns, info.st_mtime_ns, info.st_ino, info.st_dev)
    kept = _kept.get(folder)
    if kept is not None and kept[0] == key:
        return kept[1], kept[2]
    try:
        names = frozenset(os.listdir(folder))
    except OSError:
        return _UNLISTED
    lowered = frozenset(n.lower() for n in names)
    if settled(began, info):
        with _lock:
            if len(_kept) >= MAX_KEPT:
                _kept.clear()
            _kept[folder] = (key, names, lowered)
    return names, lowered


def entries(folder: str | os.PathLike[str]) -> frozenset[str] | None:
    """The names in ``folder`` (None: not a folder, or not readable)."""
    found = _listing(os.fspath(folder))
    return None if found is None or found is _UNLISTED else found[0]


def present(folder: str | os.PathLike[str], *parts: str) -> bool:
    """Whether ``folder/parts[0]/…/parts[-1]`` may exist: False when some folder on the way
    does not list the next part (one ``stat`` per folder that exists). True does not say
    what the entry is (a file, a folder, a dangling link): the caller checks it. Names are
    matched regardless of case too, for case-insensitive file systems."""
    current = os.fspath(folder)
    for part in parts:
        found = _listing(current)
        if found is None:
            return False
        if found is _UNLISTED:  # not listable: the caller looks for itself
            return True
        if part not in found[0] and part.lower() not in found[1]:
            return False
        current = os.path.join(current, part)
    return True
