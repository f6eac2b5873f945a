"""The model catalog (checked against genai-prices) and ``create_provider``."""

from __future__ import annotations

import importlib.util

import httpx
import pytest
from genai_prices import data_snapshot

from tests.llm._serve import mock_client
from tron_llm import Provider, Usage
from tron_llm._cost import cost_usd
from tron_llm.anthropic import AnthropicProvider
from tron_llm.catalog import DEFAULT_CONTEXT_WINDOW, ModelInfo, get_model, list_models
from tron_llm.registry import PROVIDERS, create_provider

EXPECTED = {
    "anthropic": {
        "claude-opus-4-5",
        "claude-sonnet-4-5",
        "claude-haiku-4-5",
        "claude-opus-4-1",
        "claude-sonnet-4-0",
    },
    "openai": {"gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-4.1", "gpt-4o", "o3", "o4-mini"},
    "google": {"gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite"},
}


def test_the_curated_models() -> None:
    for provider, ids in EXPECTED.items():
        assert {m.id for m in list_models(provider)} == ids
    assert len(list_models()) == sum(len(ids) for ids in EXPECTED.values())
    assert (
        list_models("openai-responses") == list_models("openai-compatible") == list_models("openai")
    )
    assert list_models("nobody") == []


@pytest.mark.parametrize("model", list_models(), ids=lambda m: m.id)
def test_figures_are_plausible(model: ModelInfo) -> None:
    assert 0 < model.max_output_tokens < model.context_window
    assert model.supports_tools and model.supports_images
    assert get_model(model.id) == model


def test_thinking_flags() -> None:
    assert not get_model("gpt-4o").supports_thinking  # type: ignore[union-attr]
    assert not get_model("gpt-4.1").supports_thinking  # type: ignore[union-attr]
    assert all(m.supports_thinking for m in list_models("anthropic") + list_models("google"))


def test_aliases_and_snapshots() -> None:
    assert get_model("claude-sonnet-4-5-20250929") == get_model("claude-sonnet-4-5")
    assert get_model("claude-sonnet-4-20250514") == get_model("claude-sonnet-4-0")
    assert get_model("claude-sonnet-4") == get_model("claude-sonnet-4-0")
    assert get_model("gpt-4.1-2025-04-14") == get_model("gpt-4.1")
    assert get_model("llama3.2:3b") is None
    assert get_model("claude-sonnet-4-5-extra") is None
    assert DEFAULT_CONTEXT_WINDOW == 128_000


@pytest.mark.parametrize("model", list_models(), ids=lambda m: m.id)
def test_context_window_agrees_with_genai_prices(model: ModelInfo) -> None:
    """genai-prices rounds some windows (1,047,576 → 1,000,000): agree within 5%."""
    snapshot = data_snapshot.get_snapshot()
    _, info = snapshot.find_provider_model(model.id, None, model.provider, None)
    if info.context_window is None:
        pytest.skip(f"genai-prices has no context window for {model.id}")
    assert abs(info.context_window - model.context_window) <= 0.05 * model.context_window


@pytest.mark.parametrize("model", list_models(), ids=lambda m: m.id)
def test_every_catalog_model_has_a_price(model: ModelInfo) -> None:
    assert cost_usd(model.provider, model.id, Usage(input_tokens=1000, output_tokens=1000))


# --- create_provider ------------------------------------------------------------------


def test_anthropic_by_name() -> None:
    provider = create_provider("anthropic", api_key="sk-ant-x", base_url="http://127.0.0.1:9/")
    assert isinstance(provider, AnthropicProvider) and isinstance(provider, Provider)
    assert provider.name == "anthropic" and provider.base_url == "http://127.0.0.1:9"
    assert create_provider("anthropic", api_key="k").base_url == "https://api.anthropic.com"  # type: ignore[attr-defined]


def test_unknown_provider_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown provider 'mistral'") as raised:
        create_provider("mistral")
    for name in ("anthropic", "openai", "openai-responses", "google", "openai-compatible"):
        assert name in str(raised.value)
    assert set(PROVIDERS) == {
        "anthropic",
        "openai",
        "openai-responses",
        "google",
        "openai-compatible",
    }


def test_openai_compatible_needs_a_base_url() -> None:
    with pytest.raises(ValueError, match="base_url"):
        create_provider("openai-compatible")


def _available(name: str) -> bool:
    return importlib.util.find_spec(PROVIDERS[name][0]) is not None


@pytest.mark.parametrize("name", ["openai", "openai-responses", "google", "openai-compatible"])
def test_other_adapters_by_name(name: str) -> None:
    if not _available(name):
        pytest.skip(f"{PROVIDERS[name][0]} is not written yet")
    base_url = "http://127.0.0.1:11434/v1" if name == "openai-compatible" else None
    provider = create_provider(name, api_key="k", base_url=base_url)
    assert isinstance(provider, Provider)
    assert type(provider).__name__ == PROVIDERS[name][1]


@pytest.mark.anyio
async def test_openai_compatible_never_sends_the_openai_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if not _available("openai-compatible"):
        pytest.skip("openai_chat is not written yet")
    from tron_events.messages import Message, TextBlock
    from tron_llm import LLMRequest

    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret")
    capture: list[httpx.Request] = []
    client = mock_client(b"data: [DONE]\n\n", capture=capture)
    provider = create_provider(
        "openai-compatible", base_url="http://127.0.0.1:11434/v1", client=client
    )
    request = LLMRequest(
        model="llama3.2", messages=[Message(role="user", content=[TextBlock(text="hi")])]
    )
    async with client:
        async for _ in provider.stream(request):
            pass
    assert capture, "the request was sent"
    assert "sk-openai-secret" not in str(capture[0].headers)
