"""Giving freed memory back to the system (glibc), so a server's footprint falls
again after a client that made it hold a lot (a burst of big pages, a client that
stopped reading) has left.

CPython allocates big objects (page-sized JSON frames) with ``malloc``. glibc
raises its mmap threshold to the size of each mapped block freed (up to 32 MB),
after which blocks of that size come from the heap, whose free pages stay with
the process. :func:`release_memory` hands them back (``malloc_trim``). (Fixing
the threshold low instead, so that every big block is mapped and unmapped, was
measured worse: each new frame then page-faults, on the event loop.) It does
nothing where glibc is not the allocator.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
import time
from functools import cache
from typing import Any

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
    except (OSError, AttributeError):
        return None
    return libc


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


#: ``mallopt``'s parameter number for the most arenas glibc keeps (malloc.h).
_M_ARENA_MAX = -8


def limit_malloc_arenas(count: int = 1) -> bool:
    """Let glibc keep at most ``count`` malloc arenas (``mallopt(M_ARENA_MAX)``), unless
    ``MALLOC_ARENA_MAX`` says otherwise. By default glibc gives threads arenas of their
    own (up to eight per core): the store's worker threads' bursts (a long session's
    resume) then leave free pages spread over several heaps, which ``malloc_trim`` cannot
    give back. Measured: 20 resumed 2,000-turn sessions left a server at 1.47× its fresh
    RSS, 1.32× with two (``benchmarks/RESULTS_peers.md``). One, not two: ``malloc_trim``
    returns the free top of the main heap only (glibc's ``mtrim``); a second arena's top,
    where the workers' bursts went, stayed resident and grew with the sessions resumed
    (1.09–1.16× against 1.06–1.07× with one, issue 29's fourth pass; the resume's time
    the same within noise: most allocations hold the GIL anyway). Call before threads
    start; False when unavailable or left to the variable."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    libc = _libc()
    mallopt = getattr(libc, "mallopt", None) if libc is not None else None
    if mallopt is None:
        return False
    return bool(mallopt(_M_ARENA_MAX, count))


__all__ = ["limit_malloc_arenas", "release_memory"]
