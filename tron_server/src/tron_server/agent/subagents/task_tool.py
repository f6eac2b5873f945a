"""The ``Task`` tool: delegate a task to a sub-agent running in a child session.

Parameters: ``description`` (a short label), ``prompt`` (the task), optional
``subagent_type`` (an agent by name; default ``general-purpose``), ``model`` (``inherit``,
``sonnet``, ``opus``, ``haiku`` or a model id) and ``session_id`` (continue an earlier child
of this session instead of starting a new one). The tool's description lists the available
agents by name and description; it is built for each run (agents are files in the project).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tron_llm import ToolSpec

from ...tools._schema import params_schema
from ...tools.base import Tool, ToolContext, ToolResult
from .definitions import AgentDefinition
from .task_params import TaskParams

if TYPE_CHECKING:
    from .spawner import Spawner

__all__ = ["TASK_TOOL_NAME", "TaskParams", "TaskTool", "task_description"]

TASK_TOOL_NAME = "Task"


_SCHEMA = params_schema(TaskParams)


def task_description(agents: dict[str, AgentDefinition], max_parallel: int) -> str:
    """The Task tool's description: what it does and the agents on offer."""
    lines = [
        "Launch a sub-agent: another agent that works on a task on its own, in a session of "
        "its own (a child of this one), with its own context and tools, and returns one "
        "final report. Use it for tasks that need many searches or reads (its work stays out "
        "of your context), or for independent parts of a job that can run in parallel.",
        "",
        "Available agents (subagent_type):",
    ]
    for definition in agents.values():
        tools = ""
        if definition.tools is not None:
            tools = f" (tools: {', '.join(definition.tools) or 'none'})"
        lines.append(f"- {definition.name}: {definition.description}{tools}")
    lines += [
        "",
        "Usage:",
        f"- Several Task calls in one message run in parallel (up to {max_parallel} at once); "
        "their results come back in the order you made the calls.",
        "- The sub-agent sees only your prompt: include every detail it needs, and say what "
        "its report must contain. Its report is not shown to the user: summarize it for them.",
        "- The result ends with the sub-agent's session id: call Task again with that "
        "session_id to send it a follow-up; it keeps everything it did.",
    ]
    return "\n".join(lines)


class TaskTool(Tool[TaskParams]):
    """Starts or continues a child session through the run's :class:`Spawner`."""

    name = TASK_TOOL_NAME
    description = "Launch a sub-agent in a child session (see the run's agent list)."
    Params = TaskParams

    def __init__(self, spawner: Spawner, *, max_parallel: int) -> None:
        self.spawner = spawner
        self._spec = ToolSpec(
            name=self.name,
            description=task_description(spawner.agents, max_parallel),
            input_schema=_SCHEMA,
        )

    def spec(self) -> ToolSpec:
        return self._spec

    async def run(self, params: TaskParams, ctx: ToolContext) -> ToolResult:
        return await self.spawner.run_task(params, ctx)
