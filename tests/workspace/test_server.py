"""Over the real server (WebSocket, the scripted LLM, the real tools): a rewind with
files and its conflict code, diffs, the rewind preview, and a fork in its own git
worktree with a turn on it, merged back with and without a conflict."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.scripted_llm import Response, ScriptedLLM, Text, ToolUse
from tests.support.server import RunningServer
from tests.workspace.conftest import git, make_repo, read_tree
from tron_server.client import RpcCallError, TronClient

pytestmark = pytest.mark.anyio


async def turn(client: TronClient, session_id: str) -> None:
    """One message, until the agent is done (its replies are scripted first)."""
    stream = client.notifications(session_id=session_id)
    await client.call("agent.message", {"sessionId": session_id, "content": "go"})
    with anyio.fail_after(30):
        while (await stream.next()).method != "agent.complete":
            pass
    stream.close()


def script(llm: ScriptedLLM, *tools: ToolUse) -> None:
    llm.add(Response([Text("On it."), *tools]), Response([Text("Done.")]))


async def head(client: TronClient, session_id: str) -> str:
    session: dict[str, Any] = await client.call("session.get", {"sessionId": session_id})
    return str(session["headEventId"])


async def test_rewind_with_files_over_rpc(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "a.txt").write_text("one\n")
    async with server.connect() as client:
        sid = (await client.call("session.create", {"workingDirectory": str(project)}))["id"]
        start = await head(client, sid)
        script(
            llm,
            ToolUse("Edit", {"file_path": "a.txt", "old_string": "one", "new_string": "two"}),
            ToolUse("Bash", {"command": "echo made > b.txt"}),
        )
        await turn(client, sid)
        assert read_tree(project) == {
            "a.txt": ("file", b"two\n", False),
            "b.txt": ("file", b"made\n", False),
        }
        after = await head(client, sid)
        # The diff of the whole session, then the preview of a rewind.
        diff = await client.call("session.diff", {"sessionId": sid})
        assert sorted(Path(f["path"]).name for f in diff["files"]) == ["a.txt", "b.txt"]
        preview = await client.call("session.previewRewind", {"sessionId": sid, "eventId": start})
        assert [f["problem"] for f in preview["files"]] == [None, None]
        # An outside edit: the rewind refuses with -32006 and writes nothing.
        (project / "a.txt").write_text("mine\n")
        preview = await client.call("session.previewRewind", {"sessionId": sid, "eventId": start})
        assert [f["problem"] for f in preview["files"]] == ["changed", None]
        with pytest.raises(RpcCallError) as info:
            await client.call(
                "session.rewind", {"sessionId": sid, "eventId": start, "restoreFiles": True}
            )
        error = info.value
        assert error.code == -32006 and error.category == "conflict"
        assert [f["path"] for f in error.data["files"]] == [str(project / "a.txt")]
        assert (project / "b.txt").exists() and await head(client, sid) == after
        # force: restored; the answer says what was written.
        rewound = await client.call(
            "session.rewind",
            {"sessionId": sid, "eventId": start, "restoreFiles": True, "force": True},
        )
        assert rewound["restore"]["forced"] == [str(project / "a.txt")]
        assert read_tree(project) == {"a.txt": ("file", b"one\n", False)}
        # Undo: back to the abandoned head, with files.
        await client.call(
            "session.rewind", {"sessionId": sid, "eventId": after, "restoreFiles": True}
        )
        assert (project / "b.txt").read_text() == "made\n"


async def test_a_fork_in_its_own_worktree_merged_back(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "repo", {"app.py": "print('v1')\n", "lib.py": "x = 1\n"})
    (repo / "notes.txt").write_text("uncommitted, untracked\n")
    async with server.connect() as client:
        sid = (await client.call("session.create", {"workingDirectory": str(repo)}))["id"]
        script(llm, ToolUse("Write", {"file_path": "app.py", "content": "print('v2')\n"}))
        await turn(client, sid)
        fork_point = await head(client, sid)
        script(llm, ToolUse("Bash", {"command": "echo later > later.txt"}))
        await turn(client, sid)
        # The fork's files are those of its fork point: v2 and the notes, not later.txt.
        forked = await client.call("session.fork", {"eventId": fork_point, "worktree": True})
        fork, tree = forked["session"], forked["worktree"]
        path = Path(tree["path"])
        assert fork["workingDirectory"] == str(path) and tree["branch"].startswith("tron/")
        assert (path / "app.py").read_text() == "print('v2')\n"
        assert (path / "notes.txt").exists() and not (path / "later.txt").exists()
        assert git(path, "status", "--porcelain") == ""
        state = await client.call("session.getState", {"sessionId": fork["id"]})
        assert state["workingDirectory"] == str(path)
        # A turn on the fork writes in the worktree, not in the source checkout.
        script(llm, ToolUse("Write", {"file_path": "feature.py", "content": "FEATURE = 1\n"}))
        await turn(client, fork["id"])
        assert (path / "feature.py").exists() and not (repo / "feature.py").exists()
        listed = await client.call("worktree.list", {"sessionId": fork["id"]})
        assert [w["status"] for w in listed["worktrees"]] == ["active"]
        # The checkout's own uncommitted files are committed first (git would refuse).
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "the user's work")
        merged = await client.call("worktree.merge", {"sessionId": fork["id"]})
        assert merged["into"] == "main" and "feature.py" in merged["committed"]["files"]
        assert (repo / "feature.py").read_text() == "FEATURE = 1\n"
        assert git(repo, "log", "-1", "--format=%P").count(" ") == 1  # a merge commit
        released = await client.call(
            "worktree.release", {"sessionId": fork["id"], "deleteBranch": True}
        )
        assert released["branchDeleted"] is True and not path.exists()
        types = [e["type"] for e in await client.sync(fork["id"])]
        assert [t for t in types if t.startswith("worktree.")] == [
            "worktree.acquired", "worktree.commit", "worktree.merged", "worktree.released",
        ]  # fmt: skip


async def test_a_conflicting_merge_is_reported_and_not_forced(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "repo", {"app.py": "value = 1\n"})
    async with server.connect() as client:
        sid = (await client.call("session.create", {"workingDirectory": str(repo)}))["id"]
        forked = await client.call(
            "session.fork", {"eventId": await head(client, sid), "worktree": True}
        )
        fork = forked["session"]
        script(
            llm,
            ToolUse(
                "Edit",
                {"file_path": "app.py", "old_string": "value = 1", "new_string": "value = 2"},
            ),
        )
        await turn(client, fork["id"])
        (repo / "app.py").write_text("value = 3\n")
        git(repo, "commit", "-qam", "meanwhile")
        before = git(repo, "rev-parse", "HEAD")
        with pytest.raises(RpcCallError) as info:
            await client.call("worktree.merge", {"sessionId": fork["id"]})
        assert info.value.code == -32006 and info.value.data["files"] == ["app.py"]
        assert info.value.data["kind"] == "merge"
        assert git(repo, "rev-parse", "HEAD") == before and git(repo, "status", "--porcelain") == ""
        assert (repo / "app.py").read_text() == "value = 3\n"
        # The fork cannot rewind into the history it inherited (its source's folder).
        inherited = await head(client, sid)
        with pytest.raises(RpcCallError) as info:
            await client.call("session.rewind", {"sessionId": fork["id"], "eventId": inherited})
        assert info.value.code == -32004 and "own git worktree" in info.value.message


async def test_a_worktree_outside_git_is_refused(server: RunningServer, tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    async with server.connect() as client:
        sid = (await client.call("session.create", {"workingDirectory": str(folder)}))["id"]
        # A new session's folder gets its first snapshot in the background.
        snapshots = server.home / "workspace" / "snapshots"
        with anyio.fail_after(30):
            while not list(snapshots.glob("*/tron-work-tree")):
                await anyio.sleep(0.05)
        with pytest.raises(RpcCallError) as info:
            await client.call(
                "session.fork", {"eventId": await head(client, sid), "worktree": True}
            )
        assert info.value.code == -32007 and info.value.data["reason"] == "not_git"
        assert "not inside a git repository" in info.value.message
        sessions = await client.call("session.list", {})
        assert [s["id"] for s in sessions["sessions"]] == [sid]  # no fork was made


async def test_a_rewind_through_a_folder_swapped_for_a_symlink_is_refused(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 26 item 4: a rewind with files that would write through a folder someone
    replaced by a symlink to elsewhere answers -32007 naming the file, writes nothing
    there, and logs no error (no file was written, so none is rolled back)."""
    project = tmp_path / "p"
    (project / "sub").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    async with server.connect() as client:
        sid = (await client.call("session.create", {"workingDirectory": str(project)}))["id"]
        start = await head(client, sid)
        script(llm, ToolUse("Write", {"file_path": "sub/a.txt", "content": "agent\n"}))
        await turn(client, sid)
        written = await head(client, sid)
        await client.call(
            "session.rewind", {"sessionId": sid, "eventId": start, "restoreFiles": True}
        )
        assert not (project / "sub" / "a.txt").exists()
        # The folder is swapped for a symlink to a folder outside the project.
        if (project / "sub").exists():
            (project / "sub").rmdir()
        (project / "sub").symlink_to(outside, target_is_directory=True)
        before = await head(client, sid)
        caplog.clear()
        with caplog.at_level(logging.ERROR):
            for force in (False, True):
                with pytest.raises(RpcCallError) as info:
                    await client.call(
                        "session.rewind",
                        {"sessionId": sid, "eventId": written, "restoreFiles": True,
                         "force": force},
                    )  # fmt: skip
                error = info.value
                assert error.code == -32007, (error.code, error.message)
                assert error.data["reason"] == "refused"
                assert str(project / "sub" / "a.txt") in error.message
                assert str(project / "sub" / "a.txt") in error.data["files"]
        assert list(outside.iterdir()) == []
        assert (project / "sub").is_symlink() and await head(client, sid) == before
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
