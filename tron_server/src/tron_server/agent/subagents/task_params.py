"""The ``Task`` tool's parameters, in a module of their own: the tool
(:mod:`.task_tool`) and the spawner that runs its calls (:mod:`.spawner`) both use them,
and neither imports the other for them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["TaskParams"]


class TaskParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str = Field(
        min_length=1,
        max_length=200,
        description="A short (3-5 word) label for the task, shown to the user.",
    )
    prompt: str = Field(
        min_length=1,
        description="The task for the sub-agent. It sees nothing of this conversation: say "
        "everything it needs (goal, files, constraints) and what its report must contain.",
    )
    subagent_type: str | None = Field(
        default=None,
        description="The agent to use, by name from the list in this tool's description "
        "(default: general-purpose).",
    )
    model: str | None = Field(
        default=None,
        description="Optional model for a new sub-agent: inherit, sonnet, opus, haiku or a "
        "model id (default: the agent's own setting, else this session's model).",
    )
    session_id: str | None = Field(
        default=None,
        description="Continue an earlier sub-agent of this session: its session id from an "
        "earlier Task result. The prompt is sent to it as a new message; it keeps its history "
        "(and its agent type and model).",
    )
