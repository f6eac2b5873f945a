"""model.*: list the known models and which providers are configured, switch a
session's model (records config.model_switch)."""

from __future__ import annotations

import os
from typing import Any

from pydantic import Field, field_validator

from tron_llm.catalog import get_model, list_models

from ..rpc import MethodRegistry, NoParams, Params, RpcContext
from ..settings import Settings
from .session import known_provider
from .system import _PROVIDER_KEYS as PROVIDER_KEYS
from .system import provider_endpoint


class ModelSwitchParams(Params):
    session_id: str = Field(min_length=1)
    model: str = Field(min_length=1, max_length=200)
    provider: str | None = Field(default=None, min_length=1, max_length=100)

    _known_provider = field_validator("provider")(known_provider)


def provider_status(settings: Settings) -> list[dict[str, Any]]:
    """Each provider the server can use: whether it is configured (an API key in the
    environment, or an endpoint set) and, if not, what to set."""
    out = []
    for name, (env_keys, url_field) in PROVIDER_KEYS.items():
        key = next((k for k in env_keys if os.environ.get(k)), None)
        endpoint = provider_endpoint(settings, name)
        option = "--" + url_field.replace("_", "-")
        if env_keys:
            hint = f"set {' or '.join(env_keys)} in tron-server's environment"
        else:
            hint = f"start tron-server with {option} (or TRON_{url_field.upper()})"
        out.append(
            {
                "id": name,
                "configured": bool(key or endpoint),
                "keyEnv": list(env_keys),
                "baseUrl": endpoint,
                "hint": None if key or endpoint else hint,
            }
        )
    return out


def model_json(info: Any) -> dict[str, Any]:
    return {
        "id": info.id,
        "provider": info.provider,
        "name": info.name,
        "contextWindow": info.context_window,
        "maxOutput": info.max_output_tokens,
        "supportsThinking": info.supports_thinking,
        "supportsImages": info.supports_images,
        "supportsTools": info.supports_tools,
    }


def register(registry: MethodRegistry) -> None:
    """Add the model.* methods to ``registry``."""

    @registry.method(
        "model.list",
        NoParams,
        description="The known models, and which providers are configured.",
        needs=(),
    )
    async def list_(ctx: RpcContext, p: NoParams) -> dict[str, Any]:
        providers = provider_status(ctx.services.settings)
        configured = {p["id"] for p in providers if p["configured"]}
        models = []
        for m in list_models():
            item = model_json(m)
            # The catalog's "openai" models also run on openai-responses.
            item["available"] = m.provider in configured or (
                m.provider == "openai" and "openai-responses" in configured
            )
            models.append(item)
        return {"models": models, "providers": providers}

    @registry.method(
        "model.switch",
        ModelSwitchParams,
        description="Use another model (and provider) from the next turn on.",
    )
    async def switch(ctx: RpcContext, p: ModelSwitchParams) -> dict[str, Any]:
        store = ctx.services.store
        assert store is not None
        ctx.services.runtime.ensure_idle(p.session_id, "switch the model of")
        session = await store.get_session(p.session_id)
        state = await store.get_state_at_head(p.session_id)
        provider = p.provider
        if provider is None:
            info = get_model(p.model)
            provider = info.provider if info is not None else state.provider
        payload: dict[str, Any] = {"previousModel": state.model, "newModel": p.model}
        if provider != state.provider:
            payload["provider"] = provider
        # expected_head: a concurrent append makes this fail (-32004, retryable)
        # rather than branch the session.
        await store.append(
            p.session_id, "config.model_switch", payload, expected_head=session.head_event_id
        )
        return {"previousModel": state.model, "newModel": p.model, "provider": provider}


__all__ = ["model_json", "provider_status", "register"]
