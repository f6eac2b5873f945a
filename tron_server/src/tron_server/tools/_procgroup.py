"""Killing a whole process group, and knowing when it is really gone."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import anyio


def group_alive(pgid: int) -> bool:
    """True while a live (non-zombie) process remains in group ``pgid``.

    ``killpg(pgid, 0)`` also succeeds for zombies nobody reaped yet (a container whose
    init does not reap), so on Linux the members found in /proc are checked too.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # Fields after the parenthesized command name: state ppid pgrp ...
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) >= 3 and int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            return True
    return False


def signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def wait_group_gone(pgid: int, timeout: float) -> bool:
    """Poll until the group has no live member; False if it still has one after ``timeout``."""
    with anyio.move_on_after(timeout):
        delay = 0.01
        while group_alive(pgid):
            await anyio.sleep(delay)
            delay = min(delay * 2, 0.1)
        return True
    return False


async def terminate_group(pgid: int, grace: float = 2.0) -> None:
    """SIGTERM the group, then SIGKILL whatever is left after ``grace`` seconds, and wait.

    Shielded from cancellation: it runs while the caller is being cancelled.
    """
    with anyio.CancelScope(shield=True):
        signal_group(pgid, signal.SIGTERM)
        if await wait_group_gone(pgid, grace):
            return
        signal_group(pgid, signal.SIGKILL)
        await wait_group_gone(pgid, 5.0)
