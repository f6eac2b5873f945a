"""trust.*: whether a folder's own configuration may act (:mod:`tron_server.trust`).

``trust.get {path}`` and ``trust.set {path, trusted}`` both answer::

    {"path": "/real/path", "trusted": false, "trustedBy": null,
     "defines": {"hooks": 2, "allowRules": 1, "defaultMode": "bypassPermissions",
                 "shellCommands": 1, "agents": 1, "mcpServers": 0}}

``path`` is the folder's real path (symlinks resolved: what trust is recorded for),
``trustedBy`` the folder whose trust covers it (itself or an ancestor), ``defines`` what
its own configuration defines (:mod:`tron_server.interaction.folder`). A session already
running there picks the change up from its next turn.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio.to_thread
from pydantic import Field, StrictBool, field_validator

from ..errors import InvalidOperationError
from ..interaction.folder import folder_defines
from ..rpc import MethodRegistry, Params, RpcContext
from ..trust import TrustError, TrustStore, real_folder

__all__ = ["register", "trust_json"]


def _absolute(value: str) -> str:
    path = os.path.expanduser(value)
    if not os.path.isabs(path):
        raise ValueError("must be an absolute path")
    if "\x00" in path:
        raise ValueError("must not contain a NUL character")
    return path


class TrustGetParams(Params):
    path: str = Field(min_length=1)

    _abs = field_validator("path")(_absolute)


class TrustSetParams(Params):
    path: str = Field(min_length=1)
    trusted: StrictBool  # "yes" or 1 is not an answer to "trust this folder?"

    _abs = field_validator("path")(_absolute)


def trust_json(home: Path, path: str | Path) -> dict[str, Any]:
    """The answer of trust.get for ``path`` (reads files: call it in a worker thread)."""
    folder = real_folder(path)
    covering = TrustStore(home).is_trusted(folder)
    return {
        "path": str(folder),
        "trusted": covering is not None,
        "trustedBy": str(covering) if covering is not None else None,
        "defines": folder_defines(folder, home).to_json(),
    }


def register(registry: MethodRegistry) -> None:
    """Add trust.get and trust.set to ``registry``."""

    @registry.method(
        "trust.get",
        TrustGetParams,
        description="Whether a folder's own configuration may act, and what it defines.",
    )
    async def get(ctx: RpcContext, p: TrustGetParams) -> dict[str, Any]:
        return await anyio.to_thread.run_sync(trust_json, ctx.services.home, p.path)

    @registry.method(
        "trust.set",
        TrustSetParams,
        description="Trust a folder (and its subfolders) or revoke that trust.",
    )
    async def set_(ctx: RpcContext, p: TrustSetParams) -> dict[str, Any]:
        path = p.path
        if p.trusted and not os.path.isdir(path):
            raise InvalidOperationError(
                f"cannot trust {path}: it is not an existing folder", {"path": path}
            )
        home = ctx.services.home

        def record() -> dict[str, Any]:
            try:
                TrustStore(home).set(path, p.trusted)
            except TrustError as exc:
                raise InvalidOperationError(str(exc), {"path": path}) from None
            return trust_json(home, path)

        return await anyio.to_thread.run_sync(record)
