"""TodoWrite: the agent's task list, recorded as todo.write."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .base import Tool, ToolContext, ToolResult

TodoStatus = Literal["pending", "in_progress", "completed"]


class TodoItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1, description='What to do, imperative ("Run the tests").')
    status: TodoStatus = Field(description="pending, in_progress or completed.")
    activeForm: str | None = Field(  # camelCase: the wire name models are trained on
        default=None, description="Present continuous form shown while in progress."
    )


class TodoWriteParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    todos: list[TodoItem] = Field(description="The complete, updated todo list.")


_MARK = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}


class TodoWrite(Tool[TodoWriteParams]):
    """Replace the session's todo list (recorded as a todo.write event)."""

    name = "TodoWrite"
    description = (
        "Create or update the task list for the current work. Send the complete list every "
        "time; keep exactly one item in_progress while working, and mark items completed as "
        "soon as they are done."
    )
    Params = TodoWriteParams

    async def run(self, params: TodoWriteParams, ctx: ToolContext) -> ToolResult:
        todos: list[dict[str, Any]] = [item.model_dump(exclude_none=True) for item in params.todos]
        await ctx.record("todo.write", {"todos": todos, "toolCallId": ctx.tool_call_id})
        counts = {s: sum(1 for t in params.todos if t.status == s) for s in _MARK}
        summary = (
            f"Todo list updated: {len(todos)} items ({counts['completed']} completed, "
            f"{counts['in_progress']} in progress, {counts['pending']} pending)."
        )
        lines = [f"{_MARK[t.status]} {t.content}" for t in params.todos]
        return ToolResult("\n".join([summary, *lines]), details={"counts": counts})
