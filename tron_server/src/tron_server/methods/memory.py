"""memory.*: what Tron remembers of a folder, searching it, and making a handoff now.

``memory.get {workingDirectory}`` → ``{workingDirectory, workspaceId, settings, ledger,
userLedger, handoffs, patterns}``: the project ledger and the user's (``{path, content,
revision, bytes, exists}``), the workspace's latest handoffs (newest first) and its
lessons (``{text, count, handoffIds}``, most frequent first). ``memory.search {query,
workingDirectory?, limit?}`` → ``{hits}``: full-text search of past sessions (of that
folder's workspace, or of every workspace). ``memory.handoff {sessionId}`` →
``{handoff}``: a handoff of the session made now (a model call). ``docs/memory.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from pydantic import Field, field_validator

from ..memory import (
    collect_lessons,
    handoff_json,
    load_memory_settings,
    project_ledger_path,
    read_ledger,
    recent_handoffs,
    search_workspace,
    user_ledger_path,
)
from ..memory.ledger import LedgerFile
from ..rpc import MethodRegistry, Params, RpcContext

__all__ = ["register"]

#: Handoffs and lessons ``memory.get`` lists.
LISTED_HANDOFFS = 20
LISTED_LESSONS = 20


def _absolute(value: str | None) -> str | None:
    if value is None:
        return None
    path = Path(value).expanduser()
    if not path.is_absolute():
        raise ValueError("must be an absolute path")
    return str(path.resolve())  # as session.create names it (symlinks resolved)


class MemoryGetParams(Params):
    working_directory: str = Field(min_length=1)

    _abs = field_validator("working_directory")(_absolute)


class MemorySearchParams(Params):
    query: str
    working_directory: str | None = Field(default=None, min_length=1)
    limit: int = Field(default=20, ge=1, le=100)

    _abs = field_validator("working_directory")(_absolute)


class MemoryHandoffParams(Params):
    session_id: str = Field(min_length=1)


def _ledger_json(found: LedgerFile | None, path: Path) -> dict[str, Any]:
    if found is not None:
        return found.to_json()
    return {"path": str(path), "content": None, "revision": None, "bytes": 0, "exists": False}


def register(registry: MethodRegistry) -> None:
    """Add the memory.* methods to ``registry``."""

    @registry.method(
        "memory.get",
        MemoryGetParams,
        description="The folder's ledger, the user's ledger, its latest handoffs and lessons.",
    )
    async def get(ctx: RpcContext, p: MemoryGetParams) -> dict[str, Any]:
        store = ctx.services.store
        assert store is not None
        home = ctx.services.home
        wd = Path(p.working_directory)
        settings = await anyio.to_thread.run_sync(load_memory_settings, wd, home)
        project, user = await anyio.to_thread.run_sync(
            lambda: (
                read_ledger(project_ledger_path(wd), "project", within=wd),
                read_ledger(user_ledger_path(home), "user"),
            )
        )
        workspace = await store.find_workspace(str(wd))
        handoffs: list[dict[str, Any]] = []
        patterns: list[dict[str, Any]] = []
        if workspace is not None:
            everything = await recent_handoffs(store, workspace.id)
            handoffs = [handoff_json(e) for e in everything[:LISTED_HANDOFFS]]
            patterns = [lesson.to_json() for lesson in collect_lessons(everything)]
            patterns = patterns[:LISTED_LESSONS]
        return {
            "workingDirectory": str(wd),
            "workspaceId": workspace.id if workspace is not None else None,
            "settings": settings.to_json(),
            "ledger": _ledger_json(project, project_ledger_path(wd)),
            "userLedger": _ledger_json(user, user_ledger_path(home)),
            "handoffs": handoffs,
            "patterns": patterns,
        }

    @registry.method(
        "memory.search",
        MemorySearchParams,
        description="Full-text search of past sessions (events and handoffs) of a folder's "
        "workspace, or of every workspace.",
    )
    async def search(ctx: RpcContext, p: MemorySearchParams) -> dict[str, Any]:
        store = ctx.services.store
        assert store is not None
        workspace_id: str | None = None
        if p.working_directory is not None:
            workspace = await store.find_workspace(p.working_directory)
            if workspace is None:
                return {"hits": []}
            workspace_id = workspace.id
        hits = await search_workspace(store, p.query, workspace_id=workspace_id, limit=p.limit)
        return {"hits": [h.to_json() for h in hits]}

    @registry.method(
        "memory.handoff",
        MemoryHandoffParams,
        description="Make a handoff of the session now (a model call); returns it.",
        needs=("store", "orchestrator"),
    )
    async def handoff(ctx: RpcContext, p: MemoryHandoffParams) -> dict[str, Any]:
        event = await ctx.services.runtime.handoff(p.session_id)
        return {"handoff": handoff_json(event)}
