"""Starting a tree's root without forking the server (a waiter spawned with posix_spawn):
the command sees exactly what subprocess would give it (environment, working directory,
descriptors, signal dispositions), errors are subprocess's, and the root is a subreaper.
Both waiters (perl, and this Python where perl is absent) are exercised."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests.tools.proctree_script import alive
from tron_server.tools import ProcessTree, _proctree, _spawn

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

_FORKS = [0]  # Python-level forks (a preexec_fn forces one per command); vfork is not one


def _count_fork() -> None:
    _FORKS[0] += 1


os.register_at_fork(before=_count_fork)


@pytest.fixture(params=["perl", "python"])
def waiter(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    kind = str(request.param)
    if kind == "perl" and _spawn._find_perl() is None:
        pytest.skip("perl is not installed here (or prctl's number is unknown on this CPU)")
    monkeypatch.setenv("TRON_SPAWN_WAITER", kind)
    _spawn.POOL.drop()
    monkeypatch.setattr(_spawn, "_PERL_LOOKED_UP", False)
    assert _spawn.waiter_kind() == kind
    yield kind
    _spawn.POOL.drop()
    _spawn._PERL_LOOKED_UP = False


async def run(argv: list[str], **kw: object) -> tuple[int, str]:
    tree = await ProcessTree.start(argv, **kw)  # type: ignore[arg-type]
    assert tree.stdout is not None
    with anyio.fail_after(30):
        out = await tree.stdout.read()
        code = await tree.wait()
    tree.close()
    return code, out.decode()


async def test_no_fork_of_this_process(waiter: str, tmp_path: Path) -> None:
    before = _FORKS[0]
    for _ in range(3):  # cold, then from the idle waiter
        assert await run(["bash", "-c", "echo hi"], cwd=tmp_path) == (0, "hi\n")
        await anyio.sleep(0.05)
    assert _FORKS[0] == before


async def test_exact_environment_and_cwd(waiter: str, tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "ODD": "a=b\nc d\t", "EMPTY": "", "UNI": "héllo ✓"}
    code, out = await run(["env", "-0"], cwd=tmp_path, env=env)
    assert code == 0
    seen = dict(line.split("=", 1) for line in out.split("\0") if line)
    assert seen == env  # nothing added (no SHLVL, _, PWD), nothing of the server's
    sub = tmp_path / "sub"
    sub.mkdir()
    os.chdir(tmp_path)
    try:
        assert await run(["pwd"], cwd="sub") == (0, f"{sub}\n")  # relative to our cwd
        assert await run(["pwd"]) == (0, f"{tmp_path}\n")  # no cwd: ours, as now
    finally:
        os.chdir("/")


async def test_errors_are_subprocess_errors(waiter: str, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as missing:
        await ProcessTree.start(["no-such-command-xyz"], cwd=tmp_path)
    assert missing.value.filename == "no-such-command-xyz"
    with pytest.raises(FileNotFoundError) as no_dir:
        await ProcessTree.start(["true"], cwd=tmp_path / "gone")
    assert no_dir.value.filename == str(tmp_path / "gone")
    afile = tmp_path / "f"
    afile.write_text("")
    with pytest.raises(NotADirectoryError):
        await ProcessTree.start(["true"], cwd=afile)
    with pytest.raises(PermissionError):
        await ProcessTree.start([str(afile)], cwd=tmp_path)  # not executable
    with pytest.raises(ValueError):
        await ProcessTree.start(["echo", "a\0b"])
    with pytest.raises(ValueError):
        await ProcessTree.start(["true"], env={"A=B": "c"})
    assert await run(["bash", "-c", "echo still fine"]) == (0, "still fine\n")


async def test_descriptors_and_signals_are_clean(waiter: str, tmp_path: Path) -> None:
    r, w = os.pipe()
    os.set_inheritable(w, True)  # a descriptor someone left inheritable must not leak
    try:
        code, out = await run(
            ["bash", "-c", "ls -1 /proc/$$/fd; grep -E '^Sig(Ign|Blk)' /proc/$$/status"]
        )
    finally:
        os.close(r)
        os.close(w)
    assert code == 0
    fds = [line for line in out.splitlines() if not line.startswith("Sig")]
    assert sorted(map(int, fds)) == [0, 1, 2]
    ignored = int(out.split("SigIgn:")[1].split()[0], 16)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        assert not ignored & (1 << (sig - 1)), f"{sig.name} ignored in the command"


async def test_the_root_is_a_subreaper(waiter: str, tmp_path: Path) -> None:
    # An orphan (its parent, a subshell, exits at once) comes to the root, not to init.
    tree = await ProcessTree.start(["bash", "-c", "( setsid sleep 30 & echo $! ); exec sleep 30"])
    assert tree.stdout is not None and tree.tracks_descendants
    with anyio.fail_after(20):
        orphan = int(await tree.stdout.readline())
        while (proc := _proctree._read_proc(orphan)) is None or proc.ppid != tree.pid:
            await anyio.sleep(0.01)
    assert orphan in tree.members()
    await tree.kill()
    assert not alive(orphan)
    tree.close()


async def test_stdio_choices(waiter: str, tmp_path: Path) -> None:
    tree = await ProcessTree.start(["bash", "-c", "echo x"], stdout=subprocess.DEVNULL)
    assert tree.stdout is None
    with anyio.fail_after(20):
        assert await tree.wait() == 0
    tree.close()
    code, out = await run(["bash", "-c", "echo out; echo err >&2"], stderr=subprocess.DEVNULL)
    assert (code, out) == (0, "out\n")
    with pytest.raises(ValueError):
        await ProcessTree.start(["true"], stdin=subprocess.PIPE)


async def test_a_dead_idle_waiter_is_replaced(waiter: str, tmp_path: Path) -> None:
    assert await run(["true"]) == (0, "")
    with anyio.fail_after(20):
        while _spawn.POOL._idle is None:  # the next command's waiter is spawned
            await anyio.sleep(0.01)
    idle = _spawn.POOL._idle
    os.kill(idle.pid, signal.SIGKILL)
    with anyio.fail_after(20):
        while alive(idle.pid):
            await anyio.sleep(0.01)
    assert await run(["bash", "-c", "echo fine"]) == (0, "fine\n")


def _children() -> dict[tuple[int, int], _proctree._Proc]:
    """Our live child processes, by (pid, start time): a reused pid is another process."""
    return {
        (p.pid, p.start): p for p in _proctree._scan().values() if p.ppid == os.getpid() and p.alive
    }


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:120]
    except OSError:
        return "?"


async def _none_left_but_the_idle_waiter(before: set[tuple[int, int]]) -> None:
    """Wait until no child this test started runs, apart from the pool's idle waiter (read
    at every look: the pool refills after each start). Children that were there before
    the test are not this test's to judge: in the whole suite (one process, or an xdist
    worker) another test's may still run, e.g. the MCP servers of
    tests/trust/test_trust_terminal.py's module server, children of the test process for
    30-50 s; waiting for those made this test time out."""
    left: list[_proctree._Proc] = []
    with anyio.move_on_after(20):
        while True:
            idle = _spawn.POOL._idle
            left = [
                p
                for key, p in _children().items()
                if key not in before and (idle is None or p.pid != idle.pid)
            ]
            if not left:
                return
            await anyio.sleep(0.02)
    raise AssertionError(f"still running: {[(p.pid, p.state, _cmdline(p.pid)) for p in left]}")


async def test_a_cancelled_start_leaves_nothing_running(waiter: str, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    script = f"sleep 30 & echo $! > {pidfile}; exec sleep 30"
    before = set(_children())
    for delay in (0.0, 0.002, 0.01):
        tree = None
        with anyio.move_on_after(delay):
            tree = await ProcessTree.start(["bash", "-c", script])
        if tree is not None:  # started before the deadline: ours to end, as Bash does
            await tree.kill()
            tree.close()
        # Either the command never ran, or it ran and its whole tree was killed.
        if pidfile.exists() and pidfile.read_text().strip():
            assert not alive(int(pidfile.read_text()))
        pidfile.unlink(missing_ok=True)
        await _none_left_but_the_idle_waiter(before)


def test_a_forked_child_does_not_use_the_parents_waiter() -> None:
    _spawn.POOL.refill()
    assert _spawn.POOL._idle is not None
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        os._exit(0 if _spawn.POOL._idle is None else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert _spawn.POOL._idle is not None  # the parent's is untouched
    _spawn.POOL.drop()
