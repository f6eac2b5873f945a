"""system.*: ping (a liveness round trip) and info (what this server is and offers)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..errors import InvalidOperationError
from ..rpc import MethodRegistry, NoParams, RpcContext
from ..rpc.frames import now_iso
from ..settings import Settings

# A provider counts as configured when its key is in the environment or its
# endpoint is overridden (local servers need no key).
_PROVIDER_KEYS: dict[str, tuple[tuple[str, ...], str]] = {
    "anthropic": (("ANTHROPIC_API_KEY",), "anthropic_base_url"),
    "openai": (("OPENAI_API_KEY",), "openai_base_url"),
    "openai-responses": (("OPENAI_API_KEY",), "openai_base_url"),
    "google": (("GEMINI_API_KEY", "GOOGLE_API_KEY"), "google_base_url"),
    "openai-compatible": ((), "openai_compatible_base_url"),
}


def provider_endpoint(settings: Settings, provider: str) -> str | None:
    """The endpoint ``provider`` is pointed at: the settings' (``TRON_*_BASE_URL``),
    else the provider SDK's variable (``ANTHROPIC_BASE_URL`` …); None: its default."""
    from tron_llm.registry import base_url_variables

    url: str | None = getattr(settings, _PROVIDER_KEYS[provider][1])
    if url:
        return url
    return next((os.environ[n] for n in base_url_variables(provider) if os.environ.get(n)), None)


def configured_providers(settings: Settings) -> list[str]:
    """Provider ids that have an API key in the environment or a configured endpoint."""
    out = []
    for name, (env_keys, _) in _PROVIDER_KEYS.items():
        if any(os.environ.get(k) for k in env_keys) or provider_endpoint(settings, name):
            out.append(name)
    return out


def register(registry: MethodRegistry) -> None:
    """Add the system.* methods to ``registry``."""

    @registry.method("system.ping", NoParams, description="Liveness check.", needs=())
    async def ping(ctx: RpcContext, p: NoParams) -> dict[str, Any]:
        return {"pong": True, "time": now_iso()}

    @registry.method(
        "system.info",
        NoParams,
        description="Version, database kind, configured providers, defaults and the methods.",
        needs=(),
    )
    async def info(ctx: RpcContext, p: NoParams) -> dict[str, Any]:
        services = ctx.services
        settings = services.settings
        url = settings.resolved_database_url()
        return {
            "version": services.version,
            "database": "sqlite" if url.startswith("sqlite") else "postgresql",
            "providers": configured_providers(settings),
            "defaultModel": settings.default_model,
            "defaultProvider": settings.default_provider,
            "home": str(settings.home),
            # Where a new session may start when the user has none yet (the web chat's default).
            "userHome": str(Path.home()),
            "agent": services.orchestrator is not None,
            "methods": ctx.registry.names() if ctx.registry is not None else [],
        }

    @registry.method(
        "system.loginUrl",
        NoParams,
        description="A new one-time login URL for the web chat (it logs one browser in, once).",
        needs=(),
    )
    async def login(ctx: RpcContext, p: NoParams) -> dict[str, Any]:
        services = ctx.services
        if services.issue_login_url is None:
            raise InvalidOperationError("this server has no web chat to log in to")
        url = services.issue_login_url()
        parts = urlsplit(url)
        return {"url": url, "path": f"{parts.path}?{parts.query}"}


__all__ = ["configured_providers", "provider_endpoint", "register"]
