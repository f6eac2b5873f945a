"""Cost from the ``genai-prices`` package (bundled price data; nothing is fetched).

``genai_prices`` is imported on the first price asked for, not with this package: its
data and its own HTTP client take longer to import than a server takes to start
(``benchmarks/RESULTS_peers.md``), and nothing before the first turn's end needs it.
"""

from __future__ import annotations

import functools
import threading
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from ._types import Usage


def _prices() -> Any:
    import genai_prices

    return genai_prices


__all__ = ["cost_usd", "with_cost"]


@functools.lru_cache(maxsize=512)
def _known(provider_id: str, model: str) -> bool:
    genai_prices = _prices()
    try:
        genai_prices.calc_price(genai_prices.Usage(), model_ref=model, provider_id=provider_id)
    except LookupError:
        return False
    return True


def cost_usd(provider_id: str | None, model: str, usage: Usage) -> float | None:
    """The price of ``usage`` on ``model`` in US dollars, or None when it is unknown
    (local models, models newer than the bundled data)."""
    if provider_id is None or not _known(provider_id, model):
        return None
    fast = _linear_cost(provider_id, model, usage)
    if fast is not None:
        return float(fast)
    return float(_calc(provider_id, model, usage))


def _calc(provider_id: str, model: str, usage: Usage) -> Decimal:
    genai_prices = _prices()
    priced = genai_prices.calc_price(
        genai_prices.Usage(
            input_tokens=usage.input_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            output_tokens=usage.output_tokens,
        ),
        model_ref=model,
        provider_id=provider_id,
    )
    total: Decimal = priced.total_price
    return total


# genai-prices' calc_price costs ~0.3 ms (unit registry, validation, decomposition) at
# every turn's end. Within one price tier a token-priced model's cost is linear in the
# four counts, so the per-token rates are found once per (model price, tier) from
# calc_price itself (exact Decimal differences) and checked against it on first use;
# a per-request price or a mismatch keeps calc_price (issue 29, goal 5).
_RATES_LOCK = threading.Lock()
_RATES: dict[tuple[int, int], tuple[Any, tuple[Decimal, Decimal, Decimal, Decimal] | None]] = {}
_RATES_MAX = 256


def _linear_cost(provider_id: str, model: str, usage: Usage) -> Decimal | None:
    total_input = usage.input_tokens
    if total_input <= 0:
        return None
    try:
        from genai_prices import data_snapshot

        _, info = data_snapshot.get_snapshot().find_provider_model(model, None, provider_id, None)
        price = info.get_prices(datetime.now(tz=UTC))
    except Exception:  # an API change in genai-prices: the slow path still answers
        return None
    starts = _tier_starts(price)
    if starts is None:
        return None  # a per-request price: not linear in the tokens
    key = (id(price), sum(1 for start in starts if total_input > start))
    with _RATES_LOCK:
        entry = _RATES.get(key)
    if entry is not None and entry[0] is price:
        rates = entry[1]
    else:
        rates = _probe_rates(provider_id, model, total_input)
        if rates is not None and _apply(rates, usage) != _calc(provider_id, model, usage):
            rates = None
        with _RATES_LOCK:
            if len(_RATES) >= _RATES_MAX:
                _RATES.clear()
            _RATES[key] = (price, rates)  # the price kept alive: its id stays its own
    return None if rates is None else _apply(rates, usage)


_STARTS: dict[int, tuple[Any, tuple[int, ...] | None]] = {}


def _tier_starts(price: Any) -> tuple[int, ...] | None:
    """The input counts where ``price``'s tiers start (None for a per-request price),
    found once per price object (the price kept alive with them: its id stays its own)."""
    cached = _STARTS.get(id(price))
    if cached is not None and cached[0] is price:
        return cached[1]
    from genai_prices import types

    starts: tuple[int, ...] | None = None
    if getattr(price, "requests_kcount", None) is None:
        starts = tuple(
            sorted(
                tier.start
                for value in vars(price).values()
                if isinstance(value, types.TieredPrices)
                for tier in value.tiers
            )
        )
    with _RATES_LOCK:
        if len(_STARTS) >= _RATES_MAX:
            _STARTS.clear()
        _STARTS[id(price)] = (price, starts)
    return starts


def _probe_rates(
    provider_id: str, model: str, total_input: int
) -> tuple[Decimal, Decimal, Decimal, Decimal] | None:
    """Per-token (input, cache read, cache write, output) rates in the tier of
    ``total_input`` input tokens, from calc_price at that input count."""
    try:
        base = _calc(provider_id, model, Usage(input_tokens=total_input))
        read = _calc(provider_id, model, Usage(input_tokens=total_input, cache_read_tokens=1))
        write = _calc(provider_id, model, Usage(input_tokens=total_input, cache_write_tokens=1))
        out = _calc(provider_id, model, Usage(input_tokens=total_input, output_tokens=1))
    except Exception:
        return None
    per_input = base / total_input
    if per_input * total_input != base:
        return None  # not exact: leave it to calc_price
    return per_input, read - base + per_input, write - base + per_input, out - base


def _apply(rates: tuple[Decimal, Decimal, Decimal, Decimal], usage: Usage) -> Decimal:
    per_input, per_read, per_write, per_output = rates
    uncached = usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens
    return (
        per_input * uncached
        + per_read * usage.cache_read_tokens
        + per_write * usage.cache_write_tokens
        + per_output * usage.output_tokens
    )


def with_cost(provider_id: str | None, model: str, usage: Usage) -> Usage:
    """``usage`` with ``cost_usd`` filled in."""
    return usage.model_copy(update={"cost_usd": cost_usd(provider_id, model, usage)})
