"""Starting a process tree's root without ``fork``: ``posix_spawn`` and a waiting subreaper.

The root of a :class:`~._proctree.ProcessTree` must be a *child subreaper*
(``prctl(PR_SET_CHILD_SUBREAPER)``), which a process can only make itself. Doing it between
fork and exec (``preexec_fn``) forces CPython to ``fork`` the whole server (its page tables,
copy-on-write faults, the after-fork hooks): 3–4× the time of a plain ``vfork`` spawn.

Instead the root is started *ahead of time*, with ``os.posix_spawn`` (a vfork-style clone),
as a tiny **waiter** program (perl, or this Python when perl is absent) that makes itself a
subreaper, closes what it should not pass on, and blocks reading fd 3. Starting a command
is then one write: the waiter receives the working directory, the environment and argv,
changes directory, replaces its environment and ``exec``-s the command, keeping its pid (and the
subreaper flag, which survives ``exec``). It reports on fd 4 (close-on-exec): ``X`` just
before the exec, then EOF on success; ``E <errno> <step>`` on failure. So the command's
start costs a pipe write and an ``exec``, and a fresh waiter for the next command is
spawned after the command has started, off the path a tool call waits on.

One idle waiter is kept per process (for the common stdio: stdin ``/dev/null``, stdout a
pipe, stderr onto stdout); other stdio set-ups and concurrent starts spawn a waiter and
use it at once (its start-up, ~3 ms for perl, is then on the path). A waiter is not tied
to an event loop: it is a pid and three file descriptors until it is handed out. When our
process exits (or drops the waiter) fd 3 reaches EOF and the waiter exits without running
anything.

The exit of a started root is watched through a pidfd on the event loop (Linux 5.3+), or
by a thread blocked in ``waitpid`` where pidfds are not available.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import os
import platform
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["POOL", "Child", "ExitWatch", "spawn_root", "waiter_kind"]

# prctl's syscall number, for the perl waiter (perl has no prctl of its own).
_PRCTL_NR = {"x86_64": 157, "amd64": 157, "aarch64": 167, "arm64": 167, "riscv64": 167}

# Both waiters: become a subreaper; read the request from fd 3 until EOF (none: exit
# quietly); fields are NUL-separated: cwd, the number of environment entries, the
# entries, then argv.
_PERL_WAITER = r"""
my $ok = $ARGV[0] eq '-' || syscall($ARGV[0] + 0, 36, 1, 0, 0, 0) == 0;
my $err = $ok ? 0 : $! + 0;
open(my $req, '<&=', 3) or exit 120;
open(my $st, '>&=', 4) or exit 120;
fcntl($req, 2, 1); fcntl($st, 2, 1);
binmode $req;
my $msg = do { local $/; <$req> };
exit 0 if !defined($msg) || $msg eq '';
close $req;
sub fail { syswrite($st, "E $_[0] $_[1]"); exit 127 }
fail($err, 'prctl') unless $ok;
my @f = split /\0/, $msg, -1;
my $cwd = shift @f;
my $n = shift @f;
%ENV = ();
for my $kv (splice @f, 0, $n) {
  my $i = index($kv, '=');
  $ENV{substr($kv, 0, $i)} = substr($kv, $i + 1);
}
chdir($cwd) or fail($! + 0, 'cwd');
syswrite($st, 'X');
{ exec { $f[0] } @f; }
fail($! + 0, 'exec');
"""

_PY_WAITER = r"""
import os, signal, sys
SUBREAPER = sys.argv[1] == "1"
def fail(e, what):
    os.write(4, b"E %d %s" % (e, what))
    os._exit(127)
ok, err = True, 0
if SUBREAPER:
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        ok = libc.prctl(36, 1, 0, 0, 0) == 0
        err = 0 if ok else ctypes.get_errno()
    except Exception:
        ok, err = False, 38
os.set_inheritable(3, False)
os.set_inheritable(4, False)
chunks = []
while True:
    chunk = os.read(3, 65536)
    if not chunk:
        break
    chunks.append(chunk)
msg = b"".join(chunks)
if not msg:
    os._exit(0)
os.close(3)
if not ok:
    fail(err, b"prctl")
f = msg.split(b"\0")
n = int(f[1])
env = dict(kv.split(b"=", 1) for kv in f[2 : 2 + n])
argv = f[2 + n :]
try:
    os.chdir(f[0])
