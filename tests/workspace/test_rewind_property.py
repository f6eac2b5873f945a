"""The property: after any sequence of Write, Edit and Bash operations (create, modify,
delete, rename, chmod, symlink, binary files, nested folders), a rewind with files to
any earlier event leaves the folder exactly as it was at that event, file by file; and
rewinding back to the old head (or to any abandoned event) with files brings that
state back, also through the store opened anew in another process."""

from __future__ import annotations

import base64
import itertools
import os
import pickle
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.workspace.conftest import Harness, Tree, make_repo, new_harness, read_tree
from tron_events import AsyncEventStore, EventStore

EXAMPLES = 100 if os.environ.get("HYPOTHESIS_PROFILE") == "dev" else 8
PATHS = ["a.txt", "b.bin", "d/c.txt", "d/e/f.txt", "x", "d/e"]
TEXTS = st.text(alphabet="ab\nc", max_size=12)
BYTES = st.binary(max_size=24)


def quote(path: str) -> str:
    return shlex.quote(path)


async def one_operation(h: Harness, data: st.DataObject) -> None:
    kind = data.draw(
        st.sampled_from(["write", "edit", "create", "append", "rm", "rmdir", "mv", "chmod", "ln"]),
        label="operation",
    )
    path = data.draw(st.sampled_from(PATHS), label="path")
    folder = quote(os.path.dirname(path) or ".")
    if kind == "write":
        await h.write(path, data.draw(TEXTS, label="text"))
    elif kind == "edit":
        target = h.root / path
        text = target.read_text(errors="replace") if target.is_file() else ""
        old = text[:2] or "zz"
        await h.edit(path, old, data.draw(TEXTS, label="new") or "q")
    elif kind == "create":
        payload = base64.b64encode(data.draw(BYTES, label="bytes")).decode()
        await h.bash(f"mkdir -p {folder} && echo {payload} | base64 -d > {quote(path)}")
    elif kind == "append":
        await h.bash(f"echo more >> {quote(path)}")
    elif kind == "rm":
        await h.bash(f"rm -f {quote(path)}")
    elif kind == "rmdir":
        await h.bash("rm -rf d")
    elif kind == "mv":
        dest = data.draw(st.sampled_from(PATHS), label="dest")
        await h.bash(
            f"mkdir -p {quote(os.path.dirname(dest) or '.')} && mv {quote(path)} {quote(dest)}"
        )
    elif kind == "chmod":
        await h.bash(f"chmod {data.draw(st.sampled_from(['+x', '-x']))} {quote(path)}")
    else:
        target = data.draw(st.sampled_from(["a.txt", "../b.bin", "nowhere", "e"]), label="to")
        await h.bash(f"mkdir -p {folder} && ln -sfn {quote(target)} {quote(path)}")


@dataclass
class Recorded:
    """One example's session, its folder and the states a new process must restore."""

    session_id: str
    root: Path
    states: list[tuple[str, Tree]]  # (event id, the folder at that event)


async def scenario(store: EventStore, kind: str, data: st.DataObject, base: Path) -> Recorded:
    root = base / "project"
    if kind == "git":
        make_repo(root, {".gitignore": "*.log\n", "a.txt": "committed\n"})
    h = await new_harness(AsyncEventStore(store), base / "home", root)
    seen = [(await h.head(), read_tree(h.root))]
    for _ in range(data.draw(st.integers(1, 12), label="operations")):
        await one_operation(h, data)
        seen.append((await h.head(), read_tree(h.root)))
    # Several rewinds in a row, to earlier events and back to abandoned ones: each
    # one plans from where the one before left the tree.
    order = data.draw(st.permutations(range(len(seen) - 1)), label="rewinds")[:4]
    for index in [*order, len(seen) - 1]:
        target, expected = seen[index]
        await h.workspace.rewind(h.session_id, target, restore_files=True)
        assert read_tree(h.root) == expected, f"rewind to state {index}"
    return Recorded(h.session_id, h.root, [seen[0], seen[-1]])


# Run in a new process: the store opened anew (new connections, another home, so no
# shadow repository and nothing cached) must restore the start and the end of every
# example from the record alone.
REOPEN = """
import pickle, sys
import anyio
from tests.workspace.conftest import read_tree
from tron_events import AsyncEventStore, EventStore
from tron_server.workspace import Workspace

url, home, examples = pickle.load(sys.stdin.buffer)

async def main() -> None:
    with EventStore.open(url) as store:
        workspace = Workspace(AsyncEventStore(store), home)
        for n, (session_id, root, states) in enumerate(examples):
            for target, expected in states:
                await workspace.rewind(session_id, target, restore_files=True)
                if read_tree(root) != expected:
                    sys.exit(f"example {n}: rewind to {target} in a new process differs")

anyio.run(main)
"""


def restore_in_a_new_process(url: str, home: Path, examples: list[Recorded]) -> None:
    payload = pickle.dumps((url, home, [(r.session_id, r.root, r.states) for r in examples]))
    done = subprocess.run(
        [sys.executable, "-c", REOPEN],
        input=payload,
        capture_output=True,
        cwd=Path(__file__).resolve().parents[2],  # the repository: ``tests`` importable
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")


@pytest.mark.parametrize("kind", ["plain", "git"])
def test_a_rewind_with_files_restores_the_folder_of_any_earlier_event(
    store: EventStore, backend: str, kind: str, tmp_path: Path
) -> None:
    if kind == "git" and backend == "postgres":
        pytest.skip("the git variant runs on SQLite (the store side is the same)")
    examples: list[Recorded] = []
    numbers = itertools.count()  # a fresh folder per example, failed ones included

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(data=st.data())
    def example(data: st.DataObject) -> None:
        base = tmp_path / f"example-{next(numbers)}"
        examples.append(anyio.run(scenario, store, kind, data, base))

    example()
    # Every example's session, in one new process (a process per example would
    # dominate the run): the store's record alone restores each one.
    restore_in_a_new_process(store.url, tmp_path / "other-home", examples)
