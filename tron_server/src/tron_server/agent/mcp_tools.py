"""An MCP server's tool as a Tron tool: ``mcp__<server>__<tool>``, the server's own schema.

(The runtime's adapter of :mod:`tron_server.mcp`, which knows nothing of tools.)

The model sees the tool's JSON schema as the server gave it (tron_llm's adapters change a
schema only where their provider refuses it); the server validates the arguments. A call
goes through PreToolUse hooks, permission rules and approvals like any tool's (the runtime
does that before :meth:`McpTool.run`); its ``tool.call`` records the server's name
(:meth:`McpTool.record_fields`). Progress notifications become live tool output, an abort
cancels the request (the SDK sends ``notifications/cancelled``), and an elicitation the
server sends during the call is asked of the user through the question flow
(:data:`AskFn`, ``Interaction.ask``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from tron_llm import ToolSpec

from ..mcp import Call, Connection, ServerError, mcp_name, tool_result
from ..mcp.elicit import elicit_with
from ..tools.base import Tool, ToolContext, ToolResult

__all__ = ["AskFn", "McpArguments", "McpTool", "make_tool"]

log = logging.getLogger("tron_server.mcp")

AskFn = Callable[[ToolContext, str, list[str], bool], Awaitable[ToolResult]]
"""The question flow (``Interaction.ask``): (context, question, options, multiSelect)."""


class McpArguments(BaseModel):
    """Any JSON object: the server checks the arguments against its own schema."""

    model_config = ConfigDict(extra="allow")


class McpTool(Tool[McpArguments]):
    """One tool of one server (made by :func:`make_tool`)."""

    Params: ClassVar[type[BaseModel]] = McpArguments

    def __init__(
        self, connection: Connection, tool: dict[str, Any], ask: AskFn | None = None
    ) -> None:
        self.connection = connection
        self.ask = ask
        self.server = connection.name
        self.tool = str(tool.get("name", ""))
        schema = tool.get("inputSchema")
        self.schema: dict[str, Any] = dict(schema) if isinstance(schema, dict) else {}
        annotations = tool.get("annotations")
        self.annotations: dict[str, Any] = (
            dict(annotations) if isinstance(annotations, dict) else {}
        )
        # Each instance is its own tool: its name and description are the instance's (the
        # base class declares them per class, for the built-in tools).
        vars(self).update(
            name=mcp_name(self.server, self.tool),
            description=str(tool.get("description") or tool.get("title") or self.tool),
        )
        self._spec: ToolSpec | None = None

    def spec(self) -> ToolSpec:
        if self._spec is None:
            schema = self.schema or {"type": "object"}
            self._spec = ToolSpec(name=self.name, description=self.description,
                                  input_schema=schema)  # fmt: skip
        return self._spec

    def record_fields(self) -> dict[str, Any]:
        return {"server": self.server, "mcpTool": self.tool}

    async def run(self, params: McpArguments, ctx: ToolContext) -> ToolResult:
        arguments = dict(params.model_extra or {})

        def progress(value: float, total: float | None, message: str | None) -> None:
            shown = f"{value:g}/{total:g}" if total else f"{value:g}"
            ctx.on_output(f"[progress {shown}]{' ' + message if message else ''}\n")

        async def question(text: str, options: list[str], multi: bool) -> Any:
            if self.ask is None:
                return None
            answered = await self.ask(ctx, text, options, multi)
            return None if answered.is_error else (answered.details or {}).get("answer")

        async def elicit(params: dict[str, Any]) -> dict[str, Any]:
            return await elicit_with(question, self.server, params)

        call = Call(session_id=ctx.session_id, elicit=elicit, on_progress=progress)
        try:
            result = await self.connection.call_tool(self.tool, arguments, call)
        except ServerError as exc:
            return ToolResult(str(exc), is_error=True, details={"server": self.server})
        except TimeoutError:
            limit = self.connection.options.tool_timeout
            return ToolResult(
                f"MCP tool {self.tool} of {self.server!r} did not answer within {limit:g} s "
                "(MCP_TOOL_TIMEOUT); the call was cancelled.",
                is_error=True,
                details={"server": self.server},
            )
        except Exception as exc:
            if type(exc).__name__ != "MCPError":
                raise
            return ToolResult(
                f"MCP server {self.server!r} refused the call of {self.tool}: {exc}",
                is_error=True,
                details={"server": self.server},
            )
        mapped = tool_result(result, self.server)
        return ToolResult(mapped.content, is_error=mapped.is_error, details=mapped.details)


def make_tool(connection: Connection, tool: dict[str, Any], ask: AskFn | None = None) -> McpTool:
    """A :class:`McpTool` for one listed tool (wire form: name, description, inputSchema)."""
    return McpTool(connection, tool, ask)
