"""Recording what the agent changes, restorably: the tools' side.

- **Write and Edit** call :meth:`FileRecorder.record_change` with the file's content
  before and after; both are stored in the event store by hash (the new one as a
  difference from the old when that is small) and the tool's ``file.write`` /
  ``file.edit`` event carries their states (``before``, ``after``).
- **Bash** runs inside :meth:`FileRecorder.around_command`: a snapshot of the
  working directory before and after the command (``shadow.py``), and the files that
  differ, with both contents, become one ``file.changes`` event, recorded before the
  command's ``tool.result``.

Contents larger than ``max_file_bytes`` are recorded by hash only (``stored: false``)
and a rewind reports them as not restorable. Contents are always stored before the
event that names them, so an event never points at a content that is not there.
A failure to snapshot never fails the command: it runs, and its result says that its
changes were not recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from tron_events import AsyncEventStore, FileState
from tron_events.files import FileKind

from ._git import GitError
from .disk import OnDisk, state_of_bytes
from .shadow import DEFAULT_MAX_FILES, Blob, ShadowRepo, TreeChange

__all__ = ["DEFAULT_MAX_FILE_BYTES", "CommandWatch", "Content", "FileRecorder"]

log = logging.getLogger("tron_server.workspace")

#: Contents above this size are recorded by hash only (TRON_WORKSPACE_MAX_FILE_BYTES).
DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
#: Folders watched for changes at once (inotify instances are limited: 128 per user).
MAX_WATCHED = 16
#: How long the snapshot after an aborted command may take before it is given up.
_AFTER_ABORT_TIMEOUT = 60.0

Record = Callable[[str, dict[str, Any]], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Content:
    """A file's content as a tool saw it: bytes (or a symlink's target) and the
    executable bit."""

    data: bytes
    executable: bool = False
    kind: FileKind = "file"


@dataclass
class CommandWatch:
    """A command being watched: the snapshot before it (None: snapshotting failed,
    ``error`` says why). After :meth:`FileRecorder.finish_command`: ``changed`` files."""

    shadow: ShadowRepo | None
    tree: str | None
    error: str | None = None
    changed: int = 0


class FileRecorder:
    """Stores contents and snapshots for the tools of every session of a server."""

    def __init__(
        self,
        store: AsyncEventStore,
        snapshots: Path,
        *,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        watch_commands: bool = True,
        watch_changes: bool = True,
        max_files: int = DEFAULT_MAX_FILES,
    ) -> None:
        self.store = store
        self.snapshots = snapshots
        self.max_file_bytes = max_file_bytes
        self.watch_commands = watch_commands
        #: Keep an inotify watch per folder so that snapshots of unchanged folders are
        #: free (``_watch.py``); off: every snapshot scans.
        self.watch_changes = watch_changes
        #: Folders with more files (not ignored) are not snapshotted (shadow.py).
        self.max_files = max_files
        self._shadows: dict[Path, ShadowRepo] = {}
        self._warming: set[asyncio.Task[None]] = set()

    # -- Write and Edit ---------------------------------------------------------------

    async def record_change(self, before: OnDisk | None, after: Content | None) -> dict[str, Any]:
        """Store both contents (``before`` as :func:`~.disk.capture` read it, None:
        absent); returns ``{"before": state, "after": state}`` (JSON, None for an absent
        side) for the tool's event."""
        limit = self.max_file_bytes
        old = before.state if before is not None else None
        old_data = before.data if before is not None and old is not None and old.stored else None
        new = (
            state_of_bytes(after.data, kind=after.kind, executable=after.executable, limit=limit)
            if after is not None
            else None
        )
        puts: list[bytes | tuple[bytes, bytes | None]] = []
        if old_data is not None:
            puts.append(old_data)
        if after is not None and new is not None and new.stored:
            puts.append((after.data, old_data))
        if puts:
            await self.store.put_blobs(puts)
        return {
            "before": old.to_json() if old is not None else None,
            "after": new.to_json() if new is not None else None,
        }

    # -- Bash ---------------------------------------------------------------------------

    def shadow_for(self, directory: Path) -> ShadowRepo:
        """The shadow repository of a working directory (one per folder, kept; the
        folders used least recently stop being watched beyond :data:`MAX_WATCHED`)."""
        key = Path(os.path.realpath(directory))
        shadow = self._shadows.pop(key, None)
        if shadow is None:
            shadow = ShadowRepo.for_directory(
                self.snapshots, key, watch=self.watch_changes, max_files=self.max_files
            )
        self._shadows[key] = shadow  # most recently used last
        if len(self._shadows) > MAX_WATCHED:
            oldest = next(iter(self._shadows))
            self._shadows.pop(oldest).close()
        return shadow

    def warm(self, directory: Path) -> None:
        """Take the first snapshot of ``directory`` in the background (a new session):
        the first one hashes every file, seconds for a large repository, and the
        session's first command should not wait for it. A command that comes while it
        runs waits for it rather than scanning twice."""
        if not self.watch_commands:
            return

        async def snapshot() -> None:
            try:
                await anyio.to_thread.run_sync(self.shadow_for(directory).snapshot)
            except Exception as exc:  # the command will say it; nothing to do here
                log.info("workspace warm-up of %s failed: %s", directory, exc)

        task = asyncio.get_running_loop().create_task(snapshot())
        self._warming.add(task)
        task.add_done_callback(self._warming.discard)

    async def begin_command(self, directory: Path) -> CommandWatch:
        """The snapshot before a command."""
        if not self.watch_commands:
            return CommandWatch(None, None, "recording of shell commands is off")
        try:
            shadow = self.shadow_for(directory)
            tree = await _snapshot(shadow)
        except (GitError, OSError, ValueError) as exc:
            log.warning("workspace snapshot of %s failed: %s", directory, exc)
            return CommandWatch(None, None, str(exc))
        return CommandWatch(shadow, tree)

    async def finish_command(self, watch: CommandWatch, record: Record, tool_call_id: str) -> None:
        """The snapshot after the command; records ``file.changes`` if files changed.
        Never raises for a snapshot failure (``watch.error`` says what went wrong)."""
        if watch.shadow is None or watch.tree is None:
            return
        shadow = watch.shadow
        try:
            after = await _snapshot(shadow)
            if after == watch.tree:
                return
            payload = await anyio.to_thread.run_sync(self._changes, shadow, watch.tree, after)
        except (GitError, OSError, ValueError) as exc:
            log.warning("workspace snapshot of %s failed: %s", shadow.work_tree, exc)
            watch.error = str(exc)
            return
        if payload is None:
            return
        changes = payload["changes"]
        contents: list[bytes | tuple[bytes, bytes | None]] = payload.pop("_contents")
        if contents:
            await self.store.put_blobs(contents)
        payload["toolCallId"] = tool_call_id
        await record("file.changes", payload)
        watch.changed = len(changes)

    def _changes(self, shadow: ShadowRepo, old: str, new: str) -> dict[str, Any] | None:
        raw = shadow.changes(old, new)
        if not raw:
            return None
        limit = self.max_file_bytes
        blobs = shadow.read_blobs([c.old_id for c in raw] + [c.new_id for c in raw], limit)
        root = shadow.work_tree
        changes: list[dict[str, Any]] = []
        contents: list[bytes | tuple[bytes, bytes | None]] = []
        for c in raw:
            before = _git_state(c.old_mode, blobs.get(c.old_id), c.old_id, limit)
            after = _git_state(c.new_mode, blobs.get(c.new_id), c.new_id, limit)
            if (before is not None and before.same(after)) or before is after is None:
                continue
            old_blob, new_blob = blobs.get(c.old_id), blobs.get(c.new_id)
            old_data = old_blob.data if old_blob is not None and before is not None else None
            if old_data is not None:
                contents.append(old_data)
            if new_blob is not None and new_blob.data is not None and after is not None:
                contents.append((new_blob.data, old_data))
            changes.append(
                {
                    "path": str(root / c.path),
                    "before": before.to_json() if before else None,
                    "after": after.to_json() if after else None,
                }
            )
        if not changes:
            return None
        payload: dict[str, Any] = {
            "changes": changes,
            "root": str(root / shadow.scope) if shadow.scope else str(root),
            "source": "Bash",
            "_contents": contents,
        }
        renames = _renames(raw)
        if renames:
            payload["renames"] = [{"from": str(root / a), "to": str(root / b)} for a, b in renames]
        return payload

    def close(self) -> None:
        """Stop every folder watch."""
        for shadow in self._shadows.values():
            shadow.close()
        self._shadows.clear()

    @contextlib.asynccontextmanager
    async def around_command(
        self, directory: Path, record: Record, tool_call_id: str
    ) -> AsyncIterator[CommandWatch]:
        """Snapshot before the body and after it, even when it is cancelled (an abort:
        what the command changed until it was killed is recorded too)."""
        watch = await self.begin_command(directory)
        try:
            yield watch
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(_AFTER_ABORT_TIMEOUT):
                await self.finish_command(watch, record, tool_call_id)


