"""The provider factory the agent runtime uses: settings → ``tron_llm`` adapters.

One adapter (and so one HTTP connection pool) per (provider, base URL), made on
first use: the model is a request field, not a property of the adapter. API keys
come from the provider's environment variable unless given here. An endpoint not set
in the settings (``TRON_ANTHROPIC_BASE_URL`` …) is the provider SDK's own variable
(``ANTHROPIC_BASE_URL``, ``OPENAI_BASE_URL``, ``GOOGLE_GEMINI_BASE_URL``), read by the
adapter; errors name the variable that set the endpoint that failed.
"""

from __future__ import annotations

from collections.abc import Mapping

from tron_llm import Provider, RetryPolicy
from tron_llm.registry import create_provider

from .settings import Settings

__all__ = ["ProviderFactory", "provider_factory"]


#: The settings field of each provider's endpoint.
_BASE_URL_FIELDS = {
    "anthropic": "anthropic_base_url",
    "openai": "openai_base_url",
    "openai-responses": "openai_base_url",
    "google": "google_base_url",
    "openai-compatible": "openai_compatible_base_url",
}


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
        """The endpoint override from the settings for ``provider`` (None: the adapter's
        own variable, else its default)."""
        field = _BASE_URL_FIELDS.get(provider)
        value: str | None = getattr(self.settings, field) if field else None
        return value

    def __call__(self, provider: str, model: str) -> Provider:
        """The adapter for ``provider`` (``model`` does not matter to the adapter).

        Raises ``ValueError`` for an unknown provider or a missing endpoint."""
        base_url = self.base_url_for(provider)
        key = (provider, base_url)
        cached = self._cache.get(key)
        if cached is None:
            api_key = self._keys.get(provider)
            key_source = None
            if api_key is None and provider == "openai-compatible":
                api_key = self.settings.openai_compatible_api_key
                key_source = "TRON_OPENAI_COMPATIBLE_API_KEY"
            field = _BASE_URL_FIELDS.get(provider)
            cached = self._cache[key] = create_provider(
                provider,
                api_key=api_key,
                base_url=base_url,
                retry=self._retry,
                # The settings' endpoints come from TRON_<FIELD> (tron-server has no
                # option for them): the name a user looks for in their shell.
                base_url_source=f"TRON_{field.upper()}" if base_url and field else None,
                api_key_source=key_source if api_key else None,
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
