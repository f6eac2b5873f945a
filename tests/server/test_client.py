"""TronClient: connecting from the home's token file, calls, notification streams,
and send_message_and_wait against the real agent runtime and a scripted LLM."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.scripted_llm import Response, Text, scripted_llm
from tests.support.server import RunningServer, ServerFactory
from tron_server.client import ConnectionLost, RpcCallError, TronClient

pytestmark = pytest.mark.anyio


async def test_from_home_reads_the_token(running_server: RunningServer) -> None:
    async with TronClient.from_home(running_server.home, url=running_server.ws_url) as tron:
        assert (await tron.call("system.ping"))["pong"] is True


async def test_wrong_token_cannot_connect(running_server: RunningServer) -> None:
    from websockets.exceptions import InvalidStatus

    with pytest.raises(InvalidStatus):
        async with TronClient.connect(running_server.ws_url, token="nope"):
            pass


async def test_streams_filter_and_end_when_the_connection_closes(
    running_server: RunningServer, tmp_path: Path
) -> None:
    async with running_server.connect() as tron:
        created = tron.notifications(["session.created"])
        other = tron.notifications(["session.deleted"])
        session = await tron.call("session.create", {"workingDirectory": str(tmp_path)})
        n = await created.next(timeout=5)
        assert n.method == "session.created" and n.session_id == session["id"]
        with pytest.raises(TimeoutError):
            await other.next(timeout=0.2)
        with pytest.raises(RpcCallError) as info:
            await tron.call("session.get", {"sessionId": "missing"})
        assert info.value.code == -32000 and not info.value.retryable
    assert tron.closed is not None
    with pytest.raises(ConnectionLost):
        await created.next(timeout=1)
    with pytest.raises(ConnectionLost):
        await tron.call("system.ping")


async def test_send_message_and_wait(
    server_factory: ServerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    async with scripted_llm([Response([Text("Hello from the script.")])]) as llm:
        server = server_factory(anthropic_base_url=llm.base_url)
        async with server.connect() as tron:
            info = await tron.call("system.info")
            if not info["agent"]:
                pytest.skip("the agent runtime is not installed")
            session = await tron.call(
                "session.create", {"workingDirectory": str(tmp_path), "provider": "anthropic"}
            )
            done = await tron.send_message_and_wait(session["id"], "hi", timeout=30)
            assert done["stopReason"] == "end_turn"
            state = await tron.call("session.getState", {"sessionId": session["id"]})
            assert state["messages"][-1]["content"][0]["text"] == "Hello from the script."
