"""A server another ``tron`` is starting listens before its token is in place: a second
``tron`` that connects then is refused, and tries again once the first is done (its start
lock free) instead of saying the token is wrong (CI saw two ``tron -p`` started at once
fail that way)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import anyio
import pytest

from tests.terminal.conftest import TronEnv
from tron_server.terminal.attach import ServerAddress, attach
from tron_server.terminal.errors import TerminalError
from tron_server.terminal.launch import open_start_lock

pytestmark = pytest.mark.anyio


@pytest.fixture
def home(tmp_path: Path, env: TronEnv, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home with no token yet, whose default address is the module's server."""
    monkeypatch.setenv("TRON_PORT", str(env.server.port))
    folder = tmp_path / "home"
    folder.mkdir(mode=0o700)
    return folder


async def test_refused_while_another_tron_starts_the_server_then_connected(
    home: Path, env: TronEnv
) -> None:
    lock = open_start_lock(home)
    fcntl.flock(lock, fcntl.LOCK_EX)  # another tron is starting the server
    try:
        async with anyio.create_task_group() as tg:
            got: list[object] = []

            async def second_tron() -> None:
                got.append(await attach(ServerAddress(home), start=True))

            tg.start_soon(second_tron)
            await anyio.sleep(0.5)  # refused (no token), it waits for the first tron
            assert got == []
            (home / "server-token").write_text(env.server.token + "\n")
            os.close(lock)  # the first tron is done: its server has its token
            lock = -1
    finally:
        if lock >= 0:
            os.close(lock)
    [connection] = got
    try:
        assert (await connection.client.call("system.info"))["version"]  # type: ignore[attr-defined]
    finally:
        await connection.close()  # type: ignore[attr-defined]


async def test_a_wrong_token_with_no_tron_starting_is_still_named(home: Path) -> None:
    (home / "server-token").write_text("not-the-token\n")
    with anyio.fail_after(30), pytest.raises(TerminalError) as refused:
        await attach(ServerAddress(home), start=True)
    assert "refused the token" in str(refused.value) and "--home" in str(refused.value)
