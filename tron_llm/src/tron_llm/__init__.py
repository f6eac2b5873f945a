"""Tron's provider adapters over raw httpx: one streaming protocol for Anthropic,
OpenAI (Chat Completions and Responses, and any OpenAI-compatible server) and Gemini.

    from tron_llm import LLMRequest, create_provider
    from tron_events.messages import Message, TextBlock

    provider = create_provider("anthropic")          # key from ANTHROPIC_API_KEY
    request = LLMRequest(model="claude-sonnet-4-5",
                         messages=[Message(role="user", content=[TextBlock(text="hi")])])
    async for event in provider.stream(request):     # TextDelta, ..., then Done or ErrorEvent
        ...
"""

from . import _httpx_cli  # noqa: F401  (before anything imports httpx)
from ._cost import cost_usd
from ._http import HTTPCall, HTTPProvider, StreamParser, shared_ssl_context
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
from .anthropic import AnthropicProvider
from .catalog import DEFAULT_CONTEXT_WINDOW, ModelInfo, get_model, list_models
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
    ResponseError,
    ServerError,
)
from .gemini import GeminiProvider
from .openai_chat import OpenAIChatProvider
from .openai_responses import OpenAIResponsesProvider
from .registry import create_provider

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "AbortedError",
    "AnthropicProvider",
    "AuthenticationError",
    "ContextLengthExceededError",
    "Done",
    "ErrorEvent",
    "GeminiProvider",
    "HTTPCall",
    "HTTPProvider",
    "InvalidRequestError",
    "LLMError",
    "LLMRequest",
    "ModelInfo",
    "NetworkError",
    "NotFoundError",
    "OpenAIChatProvider",
    "OpenAIResponsesProvider",
    "OverloadedError",
    "PermissionDeniedError",
    "Provider",
    "RateLimitError",
    "ReasoningLevel",
    "ResponseError",
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
    "cost_usd",
    "create_provider",
    "get_model",
    "list_models",
    "safe_tool_id",
    "shared_ssl_context",
]
