"""What recording the workspace costs, on a generated repository of 10,000 files.

Measured in one run, against the floor the issue names (``git add -A && git write-tree``
of the same tree, with a warm index, run as one shell command):

- the overhead of the snapshots around a Bash command that changes nothing (the
  recorder's before + after, as the Bash tool runs them), and end to end the Bash tool
  running ``true`` with and without recording;
- the same around a command that changes 100 files (snapshots, reading both contents of
  each from the shadow, storing them, the ``file.changes`` event);
- a rewind with files of those 100 files (plan, check, read, write, record) and back;
- storage growth per turn for a one-line Edit of a 1 MB file (bytes added to the
  database per edit, events included);
- the cold first snapshot of the 10,000 files, and a pure-Python scan of the same tree
  (``os.scandir`` + ``lstat`` of every entry, no ignore rules): the alternative to git's
  index that the mechanism was chosen against.

Run: ``uv run python benchmarks/bench_workspace.py [--rounds N] [--files N] [--postgres]``
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tron_events import AsyncEventStore
from tron_server.tools import ToolContext, default_tools
from tron_server.workspace import Workspace

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "b",
    "GIT_AUTHOR_EMAIL": "b@b",
    "GIT_COMMITTER_NAME": "b",
    "GIT_COMMITTER_EMAIL": "b@b",
}


def generate(root: Path, files: int) -> list[Path]:
    """A repository of ``files`` source files in 350 folders, committed."""
    rng = random.Random(7)
    paths = []
    for i in range(files):
        folder = root / f"pkg{i % 50}" / f"sub{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"module{i}.py"
        lines = rng.randint(5, 60)
        path.write_text("".join(f"def f{i}_{j}(x):\n    return x + {j}\n" for j in range(lines)))
        paths.append(path)
    (root / ".gitignore").write_text("__pycache__/\n*.pyc\n")
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, env=GIT_ENV)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=root, check=True, env=GIT_ENV)
    return paths


def p50(values: list[float]) -> float:
    return statistics.median(values)


def floor_ms(root: Path, shadow: Path, rounds: int) -> list[float]:
    """``git add -A && git write-tree`` of the tree in a repository of its own (warm)."""
    env = {**GIT_ENV, "GIT_DIR": str(shadow), "GIT_WORK_TREE": str(root)}
    subprocess.run(["git", "init", "-q", "--bare", str(shadow)], check=True)
    subprocess.run(["git", "config", "core.untrackedCache", "true"], env=env, check=True)
    command = ["sh", "-c", "git add -A && git write-tree >/dev/null"]
    subprocess.run(command, cwd=root, env=env, check=True)  # cold: hashes every file
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run(command, cwd=root, env=env, check=True)
        times.append((time.perf_counter() - start) * 1e3)
    return times


def scan_ms(root: Path, rounds: int) -> list[float]:
    def scan() -> int:
        count = 0
        stack = [str(root)]
        while stack:
            with os.scandir(stack.pop()) as entries:
                for e in entries:
                    if e.name == ".git":
                        continue
                    if e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
                    else:
                        e.stat(follow_symlinks=False)
                        count += 1
        return count

    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        scan()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def folder_bytes(root: Path, skip: str | None = None) -> int:
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        if skip in dirnames:
            dirnames.remove(skip)
        total += sum(os.lstat(os.path.join(dirpath, f)).st_size for f in filenames)
    return total


def blob_bytes(url: str) -> int:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.connect() as conn:
        total = conn.execute(text("SELECT COALESCE(SUM(LENGTH(data)), 0) FROM file_blobs")).scalar()
    engine.dispose()
    return int(total or 0)


async def timed(fn: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await fn()
    return (time.perf_counter() - start) * 1e3


def database_bytes(url: str) -> int:
    if url.startswith("sqlite:///"):
        import sqlite3

        conn = sqlite3.connect(url[len("sqlite:///") :])
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        conn.close()
        return int((pages - free) * size)
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.connect() as conn:
        total = conn.execute(
            text(
                "SELECT pg_total_relation_size('events') + pg_total_relation_size('file_blobs')"
                " + pg_total_relation_size('sessions')"
            )
        ).scalar()
    engine.dispose()
    return int(total or 0)


async def run(
    args: argparse.Namespace, url: str, base: Path, repo: Path, paths: list[Path]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    store = await AsyncEventStore.open(url)
    workspace = Workspace(store, base / f"home-{url[:8]}", max_file_bytes=10 * 1024 * 1024)
    session = await store.create_session(working_directory=str(repo), model="m", provider="p")
    tools = default_tools(workspace.recorder)
    plain_tools = default_tools()
    calls = iter(range(1_000_000))

    async def record(event_type: str, payload: dict[str, Any]) -> None:
        await store.append(session.id, event_type, payload)

    def ctx() -> ToolContext:
        return ToolContext(session.id, repo, f"toolu_{next(calls)}", record=record)

    recorder = workspace.recorder
    # The first snapshot of the folder hashes every file (once per folder and home).
    cold = await timed(lambda: recorder.begin_command(repo))
    out["cold_first_snapshot_ms"] = cold
    out["tree_bytes"] = folder_bytes(repo, skip=".git")
    out["shadow_bytes"] = folder_bytes(recorder.snapshots)

    async def around_nothing() -> None:
        watch = await recorder.begin_command(repo)
        await recorder.finish_command(watch, record, "toolu_x")

    out["noop_overhead_ms"] = [await timed(around_nothing) for _ in range(args.rounds)]
    # Without the change watch: every snapshot scans the folder (git add -A each time).
    scanning = Workspace(
        store, base / f"home-scan-{url[:8]}", max_file_bytes=10 * 1024 * 1024
    ).recorder
    scanning.watch_changes = False
    await scanning.begin_command(repo)  # its own cold snapshot, not measured

    async def around_nothing_scanning() -> None:
        watch = await scanning.begin_command(repo)
        await scanning.finish_command(watch, record, "toolu_x")

    out["noop_overhead_scanning_ms"] = [
        await timed(around_nothing_scanning) for _ in range(args.rounds)
    ]
    recorded, plain = [], []
    for _ in range(args.rounds):  # in turn, so that load changes hit both alike
        recorded.append(await timed(lambda: tools.execute("Bash", {"command": "true"}, ctx())))
        plain.append(await timed(lambda: plain_tools.execute("Bash", {"command": "true"}, ctx())))
    out["bash_true_recorded_ms"] = recorded
    out["bash_true_plain_ms"] = plain
    # A command changing 100 files, each time again (new contents).
    hundred = paths[:: max(1, len(paths) // 100)][:100]
    script = base / "change100.sh"
    script.write_text("".join(f'echo "# changed $1" >> {p.relative_to(repo)}\n' for p in hundred))
    changed, plain_changed = [], []
    rounds = max(3, args.rounds // 3)

    def bash(registry: Any, command: str) -> Callable[[], Awaitable[Any]]:
        return lambda: registry.execute("Bash", {"command": command}, ctx())

    def rewind(to: str) -> Callable[[], Awaitable[Any]]:
        return lambda: workspace.rewind(session.id, to, restore_files=True)

    for i in range(rounds):
        plain_changed.append(await timed(bash(plain_tools, f"sh {script} p{i}")))
        # The plain run's changes are outside changes for the recorder: snapshot them
        # first (unmeasured), so that what is measured is the command's own 100 files.
        await recorder.begin_command(repo)
        changed.append(await timed(bash(tools, f"sh {script} r{i}")))
    out["bash_100_recorded_ms"] = changed
    out["bash_100_plain_ms"] = plain_changed
    # Rewind with files of those 100 files, and back.
    rewinds, backs = [], []
    for i in range(rounds):
        before = (await store.get_session(session.id)).head_event_id
        await tools.execute("Bash", {"command": f"sh {script} w{i}"}, ctx())
        after = (await store.get_session(session.id)).head_event_id
        rewinds.append(await timed(rewind(before)))
        backs.append(await timed(rewind(after)))
    out["rewind_100_ms"] = rewinds
    out["rewind_back_100_ms"] = backs
    # Storage per turn: a one-line Edit of a 1 MB file.
    big = repo / "big.txt"
    rng = random.Random(11)
    words = ["value", "result", "items", "count", "index", "name", "total", "data", "node"]
    big.write_text(
        "".join(
            f"line {i:07d} of    {rng.choice(words)}_{rng.randrange(10**6)} = "
            f"{rng.choice(words)}({rng.randrange(10**9)}, {rng.random():.6f})\n"
            for i in range(16_000)
        )
    )
    await tools.execute("Write", {"file_path": str(big), "content": big.read_text()}, ctx())
    edits = 60
    start_bytes = database_bytes(url)
    start_blobs = blob_bytes(url)
    for i in range(edits):
        await tools.execute(
            "Edit",
            {"file_path": str(big), "old_string": f"line {i * 263:07d} of",
             "new_string": f"LINE {i * 263:07d} of"},
            ctx(),
        )  # fmt: skip
    assert big.read_text().count("LINE ") == edits, "every edit must apply"
    out["big_file_bytes"] = big.stat().st_size
    out["growth_per_edit_bytes"] = (database_bytes(url) - start_bytes) / edits
    out["blob_bytes_per_edit"] = (blob_bytes(url) - start_blobs) / edits
    await store.aclose()
    return out


def summary(name: str, values: list[float]) -> str:
    low, high = min(values), max(values)
    return f"{name}: p50 {p50(values):.1f} ms (min {low:.1f}, max {high:.1f}, n={len(values)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--postgres", help="also on this PostgreSQL URL (a scratch database)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        repo = base / "repo"
        repo.mkdir()
        started = time.perf_counter()
        paths = generate(repo, args.files)
        print(f"generated {args.files} files in {time.perf_counter() - started:.1f} s")
        print(f"load average: {os.getloadavg()}")
        floor = floor_ms(repo, base / "floor.git", args.rounds)
        scan = scan_ms(repo, args.rounds)
        print(summary("floor: git add -A && git write-tree", floor))
        print(summary("python scandir+lstat of every entry (no ignore rules)", scan))
        urls = [f"sqlite:///{base / 'events.db'}"]
        if args.postgres:
            urls.append(args.postgres)
        for url in urls:
            out = anyio.run(run, args, url, base, repo, paths)
            backend = "sqlite" if url.startswith("sqlite") else "postgresql"
            print(f"--- {backend}")
            print(
                f"cold first snapshot: {out['cold_first_snapshot_ms']:.0f} ms; the tree "
                f"{out['tree_bytes'] / 1e6:.1f} MB, its shadow (the baseline of previous "
                f"contents) {out['shadow_bytes'] / 1e6:.1f} MB outside the database"
            )
            for key in (
                "noop_overhead_ms", "noop_overhead_scanning_ms", "bash_true_recorded_ms",
                "bash_true_plain_ms",
                "bash_100_recorded_ms", "bash_100_plain_ms", "rewind_100_ms",
                "rewind_back_100_ms",
            ):  # fmt: skip
                print(summary(key, out[key]))
            extra = p50(out["bash_100_recorded_ms"]) - p50(out["bash_100_plain_ms"])
            print(
                f"noop overhead / floor: {p50(out['noop_overhead_ms']) / p50(floor):.2f} "
                f"(scanning every time: {p50(out['noop_overhead_scanning_ms']) / p50(floor):.2f}); "
                f"100-file overhead: {extra:.1f} ms"
            )
            print(
                f"storage per 1-line edit of a {out['big_file_bytes'] / 1e6:.2f} MB file: "
                f"{out['growth_per_edit_bytes']:.0f} bytes (database), of which content "
                f"{out['blob_bytes_per_edit']:.0f} bytes"
            )
        print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
