"""The safety rules of worktrees and restores over the real server, with the error codes
docs/protocol.md gives: a merge git refuses over uncommitted files (-32006
local_changes), a release refused while the worktree holds changes (-32007 dirty), a
branch git keeps because it is not merged (-32007 branch_not_merged, the worktree
released all the same), and a missing stored content (-32007 missing_content, nothing
written)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.support.scripted_llm import ScriptedLLM, ToolUse
from tests.support.server import RunningServer
from tests.workspace.conftest import git, make_repo, read_tree
from tests.workspace.test_server import head, script, turn
from tron_events.blobs import content_hash
from tron_server.client import RpcCallError

pytestmark = pytest.mark.anyio


async def test_merge_and_release_refuse_what_would_lose_work(
    server: RunningServer,
    llm: ScriptedLLM,
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", {"app.py": "value = 1\n"})
    async with server.connect() as client:
        sid = (await client.call("session.create", {"workingDirectory": str(repo)}))["id"]
        forked = await client.call(
            "session.fork", {"eventId": await head(client, sid), "worktree": True}
        )
        fork, path = forked["session"], Path(forked["worktree"]["path"])
        script(llm, ToolUse("Write", {"file_path": "app.py", "content": "value = 2\n"}))
        await turn(client, fork["id"])
        # Your uncommitted edit of the same file: git refuses, nothing is changed.
        (repo / "app.py").write_text("value = 'mine'\n")
        before = git(repo, "rev-parse", "HEAD")
        with pytest.raises(RpcCallError) as info:
            await client.call("worktree.merge", {"sessionId": fork["id"]})
        assert info.value.code == -32006
        assert info.value.data["reason"] == "local_changes"
        assert info.value.data["files"] == ["app.py"]
        assert git(repo, "rev-parse", "HEAD") == before
        assert (repo / "app.py").read_text() == "value = 'mine'\n"
        # A worktree holding uncommitted work is not removed.
        (path / "scratch.txt").write_text("unsaved\n")
        with pytest.raises(RpcCallError) as info:
            await client.call("worktree.release", {"sessionId": fork["id"]})
        assert info.value.code == -32007 and info.value.data["reason"] == "dirty"
        assert (path / "scratch.txt").exists()
        (path / "scratch.txt").unlink()
        # Its branch is not merged: git keeps it, but the worktree is gone and recorded so.
        with pytest.raises(RpcCallError) as info:
            await client.call("worktree.release", {"sessionId": fork["id"], "deleteBranch": True})
        assert info.value.code == -32007
        assert info.value.data["reason"] == "branch_not_merged"
        assert not path.exists()
        branch = forked["worktree"]["branch"]
        assert git(repo, "branch", "--list", branch).strip().endswith(branch)
        listed = await client.call("worktree.list", {"sessionId": fork["id"]})
        assert [w["status"] for w in listed["worktrees"]] == ["released"]


async def test_a_missing_content_refuses_the_rewind_over_rpc(
    server: RunningServer,
    llm: ScriptedLLM,
    tmp_path: Path,
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "a.txt").write_text("one\n")
    async with server.connect() as client:
        sid = (await client.call("session.create", {"workingDirectory": str(project)}))["id"]
        start = await head(client, sid)
        script(
            llm,
            ToolUse("Write", {"file_path": "a.txt", "content": "two\n"}),
            ToolUse("Write", {"file_path": "b.txt", "content": "new\n"}),
        )
        await turn(client, sid)
        after = await head(client, sid)
        db = sqlite3.connect(server.home / "database" / "prod.db")
        with db:  # the content a.txt is to go back to
            db.execute("DELETE FROM file_blobs WHERE hash = ?", (content_hash(b"one\n"),))
        db.close()
        now = read_tree(project)
        with pytest.raises(RpcCallError) as info:
            await client.call(
                "session.rewind", {"sessionId": sid, "eventId": start, "restoreFiles": True}
            )
        assert info.value.code == -32007 and info.value.data["reason"] == "missing_content"
        assert info.value.data["hashes"] == [content_hash(b"one\n")]
        assert read_tree(project) == now and await head(client, sid) == after
