"""The change watch (inotify) that lets snapshots of unchanged folders be skipped: it
sees every kind of change, in folders created after it started too, and after an
overflow it says "changed" and keeps watching. Outside changes between commands are
never taken for the next command's."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.workspace.conftest import Harness
from tron_server.workspace._watch import ChangeWatch

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's"),
    pytest.mark.anyio,
]


def fresh(root: Path) -> ChangeWatch:
    watch = ChangeWatch.start(root)
    assert watch is not None
    watch.clean()
    assert not watch.changed()
    return watch


def test_every_kind_of_change_is_seen(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "sub").mkdir()
    (tmp_path / ".git").mkdir()
    watch = fresh(tmp_path)
    (tmp_path / ".git" / "index").write_text("git's own writes are not changes")
    with open(tmp_path / "a.txt", "rb") as f:
        f.read()  # reading is not a change
    assert not watch.changed()
    steps = [
        lambda: (tmp_path / "a.txt").write_text("b"),
        lambda: os.chmod(tmp_path / "a.txt", 0o755),
        lambda: (tmp_path / "sub" / "new.txt").write_text("n"),
        lambda: os.rename(tmp_path / "sub" / "new.txt", tmp_path / "moved.txt"),
        lambda: os.symlink("a.txt", tmp_path / "link"),
        lambda: os.unlink(tmp_path / "link"),
        lambda: (tmp_path / "deep" / "er").mkdir(parents=True),
        # Inside the folder made after the watch started: watched too.
        lambda: (tmp_path / "deep" / "er" / "f.txt").write_text("f"),
        lambda: os.rename(tmp_path / "deep", tmp_path / "sub" / "deep"),
        lambda: (tmp_path / "sub" / "deep" / "er" / "f.txt").write_text("g"),
    ]
    assert watch.quiet()
    for i, step in enumerate(steps):
        step()
        # quiet() polls without reading: what the event loop's fast path asks first.
        assert not watch.quiet(), f"step {i} left the watch quiet"
        assert watch.changed(), f"step {i} was not seen"
        assert not watch.quiet()  # drained, but the flag is still up
        watch.clean()
        assert not watch.changed()
        assert watch.quiet()
    watch.close()
    assert not watch.quiet()  # a closed watch knows nothing


def test_an_overflow_says_changed_and_watching_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="tron_server.workspace")
    watch = fresh(tmp_path)
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    a = os.open(tmp_path / "a", os.O_WRONLY | os.O_CREAT)
    b = os.open(tmp_path / "b", os.O_WRONLY | os.O_CREAT)
    try:
        # Writes to two files in turn: events the kernel cannot merge, more than it queues.
        for _ in range(limit // 2 + 100):
            os.write(a, b"x")
            os.write(b, b"y")
    finally:
        os.close(a)
        os.close(b)
    assert watch.changed()
    assert "overflowed" in caplog.text  # the overflow path, not a plain event
    watch.clean()
    assert not watch.changed()
    (tmp_path / "one-more").write_text("x")
    assert watch.changed()
    watch.close()


async def test_outside_changes_between_commands_are_not_the_next_commands(
    harness: Harness,
) -> None:
    h = harness
    await h.bash("echo one > a.txt")
    (h.root / "a.txt").write_text("edited outside\n")
    result = await h.bash("cat a.txt")
    assert result.details is not None and result.details["filesChanged"] == 0
    events = await h.store.get_events(h.session_id, types=["file.changes"])
    assert len(events) == 1


async def test_the_event_loop_takes_the_last_tree_only_while_the_folder_is_quiet(
    harness: Harness,
) -> None:
    h = harness
    await h.bash("echo one > a.txt")
    shadow = h.workspace.recorder.shadow_for(h.root)
    tree = shadow.unchanged_tree()
    assert tree is not None and tree == shadow.snapshot()
    (h.root / "a.txt").write_text("two\n")
    assert shadow.unchanged_tree() is None  # a change is pending: a real snapshot is due
    newer = shadow.snapshot()
    assert newer != tree and shadow.unchanged_tree() == newer
    result = await h.bash("cat a.txt")  # changes nothing: both snapshots are the last tree
    assert result.details is not None and result.details["filesChanged"] == 0
    result = await h.bash("echo three > a.txt")
    assert result.details is not None and result.details["filesChanged"] == 1
    assert shadow.unchanged_tree() not in (None, newer)
