"""The provider-neutral request, usage and stream events every adapter speaks."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tron_events.messages import Message

__all__ = [
    "Done",
    "ErrorEvent",
    "LLMRequest",
    "Provider",
    "ReasoningLevel",
    "StopReason",
    "StreamEvent",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolSpec",
    "Usage",
]

ReasoningLevel = Literal["low", "medium", "high", "xhigh"]
StopReason = Literal[
    "end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "error", "aborted"
]


class ToolSpec(BaseModel):
    """A tool the model may call: its name, what it does, and its JSON schema."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    input_schema: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )


class LLMRequest(BaseModel):
    """One model call, the same for every provider."""

    model_config = ConfigDict(frozen=True)

    model: str
    messages: list[Message]
    system: str | None = None
    tools: list[ToolSpec] = Field(default_factory=list)
    max_tokens: int = 8192
    temperature: float | None = None
    reasoning: ReasoningLevel | None = None
    """None turns thinking off; each adapter maps the level to its provider's knob."""
    stop_sequences: list[str] = Field(default_factory=list)
    prompt_caching: bool = True
    tool_choice: str | None = None
    """The name of a tool of ``tools`` the model must call (a forced tool: the reply is
    one call of it). Side calls use it to get typed fields from every provider. With
    Anthropic, thinking is off for such a request (the API refuses both together)."""

    @model_validator(mode="after")
    def _known_tool_choice(self) -> LLMRequest:
        if self.tool_choice is not None and self.tool_choice not in {t.name for t in self.tools}:
            raise ValueError(f"tool_choice {self.tool_choice!r} names no tool of the request")
        return self


class Usage(BaseModel):
    """Token use, normalized across providers.

    ``input_tokens`` is the total input, cache reads and writes included (Anthropic
    reports them apart; OpenAI and Gemini include them). ``output_tokens`` includes
    reasoning (Gemini reports thoughts apart). ``cost_usd`` is None when the model's
    price is unknown.
    """

    model_config = ConfigDict(frozen=True)

    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float | None = None

    @property
    def total_tokens(self) -> int:
        """Input plus output."""
        return self.input_tokens + self.output_tokens

    @property
    def uncached_input_tokens(self) -> int:
        """Input that was neither read from nor written to the prompt cache."""
        return max(0, self.input_tokens - self.cache_read_tokens - self.cache_write_tokens)

    def to_payload(self) -> dict[str, Any]:
        """The ``tokenUsage`` of a ``message.assistant`` event (store field names)."""
        return {
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "cacheReadTokens": self.cache_read_tokens,
            "cacheCreationTokens": self.cache_write_tokens,
        }


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True)


class TextDelta(_Event):
    """More assistant text for the content block at ``index``."""

    type: Literal["text_delta"] = "text_delta"
    index: int
    text: str


class ThinkingDelta(_Event):
    """More reasoning text for the content block at ``index``."""

    type: Literal["thinking_delta"] = "thinking_delta"
    index: int
    thinking: str


class ToolCallStart(_Event):
    """The model began a tool call (its arguments stream as ``ToolCallDelta``)."""

    type: Literal["toolcall_start"] = "toolcall_start"
    index: int
    id: str
    name: str


class ToolCallDelta(_Event):
    """A fragment of a tool call's JSON arguments."""

    type: Literal["toolcall_delta"] = "toolcall_delta"
    index: int
    id: str
    partial_json: str


class ToolCallEnd(_Event):
    """A tool call is complete; ``input`` is the parsed arguments (``{}`` when none)."""

    type: Literal["toolcall_end"] = "toolcall_end"
    index: int
    id: str
    name: str
    input: dict[str, Any]


class Done(_Event):
    """The final assistant message, why it stopped, and what it cost."""

    type: Literal["done"] = "done"
    message: Message
    stop_reason: StopReason
    usage: Usage
    model: str
    response_id: str | None = None


class ErrorEvent(_Event):
    """The call failed (after retries); ``error`` is the typed exception, also raised
    by ``complete``. Whatever streamed before stays valid for the caller to keep."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    type: Literal["error"] = "error"
    error: Exception
    message: Message | None = None
    """What had streamed when it failed (partial text, finished tool calls), or None."""
    usage: Usage = Usage()


StreamEvent = (
    TextDelta | ThinkingDelta | ToolCallStart | ToolCallDelta | ToolCallEnd | Done | ErrorEvent
)


@runtime_checkable
class Provider(Protocol):
    """What every adapter implements."""

    name: str

    def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Stream one call. Ends with exactly one ``Done`` or ``ErrorEvent``."""
        ...

    async def complete(self, request: LLMRequest) -> Done:
        """The final result of one call; raises the typed ``LLMError`` on failure."""
        ...

    async def aclose(self) -> None:
        """Close the HTTP client if the adapter made it."""
        ...