except OSError as e:
    fail(e.errno or 0, b"cwd")
for sig in (signal.SIGPIPE, signal.SIGXFSZ):
    signal.signal(sig, signal.SIG_DFL)
os.write(4, b"X")
try:
    os.execvpe(argv[0], argv, env)
except OSError as e:
    fail(e.errno or 0, b"exec")
"""


def _find_perl() -> tuple[str, int] | None:
    perl = shutil.which("perl")
    nr = _PRCTL_NR.get(platform.machine().lower())
    if perl is None or nr is None or os.environ.get("TRON_SPAWN_WAITER") == "python":
        return None
    return perl, nr


_PERL: tuple[str, int] | None = None
_PERL_LOOKED_UP = False


def waiter_kind() -> str:
    """Which waiter starts roots here: ``"perl"`` (found on PATH, a known prctl number)
    or ``"python"`` (this interpreter; ~20 ms to start instead of ~3 ms)."""
    global _PERL, _PERL_LOOKED_UP
    if not _PERL_LOOKED_UP:
        _PERL, _PERL_LOOKED_UP = _find_perl(), True
    return "perl" if _PERL is not None else "python"


def _waiter_argv(subreaper: bool) -> list[str]:
    if waiter_kind() == "perl":
        assert _PERL is not None
        return [_PERL[0], "-e", _PERL_WAITER, str(_PERL[1]) if subreaper else "-"]
    return [sys.executable, "-I", "-S", "-c", _PY_WAITER, "1" if subreaper else "0"]


# -- stdio and spawning -----------------------------------------------------------------

_Stdio = tuple[int | None, int | None, int | None]
_DEFAULT_STDIO: _Stdio = (subprocess.DEVNULL, subprocess.PIPE, subprocess.STDOUT)
_FileAction = tuple[Any, ...]


def _high_fd(fd: int) -> int:
    """``fd`` moved to >= 5 (close-on-exec), so that no dup2 onto 0–4 is a no-op."""
    if fd >= 5:
        return fd
    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 5)
    os.close(fd)
    return new


def _pipe() -> tuple[int, int]:
    r, w = os.pipe()
    return _high_fd(r), _high_fd(w)


def _leaked_fds() -> list[int]:
    """Our inheritable descriptors above 2 (a C library's, or a test's): a spawned child
    must not hold them, as ``close_fds=True`` guarantees for ``subprocess``."""
    leaked = []
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            if fd > 2:
                with contextlib.suppress(OSError):
                    if os.get_inheritable(fd):
                        leaked.append(fd)
    return leaked


def _stdio_actions(stdio: _Stdio) -> tuple[list[_FileAction], int | None, int | None]:
    """posix_spawn file actions for stdin/stdout/stderr; our read end of stdout's pipe
    and the child's write end (closed here once the child has it)."""
    stdin, stdout, stderr = stdio
    actions: list[_FileAction] = []
    read_end = child_end = None
    if stdin == subprocess.DEVNULL:
        actions.append((os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0))
    elif stdin is not None:
        raise ValueError("stdin must be subprocess.DEVNULL or None")
    if stdout == subprocess.PIPE:
        read_end, child_end = _pipe()
        actions.append((os.POSIX_SPAWN_DUP2, child_end, 1))
    elif stdout == subprocess.DEVNULL:
        actions.append((os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0))
    elif stdout is not None:
        raise ValueError("stdout must be subprocess.PIPE, subprocess.DEVNULL or None")
    if stderr == subprocess.STDOUT:
        actions.append((os.POSIX_SPAWN_DUP2, 1, 2))
    elif stderr == subprocess.DEVNULL:
        actions.append((os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0))
    elif stderr is not None:
        raise ValueError("stderr must be subprocess.STDOUT, subprocess.DEVNULL or None")
    return actions, read_end, child_end


@dataclass
class Child:
    """A process we started (our direct child), with our end of its stdout pipe."""

    pid: int
    stdout_fd: int | None


