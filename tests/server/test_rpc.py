"""JSON-RPC over the real socket: errors, batches, notifications, params validation."""

from __future__ import annotations

import json
from typing import Any

import pytest
from websockets.asyncio.client import connect

from tests.server.conftest import RunningServer
from tron_server.client import RpcCallError, TronClient

pytestmark = pytest.mark.anyio


async def raw(server: RunningServer, frame: str | bytes) -> Any:
    """Send one frame on a fresh connection; the decoded reply (None if none in 0.5 s)."""
    headers = {"Authorization": f"Bearer {server.token}"}
    async with connect(server.ws_url, additional_headers=headers) as ws:
        await ws.send(frame)
        try:
            import asyncio

            reply = await asyncio.wait_for(ws.recv(), 0.5)
        except TimeoutError:
            return None
        return json.loads(reply)


async def test_ping_and_info(client: TronClient) -> None:
    pong = await client.call("system.ping")
    assert pong["pong"] is True and pong["time"].endswith("Z")
    info = await client.call("system.info")
    assert info["database"] == "sqlite"
    assert "session.create" in info["methods"] and "events.sync" in info["methods"]
    assert info["defaultModel"] and info["defaultProvider"]


async def test_parse_error_answered_with_null_id(running_server: RunningServer) -> None:
    reply = await raw(running_server, "{not json")
    assert reply["id"] is None
    assert reply["error"]["code"] == -32700
    assert reply["error"]["data"] == {"category": "validation", "retryable": False}


@pytest.mark.parametrize(
    ("frame", "reply_id"),
    [
        ('{"jsonrpc": "2.0", "id": 1}', 1),
        ('{"jsonrpc": "1.0", "id": 2, "method": "system.ping"}', 2),
        ('{"jsonrpc": "2.0", "id": 3, "method": 5}', 3),
        ('{"jsonrpc": "2.0", "id": 4, "method": "system.ping", "params": 1}', 4),
        ('{"jsonrpc": "2.0", "id": {"a": 1}, "method": "system.ping"}', None),
        ('"just a string"', None),
        ("[]", None),
    ],
)
async def test_invalid_requests(running_server: RunningServer, frame: str, reply_id: Any) -> None:
    reply = await raw(running_server, frame)
    assert reply["error"]["code"] == -32600
    assert reply["id"] == reply_id


async def test_unknown_method_and_bad_params(client: TronClient) -> None:
    with pytest.raises(RpcCallError) as info:
        await client.call("nope.nothing")
    assert info.value.code == -32601
    with pytest.raises(RpcCallError) as info:
        await client.call("session.get", {"sessionId": 5})
    assert info.value.code == -32602
    assert info.value.data["errors"][0]["field"] == "sessionId"
    assert info.value.category == "validation" and info.value.retryable is False
    with pytest.raises(RpcCallError) as info:
        await client.call("session.get", {"session_id": "x"})  # snake_case is not the wire
    fields = {e["field"] for e in info.value.data["errors"]}
    assert fields == {"sessionId", "session_id"}


async def test_domain_errors(client: TronClient, tmp_path: Any) -> None:
    with pytest.raises(RpcCallError) as info:
        await client.call("session.get", {"sessionId": "sess_missing"})
    assert info.value.code == -32000 and info.value.category == "not_found"
    session = await client.call("session.create", {"workingDirectory": str(tmp_path)})
    await client.call("session.end", {"sessionId": session["id"]})
    with pytest.raises(RpcCallError) as info:
        await client.call("model.switch", {"sessionId": session["id"], "model": "other"})
    assert info.value.code == -32001
    with pytest.raises(RpcCallError) as info:
        await client.call("session.fork", {"eventId": "evt_missing"})
    assert info.value.code == -32004


async def test_batch_answers_in_order_and_skips_notifications(
    running_server: RunningServer,
) -> None:
    batch = [
        {"jsonrpc": "2.0", "id": "a", "method": "system.ping"},
        {"jsonrpc": "2.0", "method": "system.ping"},  # a notification: no reply
        {"jsonrpc": "2.0", "id": "b", "method": "nope"},
        5,
    ]
    reply = await raw(running_server, json.dumps(batch))
    assert [r["id"] for r in reply] == ["a", "b", None]
    assert reply[0]["result"]["pong"] is True
    assert reply[1]["error"]["code"] == -32601
    assert reply[2]["error"]["code"] == -32600


async def test_notifications_get_no_reply(running_server: RunningServer) -> None:
    assert await raw(running_server, '{"jsonrpc": "2.0", "method": "system.ping"}') is None
    assert await raw(running_server, '{"jsonrpc": "2.0", "method": "nope"}') is None
    only = [{"jsonrpc": "2.0", "method": "system.ping"}] * 3
    assert await raw(running_server, json.dumps(only)) is None


async def test_oversized_frame_is_answered_and_the_connection_stays(
    server_factory: Any,
) -> None:
    server = server_factory(max_frame_bytes=10_000)
    async with server.connect() as c:
        big = "x" * 20_000
        with pytest.raises(RpcCallError) as info:
            await c.call("system.ping", {"pad": big})
        assert info.value.code == -32600
        assert "limit" in info.value.message
        assert (await c.call("system.ping"))["pong"] is True


async def test_frame_beyond_transport_limit_closes_with_1009(server_factory: Any) -> None:
    server = server_factory(max_frame_bytes=10_000)
    headers = {"Authorization": f"Bearer {server.token}"}
    from websockets.exceptions import ConnectionClosed

    async with connect(server.ws_url, additional_headers=headers) as ws:
        await ws.send("x" * 100_000)
        with pytest.raises(ConnectionClosed) as info:
            await ws.recv()
        assert info.value.rcvd is not None and info.value.rcvd.code == 1009


async def test_internal_error_leaks_nothing(running_server: RunningServer) -> None:
    from tron_server.rpc import MethodRegistry, NoParams

    registry: MethodRegistry = running_server.app.state.registry

    @registry.method("test.boom", NoParams, description="raises", needs=())
    async def boom(ctx: Any, p: NoParams) -> None:
        raise ValueError("secret internal detail /etc/passwd")

    async with running_server.connect() as c:
        with pytest.raises(RpcCallError) as info:
            await c.call("test.boom")
    assert info.value.code == -32603
    assert "secret" not in info.value.message and "passwd" not in json.dumps(info.value.data)
    assert "ref" in info.value.message
