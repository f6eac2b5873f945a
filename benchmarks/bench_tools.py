"""What the tools' safety costs, against a peer measured in the same run.

- path resolution: ``PathPolicy.resolve`` (an fd-holding walk from ``/``) vs
  ``os.path.realpath`` (the same answer, by path lookups);
- a checked atomic write: ``PathPolicy.write_bytes`` vs a plain temp file + ``os.replace``
  (both fsync);
- starting a command: ``ProcessTree.start`` (a subreaper set between fork and exec, which
  rules out vfork) + wait, vs ``asyncio.create_subprocess_exec`` + wait, running ``true``;
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
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.tools.proctree_script import complete, survivors, tree_pids, write_tree_script
from tron_server.tools import PathPolicy, ProcessTree
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


async def spawn_ms(rounds: int) -> tuple[float, float, float]:
    tree_times, plain_times, forked_times = [], [], []
    for _ in range(rounds):
        # The same without prctl but with a (no-op) preexec_fn: what fork instead of vfork costs.
        start = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(
            "true", start_new_session=True, preexec_fn=lambda: None
        )
        await proc.wait()
        forked_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        tree = await ProcessTree.start(["true"], stdout=None, stderr=None)
        await tree.wait()
        tree.close()
        tree_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        proc = await asyncio.create_subprocess_exec("true", start_new_session=True)
        await proc.wait()
        plain_times.append(time.perf_counter() - start)
    return tuple(statistics.median(t) * 1e3 for t in (tree_times, plain_times, forked_times))  # type: ignore[return-value]


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

        ours = per_call_us(resolve, 2000)
        peer = per_call_us(lambda: os.path.realpath(work / raw), 2000)
        print(f"resolve {raw!r} (depth {len(target.parts)}): PathPolicy.resolve {ours:.1f} us, "
              f"os.path.realpath {peer:.1f} us, ratio {ours / peer:.2f}")  # fmt: skip
        data = b"x" * 4096
        ours = per_call_us(lambda: policy.write_bytes(raw, data), 200)
        peer = per_call_us(lambda: plain_write(target, data), 200)
        print(f"atomic 4 KiB write: PathPolicy.write_bytes {ours:.0f} us, "
              f"plain temp+replace {peer:.0f} us, ratio {ours / peer:.2f}")  # fmt: skip
        tree_ms, plain_ms, forked_ms = asyncio.run(spawn_ms(args.rounds))
        print(f"start+wait `true` (median of {args.rounds}): ProcessTree {tree_ms:.2f} ms, "
              f"asyncio subprocess {plain_ms:.2f} ms (ratio {tree_ms / plain_ms:.2f}), "
              f"asyncio subprocess with a no-op preexec_fn {forked_ms:.2f} ms")  # fmt: skip
        times = asyncio.run(abort_ms(base, max(3, args.rounds // 4)))
        print(f"kill the hostile tree ({len(times)} runs): median {statistics.median(times):.3f} s,"
              f" max {max(times):.3f} s (grace {KILL_GRACE} s)")  # fmt: skip


if __name__ == "__main__":
    main()
