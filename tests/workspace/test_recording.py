"""What Write, Edit and Bash record: both contents of every file they change, in a
plain folder and in a git repository (ignore rules, .git, nested repositories, sizes)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.workspace.conftest import Harness, git, make_repo, new_harness
from tron_events import AsyncEventStore, FileState
from tron_events.blobs import content_hash

pytestmark = pytest.mark.anyio


async def file_events(h: Harness, *types: str) -> list[dict[str, Any]]:
    events = await h.store.get_events(h.session_id, types=list(types) or None)
    return [{"type": e.type, **e.payload} for e in events]


async def content(h: Harness, state: dict[str, Any] | None) -> bytes | None:
    if state is None:
        return None
    return (await h.store.get_blobs([state["hash"]]))[state["hash"]]


async def test_write_and_edit_record_both_contents(harness: Harness) -> None:
    h = harness
    await h.write("notes.txt", "one\ntwo\n")
    await h.edit("notes.txt", "two", "three")
    write, edit = await file_events(h, "file.write", "file.edit")
    assert write["before"] is None
    assert await content(h, write["after"]) == b"one\ntwo\n"
    assert write["after"]["hash"] == write["contentHash"]
    assert await content(h, edit["before"]) == b"one\ntwo\n"
    assert await content(h, edit["after"]) == b"one\nthree\n"
    assert edit["path"] == str(h.root / "notes.txt")


async def test_write_keeps_the_executable_bit_in_its_record(harness: Harness) -> None:
    h = harness
    script = h.root / "run.sh"
    script.write_text("echo a\n")
    script.chmod(0o755)
    await h.write("run.sh", "echo b\n")
    [write] = await file_events(h, "file.write")
    assert write["before"]["executable"] is True and write["after"]["executable"] is True
    assert os.stat(script).st_mode & 0o111


@pytest.mark.parametrize("kind", ["plain", "git"])
async def test_bash_changes_of_every_kind_are_recorded(
    astore: AsyncEventStore, tmp_path: Path, kind: str
) -> None:
    root = tmp_path / "project"
    if kind == "git":
        make_repo(root, {"keep.txt": "kept\n", "old.txt": "old\n"})
    else:
        root.mkdir()
        (root / "keep.txt").write_text("kept\n")
        (root / "old.txt").write_text("old\n")
    h = await new_harness(astore, tmp_path / "home", root)
    (root / "gone.txt").write_text("bye\n")
    (root / "tool.sh").write_text("#!/bin/sh\n")
    result = await h.bash(
        "mkdir -p a/b && printf 'x\\000y' > a/b/data.bin && echo more >> keep.txt && "
        "rm gone.txt && mv old.txt a/new.txt && chmod +x tool.sh && ln -s keep.txt link"
    )
    assert result.details is not None and result.details["filesChanged"] == 7
    [changes] = await file_events(h, "file.changes")
    by_path = {c["path"]: c for c in changes["changes"]}
    rel = {str(Path(p).relative_to(root)): c for p, c in by_path.items()}
    assert set(rel) == {
        "a/b/data.bin", "keep.txt", "gone.txt", "old.txt", "a/new.txt", "tool.sh", "link",
    }  # fmt: skip
    assert await content(h, rel["a/b/data.bin"]["after"]) == b"x\x00y"
    assert (
        rel["gone.txt"]["after"] is None and await content(h, rel["gone.txt"]["before"]) == b"bye\n"
    )
    assert await content(h, rel["keep.txt"]["after"]) == b"kept\nmore\n"
    assert rel["tool.sh"]["before"]["hash"] == rel["tool.sh"]["after"]["hash"]
    assert rel["tool.sh"]["after"]["executable"] is True
    assert rel["link"]["after"]["kind"] == "symlink"
    assert await content(h, rel["link"]["after"]) == b"keep.txt"
    assert changes["renames"] == [{"from": str(root / "old.txt"), "to": str(root / "a/new.txt")}]
    # The event comes before the command's result, after its call.
    types = [e.type for e in await h.store.get_events(h.session_id)]
    assert types[-3:] == ["tool.call", "file.changes", "tool.result"]


async def test_a_command_that_changes_nothing_records_nothing(harness: Harness) -> None:
    (harness.root / "a.txt").write_text("a\n")
    result = await harness.bash("cat a.txt && ls")
    assert result.details is not None and result.details["filesChanged"] == 0
    assert await file_events(harness, "file.changes") == []


async def test_ignored_files_git_internals_and_nested_repositories_are_left_out(
    astore: AsyncEventStore, tmp_path: Path
) -> None:
    top = make_repo(tmp_path / "repo", {".gitignore": "build/\n*.log\n", "pkg/x.py": "x\n"})
    (top / ".git" / "info" / "exclude").write_text("secret.txt\n")
    # The session works in a sub-folder: the repository's ignore rules still apply.
    h = await new_harness(astore, tmp_path / "home", top / "pkg")
    make_repo(top / "pkg" / "vendored")  # a nested repository with a commit
    (top / "pkg" / "empty-repo").mkdir()
    git(top / "pkg" / "empty-repo", "init", "-q")  # and one without any
    await h.bash(
        "mkdir -p build && echo b > build/out && echo l > run.log && echo s > secret.txt && "
        "echo v >> vendored/README.md && echo e > empty-repo/f && echo y > y.py && "
        "git -C .. config core.dummy 1 && echo o > ../outside.txt"
    )
    [changes] = await file_events(h, "file.changes")
    assert [c["path"] for c in changes["changes"]] == [str(top / "pkg" / "y.py")]
    assert changes["root"] == str(top / "pkg")


async def test_large_files_are_recorded_by_hash_only(
    astore: AsyncEventStore, tmp_path: Path
) -> None:
    h = await new_harness(astore, tmp_path / "home", tmp_path / "p", max_file_bytes=1000)
    await h.bash("head -c 5000 /dev/zero > big.bin && echo small > small.txt")
    await h.write("big.txt", "z" * 2000)
    [changes] = await file_events(h, "file.changes")
    by_name = {Path(c["path"]).name: c for c in changes["changes"]}
    big = FileState.from_json(by_name["big.bin"]["after"])
    assert big is not None and not big.stored and big.size == 5000
    assert big.hash == content_hash(b"\0" * 5000)
    assert await h.store.missing_blobs([big.hash]) == {big.hash}
    assert by_name["small.txt"]["after"].get("stored", True) is True
    [write] = await file_events(h, "file.write")
    assert write["after"]["stored"] is False


async def test_a_snapshot_failure_never_fails_the_command(
    astore: AsyncEventStore, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "workspace").write_text("not a folder")  # the shadows cannot be made
    h = await new_harness(astore, home, tmp_path / "project")
    result = await h.bash("echo ok > a.txt; echo ok")
    assert not result.is_error and "ok" in str(result.content)
    assert result.details is not None and "filesNotRecorded" in result.details
    assert (h.root / "a.txt").read_text() == "ok\n"
    assert await file_events(h, "file.changes") == []


async def test_a_folder_with_too_many_files_is_not_snapshotted(
    astore: AsyncEventStore, tmp_path: Path
) -> None:
    root = tmp_path / "big"
    (root / "node_modules").mkdir(parents=True)
    for i in range(8):
        (root / f"f{i}.txt").write_text("x")
        (root / "node_modules" / f"m{i}.js").write_text("x")
    (root / ".gitignore").write_text("node_modules/\n")
    h = await new_harness(astore, tmp_path / "home", root, max_files=8)
    result = await h.bash("echo y > f0.txt")
    assert result.details is not None and "holds 9 files" in result.details["filesNotRecorded"]
    assert not list((tmp_path / "home").rglob("objects/??"))  # nothing was copied
    (root / ".gitignore").write_text("node_modules/\nf*.txt\n")  # ignored now: 1 file
    h2 = await new_harness(astore, tmp_path / "home2", root, max_files=8)
    result = await h2.bash("echo z > f0.txt && echo n > new.txt")
    assert result.details is not None and result.details["filesChanged"] == 1


async def test_an_aborted_command_still_records_what_it_changed(harness: Harness) -> None:
    import anyio

    h = harness
    with anyio.move_on_after(1.5):
        await h.bash("echo started > partial.txt; sleep 30")
    events = await file_events(h, "file.changes")
    assert [Path(c["path"]).name for e in events for c in e["changes"]] == ["partial.txt"]
