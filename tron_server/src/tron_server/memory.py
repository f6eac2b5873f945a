"""Giving freed memory back to the system (glibc), so a server's footprint falls
again after a burst (a big page of events, a client that stopped reading and left).

CPython allocates big objects (page-sized JSON frames) with ``malloc``. glibc
serves a block above its mmap threshold with its own mapping, unmapped on
free, but it raises that threshold to the size of each such block freed (up
to 32 MB), after which frames of that size come from the heap and their pages
stay with the process when freed. :func:`tune_allocator` fixes the threshold
(blocks of 1 MB and up are always mapped and returned); :func:`release_memory`
hands back what the heaps hold free (``malloc_trim``). Both do nothing where
glibc is not the allocator.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import threading
import time
from functools import cache
from typing import Any

log = logging.getLogger("tron_server.memory")

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 1024 * 1024

_lock = threading.Lock()
_last_release = 0.0


@cache
def _libc() -> Any | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.malloc_trim  # noqa: B018 - glibc only
        libc.mallopt  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


def tune_allocator() -> bool:
    """Fix glibc's mmap threshold at 1 MB (and trim the heap top above 8 MB);
    False where that is not possible."""
    libc = _libc()
    if libc is None:
        return False
    ok = bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))
    ok = bool(libc.mallopt(_M_TRIM_THRESHOLD, 8 * MMAP_THRESHOLD)) and ok
    return ok


def release_memory(min_interval: float = 1.0) -> bool:
    """``malloc_trim(0)``: return the heaps' free pages to the system. Blocking (a few
    ms; ctypes releases the GIL): call it from a worker thread. At most once per
    ``min_interval`` seconds; False when skipped or unavailable."""
    global _last_release
    libc = _libc()
    if libc is None:
        return False
    with _lock:
        now = time.monotonic()
        if now - _last_release < min_interval:
            return False
        _last_release = now
    libc.malloc_trim(0)
    return True


__all__ = ["MMAP_THRESHOLD", "release_memory", "tune_allocator"]
