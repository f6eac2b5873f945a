"""A curated list of the models Tron knows well: context window, output limit, features.

The figures come from each provider's model documentation; a test cross-checks the
context windows against the ``genai-prices`` data where it has them. A model that is
not listed still works: ``get_model`` returns None and callers assume a 128k window.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

__all__ = ["DEFAULT_CONTEXT_WINDOW", "ModelInfo", "get_model", "list_models"]

DEFAULT_CONTEXT_WINDOW = 128_000
"""What to assume for a model the catalog does not know."""


class ModelInfo(BaseModel):
    """One model: who serves it, how much it reads and writes, what it supports."""

    model_config = ConfigDict(frozen=True)

    id: str
    """The id the provider's API takes."""
    provider: str
    """``anthropic``, ``openai`` or ``google`` (the ``create_provider`` name)."""
    name: str
    """A human-readable name."""
    context_window: int
    """Input plus output tokens the model can attend to."""
    max_output_tokens: int
    supports_thinking: bool
    """Whether the request's reasoning level does anything."""
    supports_images: bool
    supports_tools: bool


def _m(
    id: str,
    provider: str,
    name: str,
    context_window: int,
    max_output_tokens: int,
    *,
    thinking: bool = True,
    images: bool = True,
    tools: bool = True,
) -> ModelInfo:
    return ModelInfo(
        id=id,
        provider=provider,
        name=name,
        context_window=context_window,
        max_output_tokens=max_output_tokens,
        supports_thinking=thinking,
        supports_images=images,
        supports_tools=tools,
    )


_MODELS: tuple[ModelInfo, ...] = (
    # Anthropic: https://docs.claude.com/en/docs/about-claude/models/overview
    _m("claude-opus-4-5", "anthropic", "Claude Opus 4.5", 200_000, 64_000),
    _m("claude-sonnet-4-5", "anthropic", "Claude Sonnet 4.5", 200_000, 64_000),
    _m("claude-haiku-4-5", "anthropic", "Claude Haiku 4.5", 200_000, 64_000),
    _m("claude-opus-4-1", "anthropic", "Claude Opus 4.1", 200_000, 32_000),
    _m("claude-sonnet-4-0", "anthropic", "Claude Sonnet 4", 200_000, 64_000),
    # OpenAI: https://platform.openai.com/docs/models
    _m("gpt-5", "openai", "GPT-5", 400_000, 128_000),
    _m("gpt-5-mini", "openai", "GPT-5 mini", 400_000, 128_000),
    _m("gpt-5-nano", "openai", "GPT-5 nano", 400_000, 128_000),
    _m("gpt-4.1", "openai", "GPT-4.1", 1_047_576, 32_768, thinking=False),
    _m("gpt-4o", "openai", "GPT-4o", 128_000, 16_384, thinking=False),
    _m("o3", "openai", "o3", 200_000, 100_000),
    _m("o4-mini", "openai", "o4-mini", 200_000, 100_000),
    # Google: https://ai.google.dev/gemini-api/docs/models
    _m("gemini-2.5-pro", "google", "Gemini 2.5 Pro", 1_048_576, 65_536),
    _m("gemini-2.5-flash", "google", "Gemini 2.5 Flash", 1_048_576, 65_536),
    _m("gemini-2.5-flash-lite", "google", "Gemini 2.5 Flash-Lite", 1_048_576, 65_536),
)

_BY_ID = {m.id: m for m in _MODELS}

# Other names the APIs accept for the same model.
_ALIASES = {
    "claude-sonnet-4": "claude-sonnet-4-0",
    "claude-opus-4-1-0": "claude-opus-4-1",
}

# Dated snapshots: claude-sonnet-4-5-20250929, gpt-4.1-2025-04-14.
_SNAPSHOT = re.compile(r"^(?P<base>.+?)-(?:\d{8}|\d{4}-\d{2}-\d{2})$")


def list_models(provider: str | None = None) -> list[ModelInfo]:
    """The catalog, or only ``provider``'s models (``openai-responses`` and
    ``openai-compatible`` count as ``openai``)."""
    if provider is None:
        return list(_MODELS)
    if provider.startswith("openai"):
        provider = "openai"
    return [m for m in _MODELS if m.provider == provider]


def get_model(id: str) -> ModelInfo | None:
    """The model ``id`` names (an alias or a dated snapshot of a listed model too),
    or None when the catalog does not know it."""
    found = _BY_ID.get(_ALIASES.get(id, id))
    if found is None:
        snapshot = _SNAPSHOT.match(id)
        if snapshot:
            base = snapshot["base"]
            found = _BY_ID.get(_ALIASES.get(base, base))
    return found
