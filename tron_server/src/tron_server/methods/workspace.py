"""Files and worktrees: session.diff, session.previewRewind, worktree.list / merge /
release (``session.rewind {restoreFiles}`` and ``session.fork {worktree}`` are in
``session.py``).

Errors: a rewind's files changed outside the agent, or a merge's conflicts, answer
-32006 (category ``conflict``, ``data.files``); anything else that cannot be done with
files or git answers -32007 (category ``workspace``, ``data.reason``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from ..errors import ManagerUnavailableError
from ..hooks.guardrails import path_policy
from ..paths import PathPolicy
from ..rpc import MethodRegistry, Params, RpcContext
from ..workspace import Workspace

__all__ = ["register", "session_policy", "workspace_of"]


def workspace_of(ctx: RpcContext) -> Workspace:
    """The server's workspace, or -32002 when it runs without one."""
    workspace = ctx.services.workspace
    if workspace is None:
        raise ManagerUnavailableError("this server does not record files (no workspace)")
    return workspace


def session_policy(ctx: RpcContext, working_directory: str) -> PathPolicy:
    """The path policy the session's tools write through (its guardrails), which a
    restore writes through too."""
    directory = Path(working_directory)
    orchestrator = ctx.services.orchestrator
    hooks = orchestrator.hooks_for(directory) if orchestrator is not None else None
    return path_policy(hooks, directory)


async def asks_configuration(ctx: RpcContext, session_id: str) -> bool:
    """Whether restoring a configuration file needs the user's confirmation (``force``):
    in every mode but bypassPermissions, as writing one with a tool does."""
    interaction = ctx.services.interaction
    if interaction is None:
        return True
    return bool(await interaction.mode(session_id) != "bypassPermissions")


class DiffParams(Params):
    session_id: str = Field(min_length=1)
    #: Default: the session's root (everything the session changed).
    from_event_id: str | None = None
    #: Default: the session's head.
    to_event_id: str | None = None
    context: int = Field(default=3, ge=0, le=1000)


class PreviewRewindParams(Params):
    session_id: str = Field(min_length=1)
    event_id: str = Field(min_length=1)


class WorktreeParams(Params):
    session_id: str = Field(min_length=1)


class WorktreeMergeParams(Params):
    session_id: str = Field(min_length=1)
    message: str | None = None


class WorktreeReleaseParams(Params):
    session_id: str = Field(min_length=1)
    delete_branch: bool = False
    force: bool = False


def register(registry: MethodRegistry) -> None:
    """Add session.diff, session.previewRewind and worktree.* to ``registry``."""

    @registry.method(
        "session.diff",
        DiffParams,
        description="Per-file unified diffs of the recorded files between two events.",
    )
    async def diff(ctx: RpcContext, p: DiffParams) -> dict[str, Any]:
        store = ctx.services.store
        assert store is not None
        session = await store.get_session(p.session_id)
        start = p.from_event_id or session.root_event_id
        end = p.to_event_id or session.head_event_id
        files = await store.diff(start, end, context=p.context)
        return {"fromEventId": start, "toEventId": end, "files": [f.to_json() for f in files]}

    @registry.method(
        "session.previewRewind",
        PreviewRewindParams,
        description="What a rewind with files would write (diffs) and what stops it.",
    )
    async def preview(ctx: RpcContext, p: PreviewRewindParams) -> dict[str, Any]:
        store = ctx.services.store
        assert store is not None
        session = await store.get_session(p.session_id)
        return await workspace_of(ctx).preview_rewind(
            p.session_id,
            p.event_id,
            policy=session_policy(ctx, session.working_directory),
            ask_configuration=await asks_configuration(ctx, p.session_id),
        )

    @registry.method("worktree.list", WorktreeParams, description="A session's git worktree.")
    async def list_(ctx: RpcContext, p: WorktreeParams) -> dict[str, Any]:
        info = await workspace_of(ctx).worktrees.get(p.session_id)
        return {"worktrees": [info.to_json()] if info is not None else []}

    @registry.method(
        "worktree.merge",
        WorktreeMergeParams,
        description="Commit a fork's worktree and git merge its branch back (never forced).",
    )
    async def merge(ctx: RpcContext, p: WorktreeMergeParams) -> dict[str, Any]:
        ctx.services.runtime.ensure_idle(p.session_id, "merge the worktree of")
        return await workspace_of(ctx).worktrees.merge(p.session_id, message=p.message)

    @registry.method(
        "worktree.release",
        WorktreeReleaseParams,
        description="Remove a fork's worktree (and its branch, if asked).",
    )
    async def release(ctx: RpcContext, p: WorktreeReleaseParams) -> dict[str, Any]:
        ctx.services.runtime.ensure_idle(p.session_id, "release the worktree of")
        return await workspace_of(ctx).worktrees.release(
            p.session_id, delete_branch=p.delete_branch, force=p.force
        )
