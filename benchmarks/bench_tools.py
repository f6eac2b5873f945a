"""What the tools' safety costs, against a peer measured in the same run.

- path resolution: ``PathPolicy.resolve`` (an fd-holding walk from ``/``) vs
  ``os.path.realpath`` (the same answer, by path lookups);
- a checked atomic write: ``PathPolicy.write_bytes`` vs a plain temp file + ``os.replace``
  (both fsync);
- starting a command: ``ProcessTree.start`` (a subreaper waiter spawned ahead of time with
  ``posix_spawn``, :mod:`tron_server.tools._spawn`) + read + wait, vs
  ``asyncio.create_subprocess_exec`` + read + wait, running ``bash -c 'echo hi'`` (what the
  Bash tool runs), in a process holding server-sized memory; also without an idle waiter
  and the old way (fork for a ``preexec_fn`` that sets the subreaper);
- abort: ``ProcessTree.kill`` of the hostile tree of ``tests/tools/proctree_script.py``
  (SIGTERM-ignorers, setsid, a deep chain, a daemon): the SIGTERM grace (KILL_GRACE,
  0.4 s) dominates.

Run: ``uv run python benchmarks/bench_tools.py [--rounds N]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.tools.proctree_script import complete, survivors, tree_pids, write_tree_script
from tron_server.tools import PathPolicy, ProcessTree, _proctree, _spawn
from tron_server.tools._proctree import KILL_GRACE


def per_call_us(fn: Callable[[], object], n: int) -> float:
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - start) / n)
    return best * 1e6


def plain_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


async def _plain(argv: list[str], **kw: Any) -> None:
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw
    )
    assert proc.stdout is not None
    await proc.stdout.read()
    await proc.wait()


async def _tree(argv: list[str], cold: bool = False) -> None:
    if cold:
        _spawn.POOL.drop()
    tree = await ProcessTree.start(argv)
    assert tree.stdout is not None
    await tree.stdout.read()
    await tree.wait()
    tree.close()


def _become_subreaper() -> None:
    # What ProcessTree did before (fork: a preexec_fn rules out vfork).
    _proctree._PRCTL(36, 1, 0, 0, 0)  # type: ignore[misc]


async def spawn_ms(rounds: int, ballast_mb: int) -> dict[str, tuple[float, float]]:
    """Start + read output + wait of ``bash -c 'echo hi'``, per contender, medians of
    interleaved rounds, with the median of the per-round ratios to the first (the peer);
    ``ballast_mb`` of touched memory makes this process server-sized
    (fork's cost grows with it, vfork's does not)."""
    ballast = [bytearray(b"x" * (1 << 20)) for _ in range(ballast_mb)]
    argv = ["bash", "-c", "echo hi"]
    contenders: dict[str, Callable[[], Awaitable[None]]] = {
        "asyncio subprocess (vfork), the peer": lambda: _plain(argv, start_new_session=True),
        "ProcessTree (a waiting subreaper)": lambda: _tree(argv),
        "ProcessTree, no idle waiter (cold)": lambda: _tree(argv, cold=True),
        "asyncio subprocess + preexec_fn prctl (fork; ProcessTree before)": lambda: _plain(
            argv, start_new_session=True, preexec_fn=_become_subreaper
        ),
    }
    times: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    for i in range(rounds):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            start = time.perf_counter()
            await contenders[name]()
            times[name].append(time.perf_counter() - start)
            await asyncio.sleep(0.005)  # let the waiter for the next command start
    del ballast
    peer = times[names[0]]
    return {
        name: (
            statistics.median(t) * 1e3,
            statistics.median(a / b for a, b in zip(t, peer, strict=True)),
        )
        for name, t in times.items()
    }


async def abort_ms(folder: Path, rounds: int) -> list[float]:
    script = write_tree_script(folder)
    times = []
    for _ in range(rounds):
        tree = await ProcessTree.start(["bash", str(script)])
        assert tree.stdout is not None
        out = b""
        while not complete(out.decode()):
            out += await tree.stdout.read(4096)
        pids = tree_pids(out.decode())
        start = time.perf_counter()
        await tree.kill()
        times.append(time.perf_counter() - start)
        assert survivors(pids) == {}
        tree.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--ballast", type=int, default=150, help="MB of touched memory")
    parser.add_argument("--only-spawn", action="store_true", help="only the spawn figure")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp).resolve()
        work = base / "project"
        (work / "src" / "pkg").mkdir(parents=True)
        (work / "link").symlink_to("src/pkg")
        target = work / "src" / "pkg" / "module.py"
        target.write_text("x = 1\n")
        policy = PathPolicy(work, (work,))
        raw = "link/../pkg/module.py"

        def resolve() -> None:
            policy.resolve(raw).close()

        if not args.only_spawn:
            ours = per_call_us(resolve, 2000)
            peer = per_call_us(lambda: os.path.realpath(work / raw), 2000)
            print(f"resolve {raw!r} (depth {len(target.parts)}): PathPolicy.resolve {ours:.1f} us, "
                  f"os.path.realpath {peer:.1f} us, ratio {ours / peer:.2f}")  # fmt: skip
            data = b"x" * 4096
            ours = per_call_us(lambda: policy.write_bytes(raw, data), 200)
            peer = per_call_us(lambda: plain_write(target, data), 200)
            print(f"atomic 4 KiB write: PathPolicy.write_bytes {ours:.0f} us, "
                  f"plain temp+replace {peer:.0f} us, ratio {ours / peer:.2f}")  # fmt: skip
        spawn = asyncio.run(spawn_ms(args.rounds * 5, args.ballast))
        print(f"start + read + wait `bash -c 'echo hi'` ({args.rounds * 5} interleaved rounds, "
              f"{args.ballast} MB ballast, waiter: {_spawn.waiter_kind()}):")  # fmt: skip
        for name, (ms, ratio) in spawn.items():
            print(f"  {name}: {ms:.2f} ms ({ratio:.2f}x)")
        if args.only_spawn:
            return
        times = asyncio.run(abort_ms(base, max(3, args.rounds // 4)))
        print(f"kill the hostile tree ({len(times)} runs): median {statistics.median(times):.3f} s,"
              f" max {max(times):.3f} s (grace {KILL_GRACE} s)")  # fmt: skip


if __name__ == "__main__":
    main()
