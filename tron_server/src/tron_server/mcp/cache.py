"""What each server listed the last time it ran: tools, prompts, resources.

Kept in ``<home>/cache/mcp/<name>-<fingerprint>.json`` (the fingerprint covers the command,
arguments, environment, URL and headers, so a changed configuration is a new entry; no
secret is written). A session's first request offers the tools a server listed before
without starting it (lazy start: the server starts when a tool of it is called, a prompt or
a resource is used, or ``mcp.list`` asks); a server never seen before is started to list
them. A connected server's fresh lists replace the cached ones.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import ServerConfig

__all__ = ["ListCache", "Lists"]

log = logging.getLogger("tron_server.mcp")


@dataclass
class Lists:
    """A server's lists, in wire form (camelCase dicts)."""

    tools: list[dict[str, Any]] = field(default_factory=list)
    prompts: list[dict[str, Any]] = field(default_factory=list)
    resources: list[dict[str, Any]] = field(default_factory=list)
    templates: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"tools": self.tools, "prompts": self.prompts, "resources": self.resources,
                "resourceTemplates": self.templates}  # fmt: skip

    @classmethod
    def from_json(cls, data: Any) -> Lists | None:
        if not isinstance(data, dict):
            return None
        parts = [data.get(k) for k in ("tools", "prompts", "resources", "resourceTemplates")]
        if not all(isinstance(p, list) and all(isinstance(i, dict) for i in p) for p in parts):
            return None
        return cls(*parts)  # type: ignore[arg-type]


class ListCache:
    """The lists on disk, one file per configured server."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._known: dict[str, tuple[tuple[int, int, int], Lists | None]] = {}

    def path(self, config: ServerConfig) -> Path:
        return self.folder / f"{config.name}-{config.fingerprint()}.json"

    def get(self, config: ServerConfig) -> Lists | None:
        """The cached lists (None: never listed, or the file is unreadable); each call
        gets its own :class:`Lists` (its items are shared: never change them)."""
        path = self.path(config)
        try:
            st = os.stat(path)
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
            known = self._known.get(str(path))
            if known is not None and known[0] == stamp:
                lists = known[1]
            else:
                lists = Lists.from_json(json.loads(path.read_text(encoding="utf-8")))
                self._known[str(path)] = (stamp, lists)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.warning("ignoring the MCP list cache of %s: %s", config.name, exc)
            return None
        if lists is None:
            return None
        return Lists(list(lists.tools), list(lists.prompts), list(lists.resources),
                     list(lists.templates))  # fmt: skip

    def put(self, config: ServerConfig, lists: Lists) -> None:
        """Replace the cached lists (atomically; a failure is logged, never raised)."""
        path = self.path(config)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".mcp-", dir=path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    json.dump(lists.to_json(), out)
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError as exc:
            log.warning("could not cache the lists of MCP server %s: %s", config.name, exc)
