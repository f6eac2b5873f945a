"""Rewind with files: the conversation and the files the agent changed go back together.

:func:`rewind_with_files` moves a session's head to an event and writes every file
changed on the abandoned part of the path (and by sub-agents the abandoned Task calls
ran) back to its recorded state at that event, as one operation:

1. **Plan**: :meth:`~tron_events.EventStore.file_transitions` from the head to the
   target: each file's state as the agent left it, and its state at the target.
2. **Check** before touching anything: each file on disk must still be as the agent
   left it. One changed outside the agent since (an editor, another program) is a
   conflict, and so is one whose content at the target was too large to record:
   :class:`FilesConflict` lists them and nothing is written -- unless ``force``,
   which restores the changed ones anyway (their current content is stored first and
   named in the record, so nothing is lost) and leaves the unrecordable ones as they are.
3. **Read** every content to write from the store; one missing raises
   :class:`~tron_events.MissingContent` and nothing is written.
4. **Write** through the session's path policy (the tools' own checks): removals
   first, then files; folders a removal empties go too. If a write fails, what was
   already written is put back and the error raised.
5. **Record**: the head moves to the target and a ``file.restore`` event (every
   file's state before and after) is appended after it, in one transaction
   (:meth:`~tron_events.EventStore.rewind_and_append`). The files after it are the
   target's, so rewinding back to the old head with files undoes it (to the files as
   the agent left them there).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio.to_thread

from tron_events import (
    AsyncEventStore,
    Event,
    FileState,
    FileTransition,
    InvalidRewind,
    Session,
    SessionNotActive,
)

from ..paths import PathError, PathPolicy, PathRefused
from ..trust import is_configuration_file
from .disk import (
    OnDisk,
    apply_state,
    blocker_of,
    holds_files,
    prune_empty_folders,
    read_entry,
)
from .errors import FileProblem, FilesConflict, WorkspaceError

__all__ = ["RewindOutcome", "check_files", "rewind_with_files", "target_on_tree"]

log = logging.getLogger("tron_server.workspace")


@dataclass(frozen=True)
class RewindOutcome:
    """The session after the rewind, the files written back (``restored``), those
    restored over outside changes (``forced``), those left as they were because
    their content was not recorded (``skipped``), and the ``file.restore`` event."""

    session: Session
    restored: list[FileTransition] = field(default_factory=list)
    forced: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    event: Event | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "files": [
                {
                    "path": t.path,
                    "status": t.status,
                    "before": t.before.to_json() if t.before else None,
                    "after": t.after.to_json() if t.after else None,
                }
                for t in self.restored
            ],
            "forced": self.forced,
            "skipped": self.skipped,
            "eventId": self.event.id if self.event else None,
        }


async def target_on_tree(store: AsyncEventStore, session: Session, event_id: str) -> Event:
    """The target event, checked before any file is touched: the head or one of its
    ancestors, or one of the session's own events (a branch a rewind left)."""
    if session.status != "active":
        raise SessionNotActive(session.id, session.status)
    target = await store.get_event(event_id)
    if target is None:
        raise InvalidRewind(f"rewind target {event_id!r} does not exist")
    if target.session_id == session.id:
        return target
    ancestors = await store.get_ancestors(session.head_event_id)
    if any(e.id == event_id for e in ancestors):
        return target
    raise InvalidRewind(
        f"cannot rewind session {session.id!r} to {event_id!r}: it is neither on its "
        "path nor one of its own events"
    )


def check_files(
    policy: PathPolicy,
    changes: Sequence[FileTransition],
    limit: int,
    *,
    ask_configuration: bool = False,
) -> tuple[dict[str, OnDisk], list[FileProblem]]:
    """Read each file's state on disk and compare it with the state the agent left
    (``before``); the problems found (changed outside, not restorable, and with
    ``ask_configuration`` a configuration file at any depth, which only ``force``
    restores). Raises :class:`WorkspaceError` (``refused``) for a file the policy does
    not let us write."""
    found: dict[str, OnDisk] = {}
    problems: list[FileProblem] = []
    refused: list[tuple[str, str]] = []
    in_the_way: list[str] = []
    going = {t.path for t in changes if t.after is None}
    for t in changes:
        try:
            disk = read_entry(policy, t.path, limit)
            blocker = blocker_of(t.path)
            # A file in the way that this restore removes goes first: checked then. One
            # that stays (a folder swapped for a symlink) is what a write goes through:
            # checked now, so the policy refuses it before anything is written.
            if blocker is None or (t.after is not None and blocker not in going):
                with policy.resolve(t.path, follow_last=False) as entry:
                    policy.check_write(entry)
        except PathRefused as exc:
            refused.append((t.path, str(exc)))
            continue
        except PathError as exc:
            raise WorkspaceError(f"cannot read {t.path}: {exc}", reason="unreadable") from None
        found[t.path] = disk
        if disk.is_dir and t.after is not None and holds_files(Path(t.path), going):
            in_the_way.append(t.path)
        expected = t.before
        if not _matches(expected, disk.state):
            problems.append(
                FileProblem(
                    t.path,
                    "changed",
                    expected.to_json() if expected else None,
                    disk.state.to_json() if disk.state else None,
                )
            )
        if t.after is not None and not t.after.stored:
            problems.append(FileProblem(t.path, "not_stored", t.after.to_json(), None))
    if in_the_way:
        raise WorkspaceError(
            "folders holding files are where files are to be restored: "
            + ", ".join(in_the_way[:5])
            + ". Move them away, then rewind again.",
            reason="folder_in_way",
            files=in_the_way,
        )
    if refused:
        raise WorkspaceError(
            "the session's path policy refuses writing: "
            + "; ".join(message for _, message in refused[:3]),
            reason="refused",
            files=[path for path, _ in refused],
        )
    if ask_configuration:  # it acts for later sessions there: the user confirms (force)
        problems += [
            FileProblem(t.path, "configuration", _json(t.before), _json(found[t.path].state))
            for t in changes
            if t.path in found and is_configuration_file(t.path)
        ]
    return found, problems


