"""Whether anything under a folder changed since the last look (Linux inotify).

A snapshot of an unchanged folder costs git a ``lstat`` of every file; most shell
commands change nothing. :class:`ChangeWatch` keeps one inotify watch per folder of the
tree and a *dirty* flag that any event sets (a file created, written, closed after
writing, deleted, moved, its mode changed; a folder created, deleted or moved). While it
is clean the last snapshot still describes the folder and is reused.

It only ever errs towards "changed": an event queue overflow, a watch that cannot be
added, or anything unexpected marks the folder dirty (and rebuilds the watches), and the
caller then takes a real snapshot. Folders created after the watch started get their
watches when their creation event is read, before the next decision; what was written
in them before that is covered by the snapshot that creation event forces. ``.git``
folders are not watched (git writes there all the time; git never records them).

Not available (``start`` returns None): other systems than Linux, a tree with more
folders than :data:`MAX_WATCHES`, or inotify limits reached. Changes made by other
machines to a network file system are not seen by inotify; commands run here are.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import logging
import os
import select
import struct
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["MAX_WATCHES", "ChangeWatch"]

log = logging.getLogger("tron_server.workspace")

#: Trees with more folders than this are snapshotted every time instead.
MAX_WATCHES = 20_000

_IN_MODIFY = 0x002
_IN_ATTRIB = 0x004
_IN_CLOSE_WRITE = 0x008
_IN_MOVED_FROM = 0x040
_IN_MOVED_TO = 0x080
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_DELETE_SELF = 0x400
_IN_MOVE_SELF = 0x800
_IN_Q_OVERFLOW = 0x4000
_IN_IGNORED = 0x8000
_IN_ONLYDIR = 0x01000000
_IN_DONT_FOLLOW = 0x02000000
_IN_ISDIR = 0x40000000
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC
_CHANGES = (
    _IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE
    | _IN_DELETE | _IN_DELETE_SELF | _IN_MOVE_SELF
)  # fmt: skip
_EVENT = struct.Struct("iIII")

_libc: ctypes.CDLL | None = None


def _load() -> ctypes.CDLL | None:
    global _libc
    if _libc is None and sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            libc.inotify_init1.argtypes = [ctypes.c_int]
            libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
            _libc = libc
        except (OSError, AttributeError):
            return None
    return _libc


class _TooMany(Exception):
    pass


class ChangeWatch:
    """The dirty flag of a folder tree (see the module docstring)."""

    def __init__(self, libc: ctypes.CDLL, root: Path, around: Sequence[Path]) -> None:
        self._libc = libc
        self.root = root
        self._around = list(around)
        self._fd = -1
        self._folders: dict[int, Path] = {}
        self.dirty = True

    @classmethod
    def start(cls, root: Path, around: Sequence[Path] = ()) -> ChangeWatch | None:
        """Watch ``root`` and every folder below it, and the folders ``around`` (only
        their own entries: the folders between a repository's top and ``root``, whose
        ignore files apply). None when it cannot (module docstring)."""
        libc = _load()
        if libc is None:
            return None
        watch = cls(libc, root, around)
        try:
            watch._build()
        except (_TooMany, OSError) as exc:
            log.info("not watching %s for changes (%s): every snapshot scans it", root, exc)
            watch.close()
            return None
        return watch

    def _build(self) -> None:
        self.close()
        fd = self._libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        self._fd = fd
        self._folders = {}
        for folder in self._around:
            self._add(folder)
        self._add_tree(self.root)
        self.dirty = True

    def _add(self, folder: Path) -> None:
        if len(self._folders) >= MAX_WATCHES:
            raise _TooMany(f"more than {MAX_WATCHES} folders")
        wd = self._libc.inotify_add_watch(
            self._fd, os.fsencode(folder), _CHANGES | _IN_ONLYDIR | _IN_DONT_FOLLOW
        )
        if wd < 0:
            code = ctypes.get_errno()
            if code in (errno.ENOENT, errno.ENOTDIR):
                return  # gone meanwhile: its parent's event says so
            raise OSError(code, f"inotify_add_watch {folder}: {os.strerror(code)}")
        self._folders[wd] = folder

    def _add_tree(self, top: Path) -> None:
        self._add(top)
        for dirpath, dirnames, _ in os.walk(top):
            if ".git" in dirnames:
                dirnames.remove(".git")
            for name in dirnames:
                self._add(Path(dirpath) / name)

    def changed(self) -> bool:
        """Whether anything changed since :meth:`clean` (reads the pending events)."""
        if self._fd < 0:
            return True
        try:
            self._drain()
        except (OSError, _TooMany) as exc:
            log.info("change watch of %s rebuilt: %s", self.root, exc)
            try:
                self._build()
            except (OSError, _TooMany):
                self.close()
            return True
        return self.dirty

    def quiet(self) -> bool:
        """True when nothing changed since :meth:`clean` and no event is pending: a poll
        of the inotify descriptor, no read (cheap enough for an event loop's thread)."""
        if self._fd < 0 or self.dirty:
            return False
        try:
            readable, _, _ = select.select([self._fd], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable

    def clean(self) -> None:
        """Mark the tree unchanged: call right before scanning it (what changes during
        the scan sets the flag again)."""
        with contextlib.suppress(OSError, _TooMany):
            self._drain()
        self.dirty = self._fd < 0

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                return
            offset = 0
            while offset + _EVENT.size <= len(data):
                wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
                name = data[offset + _EVENT.size : offset + _EVENT.size + length].rstrip(b"\0")
                offset += _EVENT.size + length
                if mask & _IN_Q_OVERFLOW:
                    raise OSError(errno.EOVERFLOW, "the event queue overflowed")
                if mask & _IN_IGNORED:
                    self._folders.pop(wd, None)
                    continue
                self.dirty = True
                if mask & _IN_ISDIR and mask & (_IN_CREATE | _IN_MOVED_TO) and name != b".git":
                    parent = self._folders.get(wd)
                    new = parent / os.fsdecode(name) if parent is not None else None
                    if new is not None and new.is_relative_to(self.root):
                        self._add_tree(new)  # folders "around" the tree are watched alone

    def close(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd = -1
        self._folders = {}

    def __del__(self) -> None:
        self.close()
