"""Usage normalization and cost, with ``genai-prices`` as the oracle for both."""

from __future__ import annotations

import json
from decimal import Decimal

import genai_prices
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tron_llm import ServerSentEvent, Usage
from tron_llm._cost import cost_usd, with_cost
from tron_llm.anthropic import AnthropicStreamParser


def test_cache_tokens_are_priced_once() -> None:
    # Notes §5: 100 uncached at $3, 800 read at $0.30, 100 written at $3.75 per MTok.
    usage = Usage(input_tokens=1000, cache_read_tokens=800, cache_write_tokens=100)
    assert cost_usd("anthropic", "claude-sonnet-4-5", usage) == pytest.approx(0.000915)
    uncached = Usage(input_tokens=1000)
    assert cost_usd("anthropic", "claude-sonnet-4-5", uncached) == pytest.approx(0.003)


def test_output_tokens_are_priced() -> None:
    usage = Usage(input_tokens=0, output_tokens=1_000_000)
    assert cost_usd("anthropic", "claude-sonnet-4-5", usage) == pytest.approx(15.0)


@pytest.mark.parametrize(
    ("provider", "model"),
    [("anthropic", "claude-unknown-9"), ("openai", "my-finetune"), (None, "gpt-4o")],
)
def test_unknown_price_is_none(provider: str | None, model: str) -> None:
    usage = with_cost(provider, model, Usage(input_tokens=10, output_tokens=10))
    assert usage.cost_usd is None
    assert usage.input_tokens == 10  # the counts are kept


tokens = st.integers(0, 2_000_000)


@given(uncached=tokens, read=tokens, write=tokens, output=tokens)
def test_cost_matches_genai_prices(uncached: int, read: int, write: int, output: int) -> None:
    usage = Usage(
        input_tokens=uncached + read + write,
        cache_read_tokens=read,
        cache_write_tokens=write,
        output_tokens=output,
    )
    expected = genai_prices.calc_price(
        genai_prices.Usage(
            input_tokens=uncached + read + write,
            cache_read_tokens=read,
            cache_write_tokens=write,
            output_tokens=output,
        ),
        model_ref="claude-opus-4-1",
        provider_id="anthropic",
    ).total_price
    ours = cost_usd("anthropic", "claude-opus-4-1", usage)
    assert ours is not None
    assert Decimal(str(ours)) == pytest.approx(expected)


def anthropic_usage(start: dict[str, int], delta: dict[str, int]) -> Usage:
    parser = AnthropicStreamParser("claude-sonnet-4-5")
    message = {"id": "m", "model": "claude-sonnet-4-5", "usage": start}
    parser.feed(
        ServerSentEvent("message_start", json.dumps({"type": "message_start", "message": message}))
    )
    parser.feed(
        ServerSentEvent(
            "message_delta",
            json.dumps(
                {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": delta}
            ),
        )
    )
    return parser.finish().usage


@given(
    input_tokens=tokens,
    read=tokens,
    write=tokens,
    output=tokens,
    late_input=st.booleans(),
)
def test_anthropic_normalization_matches_genai_prices(
    input_tokens: int, read: int, write: int, output: int, late_input: bool
) -> None:
    raw = {
        "input_tokens": input_tokens,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": write,
        "output_tokens": output,
    }
    # Input either in message_start (the usual) or only in message_delta (gateways).
    start = {"input_tokens": 0, "output_tokens": 1} if late_input else dict(raw, output_tokens=1)
    ours = anthropic_usage(start, raw if late_input else {"output_tokens": output})
    extracted = genai_prices.extract_usage(
        {"model": "claude-sonnet-4-5", "usage": raw}, provider_id="anthropic"
    ).usage
    assert ours.input_tokens == extracted.input_tokens
    assert ours.cache_read_tokens == (extracted.cache_read_tokens or 0)
    assert ours.cache_write_tokens == (extracted.cache_write_tokens or 0)
    assert ours.output_tokens == extracted.output_tokens
    assert ours.uncached_input_tokens == input_tokens
    expected = genai_prices.calc_price(
        extracted, model_ref="claude-sonnet-4-5", provider_id="anthropic"
    )
    assert ours.cost_usd is not None
    assert Decimal(str(ours.cost_usd)) == pytest.approx(expected.total_price)


def test_repeated_message_deltas_are_not_added_up() -> None:
    parser = AnthropicStreamParser("claude-sonnet-4-5")
    for output in (10, 25, 40):
        parser.feed(
            ServerSentEvent(
                "message_delta",
                json.dumps(
                    {"type": "message_delta", "delta": {}, "usage": {"output_tokens": output}}
                ),
            )
        )
    assert parser.usage().output_tokens == 40
