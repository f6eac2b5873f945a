"""A git worktree Tron makes for a session (``<home>/worktrees/…``) is judged as the
repository it checks out (issue 26 item 1 follow-up): real git repositories and
worktrees, the trust store, and a fork in its own worktree over a real server."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from tests.support.scripted_llm import Response, ScriptedLLM, Text
from tests.support.server import ServerFactory
from tests.workspace.conftest import git, make_repo
from tron_server.client import TronClient
from tron_server.trust import TrustStore


def worktree(repo: Path, home: Path, name: str) -> Path:
    """A worktree of ``repo`` where Tron makes them (``git worktree add``)."""
    path = home / "worktrees" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    git(repo, "worktree", "add", "-q", "-b", f"tron/{name}", str(path))
    return path


@pytest.fixture
def setup(tmp_path: Path) -> tuple[TrustStore, Path, Path]:
    home = tmp_path / "home"
    repo = make_repo(tmp_path / "src" / "repo", {"sub/app.py": "x = 1\n"})
    return TrustStore(home), repo, worktree(repo, home, "repo-1a2b")


def test_a_worktree_follows_its_repository(setup: tuple[TrustStore, Path, Path]) -> None:
    store, repo, tree = setup
    assert store.is_trusted(tree) is None
    store.set(repo.parent, True)  # trust of a folder holding the repository
    assert store.is_trusted(tree) == repo.parent
    assert store.is_trusted(tree / "sub") == repo.parent
    assert store.is_trusted(tree.parent) is None  # the worktrees folder itself: no
    store.set(repo, False)  # revoked for the repository: for its worktrees too
    assert store.is_trusted(tree) is None and store.is_trusted(tree / "sub") is None


def test_folder_by_folder_and_the_worktree_s_own_decision_first(
    setup: tuple[TrustStore, Path, Path],
) -> None:
    store, repo, tree = setup
    store.set(repo / "sub", True)  # only a subfolder of the repository
    assert store.is_trusted(tree / "sub") == repo / "sub"
    assert store.is_trusted(tree) is None
    store.set(repo, True)
    store.set(tree, False)  # a decision recorded for the worktree itself wins
    assert store.is_trusted(tree) is None and store.is_trusted(tree / "sub") is None
    assert store.is_trusted(repo / "sub") == repo


def test_a_planted_git_file_claims_no_trust(tmp_path: Path) -> None:
    """A folder under the worktrees that names a trusted repository's worktree in its
    ``.git`` file is not that worktree: git's link back names another folder."""
    home = tmp_path / "home"
    repo = make_repo(tmp_path / "src" / "repo")
    real = worktree(repo, home, "real")
    store = TrustStore(home)
    store.set(repo, True)
    assert store.is_trusted(real) == repo
    fake = home / "worktrees" / "fake"
    fake.mkdir()
    (fake / ".git").write_text((real / ".git").read_text())
    assert store.is_trusted(fake) is None
    # Nor does a worktree elsewhere than Tron's folder: it is a folder like any other.
    outside = tmp_path / "elsewhere"
    git(repo, "worktree", "add", "-q", "-b", "mine", str(outside))
    assert store.is_trusted(outside) is None


# --- over a real server ----------------------------------------------------------------


async def turn(client: TronClient, session_id: str) -> None:
    stream = client.notifications(["agent.complete"], session_id=session_id)
    await client.call("agent.message", {"sessionId": session_id, "content": "go"})
    with anyio.fail_after(60):
        await stream.next()
    stream.close()


@pytest.mark.anyio
async def test_a_fork_s_worktree_runs_its_trusted_repository_s_hooks(
    server_factory: ServerFactory,
    llm: ScriptedLLM,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    server = server_factory(anthropic_base_url=llm.base_url, default_model="claude-sonnet-4-5")
    marker = tmp_path / "prompts.log"
    hook = {"type": "command", "command": f"cat >/dev/null; pwd >> '{marker}'"}
    settings = {"hooks": {"UserPromptSubmit": [{"hooks": [hook]}]}}
    repo = make_repo(
        tmp_path / "repo", {".tron/settings.json": json.dumps(settings), "a.txt": "a\n"}
    )
    async with server.connect() as client:
        await client.call("trust.set", {"path": str(repo), "trusted": True})
        sid = (await client.call("session.create", {"workingDirectory": str(repo)}))["id"]
        llm.add(Response([Text("one")]))
        await turn(client, sid)
        head = (await client.call("session.get", {"sessionId": sid}))["headEventId"]
        forked = await client.call("session.fork", {"eventId": head, "worktree": True})
        tree = Path(forked["worktree"]["path"])
        assert tree.is_relative_to(server.home / "worktrees")  # outside the trusted folder
        answer = await client.call("trust.get", {"path": str(tree)})
        assert answer["trusted"] is True and answer["trustedBy"] == str(repo.resolve())
        llm.add(Response([Text("two")]))
        await turn(client, forked["session"]["id"])
        # The repository's hook ran for the fork too, in the worktree.
        assert marker.read_text().splitlines() == [str(repo.resolve()), str(tree.resolve())]
        await client.call("trust.set", {"path": str(repo), "trusted": False})
        answer = await client.call("trust.get", {"path": str(tree)})
        assert answer["trusted"] is False and answer["trustedBy"] is None
