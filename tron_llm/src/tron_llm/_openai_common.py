"""What the two OpenAI adapters (Chat Completions and Responses) share: which host is
OpenAI's, error classification, tool-id maps, images, argument parsing, usage."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from typing import Any, ClassVar
from urllib.parse import urlsplit

import httpx

from tron_events.messages import ImageBlock, ToolResultBlock, ToolUseBlock

from ._http import DEFAULT_TIMEOUT, HTTPProvider
from ._ids import ToolIdMap
from ._retry import RetryPolicy, parse_retry_after
from ._types import LLMRequest, ReasoningLevel, Usage
from .errors import (
    AuthenticationError,
    ContextLengthExceededError,
    InvalidRequestError,
    LLMError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    error_for_status,
)

__all__ = [
    "OPENAI_BASE_URL",
    "OPENAI_THINKING_PROVIDER",
    "bearer",
    "image_url",
    "is_openai_host",
    "openai_error",
    "parse_arguments",
    "reasoning_effort",
    "response_error",
    "tool_id_map",
    "tool_result_parts",
    "usage_from",
]

log = logging.getLogger("tron_llm")

OPENAI_BASE_URL = "https://api.openai.com/v1"

OPENAI_THINKING_PROVIDER = "openai"
"""``ThinkingBlock.provider`` of the blocks both OpenAI adapters produce."""


def is_openai_host(base_url: str) -> bool:
    """Whether ``base_url`` is OpenAI's own API (not a compatible server or proxy)."""
    return (urlsplit(base_url).hostname or "").lower() == "api.openai.com"


def bearer(api_key: str) -> dict[str, str]:
    """The ``Authorization`` header every OpenAI-style server reads; none for an empty
    key (a local server: a bare ``Bearer`` is malformed and some proxies refuse it)."""
    return {"authorization": f"Bearer {api_key}"} if api_key else {}


# Models OpenAI documents as accepting "xhigh": gpt-5.1-codex-max and every GPT-5
# release after 5.1 (5.2, 5.3, 5.4, ...). Anything else gets "high", the highest level
# every reasoning model accepts, instead of a 400.
_XHIGH_MODEL = re.compile(r"^(?:openai/)?gpt-5\.(?:1-codex-max|[2-9]|\d{2,})")


def reasoning_effort(level: ReasoningLevel, model: str) -> str:
    """OpenAI's effort word for ``level`` on ``model``."""
    if level == "xhigh" and not _XHIGH_MODEL.match(model):
        return "high"
    return level


def tool_id_map(request: LLMRequest) -> ToolIdMap:
    """The id map of one request, built the same way by the request builder and the
    stream parser (each gets the request, not each other)."""
    ids = ToolIdMap()
    for message in request.messages:
        for block in message.content:
            if isinstance(block, ToolUseBlock):
                ids.out(block.id)
            elif isinstance(block, ToolResultBlock):
                ids.out(block.tool_use_id)
    return ids


def image_url(block: ImageBlock) -> str:
    """A URL for the image: its own, or a ``data:`` URL of the inline bytes."""
    source = block.source
    if source.type == "url":
        return source.url
    return f"data:{source.media_type};base64,{source.data}"


def tool_result_parts(block: ToolResultBlock) -> tuple[str, list[ImageBlock]]:
    """A tool result's text (parts joined by newlines) and its images."""
    if isinstance(block.content, str):
        return block.content, []
    texts = [part.text for part in block.content if part.type == "text"]
    images = [part for part in block.content if isinstance(part, ImageBlock)]
    return "\n".join(texts), images


def parse_arguments(raw: str, *, name: str, provider: str) -> dict[str, Any]:
    """A tool call's JSON arguments as a dict (``{}`` when empty or not an object).

    Invalid JSON (a stream cut off at max tokens, a confused local model) becomes
    ``{}``: the tool then reports the missing parameters to the model, which is more
    useful than failing the whole turn.
    """
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        log.warning("%s: tool call %r has invalid JSON arguments; using {}", provider, name)
        return {}
    if not isinstance(value, dict):
        log.warning("%s: tool call %r arguments are not an object; using {}", provider, name)
        return {}
    return value


def _int(data: Mapping[str, Any] | None, key: str) -> int:
    value = (data or {}).get(key)
    return value if isinstance(value, int) else 0


def _details(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key)
    return value if isinstance(value, Mapping) else {}


def usage_from(data: Mapping[str, Any]) -> Usage:
    """Usage from a Chat Completions ``usage`` (``prompt_tokens``...) or a Responses
    ``usage`` (``input_tokens``...). OpenAI's input includes cached tokens and its
    output includes reasoning, which is already our normalized form."""
    if "input_tokens" in data or "output_tokens" in data:
        inputs = _details(data, "input_tokens_details")
        outputs = _details(data, "output_tokens_details")
        input_tokens, output_tokens = _int(data, "input_tokens"), _int(data, "output_tokens")
    else:
        inputs = _details(data, "prompt_tokens_details")
        outputs = _details(data, "completion_tokens_details")
        input_tokens, output_tokens = _int(data, "prompt_tokens"), _int(data, "completion_tokens")
    return Usage(
        input_tokens=input_tokens,
        cache_read_tokens=_int(inputs, "cached_tokens"),
        # Newer OpenAI responses (and OpenRouter) report prompt-cache writes too.
        cache_write_tokens=_int(inputs, "cache_write_tokens"),
        output_tokens=output_tokens,
        reasoning_tokens=_int(outputs, "reasoning_tokens"),
    )


# --- errors -----------------------------------------------------------------------