@dataclass
class _Waiter:
    pid: int
    owner: int  # the pid of the process that spawned it (a fork must not use it)
    request_fd: int
    status_fd: int
    stdout_fd: int | None

    def abandon(self) -> None:
        """It will run nothing: close our ends, make sure it ends, reap it in the background."""
        for fd in (self.request_fd, self.status_fd, self.stdout_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        if self.owner == os.getpid() and self.pid > 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            threading.Thread(target=_reap, args=(self.pid,), daemon=True).start()

    def exited(self) -> bool:
        try:
            pid, _ = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            pid = self.pid
        if pid != 0:
            self.pid = -1  # reaped: nothing left to kill or reap
            return True
        return False


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def _spawn_waiter(stdio: _Stdio, subreaper: bool) -> _Waiter:
    argv = _waiter_argv(subreaper)
    actions, read_end, child_end = _stdio_actions(stdio)
    req_r, req_w = _pipe()
    st_r, st_w = _pipe()
    actions += [(os.POSIX_SPAWN_DUP2, req_r, 3), (os.POSIX_SPAWN_DUP2, st_w, 4)]
    actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _leaked_fds()]
    try:
        # An empty environment: nothing of ours (PERL5OPT, ...) reaches the waiter; the
        # command gets exactly the environment it is asked to run with.
        pid = os.posix_spawn(
            argv[0],
            argv,
            {},
            file_actions=actions,
            setsid=True,
            # As subprocess's restore_signals: Python ignores these, a command must not.
            setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
        )
    except BaseException:
        for fd in (req_w, st_r, read_end):
            if fd is not None:
                os.close(fd)
        raise
    finally:
        for fd in (req_r, st_w, child_end):
            if fd is not None:
                os.close(fd)
    return _Waiter(pid, os.getpid(), req_w, st_r, read_end)


class _Pool:
    """At most one idle subreaper waiter for the default stdio, shared by every loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: _Waiter | None = None

    def take(self, stdio: _Stdio, subreaper: bool) -> _Waiter | None:
        if stdio != _DEFAULT_STDIO or not subreaper:
            return None
        with self._lock:
            waiter, self._idle = self._idle, None
        if waiter is None:
            return None
        if waiter.owner != os.getpid() or waiter.exited():
            waiter.abandon()
            return None
        return waiter

    def refill(self) -> None:
        with self._lock:
            if self._idle is not None:
                return
        try:
            waiter: _Waiter | None = _spawn_waiter(_DEFAULT_STDIO, subreaper=True)
        except OSError:
            return  # the next start spawns its own and reports the error
        with self._lock:
            if self._idle is None:
                self._idle, waiter = waiter, None
        if waiter is not None:
            waiter.abandon()

    def drop(self) -> None:
        """End the idle waiter (tests; a process about to exit need not: EOF ends it)."""
        with self._lock:
            waiter, self._idle = self._idle, None
        if waiter is not None:
            waiter.abandon()

    def forget(self) -> None:
        """In a forked child: the parent's waiter is not ours (its fds are copies)."""
        self._lock = threading.Lock()
        self._idle = None


POOL = _Pool()
os.register_at_fork(after_in_child=POOL.forget)


def _encode_request(argv: Sequence[str], cwd: str, env: Mapping[str, str]) -> bytes:
    fields = [os.fsencode(cwd), str(len(env)).encode()]
    for key, value in env.items():
        k = os.fsencode(key)
        if not k or b"=" in k:
            raise ValueError(f"illegal environment variable name: {key!r}")
        fields.append(k + b"=" + os.fsencode(value))
    fields += [os.fsencode(a) for a in argv]
    if any(b"\0" in f for f in fields):
        raise ValueError("embedded null byte")
    return b"\0".join(fields)


async def _write_all(fd: int, data: bytes) -> None:
    os.set_blocking(fd, False)
    view = memoryview(data)
    loop = asyncio.get_running_loop()
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            ready = loop.create_future()
            loop.add_writer(fd, ready.set_result, None)
            try:
                await ready
            finally:
                loop.remove_writer(fd)


async def _read_to_eof(fd: int) -> bytes:
    os.set_blocking(fd, False)
    loop = asyncio.get_running_loop()
    data = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except BlockingIOError:
            ready = loop.create_future()
            loop.add_reader(fd, ready.set_result, None)
            try:
                await ready
            finally:
                loop.remove_reader(fd)
            continue
        if not chunk:
            return data
        data += chunk


