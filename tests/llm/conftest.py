"""Fixtures shared by the provider-adapter tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tron_llm import RetryPolicy

FIXTURES = Path(__file__).parent / "fixtures"


def fixture_bytes(provider: str, name: str) -> bytes:
    """The exact wire bytes of ``fixtures/<provider>/<name>``."""
    return (FIXTURES / provider / name).read_bytes()


async def _no_sleep(_seconds: float) -> None:
    return None


@pytest.fixture
def sleeps() -> list[float]:
    """The delays a ``fake_retry`` policy was asked to sleep, in order."""
    return []


@pytest.fixture
def fake_retry(sleeps: list[float]) -> RetryPolicy:
    """A retry policy whose clock the test controls: sleeping only records the delay,
    and the jitter is fixed at 0.5."""

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    return RetryPolicy(sleep=sleep, random=lambda: 0.5)


@pytest.fixture
def no_retry() -> RetryPolicy:
    """A policy that never retries (and never sleeps)."""
    return RetryPolicy(max_retries=0, sleep=_no_sleep)
