"""Forks with their own git worktree: a branch and a folder per fork, merged back with
a real ``git merge``.

``fork_with_worktree`` (``session.fork {worktree: true}``), when the source's working
directory is inside a git repository:

1. a new branch ``tron/<name>-<id>`` and its worktree under ``~/.tron/worktrees/``
   (``git worktree add``), from the checkout's ``HEAD``;
2. the files of the fork point put in it: the checkout's uncommitted files as they are
   now (``git status``: modified, deleted, untracked and not ignored), then the changes
   the source session recorded after the fork point undone (from the event store), and
   all of that committed on the branch ("files at the fork point"), so that the branch
   starts exactly where the conversation forks;
3. the forked session, whose working directory is the worktree (the same folder below
   the repository's top as the source's), and its ``worktree.acquired`` event.

``merge`` commits what the fork changed (``worktree.commit``) and runs ``git merge
--no-ff`` of the branch in the source checkout. A conflict is reported, never forced:
the merge is aborted and the checkout left exactly as it was (:class:`MergeConflict`
lists the files); so is a merge git refuses because it would overwrite uncommitted
files. ``release`` removes the worktree (``git worktree remove``: refused while it has
uncommitted changes, unless forced) and, if asked, the branch (``git branch -d``:
refused while not merged, unless forced). Outside git, a fork with a worktree is
refused with :class:`NotAGitRepository`.
"""

from __future__ import annotations

import dataclasses
import os
import re
import secrets
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread

from tron_events import AsyncEventStore, Event, EventNotFound, FileTransition, ForkResult

from ..paths import PathPolicy
from . import _git
from ._git import GitError
from .disk import apply_state
from .errors import MergeConflict, NotAGitRepository, WorkspaceError

__all__ = ["WorktreeInfo", "Worktrees"]

_SLUG = re.compile(r"[^A-Za-z0-9._-]+")
_IDENTITY = ("-c", "user.name=Tron", "-c", "user.email=tron@localhost")


@dataclass(frozen=True)
class WorktreeInfo:
    """A session's worktree, from its ``worktree.*`` events."""

    session_id: str
    path: str
    branch: str
    repository: str
    base_commit: str
    base_branch: str | None
    working_directory: str | None
    status: str  # "active" | "merged" | "released"
    merged_into: str | None = None
    merge_commit: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "path": self.path,
            "branch": self.branch,
            "repository": self.repository,
            "baseCommit": self.base_commit,
            "baseBranch": self.base_branch,
            "workingDirectory": self.working_directory,
            "status": self.status,
            "mergedInto": self.merged_into,
            "mergeCommit": self.merge_commit,
            "exists": Path(self.path).is_dir(),
        }


def _git_in(repo: Path, *args: str, check: bool = True) -> str:
    return _git.run(list(args), cwd=repo, check=check).stdout.decode("utf-8", "surrogateescape")


def _identity(repo: Path) -> tuple[str, ...]:
    """Git's own identity if the user has one, else a fallback (commits need one)."""
    name = _git.run(["config", "user.name"], cwd=repo, check=False).stdout.strip()
    email = _git.run(["config", "user.email"], cwd=repo, check=False).stdout.strip()
    return () if name and email else _IDENTITY


def _status_paths(repo: Path) -> list[str]:
    """Paths (relative to the repository's top) whose working files differ from HEAD:
    modified, deleted, renamed (both names), untracked and not ignored."""
    out = _git.run(
        ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"], cwd=repo
    ).stdout
    paths: list[str] = []
    for entry in out.split(b"\0"):
        if len(entry) > 3:
            paths.append(entry[3:].decode("utf-8", "surrogateescape"))
    return paths


def _copy_entry(source: Path, target: Path) -> None:
    """Make ``target`` what ``source`` is (a file with its mode, a symlink, or absent)."""
    if target.is_symlink() or target.is_file():
        target.unlink()
    if source.is_symlink():
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.readlink(source), target)
    elif source.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)


