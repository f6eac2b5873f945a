"""The tool contract: what a tool is, what it receives, what it returns.

A tool is a typed definition (name, description, a pydantic ``Params`` model that
gives the JSON schema) plus an async ``run``. The :class:`ToolRegistry` validates
the model's arguments, runs the tool and turns every failure into an error
result the model can read and correct — it never raises for a tool failure.
Cancellation (the runtime cancelling the calling task on abort) is the one
exception: it propagates, after the tool has cleaned up (Bash kills its process group).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from tron_llm import ToolSpec

from ..browser.urls import UrlCheck
from ..paths import PathPolicy
from ..workspace.editor import EditorFiles
from ._schema import params_schema

__all__ = [
    "OutputCallback",
    "RecordCallback",
    "Tool",
    "ToolContext",
    "ToolRegistry",
    "ToolResult",
]

log = logging.getLogger(__name__)

OutputCallback = Callable[[str], None]
"""Receives streamed output chunks (Bash stdout/stderr) as they come; must not block."""

RecordCallback = Callable[[str, dict[str, Any]], Awaitable[None]]
"""``(event_type, payload)``: appends e.g. ``file.read`` / ``todo.write`` to the session."""


def _no_output(_chunk: str) -> None:
    return None


async def _no_record(_type: str, _payload: dict[str, Any]) -> None:
    return None


@dataclass(frozen=True)
class ToolContext:
    """Everything a tool run knows about where it runs."""

    session_id: str
    working_directory: Path
    tool_call_id: str
    on_output: OutputCallback = field(default=_no_output)
    record: RecordCallback = field(default=_no_record)
    paths: PathPolicy | None = None
    """How paths resolve and where writes may go (the guardrails' policy); None: resolve
    only, against the working directory (see :attr:`path_policy`)."""
    check_url: UrlCheck | None = None
    """The session's permission verdict for a URL (WebFetch's redirects, the Browser's
    navigations), never asking; None: no permission layer (only public addresses)."""
    editor: EditorFiles | None = None
    """The session's file provider (an editor serving its buffers): Read, Write and Edit
    go through it; None: the disk."""

    @property
    def path_policy(self) -> PathPolicy:
        """The policy every path of this run goes through."""
        if self.paths is not None:
            return self.paths.for_directory(self.working_directory)
        return PathPolicy(self.working_directory)


@dataclass(frozen=True)
class ToolResult:
    """What the model sees: text, or text/image parts in the Anthropic shape."""

    content: str | list[dict[str, Any]]
    is_error: bool = False
    details: dict[str, Any] | None = None


P = TypeVar("P", bound=BaseModel)


class Tool(ABC, Generic[P]):
    """One tool. Subclasses set ``name``, ``description`` and ``Params`` and implement ``run``."""

    name: ClassVar[str]
    description: ClassVar[str]
    Params: ClassVar[type[BaseModel]]

    def spec(self) -> ToolSpec:
        """The definition sent to the model (JSON schema generated from ``Params``)."""
        return ToolSpec(
            name=self.name,
            description=self.description,
            input_schema=params_schema(self.Params),
        )

    def record_fields(self) -> dict[str, Any]:
        """Extra fields of this tool's ``tool.call`` payloads (an MCP tool: its server)."""
        return {}

    @abstractmethod
    async def run(self, params: P, ctx: ToolContext) -> ToolResult:
        """Run with validated parameters. Failures the model should see → ``is_error`` results."""

    async def release(self, session_id: str) -> None:
        """Free what the tool keeps for ``session_id`` (the Browser's context): called when
        the session is aborted, ends, or its sub-agent run is over. Never raises."""

    async def aclose(self) -> None:
        """Free everything (server shutdown). Never raises."""


def format_validation_error(tool: str, exc: ValidationError) -> str:
    """A message listing each invalid field, so the model can correct its call."""
    lines = [f"Invalid arguments for tool {tool}:"]
    for err in exc.errors(include_url=False):
        loc = ".".join(str(part) for part in err.get("loc", ())) or "(arguments)"
        msg = err.get("msg", "invalid")
        if err.get("type") == "extra_forbidden":
            msg = "unknown parameter"
        lines.append(f"- {loc}: {msg}")
    return "\n".join(lines)


class ToolRegistry:
    """The tools offered to the model, by name."""

    def __init__(self, tools: Iterable[Tool[Any]] = ()) -> None:
        self._tools: dict[str, Tool[Any]] = {}
        self._specs: list[ToolSpec] | None = None
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool[Any]) -> None:
        """Add (or replace) a tool under its ``name``."""
        self._tools[tool.name] = tool
        self._specs = None

    def get(self, name: str) -> Tool[Any] | None:
        """The tool called ``name``, or None."""
        return self._tools.get(name)

    def names(self) -> list[str]:
        """Tool names in registration order."""
        return list(self._tools)

    def specs(self) -> list[ToolSpec]:
        """Definitions of every tool, in registration order."""
        # Building JSON schemas costs milliseconds per turn; tools are fixed once
        # registered, so build them once.
        if self._specs is None:
            self._specs = [tool.spec() for tool in self._tools.values()]
        return list(self._specs)

    async def release(self, session_id: str) -> None:
        """:meth:`Tool.release` of every tool (one failing does not stop the others)."""
        for tool in list(self._tools.values()):
            try:
                await tool.release(session_id)
            except Exception:
                log.exception("releasing %s of session %s failed", tool.name, session_id)

    async def aclose(self) -> None:
        """:meth:`Tool.aclose` of every tool."""
        for tool in list(self._tools.values()):
            try:
                await tool.aclose()
            except Exception:
                log.exception("closing tool %s failed", tool.name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    async def execute(self, name: str, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Validate ``arguments`` and run tool ``name``; never raises except on cancellation."""
        tool = self._tools.get(name)
        if tool is None:
            known = ", ".join(self._tools) or "none"
            return ToolResult(
                content=f"Unknown tool {name!r}. Available tools: {known}.", is_error=True
            )
        if not isinstance(arguments, dict):
            return ToolResult(
                content=f"Invalid arguments for tool {name}: expected a JSON object, "
                f"got {type(arguments).__name__}.",
                is_error=True,
            )
        try:
            params = tool.Params.model_validate(arguments)
        except ValidationError as exc:
            return ToolResult(content=format_validation_error(name, exc), is_error=True)
        try:
            return await tool.run(params, ctx)
        except Exception as exc:  # cancellation is a BaseException and propagates
            log.exception("tool %s failed (call %s)", name, ctx.tool_call_id)
            return ToolResult(
                content=f"Tool {name} failed: {type(exc).__name__}: {exc}",
                is_error=True,
                details={"exception": type(exc).__name__},
            )
