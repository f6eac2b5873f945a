"""Typed provider errors. Every one says whether a retry can help, and when."""

from __future__ import annotations

__all__ = [
    "AbortedError",
    "AuthenticationError",
    "ContextLengthExceededError",
    "InvalidRequestError",
    "LLMError",
    "NetworkError",
    "NotFoundError",
    "OverloadedError",
    "PermissionDeniedError",
    "RateLimitError",
    "ResponseError",
    "ServerError",
    "error_for_status",
]


class LLMError(Exception):
    """A provider call failed.

    ``category`` is a stable machine name; ``retryable`` says whether the same request
    may succeed later; ``retry_after`` is the delay in seconds the provider asked for.
    Messages never contain the API key.
    """

    category = "provider"
    retryable = False

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        retry_after: float | None = None,
        provider: str | None = None,
        error_type: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.retry_after = retry_after
        self.provider = provider
        self.error_type = error_type

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, status_code={self.status_code!r})"


class AuthenticationError(LLMError):
    """The API key is missing or wrong (401)."""

    category = "authentication"


class PermissionDeniedError(LLMError):
    """The key may not use this model or feature (403)."""

    category = "permission"


class NotFoundError(LLMError):
    """Unknown model or endpoint (404)."""

    category = "not_found"


class InvalidRequestError(LLMError):
    """The provider rejected the request as malformed (400, 413, 422)."""

    category = "invalid_request"


class ContextLengthExceededError(InvalidRequestError):
    """The prompt does not fit the model's context window."""

    category = "context_length"


class RateLimitError(LLMError):
    """Too many requests or tokens (429)."""

    category = "rate_limit"
    retryable = True


class OverloadedError(LLMError):
    """The provider is overloaded (529, 503)."""

    category = "overloaded"
    retryable = True


class ServerError(LLMError):
    """The provider failed (5xx), or a request timed out or conflicted (408, 409)."""

    category = "server"
    retryable = True


class NetworkError(LLMError):
    """The connection failed or timed out before the response completed."""

    category = "network"
    retryable = True


class ResponseError(LLMError):
    """The provider's response could not be understood (a shape this adapter does
    not know). Not retried: the same request would most likely get the same."""

    category = "bad_response"


class AbortedError(LLMError):
    """The caller cancelled the call."""

    category = "aborted"


_CONTEXT_HINTS = (
    "context length",
    "context_length",
    "context window",
    "prompt is too long",
    "too many tokens",
    "maximum context",
    "input token count",
    "exceeds the maximum",
)


def error_for_status(
    status: int,
    message: str,
    *,
    retry_after: float | None = None,
    provider: str | None = None,
    error_type: str | None = None,
) -> LLMError:
    """The typed error for an HTTP status (or an in-stream error's equivalent status)."""
    lowered = message.lower()
    cls: type[LLMError]
    if status == 401:
        cls = AuthenticationError
    elif status == 403:
        cls = PermissionDeniedError
    elif status == 404:
        cls = NotFoundError
    elif status == 429:
        cls = RateLimitError
    elif status in (503, 529):
        cls = OverloadedError
    elif status in (408, 409) or status >= 500:
        cls = ServerError
    elif any(hint in lowered for hint in _CONTEXT_HINTS):
        cls = ContextLengthExceededError
    else:
        cls = InvalidRequestError
    return cls(
        message,
        status_code=status,
        retry_after=retry_after,
        provider=provider,
        error_type=error_type,
    )
