"""Process trees on real processes: abort and timeout end every process a command started
(SIGTERM-ignorers, setsid escapees, deep chains, double-forked daemons) within a second,
checked by pid; a normal finish leaves background jobs running."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import anyio
import pytest

from tests.tools.conftest import Recorder
from tests.tools.proctree_script import (
    KILL_DEADLINE,
    alive,
    complete,
    survivors,
    tree_pids,
    write_tree_script,
)
from tron_server.tools import ProcessTree, ToolContext, ToolResult, _proctree, default_tools

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]


async def bash(ctx: ToolContext, command: str, **args: object) -> ToolResult:
    return await default_tools().execute("Bash", {"command": command, **args}, ctx)


async def read_until_complete(tree: ProcessTree) -> dict[str, int]:
    assert tree.stdout is not None
    out = b""
    with anyio.fail_after(20):
        while not complete(out.decode()):
            out += await tree.stdout.read(4096)
    return tree_pids(out.decode())


def test_subreaper_tracking_is_available_here() -> None:
    # The CI machines run Linux: the guarantees below must not silently fall back.
    assert _proctree.subreaper_supported()


async def test_kill_ends_the_whole_tree_after_the_grace(tmp_path: Path) -> None:
    script = write_tree_script(tmp_path)
    tree = await ProcessTree.start(["bash", str(script)], cwd=tmp_path)
    pids = await read_until_complete(tree)
    assert survivors(pids) == pids  # all running, including the escapees
    assert set(pids.values()) <= set(tree.members())  # tracked though some left the group
    assert os.getpgid(pids["setsid"]) != tree.pid and os.getpgid(pids["daemon"]) != tree.pid

    started = time.monotonic()
    await tree.kill()
    elapsed = time.monotonic() - started
    assert survivors(pids) == {}
    assert tree.members() == []
    assert elapsed < KILL_DEADLINE, f"the tree took {elapsed:.2f} s to die"
    assert tree.returncode is not None  # the root is reaped
    tree.close()
    await tree.kill()  # a second call is harmless


async def test_abort_of_bash_ends_the_tree(
    ctx: ToolContext, recorder: Recorder, workdir: Path
) -> None:
    script = write_tree_script(workdir)
    pids: dict[str, int] = {}
    cancelled_at = 0.0
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:

            async def abort_when_ready() -> None:
                nonlocal pids, cancelled_at
                with anyio.fail_after(20):
                    while not complete("".join(recorder.output)):
                        await anyio.sleep(0.01)
                pids = tree_pids("".join(recorder.output))
                assert survivors(pids) == pids
                cancelled_at = time.monotonic()
                scope.cancel()

            tg.start_soon(abort_when_ready)
            await bash(ctx, f"bash {script}")
    elapsed = time.monotonic() - cancelled_at
    assert scope.cancel_called and pids
    assert survivors(pids) == {}  # nothing alive the moment the tool returns
    assert elapsed < KILL_DEADLINE, f"abort took {elapsed:.2f} s"


async def test_timeout_ends_the_tree(ctx: ToolContext, recorder: Recorder, workdir: Path) -> None:
    script = write_tree_script(workdir)
    result = await bash(ctx, f"bash {script}", timeout=1.5)
    output = "".join(recorder.output)
    assert complete(output), output  # the whole tree was up before the timeout
    pids = tree_pids(output)
    assert result.is_error and "timed out after 1.5 s" in str(result.content)
    assert "every process it started was killed" in str(result.content)
    assert survivors(pids) == {}


async def test_background_jobs_survive_a_normal_finish(ctx: ToolContext) -> None:
    with anyio.fail_after(10):
        result = await bash(
            ctx,
            'sleep 60 & echo "bg $!"; ( setsid sleep 60 & echo "daemon $!" ); echo started',
        )
    assert not result.is_error and "[exit code: 0]" in str(result.content)
    pids = tree_pids(str(result.content))
    try:
        assert set(pids) == {"bg", "daemon"}
        assert survivors(pids) == pids  # left running, as in a terminal
    finally:
        for pid in pids.values():
            os.kill(pid, signal.SIGKILL)


async def test_the_root_gets_sigterm_and_time_to_clean_up(tmp_path: Path) -> None:
    marker = tmp_path / "cleaned"
    tree = await ProcessTree.start(
        ["bash", "-c", f"trap 'echo done > {marker}; exit 0' TERM; echo up; sleep 1000 & wait"],
        cwd=tmp_path,
    )
    assert tree.stdout is not None
    with anyio.fail_after(10):
        assert await tree.stdout.readline() == b"up\n"
        while len(tree.members()) < 2:
            await anyio.sleep(0.01)
    await tree.kill()
    assert marker.read_text() == "done\n"  # its trap ran, after its child was gone
    assert tree.returncode == 0 and tree.members() == []
    tree.close()


async def test_without_a_subreaper_the_group_is_still_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The documented fallback (no prctl, no /proc): the process group, TERM then KILL."""
    monkeypatch.setattr(_proctree, "subreaper_supported", lambda: False)
    tree = await ProcessTree.start(
        ["bash", "-c", 'bash -c \'trap "" TERM; echo "ignorer $$"; exec sleep 1000\' & wait'],
        cwd=tmp_path,
    )
    assert not tree.tracks_descendants
    assert tree.stdout is not None
    with anyio.fail_after(10):
        line = (await tree.stdout.readline()).decode()
    pid = int(line.split()[1])
    assert alive(pid)
    await tree.kill(grace=0.2)
    assert not alive(pid) and tree.members() == []
    tree.close()
