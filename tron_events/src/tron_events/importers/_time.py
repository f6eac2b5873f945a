"""Source timestamps in the store's format (``2026-11-24T15:20:00.123Z``, UTC)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

__all__ = ["format_millis", "parse_timestamp", "to_millis"]


def format_millis(millis: int) -> str:
    moment = datetime.fromtimestamp(millis / 1000, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def to_millis(value: Any) -> int | None:
    """Milliseconds since the epoch of an ISO 8601 string or an epoch number
    (milliseconds, or seconds when small); None if it is neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        if value != value or value in (float("inf"), float("-inf")):
            return None
        number = float(value)
        millis = number if abs(number) >= 1e11 else number * 1000  # seconds before 1973
        if not 0 <= millis < 253402300800000:  # year 10000
            return None
        return int(millis)
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)  # the agents write UTC
    return int(moment.timestamp() * 1000)


def parse_timestamp(value: Any) -> str | None:
    """``value`` in the store's timestamp format, or None if it is not a time."""
    millis = to_millis(value)
    return None if millis is None else format_millis(millis)
