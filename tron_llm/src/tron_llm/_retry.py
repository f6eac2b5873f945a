"""Jittered exponential backoff that honours the provider's ``retry-after``."""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

import anyio

__all__ = ["RetryPolicy", "parse_retry_after"]


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait before retrying a retryable error.

    Only a call that has not streamed anything yet is retried (a retry after output
    would show the user the same text twice). ``sleep`` and ``random`` are injectable
    so tests control the clock.
    """

    max_retries: int = 3
    initial_delay: float = 0.5
    max_delay: float = 30.0
    max_retry_after: float = 60.0
    """A provider asking to wait longer than this is not retried: the caller decides."""
    sleep: Callable[[float], Awaitable[None]] = field(default=anyio.sleep, repr=False)
    random: Callable[[], float] = field(default=random.random, repr=False)

    def delay(self, attempt: int, retry_after: float | None) -> float | None:
        """Seconds to wait before retry number ``attempt`` (1-based), or None to give up."""
        if attempt > self.max_retries:
            return None
        if retry_after is not None:
            return retry_after if 0 <= retry_after <= self.max_retry_after else None
        ceiling: float = min(self.max_delay, self.initial_delay * 2.0 ** (attempt - 1))
        # "Equal jitter": at least half the ceiling, so retries never bunch at zero.
        jitter: float = self.random()
        return ceiling / 2 + jitter * ceiling / 2


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
