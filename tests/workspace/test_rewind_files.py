"""Rewind with files: restores, conflicts that write nothing, force, undo, missing or
damaged contents, the path policy, sub-agents, and a restore in a new process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests.workspace.conftest import Harness, new_harness, read_tree
from tron_events import AsyncEventStore, EventStore, InvalidRewind, MissingContent
from tron_server.tools import PathPolicy
from tron_server.workspace import FilesConflict, WorkspaceError

pytestmark = pytest.mark.anyio


async def three_steps(h: Harness) -> list[tuple[str, dict[str, tuple[object, ...]]]]:
    """Write, Edit, Bash; (head, folder) after each, the start first."""
    (h.root / "old.txt").write_text("old\n")
    seen = [(await h.head(), read_tree(h.root))]
    await h.write("a.txt", "alpha\nbeta\n")
    seen.append((await h.head(), read_tree(h.root)))
    await h.edit("a.txt", "beta", "gamma")
    seen.append((await h.head(), read_tree(h.root)))
    await h.bash("mkdir -p d && mv old.txt d/moved.txt && chmod +x a.txt && ln -s a.txt l")
    seen.append((await h.head(), read_tree(h.root)))
    return seen


async def test_rewind_with_files_restores_each_earlier_state(harness: Harness) -> None:
    h = harness
    seen = await three_steps(h)
    final_head, final_tree = seen[-1]
    for target, tree in reversed(seen[:-1]):
        outcome = await h.workspace.rewind(h.session_id, target, restore_files=True)
        assert read_tree(h.root) == tree
        assert outcome.event is not None and outcome.event.type == "file.restore"
        assert outcome.event.parent_id == target
        assert outcome.session.head_event_id == outcome.event.id
    assert not (h.root / "d").exists()  # the folder the rewind emptied is gone too
    # Undo: back to the old head (an abandoned branch now), with files.
    await h.workspace.rewind(h.session_id, final_head, restore_files=True)
    assert read_tree(h.root) == final_tree


async def test_conversation_only_rewind_leaves_the_files(harness: Harness) -> None:
    h = harness
    seen = await three_steps(h)
    outcome = await h.workspace.rewind(h.session_id, seen[0][0])
    assert outcome.session.head_event_id == seen[0][0] and outcome.event is None
    assert read_tree(h.root) == seen[-1][1]
    with pytest.raises(InvalidRewind):  # an abandoned branch needs restore_files
        await h.workspace.rewind(h.session_id, seen[-1][0])


async def test_a_file_changed_outside_is_a_conflict_and_nothing_is_written(
    harness: Harness,
) -> None:
    h = harness
    seen = await three_steps(h)
    (h.root / "a.txt").write_text("my own edit\n")
    before = read_tree(h.root)
    head = await h.head()
    with pytest.raises(FilesConflict) as info:
        await h.workspace.rewind(h.session_id, seen[0][0], restore_files=True)
    [problem] = info.value.problems
    assert problem.path == str(h.root / "a.txt") and problem.reason == "changed"
    assert read_tree(h.root) == before and await h.head() == head
    # force: restored anyway; the outside edit is stored and named in the record.
    outcome = await h.workspace.rewind(h.session_id, seen[0][0], restore_files=True, force=True)
    assert outcome.forced == [str(h.root / "a.txt")] and outcome.event is not None
    assert read_tree(h.root) == seen[0][1]
    [replaced] = [
        c["before"] for c in outcome.event.payload["changes"] if c["path"] == problem.path
    ]
    assert (await h.store.get_blobs([replaced["hash"]]))[replaced["hash"]] == b"my own edit\n"
    # Undoing goes back to the files as the agent left them.
    await h.workspace.rewind(h.session_id, head, restore_files=True)
    assert read_tree(h.root) == seen[-1][1]


async def test_a_missing_or_damaged_content_restores_nothing(
    harness: Harness, store: EventStore
) -> None:
    h = harness
    seen = await three_steps(h)
    current = read_tree(h.root)
    events = await h.store.get_events(h.session_id, types=["file.write"])
    gone = events[0].payload["after"]["hash"]
    engine = create_engine(store.url.replace("sqlite:///", "sqlite:///", 1))
    with engine.begin() as conn:
        conn.execute(
            text("UPDATE file_blobs SET data = :d WHERE hash = :h"), {"d": b"x", "h": gone}
        )
    engine.dispose()
    with pytest.raises(MissingContent) as info:
        await h.workspace.rewind(h.session_id, seen[1][0], restore_files=True)
    assert info.value.hashes == [gone]
    assert read_tree(h.root) == current


async def test_contents_too_large_to_record_are_reported_not_restorable(
    astore: AsyncEventStore, tmp_path: Path
) -> None:
    h = await new_harness(astore, tmp_path / "home", tmp_path / "p", max_file_bytes=100)
    (h.root / "big.txt").write_text("b" * 500)
    start = await h.head()
    await h.bash("echo changed > big.txt && echo new > small.txt")
    with pytest.raises(FilesConflict) as info:
        await h.workspace.rewind(h.session_id, start, restore_files=True)
    assert [(p.path, p.reason) for p in info.value.problems] == [
        (str(h.root / "big.txt"), "not_stored")
    ]
    assert (h.root / "small.txt").exists()
    outcome = await h.workspace.rewind(h.session_id, start, restore_files=True, force=True)
    assert outcome.skipped == [str(h.root / "big.txt")]
    assert not (h.root / "small.txt").exists() and (h.root / "big.txt").read_text() == "changed\n"


async def test_the_path_policy_refuses_before_anything_is_written(
    harness: Harness, tmp_path: Path
) -> None:
    h = harness
    outside = tmp_path / "elsewhere" / "x.txt"
    start = await h.head()
    await h.write("inside.txt", "in\n")
    await h.write(str(outside), "out\n")
    policy = PathPolicy(h.root, write_roots=(h.root,))
    with pytest.raises(WorkspaceError) as info:
        await h.workspace.rewind(h.session_id, start, restore_files=True, policy=policy)
    assert info.value.reason == "refused" and info.value.data["files"] == [str(outside)]
    assert (h.root / "inside.txt").exists() and outside.exists()


async def test_changes_of_a_sub_agent_are_restored_with_its_parent(
    astore: AsyncEventStore, tmp_path: Path
) -> None:
    parent = await new_harness(astore, tmp_path / "home", tmp_path / "p")
    start = await parent.head()
    await parent.write("mine.txt", "parent\n")
    child_session = await astore.create_session(
        working_directory=str(parent.root), model="m", provider="p",
        parent_session_id=parent.session_id,
    )  # fmt: skip
    child = Harness(
        astore, parent.workspace, child_session.id, parent.root, parent.tools, calls=100
    )
    await astore.append(
        parent.session_id, "subagent.spawned",
        {"childSessionId": child.session_id, "toolCallId": "toolu_task", "subagentType": "x"},
    )  # fmt: skip
    await child.write("theirs.txt", "child\n")
    await child.bash("echo more >> mine.txt")
    await astore.append(
        parent.session_id, "subagent.completed",
        {"childSessionId": child.session_id, "toolCallId": "toolu_task", "subagentType": "x",
         "stopReason": "end_turn"},
    )  # fmt: skip
    after_task = read_tree(parent.root)
    head = await parent.head()
    await parent.workspace.rewind(parent.session_id, start, restore_files=True)
    assert read_tree(parent.root) == {}
    await parent.workspace.rewind(parent.session_id, head, restore_files=True)
    assert read_tree(parent.root) == after_task


_RESTORE_SCRIPT = """
import anyio, json, sys
from tron_events import AsyncEventStore
from tron_server.workspace import Workspace

async def main():
    url, home, session_id, target = sys.argv[1:5]
    store = await AsyncEventStore.open(url)
    outcome = await Workspace(store, __import__("pathlib").Path(home)).rewind(
        session_id, target, restore_files=True
    )
    print(json.dumps({"head": outcome.session.head_event_id,
                      "files": len(outcome.restored)}))
    await store.aclose()

anyio.run(main)
"""


async def test_a_rewind_with_files_in_a_new_process(store_url: str, tmp_path: Path) -> None:
    async with await AsyncEventStore.open(store_url) as astore:
        h = await new_harness(astore, tmp_path / "home", tmp_path / "p")
        seen = await three_steps(h)
    target, tree = seen[1]
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_RESTORE_SCRIPT), store_url,
         str(tmp_path / "other-home"), h.session_id, target],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["files"] == 4
    assert read_tree(h.root) == tree
