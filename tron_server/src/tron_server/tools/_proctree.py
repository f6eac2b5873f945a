"""Process trees: run a command so that every process it starts can be found and killed.

:class:`ProcessTree` starts a command as the *root* of a tree, in a new session (its own
process group), and :meth:`ProcessTree.kill` is the one call that ends every process the
run started: children, grandchildren that ignore SIGTERM, ones that left the group with
``setsid``, double-forked daemons.

How the tree is tracked (Linux)
-------------------------------
The root is a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``; the flag survives
``exec``). A process of the tree whose parent exits -- a ``setsid`` grandchild, the daemon
of a double fork -- is then re-parented to the root instead of to init, so while the root
lives, "the processes this run started" is exactly the root's descendants, which a walk of
``/proc`` (parent links) finds. This needs no privilege: any user on Linux 3.4+ has it.
A process can only make *itself* a subreaper, and doing that between fork and exec
(``preexec_fn``) would make Python fork the whole server for every command; instead the
root starts as a small waiter spawned with ``posix_spawn`` ahead of time, which sets the
flag and then runs ``exec`` with the command when asked (:mod:`._spawn`;
``benchmarks/RESULTS_tools.md``).

``kill(grace)``:

1. SIGSTOP the root: it can no longer run the script's next command, nor exit and let
   its orphans escape to init.
2. SIGTERM every descendant (not the root: a fatal signal kills even a stopped process);
   wait up to ``grace`` seconds for them to exit.
3. SIGKILL whatever is left, walking again until a walk finds no live descendant (a
   process forking meanwhile is caught by the next walk; orphans come to the root).
4. SIGTERM then SIGCONT the root (a shell simply dies; a program or a ``trap`` can clean
   up) for what remains of the grace (at least 50 ms), then SIGKILL it; wait until it
   is reaped.

Alternatives considered: a cgroup v2 per run (``cgroup.kill``) needs a writable, delegated
cgroup: root has one, a normal user only inside a systemd-delegated scope, so it cannot be
the mechanism everyone relies on; it would catch nothing more than a subreaper does for a
single tree. A PID namespace (``unshare --pid``) changes what the command sees (``$$``,
``ps``) and needs user namespaces, which some distributions restrict.

Fallback
--------
Without ``prctl`` (not Linux) or without a readable ``/proc``, the tree is the process
group: SIGTERM to the group, SIGKILL after ``grace``. Processes that left the group
(``setsid``) then escape; :attr:`ProcessTree.tracks_descendants` says which mode is on.

A normal finish (the root exits by itself) kills nothing: background jobs (``cmd &``)
outlive it, as in a terminal, re-parented to init (or the nearest subreaper above us).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.lowlevel

from ._spawn import ExitWatch, spawn_root

__all__ = ["KILL_GRACE", "ProcessTree", "descendants", "subreaper_supported"]

KILL_GRACE = 0.4
"""Seconds between SIGTERM and SIGKILL: short, so a whole tree is gone within 1 s."""
_REAP_TIMEOUT = 5.0  # waiting for the kernel to let go of a SIGKILLed root
_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37
_PROC = Path("/proc")


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    prctl.restype = ctypes.c_int
    # Probe with the read-only GET: the call works here and changes nothing.
    flag = ctypes.c_int(0)
    if prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) != 0:
        return None
    return prctl


_PRCTL = _load_prctl()


def subreaper_supported() -> bool:
    """Whether trees are tracked by descendants (Linux, prctl and /proc), not by group."""
    return _PRCTL is not None and (_PROC / "self" / "stat").exists()


@dataclass(frozen=True)
class _Proc:
    pid: int
    ppid: int
    pgrp: int
    state: str
    start: int  # start time in clock ticks since boot: tells a reused pid apart

    @property
    def alive(self) -> bool:
        return self.state not in ("Z", "X")


def _read_proc(pid: int) -> _Proc | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("ascii", "replace")
    except OSError:
        return None
    # The command name is in parentheses and may itself contain ") ": cut at the last one.
    fields = raw[raw.rfind(")") + 2 :].split()
    try:
        return _Proc(pid, int(fields[1]), int(fields[2]), fields[0], int(fields[19]))
    except (IndexError, ValueError):
        return None


def _scan() -> dict[int, _Proc]:
    procs: dict[int, _Proc] = {}
    try:
        names = os.listdir(_PROC)
    except OSError:
        return procs
    for name in names:
        if name.isdigit():
            proc = _read_proc(int(name))
            if proc is not None:
                procs[proc.pid] = proc
    return procs


def descendants(root: int, procs: Mapping[int, _Proc] | None = None) -> list[_Proc]:
    """Every live (not zombie) process below ``root``, found through /proc parent links."""
    procs = _scan() if procs is None else procs
    children: dict[int, list[_Proc]] = {}
    for proc in procs.values():
        children.setdefault(proc.ppid, []).append(proc)
    found: list[_Proc] = []
    todo = [root]
    seen = {root}
    while todo:
        for child in children.get(todo.pop(), ()):
            if child.pid not in seen:
                seen.add(child.pid)
                todo.append(child.pid)
                if child.alive:
                    found.append(child)
    return found


def _signal(proc: _Proc, sig: int) -> None:
    """Signal ``proc`` unless its pid now belongs to another process (checked through a
    pidfd where the system has one, so the check and the signal are about one process)."""
    pidfd_open = getattr(os, "pidfd_open", None)
    send = getattr(signal, "pidfd_send_signal", None)
    if pidfd_open is not None and send is not None:
        try:
            fd = pidfd_open(proc.pid)
        except OSError:
            return  # gone
        try:
            now = _read_proc(proc.pid)
            if now is not None and now.start == proc.start:
                with contextlib.suppress(OSError):
                    send(fd, sig)
        finally:
            os.close(fd)
        return
    now = _read_proc(proc.pid)
    if now is not None and now.start == proc.start:
        with contextlib.suppress(OSError):
            os.kill(proc.pid, sig)


class ProcessTree:
    """A command and every process it starts; :meth:`kill` ends them all (one call).

    Start with :meth:`start`; read ``stdout`` (an :class:`asyncio.StreamReader` when piped);
    :meth:`wait` for the root's exit code.
    """

    def __init__(
        self,
        pid: int,
        stdout: asyncio.StreamReader | None,
        transport: asyncio.BaseTransport | None,
        tracked: bool,
    ) -> None:
        self.pid = pid
        self.stdout = stdout
        self._transport = transport
        self._exit = ExitWatch(pid)
        self.tracks_descendants = tracked
        self._root = _read_proc(pid) if tracked else None

    @classmethod
    async def start(
        cls,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        stdin: int | None = subprocess.DEVNULL,
        stdout: int | None = subprocess.PIPE,
        stderr: int | None = subprocess.STDOUT,
    ) -> ProcessTree:
        """Start ``argv`` as the root of a new tree (new session; a subreaper on Linux).

        ``stdin`` is ``subprocess.DEVNULL`` or None (inherited), ``stdout`` ``PIPE``,
        ``DEVNULL`` or None, ``stderr`` ``STDOUT``, ``DEVNULL`` or None. Raises ``OSError``
        (FileNotFoundError, NotADirectoryError, PermissionError...) when the command
        cannot be started.
        """
        tracked = subreaper_supported()
        # Shielded: a start takes milliseconds, and a command that did start must be
        # killed with its tree (below), not abandoned half-way.
        with anyio.CancelScope(shield=True):
            child = await spawn_root(
                argv, cwd=cwd, env=env, stdin=stdin, stdout=stdout, stderr=stderr,
                subreaper=tracked,
            )  # fmt: skip
            reader = transport = None
            loop = asyncio.get_running_loop()
            if child.stdout_fd is not None:
                reader = asyncio.StreamReader(limit=2**16, loop=loop)
                pipe = open(child.stdout_fd, "rb", buffering=0)  # noqa: SIM115 (the transport owns it)
                transport, _ = await loop.connect_read_pipe(
                    lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe
                )
            tree = cls(child.pid, reader, transport, tracked)
        try:
            await anyio.lowlevel.checkpoint_if_cancelled()
        except BaseException:
            await tree.kill()
            tree.close()
            raise
        return tree

    @property
    def returncode(self) -> int | None:
        return self._exit.returncode

    async def wait(self) -> int:
        """Wait for the root to exit; its exit code (negative: killed by that signal).
        Returns even while a background job still holds the output pipe."""
        return await self._exit.wait()

    def close(self) -> None:
        """Close our end of the output pipe (a background job still holding it would
        otherwise keep it open) and stop watching the root. Call after the root exited
        or :meth:`kill`."""
        if self.returncode is None:
            return
        if self._transport is not None:
            self._transport.close()
        self._exit.close()

    def members(self) -> list[int]:
        """The pids of the tree's live processes (the root first, while it runs)."""
        if not self.tracks_descendants:
            return [p.pid for p in _scan().values() if p.pgrp == self.pid and p.alive]
        procs = _scan()
        root = procs.get(self.pid)
        if root is None or not root.alive or not self._is_root(root):
            return []
        return [self.pid] + [p.pid for p in descendants(self.pid, procs)]

    def _is_root(self, proc: _Proc | None) -> bool:
        return (
            proc is not None
            and self.returncode is None
            and (self._root is None or proc.start == self._root.start)
        )

    async def kill(self, grace: float = KILL_GRACE) -> None:
        """End every process of the tree: SIGTERM, then SIGKILL after ``grace`` seconds.

        Returns once none is left (and the root is reaped). Shielded from cancellation:
        it runs while its caller is being cancelled (an abort). Safe to call twice, and
        after the root exited (then only the group's leftovers are killed).
        """
        with anyio.CancelScope(shield=True):
            if self.tracks_descendants:
                await self._kill_tree(grace)
            else:
                await self._kill_group(grace)
            with anyio.move_on_after(_REAP_TIMEOUT):
                await self.wait()

    # -- the tracked tree --------------------------------------------------------------

    async def _kill_tree(self, grace: float) -> None:
        deadline = time.monotonic() + grace
        root = _read_proc(self.pid)
        if not self._is_root(root):
            # The root has exited (a normal finish racing the abort): what is left of its
            # group is killed; processes it left behind elsewhere are background jobs.
            await self._kill_group(grace)
            return
        assert root is not None
        _signal(root, signal.SIGSTOP)
        termed: set[int] = set()

        def term_new() -> list[_Proc]:
            procs = descendants(self.pid)
            for proc in procs:
                if proc.pid not in termed:
                    termed.add(proc.pid)
                    _signal(proc, signal.SIGTERM)
            return procs

        # Not the root: a signal whose default action is fatal kills even a stopped
        # process, and its orphans would escape to init.
        delay = 0.005
        while term_new() and time.monotonic() < deadline:
            await anyio.sleep(delay)
            delay = min(delay * 2, 0.05)
        await self._kill_descendants()
        # Let the root handle its SIGTERM (bash dies at once; a program may clean up),
        # but never let it leave children behind: stop it again if it spawns any.
        # SIGTERM first: it is handled (or fatal) before the root runs any more of its code.
        _signal(root, signal.SIGTERM)
        _signal(root, signal.SIGCONT)
        root_deadline = max(deadline, time.monotonic() + 0.05)
        delay = 0.005
        while self._root_running() and time.monotonic() < root_deadline:
            if descendants(self.pid):
                _signal(root, signal.SIGSTOP)
                await self._kill_descendants()
                _signal(root, signal.SIGCONT)
            await anyio.sleep(delay)
            delay = min(delay * 2, 0.05)
        if self._root_running():
            _signal(root, signal.SIGSTOP)
            await self._kill_descendants()
            _signal(root, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)

    def _root_running(self) -> bool:
        proc = _read_proc(self.pid)
        return self._is_root(proc) and proc is not None and proc.alive

    async def _kill_descendants(self) -> None:
        """SIGKILL every descendant, walking again until a walk finds none alive."""
        with anyio.move_on_after(_REAP_TIMEOUT):
            while procs := descendants(self.pid):
                for proc in procs:
                    _signal(proc, signal.SIGKILL)
                await anyio.sleep(0.002)

    # -- the fallback: the process group ---------------------------------------------------

    def _group_alive(self) -> bool:
        try:
            os.killpg(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        if not _PROC.is_dir():
            return True
        # killpg also succeeds for unreaped zombies: look for a live member.
        return any(p.pgrp == self.pid and p.alive for p in _scan().values())

    async def _kill_group(self, grace: float) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGTERM)
        with anyio.move_on_after(grace):
            delay = 0.005
            while self._group_alive():
                await anyio.sleep(delay)
                delay = min(delay * 2, 0.05)
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        with anyio.move_on_after(_REAP_TIMEOUT):
            while self._group_alive():
                await anyio.sleep(0.01)