class Worktrees:
    """Git worktrees for forks: made, merged, released (all recorded as events)."""

    def __init__(self, store: AsyncEventStore, root: Path) -> None:
        self.store = store
        self.root = root

    # -- reading ------------------------------------------------------------------------

    async def get(self, session_id: str) -> WorktreeInfo | None:
        """The session's worktree (None: it has none)."""
        await self.store.get_session(session_id)
        events = await self.store.get_events(
            session_id, types=["worktree.acquired", "worktree.merged", "worktree.released"]
        )
        return _info(session_id, events)

    # -- fork ---------------------------------------------------------------------------

    async def fork(
        self,
        from_event_id: str,
        *,
        name: str | None = None,
        model: str | None = None,
    ) -> tuple[ForkResult, WorktreeInfo]:
        """A fork of ``from_event_id`` in a worktree of its own (module docstring)."""
        source_event = await self.store.get_event(from_event_id)
        if source_event is None:
            raise EventNotFound(from_event_id)
        source = await self.store.get_session(source_event.session_id)
        state = await self.store.get_state_at(from_event_id)
        directory = Path(os.path.realpath(state.working_directory or source.working_directory))
        repo = _git.find_repository(directory)
        if repo is None:
            raise NotAGitRepository(
                f"{directory} is not inside a git repository: a fork can only get its own "
                "worktree there. Fork without a worktree to share the folder."
            )
        undo = await self.store.file_transitions(source.head_event_id, from_event_id)
        contents = await self.store.get_blobs(
            [t.after.hash for t in undo if t.after is not None and t.after.stored]
        )
        token = secrets.token_hex(4)
        slug = _SLUG.sub("-", name or "fork").strip("-")[:40] or "fork"
        branch = f"tron/{slug}-{token}"
        path = self.root / f"{repo.name}-{token}"
        made = await anyio.to_thread.run_sync(
            self._make, repo, branch, path, undo, contents, from_event_id
        )
        scope = directory.relative_to(repo)
        working_directory = str(path / scope) if str(scope) != "." else str(path)
        try:
            result = await self.store.fork(
                from_event_id, name=name, model=model, working_directory=working_directory
            )
            payload = {
                "path": str(path),
                "branch": branch,
                "repository": str(repo),
                "baseCommit": made["baseCommit"],
                "baseBranch": made["baseBranch"],
                "sourceWorkingDirectory": str(directory),
                "workingDirectory": working_directory,
                "forkEventId": result.fork_event.id,
                "startCommit": made["startCommit"],
            }
            event = await self.store.append(result.session.id, "worktree.acquired", payload)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self._remove, repo, path, branch)
            raise
        info = _info(result.session.id, [event])
        assert info is not None
        session = await self.store.get_session(result.session.id)
        return ForkResult(session=session, fork_event=result.fork_event), info

    def _make(
        self,
        repo: Path,
        branch: str,
        path: Path,
        undo: Sequence[FileTransition],
        contents: dict[str, bytes],
        from_event_id: str,
    ) -> dict[str, Any]:
        head = _git.run(["rev-parse", "--verify", "-q", "HEAD"], cwd=repo, check=False)
        if head.returncode != 0:
            raise WorkspaceError(
                f"the repository {repo} has no commit yet: commit once, then fork with a worktree",
                reason="no_commit",
            )
        base_commit = head.stdout.decode().strip()
        base_branch = _git_in(repo, "symbolic-ref", "--short", "-q", "HEAD", check=False).strip()
        if not self.root.exists():
            self.root.mkdir(parents=True, exist_ok=True)
            os.chmod(self.root, 0o700)  # checkouts of the user's files: user-only
        _git.run(["worktree", "add", "-q", "-b", branch, str(path), base_commit], cwd=repo)
        try:
            changed = False
            for rel in _status_paths(repo):
                _copy_entry(repo / rel, path / rel)
                changed = True
            policy = PathPolicy(path)
            for t in undo:
                rel_path = Path(t.path)
                if not rel_path.is_relative_to(repo):
                    continue  # outside the repository: not part of the worktree
                target = path / rel_path.relative_to(repo)
                data = contents.get(t.after.hash) if t.after is not None else None
                if t.after is not None and data is None:
                    continue  # not restorable (too large): the current file stays
                apply_state(policy, str(target), t.after, data)
                changed = True
            start_commit: str | None = None
            if changed:
                _git.run(["add", "-A"], cwd=path)
                staged = _git.run(["diff", "--cached", "--quiet"], cwd=path, check=False)
                if staged.returncode == 1:
                    _git.run(
                        [*_identity(path), "commit", "-q", "--no-verify", "-m",
                         f"tron: files at the fork point ({from_event_id})"],
                        cwd=path,
                    )  # fmt: skip
                    start_commit = _git_in(path, "rev-parse", "HEAD").strip()
        except BaseException:
            self._remove(repo, path, branch)
            raise
        return {
            "baseCommit": base_commit,
            "baseBranch": base_branch or None,
            "startCommit": start_commit,
        }

    @staticmethod
    def _remove(repo: Path, path: Path, branch: str) -> None:
        _git.run(["worktree", "remove", "--force", str(path)], cwd=repo, check=False)
        _git.run(["branch", "-D", branch], cwd=repo, check=False)
        _git.run(["worktree", "prune"], cwd=repo, check=False)

    # -- merge and release --------------------------------------------------------------

    async def merge(self, session_id: str, *, message: str | None = None) -> dict[str, Any]:
        """Commit the worktree's changes and ``git merge`` its branch into the checkout
        it was made from. Raises :class:`MergeConflict` (nothing changed there)."""
        info = await self._active(session_id)
        session = await self.store.get_session(session_id)
        title = session.title or session_id
        commit = await anyio.to_thread.run_sync(
            self._commit, Path(info.path), f"tron: {title} (session {session_id})"
        )
        if commit is not None:
            await self.store.append(session_id, "worktree.commit", commit)
        merged = await anyio.to_thread.run_sync(self._merge, info, message)
        await self.store.append(session_id, "worktree.merged", merged)
        return {**merged, "committed": commit}

    @staticmethod
    def _commit(path: Path, message: str) -> dict[str, Any] | None:
        if not path.is_dir():
            raise WorkspaceError(f"the worktree {path} no longer exists", reason="worktree")
        _git.run(["add", "-A"], cwd=path)
        files = _git.run(["diff", "--cached", "--name-only", "-z"], cwd=path).stdout
        names = [f.decode("utf-8", "surrogateescape") for f in files.split(b"\0") if f]
        if not names:
            return None
        _git.run([*_identity(path), "commit", "-q", "--no-verify", "-m", message], cwd=path)
        branch = _git_in(path, "symbolic-ref", "--short", "HEAD").strip()
        commit = _git_in(path, "rev-parse", "HEAD").strip()
        return {"branch": branch, "commit": commit, "message": message, "files": names}

    @staticmethod
    def _merge(info: WorktreeInfo, message: str | None) -> dict[str, Any]:
        repo = Path(info.repository)
        into = _git_in(repo, "symbolic-ref", "--short", "-q", "HEAD", check=False).strip()
        if not into:
            raise WorkspaceError(
                f"{repo} is not on a branch (detached HEAD): check out the branch to merge "
                "into, then merge again",
                reason="detached",
            )
        text = message or f"Merge {info.branch} (Tron session {info.session_id})"
        done = _git.run(
            [*_identity(repo), "merge", "--no-ff", "--no-edit", "-m", text, info.branch],
            cwd=repo,
            check=False,
        )
        if done.returncode == 0:
            commit = _git_in(repo, "rev-parse", "HEAD").strip()
            return {"branch": info.branch, "into": into, "commit": commit,
                    "repository": str(repo)}  # fmt: skip
        unmerged = _git.run(["diff", "--name-only", "--diff-filter=U", "-z"], cwd=repo).stdout
        files = [f.decode("utf-8", "surrogateescape") for f in unmerged.split(b"\0") if f]
        if files:
            _git.run(["merge", "--abort"], cwd=repo, check=False)
            raise MergeConflict(
                f"merging {info.branch} into {into} conflicts in {len(files)} file(s) "
                f"({', '.join(files[:5])}); the merge was aborted and {repo} is as it was. "
                "Resolve it yourself (git merge " + info.branch + ") or continue in the fork.",
                files,
            )
        err = done.stderr.decode("utf-8", "replace") + done.stdout.decode("utf-8", "replace")
        listed = [line.strip() for line in err.splitlines() if line.startswith("\t")]
        if listed:
            raise MergeConflict(
                f"git refused to merge {info.branch} into {into}: it would overwrite "
                f"uncommitted files ({', '.join(listed[:5])}). Commit or stash them, then "
                "merge again; nothing was changed.",
                listed,
                reason="local_changes",
            )
        raise GitError(["merge", info.branch], done.returncode, err)

    async def release(
        self, session_id: str, *, delete_branch: bool = False, force: bool = False
    ) -> dict[str, Any]:
        """Remove the worktree (and the branch, if asked); recorded as
        ``worktree.released``."""
        info = await self._active(session_id)
        deleted, kept = await anyio.to_thread.run_sync(self._release, info, delete_branch, force)
        payload = {"path": info.path, "branch": info.branch, "branchDeleted": deleted}
        # Recorded even when git kept the branch: the worktree itself is gone.
        await self.store.append(session_id, "worktree.released", payload)
        if kept is not None:
            raise kept
        return payload

    @staticmethod
    def _release(
        info: WorktreeInfo, delete_branch: bool, force: bool
    ) -> tuple[bool, WorkspaceError | None]:
        """Remove the worktree (raises when git refuses: nothing removed), then the
        branch if asked; whether it was deleted, or why git kept it."""
        repo = Path(info.repository)
        if Path(info.path).exists():
            args = ["worktree", "remove", *(["--force"] if force else []), info.path]
            done = _git.run(args, cwd=repo, check=False)
            if done.returncode != 0:
                raise WorkspaceError(
                    f"git refused to remove the worktree {info.path}: "
                    f"{done.stderr.decode('utf-8', 'replace').strip()}. Merge or commit its "
                    "changes, or release with force to discard them.",
                    reason="dirty",
                )
        _git.run(["worktree", "prune"], cwd=repo, check=False)
        if not delete_branch:
            return False, None
        done = _git.run(["branch", "-D" if force else "-d", info.branch], cwd=repo, check=False)
        if done.returncode != 0:
            return False, WorkspaceError(
                f"the worktree was removed but git kept the branch {info.branch}: "
                f"{done.stderr.decode('utf-8', 'replace').strip()} (release with force to "
                "delete it anyway)",
                reason="branch_not_merged",
            )
        return True, None

    async def _active(self, session_id: str) -> WorktreeInfo:
        info = await self.get(session_id)
        if info is None:
            raise WorkspaceError(
                f"session {session_id!r} has no worktree (fork with worktree: true to get one)",
                reason="no_worktree",
            )
        if info.status == "released":
            raise WorkspaceError(
                f"the worktree of session {session_id!r} was released", reason="released"
            )
        return info


def _info(session_id: str, events: Sequence[Event]) -> WorktreeInfo | None:
    info: WorktreeInfo | None = None
    for e in events:
        p = e.payload
        if e.type == "worktree.acquired":
            info = WorktreeInfo(
                session_id, p["path"], p["branch"], p["repository"], p["baseCommit"],
                p.get("baseBranch"), p.get("workingDirectory"), "active",
            )  # fmt: skip
        elif info is not None and e.type == "worktree.merged":
            info = dataclasses.replace(
                info, status="merged", merged_into=p.get("into"), merge_commit=p.get("commit")
            )
        elif info is not None and e.type == "worktree.released":
            info = dataclasses.replace(info, status="released")
    return info
