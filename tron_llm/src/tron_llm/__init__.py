"""Tron's provider adapters over raw httpx: one streaming protocol for Anthropic,
OpenAI (Chat Completions and Responses, and any OpenAI-compatible server) and Gemini.

Adapters are added to the exports below as they land.
"""

from ._http import HTTPCall, HTTPProvider, StreamParser
from ._ids import ToolIdMap, safe_tool_id
from ._retry import RetryPolicy
from ._sse import ServerSentEvent, SSEDecoder
from ._types import (
    Done,
    ErrorEvent,
    LLMRequest,
    Provider,
    ReasoningLevel,
    StopReason,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolSpec,
    Usage,
)
from .errors import (
    AbortedError,
    AuthenticationError,
    ContextLengthExceededError,
    InvalidRequestError,
    LLMError,
    NetworkError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
)

__all__ = [
    "AbortedError",
    "AuthenticationError",
    "ContextLengthExceededError",
    "Done",
    "ErrorEvent",
    "HTTPCall",
    "HTTPProvider",
    "InvalidRequestError",
    "LLMError",
    "LLMRequest",
    "NetworkError",
    "NotFoundError",
    "OverloadedError",
    "PermissionDeniedError",
    "Provider",
    "RateLimitError",
    "ReasoningLevel",
    "RetryPolicy",
    "SSEDecoder",
    "ServerError",
    "ServerSentEvent",
    "StopReason",
    "StreamEvent",
    "StreamParser",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolIdMap",
    "ToolSpec",
    "Usage",
    "safe_tool_id",
]