async def _snapshot(shadow: ShadowRepo) -> str:
    """:meth:`ShadowRepo.snapshot`, without the hop to a worker thread when the change
    watch says nothing changed since the last one."""
    tree = shadow.unchanged_tree()
    if tree is None:
        tree = await anyio.to_thread.run_sync(shadow.snapshot)
    return tree


def _git_state(mode: str, blob: Blob | None, oid: str, limit: int) -> FileState | None:
    if mode == "000000":
        return None
    kind: FileKind = "symlink" if mode == "120000" else "file"
    executable = mode == "100755"
    if blob is None:
        # The shadow lost the object (deleted meanwhile): known by git id only.
        return FileState(kind, f"git:{oid}", 0, executable, False)
    return FileState(kind, blob.sha256, blob.size, executable, blob.data is not None)


def _renames(raw: list[TreeChange]) -> list[tuple[str, str]]:
    """Deleted and added paths with the same content: renames, for display."""
    gone: dict[str, str] = {}
    for c in raw:
        if c.new_mode == "000000":
            gone.setdefault(c.old_id, c.path)
    pairs: list[tuple[str, str]] = []
    for c in raw:
        if c.old_mode == "000000" and c.new_id in gone:
            pairs.append((gone.pop(c.new_id), c.path))
    return pairs
