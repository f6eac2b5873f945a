"""Cost from the ``genai-prices`` package (bundled price data; nothing is fetched).

``genai_prices`` is imported on the first price asked for, not with this package: its
data and its own HTTP client take longer to import than a server takes to start
(``benchmarks/RESULTS_peers.md``), and nothing before the first turn's end needs it.
"""

from __future__ import annotations

import functools
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
    return float(priced.total_price)


def with_cost(provider_id: str | None, model: str, usage: Usage) -> Usage:
    """``usage`` with ``cost_usd`` filled in."""
    return usage.model_copy(update={"cost_usd": cost_usd(provider_id, model, usage)})
