"""The tools of one run: the server's registry, narrowed to an allow-list, plus run-bound tools.

A sub-agent whose definition lists ``tools: Read, Grep`` is offered only those, and a call to
any other tool — even one the model invents or remembers from elsewhere — gets the same
"Unknown tool" error result as a tool that does not exist: the allow-list is enforced where the
tools run, not only in what the model is shown. Run-bound tools (the Task tool, which knows its
parent run) are added on top.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tron_llm import ToolSpec

from ...tools.base import Tool, ToolContext, ToolRegistry, ToolResult

__all__ = ["ScopedTools"]


class ScopedTools(ToolRegistry):
    """``base``'s tools named in ``allowed`` (None: all of them), plus ``extra`` tools."""

    def __init__(
        self, base: ToolRegistry, allowed: Iterable[str] | None, extra: Iterable[Tool[Any]] = ()
    ) -> None:
        super().__init__(extra)
        self._base = base
        self._allowed = None if allowed is None else frozenset(allowed)

    def _base_allows(self, name: str) -> bool:
        return name not in self._tools and (self._allowed is None or name in self._allowed)

    def get(self, name: str) -> Tool[Any] | None:
        if name in self._tools:
            return self._tools[name]
        return self._base.get(name) if self._base_allows(name) else None

    def names(self) -> list[str]:
        return [n for n in self._base.names() if self._base_allows(n)] + list(self._tools)

    def specs(self) -> list[ToolSpec]:
        # The base registry caches its specs; only the run-bound tools are built here.
        own = [tool.spec() for tool in self._tools.values()]
        return [s for s in self._base.specs() if self._base_allows(s.name)] + own

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __len__(self) -> int:
        return len(self.names())

    async def execute(self, name: str, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        if name in self._tools:
            return await super().execute(name, arguments, ctx)
        if not self._base_allows(name):
            known = ", ".join(self.names()) or "none"
            return ToolResult(
                content=f"Unknown tool {name!r}. Available tools: {known}.", is_error=True
            )
        return await self._base.execute(name, arguments, ctx)
