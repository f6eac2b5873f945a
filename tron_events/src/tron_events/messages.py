"""The provider-neutral message model: what reconstruction returns and providers send.

Blocks use the Anthropic shape (``text``, ``thinking``, ``redacted_thinking``,
``tool_use``, ``tool_result``, ``image``); each provider adapter translates from it.
``native`` holds what only one provider understands (its server-side tool calls and
results, compaction items), kept verbatim so it can go back to that provider.

This module is deliberately pure (stdlib + pydantic only): ``tron_llm`` imports it
alone, and an import-linter contract keeps the database out of it.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Base64ImageSource",
    "ContentBlock",
    "ImageBlock",
    "ImageSource",
    "Message",
    "NativeBlock",
    "RedactedThinkingBlock",
    "Role",
    "TextBlock",
    "ThinkingBlock",
    "TokenUsage",
    "ToolResultBlock",
    "ToolResultPart",
    "ToolUseBlock",
    "UrlImageSource",
]

Role = Literal["user", "assistant"]


class _Block(BaseModel):
    # Blocks are values: frozen so a Message handed to a provider adapter cannot be
    # edited in place behind the caller's back.
    model_config = ConfigDict(frozen=True, extra="forbid")

    # Fields other providers need replayed (Gemini's part signatures, OpenAI's reasoning
    # item ids, who produced a thinking block) that the Anthropic API would reject.
    _NOT_ANTHROPIC: ClassVar[frozenset[str]] = frozenset()

    def to_wire(self) -> dict[str, Any]:
        """The block as an Anthropic-shaped JSON dict (``None`` fields omitted)."""
        data = self.model_dump(mode="json", exclude_none=True)
        for name in self._NOT_ANTHROPIC:
            data.pop(name, None)
        return data

    def to_payload(self) -> dict[str, Any]:
        """The block as stored in an event payload: every set field, ``None`` omitted."""
        return self.model_dump(mode="json", exclude_none=True)


class TextBlock(_Block):
    """Plain text."""

    type: Literal["text"] = "text"
    text: str
    signature: str | None = None
    """Gemini's ``thoughtSignature`` on this exact part (replayed as is; may sign empty
    text). Never sent to Anthropic."""
    phase: str | None = None
    """The OpenAI Responses ``phase`` of the message this text was (``commentary`` or
    ``final_answer``), which OpenAI asks to have resent. Never sent to Anthropic."""

    _NOT_ANTHROPIC: ClassVar[frozenset[str]] = frozenset({"signature", "phase"})

    def to_wire(self) -> dict[str, Any]:
        # What model_dump would give less the non-Anthropic fields, without it: a long
        # history has thousands of text blocks (tests/events pins the equality).
        return {"type": "text", "text": self.text}


class ThinkingBlock(_Block):
    """Model reasoning. ``signature`` must go back to the provider byte for byte."""

    type: Literal["thinking"] = "thinking"
    thinking: str
    signature: str | None = None
    """Anthropic's signature, OpenAI's ``encrypted_content`` or Gemini's
    ``thoughtSignature``: opaque, replayed only to the provider that made it."""
    provider: str | None = None
    """Who produced this block (``anthropic``, ``openai``, ``google``); ``None`` means
    Anthropic. Another provider receives the thinking as plain text."""
    item_id: str | None = None
    """The OpenAI Responses reasoning item id."""

    _NOT_ANTHROPIC: ClassVar[frozenset[str]] = frozenset({"provider", "item_id"})


class RedactedThinkingBlock(_Block):
    """Encrypted reasoning the provider returned instead of thinking text."""

    type: Literal["redacted_thinking"] = "redacted_thinking"
    data: str


class Base64ImageSource(_Block):
    """Inline image bytes, base64-encoded."""

    type: Literal["base64"] = "base64"
    media_type: str
    data: str


class UrlImageSource(_Block):
    """An image the provider fetches by URL."""

    type: Literal["url"] = "url"
    url: str


ImageSource = Annotated[Base64ImageSource | UrlImageSource, Field(discriminator="type")]


class ImageBlock(_Block):
    """An image, inline or by URL."""

    type: Literal["image"] = "image"
    source: ImageSource


class ToolUseBlock(_Block):
    """A tool invocation requested by the assistant."""

    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any]
    signature: str | None = None
    """Gemini's ``thoughtSignature`` on the functionCall part. Never sent to Anthropic."""

    _NOT_ANTHROPIC: ClassVar[frozenset[str]] = frozenset({"signature"})


class NativeBlock(_Block):
    """Content only the provider that made it understands, kept so it can be replayed.

    Server-side tool calls and their results (Anthropic's ``server_tool_use``,
    ``web_search_tool_result``, ``mcp_tool_use``...; OpenAI Responses'
    ``web_search_call``, ``code_interpreter_call``, ``mcp_call``...; Gemini's
    ``executableCode``, ``codeExecutionResult``, ``toolCall``, ``toolResponse`` parts) and
    provider compaction items. ``data`` is the block, output item or part exactly as
    ``provider`` sent it, assembled from its stream deltas (a server tool call's
    ``input`` parsed); the provider gets it back as is, in its place, and no other
    provider ever sees it.
    """

    type: Literal["native"] = "native"
    provider: str
    """The adapter that produced it: ``anthropic``, ``openai-responses``, ``openai``
    (Chat Completions: a compatible server's reasoning details) or ``google``."""
    data: dict[str, Any]

    def to_wire(self) -> dict[str, Any]:
        """``data`` itself: the Anthropic block (meaningful for ``anthropic`` only)."""
        return dict(self.data)


ToolResultPart = Annotated[TextBlock | ImageBlock, Field(discriminator="type")]


class ToolResultBlock(_Block):
    """The answer to a ``tool_use``; lives in the user message right after it."""

    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: str | list[ToolResultPart] = ""
    is_error: bool = False


ContentBlock = Annotated[
    TextBlock
    | ThinkingBlock
    | RedactedThinkingBlock
    | ToolUseBlock
    | ToolResultBlock
    | ImageBlock
    | NativeBlock,
    Field(discriminator="type"),
]


class Message(BaseModel):
    """One message of a history: a role, its blocks, and the events it came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Role
    content: list[ContentBlock]
    event_ids: list[str] = Field(default_factory=list)

    def to_anthropic(self) -> dict[str, Any]:
        """The message as an Anthropic Messages API ``MessageParam`` dict."""
        return {
            "role": self.role,
            "content": [
                block.to_wire()
                for block in self.content
                if not isinstance(block, NativeBlock) or block.provider == "anthropic"
            ],
        }

    def to_payload(self) -> list[dict[str, Any]]:
        """The content as stored in a ``message.*`` event payload (keeps every
        provider's replay fields)."""
        return [block.to_payload() for block in self.content]

    def tool_use_ids(self) -> list[str]:
        """Ids of the ``tool_use`` blocks in this message, in order."""
        return [b.id for b in self.content if isinstance(b, ToolUseBlock)]

    def tool_result_ids(self) -> list[str]:
        """``tool_use_id`` of the ``tool_result`` blocks in this message, in order."""
        return [b.tool_use_id for b in self.content if isinstance(b, ToolResultBlock)]


class TokenUsage(BaseModel):
    """Token totals, normalized across providers."""

    model_config = ConfigDict(frozen=True)

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
