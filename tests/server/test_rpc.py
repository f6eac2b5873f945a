"""JSON-RPC over the real socket: errors, batches, notifications, params validation."""

from __future__ import annotations

import asyncio
import functools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import connect

from tests.support.server import RunningServer
from tron_server.app import build_registry
from tron_server.client import RpcCallError, TronClient
from tron_server.hub import Hub
from tron_server.rpc import Dispatcher, RpcContext
from tron_server.services import Services
from tron_server.settings import Settings

pytestmark = pytest.mark.anyio

#: A request that is always answered: sent after one that must not be, it proves
#: (without waiting for a timeout) that nothing came for the first.
MARKER = '{"jsonrpc": "2.0", "id": "marker", "method": "system.ping"}'


async def raw(server: RunningServer, frame: str | bytes, *, reply: bool = True) -> Any:
    """Send one frame on a fresh connection; its decoded reply, or with ``reply=False``
    check that it gets none (the marker's reply comes first) and return None."""
    headers = {"Authorization": f"Bearer {server.token}"}
    async with connect(server.ws_url, additional_headers=headers) as ws:
        await ws.send(frame)
        if not reply:
            await ws.send(MARKER)
            first = json.loads(await asyncio.wait_for(ws.recv(), 30))
            assert first["id"] == "marker", f"a reply came for {frame!r}: {first}"
            return None
        return json.loads(await asyncio.wait_for(ws.recv(), 30))


class _RawNumber(str):
    pass


def raw_ids(reply: str) -> Any:
    """The reply's id(s) with numbers kept as their exact JSON text."""
    decoded = json.loads(reply, parse_float=_RawNumber, parse_int=_RawNumber)
    items = decoded if isinstance(decoded, list) else [decoded]
    return [item["id"] for item in items]


@functools.cache
def dispatcher_and_context() -> tuple[Dispatcher, RpcContext]:
    """A dispatcher with the real methods and no store (system.* need none)."""
    services = Services(settings=Settings(home=Path("/nonexistent")), store=None, hub=Hub())
    return Dispatcher(build_registry()), RpcContext(services)


def answer(dispatcher: Dispatcher, ctx: RpcContext, frame: str) -> str:
    loop = asyncio.new_event_loop()
    try:
        reply = loop.run_until_complete(dispatcher.handle(frame, ctx))
    finally:
        loop.close()
    assert reply is not None
    return reply if isinstance(reply, str) else reply.decode()


#: Any JSON number, as text (RFC 8259's grammar): beyond 64 bits, beyond doubles,
#: with fractions and exponents, negative zero.
_DIGITS = st.text("0123456789", min_size=1, max_size=20)
JSON_NUMBERS = st.builds(
    lambda sign, whole, frac, exp: f"{sign}{whole}{frac}{exp}",
    st.sampled_from(["", "-"]),
    st.integers(0, 10**40).map(str),
    st.one_of(st.just(""), _DIGITS.map(lambda d: "." + d)),
    st.one_of(
        st.just(""),
        st.builds(
            lambda e, sign, n: f"{e}{sign}{n}",
            st.sampled_from("eE"),
            st.sampled_from(["", "+", "-"]),
            st.integers(0, 999),
        ),
    ),
)


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
    await raw(running_server, '{"jsonrpc": "2.0", "method": "system.ping"}', reply=False)
    await raw(running_server, '{"jsonrpc": "2.0", "method": "nope"}', reply=False)
    only = [{"jsonrpc": "2.0", "method": "system.ping"}] * 3
    await raw(running_server, json.dumps(only), reply=False)


@settings(max_examples=100, deadline=None)
@given(number=JSON_NUMBERS)
def test_any_number_id_is_echoed_as_sent(number: str) -> None:
    dispatcher, ctx = dispatcher_and_context()
    for method in ("system.ping", "no.such.method"):  # a result and an error
        frame = f'{{"jsonrpc": "2.0", "id": {number}, "method": "{method}"}}'
        assert raw_ids(answer(dispatcher, ctx, frame)) == [number]


@settings(max_examples=60, deadline=None)
@given(ids=st.lists(st.one_of(JSON_NUMBERS, st.text().map(json.dumps)), min_size=1, max_size=6))
def test_ids_in_a_batch_are_echoed_in_order(ids: list[str]) -> None:
    dispatcher, ctx = dispatcher_and_context()
    frame = (
        "[" + ",".join(f'{{"jsonrpc":"2.0","id":{i},"method":"system.ping"}}' for i in ids) + "]"
    )
    echoed = raw_ids(answer(dispatcher, ctx, frame))
    assert len(echoed) == len(ids)
    for sent, got in zip(ids, echoed, strict=True):
        if sent.startswith('"'):
            assert got == json.loads(sent)  # the same string (escapes may differ)
        else:
            assert got == sent  # the same number text


async def test_big_and_fractional_ids_come_back_exactly_over_the_socket(
    running_server: RunningServer,
) -> None:
    headers = {"Authorization": f"Bearer {running_server.token}"}
    async with connect(running_server.ws_url, additional_headers=headers) as ws:
        for number in ("1e+30", "100000000000000000000000000001", "1.50", "-0", "7"):
            await ws.send(f'{{"jsonrpc": "2.0", "id": {number}, "method": "system.ping"}}')
            reply = await asyncio.wait_for(ws.recv(), 30)
            assert raw_ids(str(reply)) == [number]


async def test_invalid_params_message_names_the_first_field(
    client: TronClient, tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-folder"
    with pytest.raises(RpcCallError) as info:
        await client.call("session.create", {"workingDirectory": str(missing)})
    assert info.value.code == -32602
    assert info.value.message == "workingDirectory: must be an existing directory"
    assert info.value.data["errors"] == [
        {"field": "workingDirectory", "message": "must be an existing directory",
         "type": "value_error"}
    ]  # fmt: skip
    with pytest.raises(RpcCallError) as info:
        await client.call("session.get", {"sessionId": 5, "extra": 1})
    assert info.value.message.startswith("sessionId: ")
    assert info.value.message.endswith("(and 1 more error in data.errors)")


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


def test_params_models_are_built_at_their_first_use() -> None:
    """The server's start imports every method's params model; each validator is built
    when the method is first called (defer_build), and then checks as before."""
    import subprocess
    import sys

    code = (
        "from tron_server.app import build_registry\n"
        "spec = build_registry().get('session.setMode')\n"
        "print(spec.params.__pydantic_complete__)\n"
        "try:\n"
        "    spec.parse_params({'sessionId': 's', 'mode': 'plan', 'typo': 1})\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__)\n"
        "print(spec.parse_params({'sessionId': 's', 'mode': 'plan'}).session_id)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout.split()  # fmt: skip
    assert out == ["False", "InvalidParams", "s"]


def test_now_iso_is_utc_now_to_the_millisecond_in_the_events_format() -> None:
    from datetime import UTC, datetime, timedelta

    from tron_server.rpc.frames import now_iso

    for _ in range(3):  # the first call of a second formats it, the next ones reuse it
        before = datetime.now(UTC).replace(microsecond=0)
        stamp = now_iso()
        after = datetime.now(UTC)
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp), stamp
        at = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        assert before <= at <= after + timedelta(milliseconds=1)