async def _run_in(waiter: _Waiter, request: bytes) -> bytes:
    """Hand the request to ``waiter``; its report (b"X" once exec'd; b"" if it died)."""
    fd, waiter.request_fd = waiter.request_fd, -1
    try:
        await _write_all(fd, request)
    except BrokenPipeError:
        return b""
    finally:
        os.close(fd)
    fd, waiter.status_fd = waiter.status_fd, -1
    try:
        return await _read_to_eof(fd)
    finally:
        os.close(fd)


async def spawn_root(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None,
    env: Mapping[str, str] | None,
    stdin: int | None,
    stdout: int | None,
    stderr: int | None,
    subreaper: bool,
) -> Child:
    """Start ``argv`` in a new session (a child subreaper if asked) without forking us.

    Raises ``OSError`` (FileNotFoundError for a missing command or cwd, ...) as
    ``subprocess`` does, and ValueError for a NUL byte or a bad environment name.
    """
    if not argv:
        raise ValueError("empty argv")
    stdio: _Stdio = (stdin, stdout, stderr)
    where = os.fsdecode(cwd) if cwd is not None else None
    # Relative to our working directory now, as subprocess's cwd is.
    full_cwd = os.path.join(os.getcwd(), where) if where is not None else os.getcwd()
    request = _encode_request(argv, full_cwd, dict(os.environ) if env is None else env)
    report = b""
    for attempt in range(2):
        waiter = POOL.take(stdio, subreaper) if attempt == 0 else None
        if waiter is None:
            waiter = _spawn_waiter(stdio, subreaper)
        try:
            report = await _run_in(waiter, request)
        except BaseException:
            waiter.abandon()
            raise
        if report == b"X":
            if subreaper and stdio == _DEFAULT_STDIO:
                # The next command's waiter, once this one has started.
                asyncio.get_running_loop().call_soon(POOL.refill)
            return Child(waiter.pid, waiter.stdout_fd)
        waiter.abandon()
        if report:
            break
        # b"": the waiter died before it read the request (killed by someone): once more.
    text = report.decode("ascii", "replace").lstrip("X")
    parts = text.split()
    if len(parts) == 3 and parts[0] == "E" and parts[1].isdigit():
        code, step = int(parts[1]), parts[2]
        if step == "prctl":
            raise OSError(code, f"cannot become a child subreaper: {os.strerror(code)}")
        filename = where if step == "cwd" else argv[0]
        raise OSError(code, os.strerror(code), filename)
    raise OSError(errno.ECHILD, f"the command could not be started (report {text!r})")


class ExitWatch:
    """Tells when our child ``pid`` exits, and reaps it: a pidfd on the event loop where
    the system has them (Linux 5.3+), else a thread blocked in ``waitpid``."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._loop = asyncio.get_running_loop()
        self._done = asyncio.Event()
        self._pidfd: int | None = None
        try:
            self._pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            threading.Thread(target=self._wait_thread, daemon=True).start()
        else:
            self._loop.add_reader(self._pidfd, self._poll)

    def _poll(self) -> None:
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:  # reaped by someone else: the code is lost
            pid, status = self.pid, 255 << 8
        if pid != 0:
            self._stop_watching()
            self._exited(status)

    def _stop_watching(self) -> None:
        if self._pidfd is not None:
            with contextlib.suppress(Exception):  # the loop may be closed already
                self._loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None

    def _wait_thread(self) -> None:
        try:
            _, status = os.waitpid(self.pid, 0)
        except ChildProcessError:
            status = 255 << 8
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
            self._loop.call_soon_threadsafe(self._exited, status)

    def _exited(self, status: int) -> None:
        if self.returncode is None:
            self.returncode = os.waitstatus_to_exitcode(status)
        self._done.set()

    async def wait(self) -> int:
        await self._done.wait()
        assert self.returncode is not None
        return self.returncode

    def close(self) -> None:
        """Stop watching. A child still running is then reaped by a thread when it ends
        (so it never stays a zombie)."""
        if self._pidfd is None:
            return
        if self.returncode is None:
            with contextlib.suppress(ChildProcessError):
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                if pid != 0:
                    self.returncode = os.waitstatus_to_exitcode(status)
        self._stop_watching()
        if self.returncode is None:
            threading.Thread(target=_reap, args=(self.pid,), daemon=True).start()