# In-stream errors carry no HTTP status: classify them by their type/code words.
# Checked in order, so the specific words come before the generic ones.
_KINDS: tuple[tuple[tuple[str, ...], type[LLMError], int], ...] = (
    (("insufficient_quota", "billing"), PermissionDeniedError, 429),
    (("context_length", "context_window"), ContextLengthExceededError, 400),
    (("rate_limit", "tokens_per_min", "requests_per_min"), RateLimitError, 429),
    (("overloaded", "service_unavailable", "slow_down", "unavailable"), OverloadedError, 503),
    (("invalid_api_key", "authentication", "unauthorized"), AuthenticationError, 401),
    (("permission", "unsupported_country", "forbidden"), PermissionDeniedError, 403),
    (("not_found",), NotFoundError, 404),
    (("invalid", "bad_request", "badrequest", "unsupported"), InvalidRequestError, 400),
    (("server_error", "api_error", "internal", "timeout"), ServerError, 500),
)

_CONTEXT_WORDS = ("context length", "context window", "maximum context", "too many tokens")
_QUOTA_HINT = " (your OpenAI quota is used up: check the plan and billing of this API key)"


def openai_error(
    error: Mapping[str, Any],
    *,
    provider: str,
    status: int | None = None,
    retry_after: float | None = None,
) -> LLMError:
    """The typed error for an OpenAI-style error object ``{"message", "type", "code"}``.

    ``status`` is the HTTP status when there was one; in-stream errors have none, and
    servers such as vLLM put it in a numeric ``code``.
    """
    message = str(error.get("message") or "the provider reported an error")
    words = " ".join(
        str(error.get(key) or "") for key in ("code", "type", "status") if error.get(key)
    ).lower()
    error_type = next(
        (str(error[k]) for k in ("code", "type") if isinstance(error.get(k), str)), None
    )
    code = error.get("code")
    if status is None and isinstance(code, int) and 400 <= code < 600:
        status = code
    if status is None and isinstance(code, str) and code.isdigit():
        status = int(code)
    for hints, cls, default_status in _KINDS:
        if any(hint in words for hint in hints):
            if cls is PermissionDeniedError and "quota" in words:
                message += _QUOTA_HINT
            # The HTTP status decides the class, except for the words that a status
            # alone gets wrong (a 429 that is an empty wallet, a 400 that is context).
            if status is not None and cls not in (
                PermissionDeniedError,
                ContextLengthExceededError,
            ):
                break
            return cls(
                message,
                status_code=status or default_status,
                retry_after=retry_after,
                provider=provider,
                error_type=error_type,
            )
    if status is None and any(hint in message.lower() for hint in _CONTEXT_WORDS):
        # An in-stream error with no code that is still plainly about the context.
        status = 400
    return error_for_status(
        status or 500,
        message,
        retry_after=retry_after,
        provider=provider,
        error_type=error_type,
    )


def response_error(
    status: int, headers: Mapping[str, str], body: bytes, *, provider: str
) -> LLMError:
    """The typed error of a non-2xx response: ``{"error": {...}}`` (OpenAI, vLLM),
    ``{"error": "text"}`` (Ollama), ``{"detail": ...}`` or plain text."""
    retry_after = parse_retry_after(headers)
    try:
        data: Any = json.loads(body)
    except ValueError:
        data = None
    if isinstance(data, list) and data:
        data = data[0]
    error: Any = data.get("error", data) if isinstance(data, dict) else None
    if isinstance(error, dict):
        return openai_error(error, provider=provider, status=status, retry_after=retry_after)
    if isinstance(error, str):
        text = error
    elif isinstance(data, dict) and "detail" in data:
        text = str(data["detail"])
    else:
        text = body.decode("utf-8", "replace").strip()[:2000]
    return error_for_status(
        status, text or f"HTTP {status}", retry_after=retry_after, provider=provider
    )


class OpenAIHTTPProvider(HTTPProvider):
    """What the Chat Completions and Responses adapters share: OpenAI's endpoint and key,
    bearer auth, OpenAI-shaped error bodies, and the compatible-server rules.

    Without ``base_url`` (nor ``OPENAI_BASE_URL``) it talks to OpenAI and needs
    ``OPENAI_API_KEY``. With another ``base_url`` (``http://localhost:11434/v1`` for
    Ollama) no key is required, and cost is left unknown (a local model's price is not OpenAI's).
    """

    default_base_url: ClassVar[str] = OPENAI_BASE_URL
    api_key_env: ClassVar[tuple[str, ...]] = ("OPENAI_API_KEY",)
    base_url_env: ClassVar[tuple[str, ...]] = ("OPENAI_BASE_URL",)

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: httpx.AsyncClient | None = None,
        retry: RetryPolicy | None = None,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        headers: Mapping[str, str] | None = None,
        base_url_source: str | None = None,
        api_key_source: str | None = None,
    ) -> None:
        super().__init__(
            api_key=api_key,
            base_url=base_url,
            client=client,
            retry=retry,
            timeout=timeout,
            headers=headers,
            base_url_source=base_url_source,
            api_key_source=api_key_source,
        )
        self.is_openai = is_openai_host(self.base_url)
        self.price_provider = "openai" if self.is_openai else None
        # A compatible server (a local Ollama, vLLM) usually takes no key.
        self.requires_api_key = self.is_openai

    def auth_headers(self, api_key: str) -> dict[str, str]:
        """``Authorization: Bearer <key>``."""
        return bearer(api_key)

    def error_from_response(self, status: int, headers: Mapping[str, str], body: bytes) -> LLMError:
        """OpenAI error bodies (``{"error": {"message", "type", "code"}}``), Ollama's
        ``{"error": "text"}`` and plain text."""
        return response_error(status, headers, body, provider=self.name)
