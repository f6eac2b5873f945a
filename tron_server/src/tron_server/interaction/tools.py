"""The tools that talk to the user: ``AskUser`` (a question; the turn waits for the answer)
and ``Notify`` (a message to every client, without waiting)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..tools.base import Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from .service import Interaction

__all__ = ["AskUserParams", "AskUserTool", "NotifyParams", "NotifyTool"]


class AskUserParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(
        min_length=1, max_length=4000, description="The question, complete and self-contained."
    )
    options: list[str] | None = Field(
        default=None,
        max_length=20,
        description="Choices to offer (2 to 6 short labels work best). Leave out for a free "
        "text answer; the user may also answer with text of their own.",
    )
    multiSelect: bool = Field(  # camelCase: the name models know from Claude Code
        default=False, description="Whether the user may pick several options."
    )

    @field_validator("options")
    @classmethod
    def _labels(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        labels = [v.strip() for v in value if v.strip()]
        if len(set(labels)) != len(labels):
            raise ValueError("options must be different from each other")
        if any(len(v) > 500 for v in labels):
            raise ValueError("each option must be at most 500 characters")
        return labels or None


class AskUserTool(Tool[AskUserParams]):
    """Ask the user and wait for the answer (which becomes this call's result)."""

    name = "AskUser"
    description = (
        "Ask the user a question and wait for the answer. Use it when you need a decision or "
        "information only the user has (a choice between approaches, a missing requirement, "
        "a confirmation before something irreversible); do not use it for things you can find "
        "out yourself. Give options for a choice; without options the answer is free text."
    )
    Params = AskUserParams

    def __init__(self, interaction: Interaction) -> None:
        self.interaction = interaction

    async def run(self, params: AskUserParams, ctx: ToolContext) -> ToolResult:
        return await self.interaction.ask(
            ctx, params.question, params.options or [], params.multiSelect
        )


class NotifyParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: str = Field(min_length=1, max_length=200, description="A short title.")
    body: str = Field(default="", max_length=4000, description="Details (optional).")
    urgency: Literal["low", "normal", "high"] = Field(
        default="normal", description="low, normal or high (high: the user should look now)."
    )


class NotifyTool(Tool[NotifyParams]):
    """Send the user a notification (recorded as ``notification.user``)."""

    name = "Notify"
    description = (
        "Send the user a notification, shown by every client attached to this server, without "
        "waiting for an answer: that a long task finished, or that something needs their "
        "attention. Use it sparingly."
    )
    Params = NotifyParams

    def __init__(self, interaction: Interaction) -> None:
        self.interaction = interaction

    async def run(self, params: NotifyParams, ctx: ToolContext) -> ToolResult:
        return await self.interaction.notify_user(ctx, params.title, params.body, params.urgency)
