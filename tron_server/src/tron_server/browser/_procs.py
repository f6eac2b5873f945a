"""Chromium's processes, found through ``/proc``, so that none outlives the browser.

Playwright starts Chromium (and Chromium its zygotes, renderers, GPU and utility
processes) and kills the process group when the browser closes. As a second line, the
engine marks the Chromium it launches with a unique command-line switch, remembers the
browser process and, after every close, kills whatever is left of that tree: a renderer
that hung, a child that left the group. (Linux; elsewhere these find nothing and the
group kill is all there is.)
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import anyio

__all__ = ["Proc", "find_marked", "kill_leftovers", "tree"]

_PROC = Path("/proc")


@dataclass(frozen=True)
class Proc:
    """A process: its pid, parent and start time (which tells a reused pid apart)."""

    pid: int
    ppid: int
    start: int


def _read(pid: int) -> Proc | None:
    try:
        raw = (_PROC / str(pid) / "stat").read_bytes().decode("ascii", "replace")
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2 :].split()
    try:
        if fields[0] in ("Z", "X"):
            return None
        return Proc(pid, int(fields[1]), int(fields[19]))
    except (IndexError, ValueError):
        return None


def _all() -> list[Proc]:
    try:
        names = os.listdir(_PROC)
    except OSError:
        return []
    return [p for n in names if n.isdigit() and (p := _read(int(n))) is not None]


def _cmdline(pid: int) -> bytes:
    try:
        return (_PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return b""


def find_marked(marker: str) -> Proc | None:
    """The process started with the switch ``marker`` whose parent does not have it (the
    browser process: Chromium hands some switches on to its children)."""
    wanted = marker.encode()
    marked = {p.pid: p for p in _all() if wanted in _cmdline(p.pid).split(b"\0")}
    for proc in marked.values():
        if proc.ppid not in marked:
            return proc
    return None


def tree(root: Proc) -> list[Proc]:
    """``root`` (while it lives) and every live process below it."""
    procs = _all()
    children: dict[int, list[Proc]] = {}
    for proc in procs:
        children.setdefault(proc.ppid, []).append(proc)
    alive = {p.pid: p for p in procs}
    found = [root] if alive.get(root.pid) == root else []
    todo = [root.pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child.pid)
    return found


def _alive(proc: Proc) -> bool:
    return _read(proc.pid) == proc


async def kill_leftovers(procs: list[Proc], grace: float = 2.0) -> list[Proc]:
    """Wait up to ``grace`` seconds for ``procs`` to exit, then SIGKILL the ones still there
    (checked by start time, so a reused pid is left alone); the ones that had to be killed."""
    deadline = time.monotonic() + grace
    left = [p for p in procs if _alive(p)]
    while left and time.monotonic() < deadline:
        await anyio.sleep(0.05)
        left = [p for p in left if _alive(p)]
    for proc in left:
        with contextlib.suppress(OSError):
            os.kill(proc.pid, signal.SIGKILL)
    return left
