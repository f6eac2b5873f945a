"""Providers by name: ``create_provider("anthropic")`` and friends.

Adapters are imported when first asked for, so a deployment that only talks to one
provider never imports the others.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import httpx

from ._retry import RetryPolicy
from ._types import Provider

__all__ = ["PROVIDERS", "base_url_variables", "create_provider"]

PROVIDERS: dict[str, tuple[str, str]] = {
    "anthropic": ("tron_llm.anthropic", "AnthropicProvider"),
    "openai": ("tron_llm.openai_chat", "OpenAIChatProvider"),
    "openai-responses": ("tron_llm.openai_responses", "OpenAIResponsesProvider"),
    "google": ("tron_llm.gemini", "GeminiProvider"),
    "openai-compatible": ("tron_llm.openai_chat", "OpenAIChatProvider"),
}
"""Provider name → (module, class)."""


def create_provider(
    provider: str,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    client: httpx.AsyncClient | None = None,
    retry: RetryPolicy | None = None,
    headers: Mapping[str, str] | None = None,
    base_url_source: str | None = None,
    api_key_source: str | None = None,
) -> Provider:
    """The adapter for ``provider`` (``anthropic``, ``openai``, ``openai-responses``,
    ``google`` or ``openai-compatible``).

    ``api_key`` defaults to the provider's environment variable. ``openai-compatible``
    is OpenAI Chat Completions at ``base_url`` (Ollama, vLLM, llama.cpp, OpenRouter):
    ``base_url`` is required and so is no key — and without an explicit ``api_key``
    none is sent, so ``OPENAI_API_KEY`` never leaks to another server. Without
    ``base_url`` the provider SDK's variable is read (``ANTHROPIC_BASE_URL``,
    ``OPENAI_BASE_URL``, ``GOOGLE_GEMINI_BASE_URL``). ``base_url_source`` and
    ``api_key_source`` name the variable or option an explicit value came from, for
    error messages.

    Raises ``ValueError`` for an unknown provider name or a missing ``base_url``.
    """
    target = PROVIDERS.get(provider)
    if target is None:
        known = ", ".join(sorted(PROVIDERS))
        raise ValueError(f"unknown provider {provider!r}; known providers: {known}")
    if provider == "openai-compatible":
        if not base_url:
            raise ValueError(
                "provider 'openai-compatible' needs base_url, the server's OpenAI-style "
                "root (e.g. http://127.0.0.1:11434/v1 for Ollama)"
            )
        if api_key is None:
            api_key = ""  # no key: not the OPENAI_API_KEY meant for api.openai.com
    module_name, class_name = target
    cls: Any = getattr(importlib.import_module(module_name), class_name)
    options: dict[str, Any] = {"api_key": api_key, "base_url": base_url, "client": client}
    if retry is not None:
        options["retry"] = retry
    if headers is not None:
        options["headers"] = headers
    if base_url_source is not None:
        options["base_url_source"] = base_url_source
    if api_key_source is not None:
        options["api_key_source"] = api_key_source
    instance: Provider = cls(**options)
    return instance


def base_url_variables(provider: str) -> tuple[str, ...]:
    """The variables ``provider``'s adapter reads for its endpoint when given none
    (``("ANTHROPIC_BASE_URL",)`` …; none for ``openai-compatible``, whose endpoint is
    always explicit). Raises ``ValueError`` for an unknown provider name."""
    target = PROVIDERS.get(provider)
    if target is None:
        raise ValueError(f"unknown provider {provider!r}")
    if provider == "openai-compatible":
        return ()
    module_name, class_name = target
    names: tuple[str, ...] = getattr(
        getattr(importlib.import_module(module_name), class_name), "base_url_env", ()
    )
    return names
