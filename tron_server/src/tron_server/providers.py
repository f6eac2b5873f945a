"""The provider factory the agent runtime uses: settings → ``tron_llm`` adapters.

One adapter (and so one HTTP connection pool) per (provider, base URL), made on
first use: the model is a request field, not a property of the adapter. API keys
come from the provider's environment variable unless given here.
"""

from __future__ import annotations

from collections.abc import Mapping

from tron_llm import Provider, RetryPolicy
from tron_llm.registry import create_provider

from .settings import Settings

__all__ = ["ProviderFactory", "provider_factory"]


class ProviderFactory:
    """``factory(provider, model) -> Provider`` (the runtime's ``ProviderFactory``).

    ``api_keys`` overrides keys by provider name; ``retry`` overrides the adapters'
    retry policy (tests use one with a no-op sleep).
    """

    def __init__(
        self,
        settings: Settings,
        *,
        api_keys: Mapping[str, str] | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.settings = settings
        self._keys = dict(api_keys or {})
        self._retry = retry
        self._cache: dict[tuple[str, str | None], Provider] = {}

    def base_url_for(self, provider: str) -> str | None:
        """The endpoint override from the settings for ``provider`` (None: its default)."""
        s = self.settings
        return {
            "anthropic": s.anthropic_base_url,
            "openai": s.openai_base_url,
            "openai-responses": s.openai_base_url,
            "google": s.google_base_url,
            "openai-compatible": s.openai_compatible_base_url,
        }.get(provider)

    def __call__(self, provider: str, model: str) -> Provider:
        """The adapter for ``provider`` (``model`` does not matter to the adapter).

        Raises ``ValueError`` for an unknown provider or a missing endpoint."""
        base_url = self.base_url_for(provider)
        key = (provider, base_url)
        cached = self._cache.get(key)
        if cached is None:
            api_key = self._keys.get(provider)
            if api_key is None and provider == "openai-compatible":
                api_key = self.settings.openai_compatible_api_key
            cached = self._cache[key] = create_provider(
                provider, api_key=api_key, base_url=base_url, retry=self._retry
            )
        return cached

    async def aclose(self) -> None:
        """Close every adapter's HTTP client."""
        providers, self._cache = list(self._cache.values()), {}
        for provider in providers:
            await provider.aclose()


def provider_factory(settings: Settings) -> ProviderFactory:
    """The server's provider factory (keys from the environment)."""
    return ProviderFactory(settings)
