"""Filesystem helpers: atomic replacement that keeps the file's mode."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path


def _read_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# Read once at import: os.umask is process-wide and setting it from worker threads races.
_UMASK = _read_umask()


def write_target(path: Path) -> Path:
    """Where a write to ``path`` lands: through a symlink to its target, so the link survives."""
    if path.is_symlink():
        return Path(os.path.realpath(path))
    return path


def atomic_write_bytes(path: Path, data: bytes) -> bool:
    """Replace ``path`` with ``data`` atomically; return True if the file was created.

    A temporary file in the same directory is written, flushed to disk and renamed
    over the target, so readers see the old or the new content, never a mix. An
    existing file keeps its permission bits; a new one gets the usual 0666 & ~umask.
    Parent folders are created. No temporary file is left behind on failure.
    """
    target = write_target(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = stat.S_IMODE(os.stat(target).st_mode)
        created = False
    except FileNotFoundError:
        mode = None
        created = True
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tron-tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode if mode is not None else 0o666 & ~_UMASK)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return created
