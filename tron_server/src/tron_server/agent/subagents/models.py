"""Which model a sub-agent runs on: ``inherit``, Claude Code's aliases, or a model id.

- ``None`` / ``inherit`` — the parent session's model and provider.
- ``sonnet`` / ``opus`` / ``haiku`` — the current Claude model of that family when the parent
  runs on Anthropic; on any other provider there is no Claude to switch to (the key and
  endpoint are the parent's), so the child inherits the parent's model and the note says so.
- a model id — the catalog's provider for it (the parent's own provider when both speak the
  same API, e.g. ``openai`` and ``openai-responses``); an id the catalog does not know runs on
  the parent's provider (a local model name behind an OpenAI-compatible server, say).
"""

from __future__ import annotations

from dataclasses import dataclass

from tron_llm.catalog import get_model

__all__ = ["CLAUDE_ALIASES", "ModelChoice", "resolve_model"]

CLAUDE_ALIASES = {
    "sonnet": "claude-sonnet-4-5",
    "opus": "claude-opus-4-5",
    "haiku": "claude-haiku-4-5",
}
_SAME_API = ({"openai", "openai-responses"},)


@dataclass(frozen=True)
class ModelChoice:
    provider: str
    model: str
    note: str | None = None
    """Why the request was not followed as written (shown in the Task result)."""


def resolve_model(requested: str | None, *, provider: str, model: str) -> ModelChoice:
    """The (provider, model) for a child of a session on ``provider``/``model``."""
    if requested is None or not requested.strip() or requested.strip().lower() == "inherit":
        return ModelChoice(provider, model)
    wanted = requested.strip()
    alias = CLAUDE_ALIASES.get(wanted.lower())
    if alias is not None:
        if provider == "anthropic":
            return ModelChoice("anthropic", alias)
        return ModelChoice(
            provider,
            model,
            f"model {wanted!r} is a Claude alias but this session runs on {provider}; "
            f"the sub-agent uses {model}",
        )
    info = get_model(wanted)
    if info is None:
        return ModelChoice(provider, wanted)
    if info.provider == provider or any({info.provider, provider} <= group for group in _SAME_API):
        return ModelChoice(provider, wanted)
    return ModelChoice(info.provider, wanted)
