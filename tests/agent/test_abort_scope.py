"""_AbortScope: an abort ends its block quietly; a time-out of the work's own goes on."""

from __future__ import annotations

import asyncio

import pytest

from tron_server.agent.turn import _AbortScope

pytestmark = pytest.mark.anyio


async def test_a_cancelled_block_ends_quietly() -> None:
    reached = []
    async with _AbortScope() as scope:
        asyncio.get_running_loop().call_later(0.01, scope.cancel)
        await asyncio.sleep(30)
        reached.append("after the sleep")
    assert reached == []
    scope.cancel()  # after its block: nothing to do, no error


async def test_the_work_s_own_time_out_goes_on() -> None:
    with pytest.raises(TimeoutError):
        async with _AbortScope():
            async with asyncio.timeout(0.01):
                await asyncio.sleep(30)
    with pytest.raises(TimeoutError):
        async with _AbortScope():
            raise TimeoutError("the work's")


async def test_an_uncancelled_block_returns_what_it_did() -> None:
    async with _AbortScope() as scope:
        value = 42
    assert value == 42 and not scope.timeout.expired()
