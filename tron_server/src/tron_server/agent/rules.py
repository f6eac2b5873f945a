"""Rules files (AGENTS.md / CLAUDE.md) of one session, as the runtime tracks them.

On the session's first run in this process the files an earlier run recorded in
``rules.loaded`` are restored (a resume neither loses nor re-announces them), then
the global and project files are loaded; afterwards each tool call that names a
path (``file_path`` / ``path``) may add the AGENTS.md of the folders it touches.
Every newly loaded batch is recorded as ``rules.loaded`` by the caller, and the
loaded files go into the next system prompt.

Loading is :class:`tron_server.context.rules.RulesLoader`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from tron_events import AsyncEventStore

from ..context.listings import shared
from ..context.rules import RulesFile, RulesLoader, rules_loaded_payload

if TYPE_CHECKING:
    from tron_events import EventStore

__all__ = ["PATH_ARGUMENTS", "SessionRules"]

T = TypeVar("T")

PATH_ARGUMENTS = ("file_path", "path", "notebook_path")
"""Tool arguments that name a path the agent touches."""


class SessionRules:
    """The rules files of one session (see the module docstring)."""

    def __init__(self, home: Path, working_directory: Path) -> None:
        self.working_directory = working_directory
        self._loader = RulesLoader(home, working_directory)
        self._started = False

    @property
    def loaded(self) -> list[RulesFile]:
        """Every rules file loaded so far, in load order."""
        return list(self._loader.loaded)

    def payload(self, files: list[RulesFile]) -> dict[str, Any]:
        """The ``rules.loaded`` payload for ``files``."""
        return rules_loaded_payload(files)

    async def start(self, store: AsyncEventStore, head_event_id: str) -> list[RulesFile]:
        """Restore recorded files (first call only) and load the initial ones; returns
        the files to record as newly loaded."""
        files, _ = await self.start_with(store, head_event_id, lambda: None)
        return files

    async def start_with(
        self, store: AsyncEventStore, head_event_id: str, then: Callable[[], T]
    ) -> tuple[list[RulesFile], T]:
        """:meth:`start`, then ``then()`` in the same worker-thread trip (work that reads
        files and needs the rules loaded: the run's system prompt)."""
        if not self._started:
            self._started = True

            def restore_then_initial(sync: EventStore) -> tuple[list[RulesFile], T]:
                # The history's read, the restore and the initial load in one trip.
                path = sync.get_ancestors(head_event_id)
                recorded = [
                    str(f["path"])
                    for e in path
                    if e.type == "rules.loaded"
                    for f in e.payload.get("files", [])
                    if isinstance(f, dict) and f.get("path")
                ]
                self._loader.restore(recorded)
                return self._initial_then(then)

            return await store.read_with(restore_then_initial)
        return await anyio.to_thread.run_sync(self._initial_then, then)

    @property
    def started(self) -> bool:
        """Whether the files an earlier run recorded were restored (the first
        :meth:`start_with` does it; :meth:`initial_now` needs it)."""
        return self._started

    def initial_now(self, then: Callable[[], T]) -> tuple[list[RulesFile], T]:
        """What :meth:`start_with` does in its worker-thread trip, in this thread (a worker
        thread, with other work for the same trip), once :attr:`started`."""
        assert self._started, "start_with first"
        return self._initial_then(then)

    def _initial_then(self, then: Callable[[], T]) -> tuple[list[RulesFile], T]:
        with shared():  # the rules files and the skills look in the same folders
            return self._loader.initial(), then()

    async def touched(self, arguments: dict[str, Any]) -> list[RulesFile]:
        """Rules files newly applicable after a tool call with ``arguments``."""
        paths = [v for k in PATH_ARGUMENTS if isinstance(v := arguments.get(k), str) and v]
        new: list[RulesFile] = []
        for p in paths:
            new += await anyio.to_thread.run_sync(self._loader.on_path_touched, p)
        return new