def _json(state: FileState | None) -> dict[str, Any] | None:
    return state.to_json() if state is not None else None


def _matches(expected: FileState | None, actual: FileState | None) -> bool:
    if expected is None:
        return actual is None
    return expected.same(actual)


def _apply(
    policy: PathPolicy,
    changes: Sequence[FileTransition],
    contents: dict[str, bytes],
    found: dict[str, OnDisk],
    limit: int,
) -> None:
    """Write every change (removals first); on failure put back what was written."""
    done: list[str] = []
    stop = policy.real_working_directory
    removals = sorted((t for t in changes if t.after is None), key=lambda t: -t.path.count("/"))
    writes = sorted((t for t in changes if t.after is not None), key=lambda t: t.path)
    try:
        for t in [*removals, *writes]:
            now = read_entry(policy, t.path, limit)
            if not _matches(found[t.path].state, now.state):
                raise WorkspaceError(
                    f"{t.path} changed while the rewind was writing files; nothing was "
                    "kept (try again)",
                    reason="changed_meanwhile",
                )
            data = contents.get(t.after.hash) if t.after is not None else None
            try:
                done.append(t.path)
                apply_state(policy, t.path, t.after, data)
            except PathRefused as exc:  # refused before writing: nothing to put back
                done.pop()
                raise WorkspaceError(
                    f"the session's path policy refuses writing: {exc}",
                    reason="refused",
                    files=[t.path],
                ) from None
            if t.after is None and Path(t.path).is_relative_to(stop):
                prune_empty_folders(t.path, stop)
    except BaseException:
        _roll_back(policy, done, found)
        raise


def _roll_back(policy: PathPolicy, done: list[str], found: dict[str, OnDisk]) -> None:
    for path in reversed(done):
        before = found[path]
        try:
            if before.state is None or before.data is not None:
                apply_state(policy, path, before.state, before.data, mode=before.mode)
            else:
                log.error("rollback: %s was larger than the limit and cannot be put back", path)
        except Exception:
            log.exception("rollback of %s failed", path)


async def rewind_with_files(
    store: AsyncEventStore,
    session_id: str,
    event_id: str,
    *,
    policy: PathPolicy,
    force: bool = False,
    limit: int,
    ask_configuration: bool = False,
) -> RewindOutcome:
    """Rewind ``session_id`` to ``event_id`` with its files (see the module docstring).
    ``ask_configuration``: a configuration file to write is a conflict too (``force``
    confirms it; :func:`~tron_server.trust.is_configuration_file`).

    Raises :class:`FilesConflict` (nothing written; ``force`` overrides),
    :class:`~tron_events.MissingContent`, :class:`WorkspaceError` and the store's
    errors (:class:`~tron_events.InvalidRewind`, ``SessionNotActive``, ...).
    """
    session = await store.get_session(session_id)
    head = session.head_event_id
    await target_on_tree(store, session, event_id)
    changes = await store.file_transitions(head, event_id)
    found, problems = await anyio.to_thread.run_sync(
        partial(check_files, ask_configuration=ask_configuration), policy, changes, limit
    )
    if problems and not force:
        shown = ", ".join(sorted({p.path for p in problems})[:5])
        why = "changed outside the agent since, or too large to have been recorded"
        if any(p.reason == "configuration" for p in problems):
            why += (
                ", or configuration files (hooks, permissions, commands, agents) that need "
                "your confirmation"
            )
        raise FilesConflict(
            f"{len({p.path for p in problems})} file(s) cannot be restored as the agent left "
            f"them ({shown}): {why}. Nothing was written; pass force to restore anyway.",
            problems,
        )
    skipped = sorted({p.path for p in problems if p.reason == "not_stored"})
    forced = sorted({p.path for p in problems if p.reason == "changed"} - set(skipped))
    todo = [t for t in changes if t.path not in skipped]
    wanted = [t.after.hash for t in todo if t.after is not None]
    contents = await store.get_blobs(wanted)
    # What the restore replaces is stored too (most of it is already: the agent's own
    # contents), so that even an outside edit a forced restore overwrote can be read back.
    keep = [d.data for d in found.values() if d.data is not None and d.state is not None]
    if keep:
        await store.put_blobs(keep)
    await anyio.to_thread.run_sync(_apply, policy, todo, contents, found, limit)
    payload: dict[str, Any] = {
        "changes": [
            {
                "path": t.path,
                "before": _json(found[t.path].state),
                "after": t.after.to_json() if t.after else None,
            }
            for t in todo
        ],
        "fromEventId": head,
        "toEventId": event_id,
    }
    if forced:
        payload["forced"] = forced
    if skipped:
        payload["skipped"] = skipped
    drafts = [{"type": "file.restore", "payload": payload}] if todo else []
    try:
        updated, events = await store.rewind_and_append(
            session_id, event_id, drafts, expected_head=head, allow_abandoned=True
        )
    except BaseException:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(_roll_back, policy, [t.path for t in todo], found)
        raise
    return RewindOutcome(updated, todo, forced, skipped, events[0] if events else None)
