"""The workspace follows the tree: file changes recorded, restored on rewind, and forks
in their own git worktree.

- :class:`FileRecorder` (``recorder.py``): what Write, Edit and Bash changed, recorded
  with both contents (Bash by snapshots in a shadow git repository: ``shadow.py``).
- :func:`rewind_with_files` (``restore.py``): a rewind that writes the files back,
  checked first, recorded as ``file.restore``.
- :class:`Worktrees` (``worktrees.py``): forks in a git worktree of their own, merged
  back with ``git merge``, released.
- :class:`Workspace`: all of it for one server (``Services.workspace``), with the rule
  that a fork in a worktree does not rewind into the history before its fork point.

The stored side (contents by hash, changes between events, diffs) is tron_events'
(:mod:`tron_events.files`, :mod:`tron_events.blobs`).
"""

from __future__ import annotations

import contextlib
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from tron_events import (
    AsyncEventStore,
    FileDiff,
    FileTransition,
    InvalidRewind,
    MissingContent,
    Session,
)
from tron_events.files import file_diff

from ..paths import PathPolicy
from ..trust import WORKTREES_FOLDER
from .disk import OnDisk
from .errors import FileProblem, FilesConflict, MergeConflict, NotAGitRepository, WorkspaceError
from .recorder import DEFAULT_MAX_FILE_BYTES, CommandWatch, Content, FileRecorder
from .restore import RewindOutcome, check_files, rewind_with_files, target_on_tree
from .shadow import DEFAULT_MAX_FILES
from .worktrees import WorktreeInfo, Worktrees

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "CommandWatch",
    "Content",
    "FileProblem",
    "FileRecorder",
    "FilesConflict",
    "MergeConflict",
    "NotAGitRepository",
    "RewindOutcome",
    "Workspace",
    "WorkspaceError",
    "WorktreeInfo",
    "Worktrees",
    "rewind_with_files",
]


class Workspace:
    """Recording, rewinds with files, diffs and worktrees for the sessions of a server.

    ``home`` holds the shadow repositories (``workspace/snapshots/``) and the worktrees
    (``worktrees/``). ``max_file_bytes``: larger contents are recorded by hash only.
    ``watch_commands=False`` turns off the snapshots around Bash commands; folders with
    more than ``max_files`` files (not ignored) are not snapshotted.
    """

    def __init__(
        self,
        store: AsyncEventStore,
        home: Path,
        *,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        watch_commands: bool = True,
        max_files: int = DEFAULT_MAX_FILES,
    ) -> None:
        self.store = store
        self.max_file_bytes = max_file_bytes
        self.recorder = FileRecorder(
            store,
            home / "workspace" / "snapshots",
            max_file_bytes=max_file_bytes,
            watch_commands=watch_commands,
            max_files=max_files,
        )
        # Where trust looks for them too: a worktree is judged as its repository.
        self.worktrees = Worktrees(store, home / WORKTREES_FOLDER)
        self._locks: dict[str, anyio.Lock] = {}

    def _lock(self, session_id: str) -> anyio.Lock:
        lock = self._locks.get(session_id)
        if lock is None:
            lock = self._locks[session_id] = anyio.Lock()
        return lock

    async def _check_worktree_rule(self, session: Session, event_id: str) -> None:
        """A fork in its own worktree may not rewind into the history it inherited:
        there the working directory is its source's, and the agent would work there."""
        if session.fork_from_event_id is None:
            return
        target = await self.store.get_event(event_id)
        if target is None or target.session_id == session.id:
            return
        if await self.worktrees.get(session.id) is not None:
            raise InvalidRewind(
                f"session {session.id!r} works in its own git worktree: it cannot rewind "
                "before its fork point (the source's folder). Fork again from that event "
                "instead."
            )

    async def rewind(
        self,
        session_id: str,
        event_id: str,
        *,
        restore_files: bool = False,
        force: bool = False,
        policy: PathPolicy | None = None,
        ask_configuration: bool = True,
    ) -> RewindOutcome:
        """Rewind ``session_id`` to ``event_id``: the conversation only (the default:
        files stay as they are; the target must be the head or an ancestor), or the
        conversation and files (``restore_files``; see :func:`rewind_with_files`; the
        target may also be one of the session's own abandoned events, to undo a
        rewind). ``policy`` is the session's path policy (default: resolution only,
        relative to its working directory). ``ask_configuration``: restoring a
        configuration file needs ``force`` (False in bypassPermissions mode)."""
        session = await self.store.get_session(session_id)
        await self._check_worktree_rule(session, event_id)
        if not restore_files:
            return RewindOutcome(await self.store.rewind(session_id, event_id))
        async with self._lock(session_id):
            return await rewind_with_files(
                self.store,
                session_id,
                event_id,
                policy=policy or PathPolicy(Path(session.working_directory)),
                force=force,
                limit=self.max_file_bytes,
                ask_configuration=ask_configuration,
            )

    async def diff(
        self, from_event_id: str, to_event_id: str, *, context: int = 3
    ) -> list[FileDiff]:
        """Per-file unified diffs between two events (see ``EventStore.diff``)."""
        return await self.store.diff(from_event_id, to_event_id, context=context)

    async def preview_rewind(
        self,
        session_id: str,
        event_id: str,
        *,
        policy: PathPolicy | None = None,
        ask_configuration: bool = True,
    ) -> dict[str, Any]:
        """What a rewind with files to ``event_id`` would write, and what stops it: each
        file's diff from what is on disk now to its state at the target (for a file
        the agent left as it is, the same as the recorded diff), with ``problem``
        (``changed``, ``not_stored``, ``refused``, ``configuration`` or None). Nothing is
        written."""
        session = await self.store.get_session(session_id)
        await self._check_worktree_rule(session, event_id)
        await target_on_tree(self.store, session, event_id)
        diffs = await self.store.diff(session.head_event_id, event_id)
        changes = {t.path: t for t in await self.store.file_transitions(
            session.head_event_id, event_id
        )}  # fmt: skip
        policy = policy or PathPolicy(Path(session.working_directory))
        found: dict[str, OnDisk] = {}
        try:
            found, problems = await anyio.to_thread.run_sync(
                partial(check_files, ask_configuration=ask_configuration),
                policy,
                list(changes.values()),
                self.max_file_bytes,
            )
        except WorkspaceError as exc:
            problems = [FileProblem(path, exc.reason) for path in exc.data.get("files", [])]
        by_path: dict[str, str] = {}
        for p in problems:
            by_path.setdefault(p.path, p.reason)
        files = []
        for d in diffs:
            disk = found.get(d.path)
            if by_path.get(d.path) == "changed" and disk is not None:
                d = await self._disk_diff(changes[d.path], disk)
            files.append({**d.to_json(), "problem": by_path.get(d.path)})
        return {
            "headEventId": session.head_event_id,
            "files": files,
            "conflicts": [p.to_json() for p in problems],
        }

    async def _disk_diff(self, change: FileTransition, disk: OnDisk) -> FileDiff:
        """The diff from what is on disk (changed outside the agent) to the target."""
        contents: dict[str, bytes] = {}
        if disk.state is not None and disk.data is not None:
            contents[disk.state.hash] = disk.data
        if change.after is not None and change.after.stored:
            with contextlib.suppress(MissingContent):
                contents.update(await self.store.get_blobs([change.after.hash]))
        return file_diff(FileTransition(change.path, disk.state, change.after), contents)
