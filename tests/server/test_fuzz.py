"""A hypothesis fuzz of frames: whatever arrives, the server answers well-formed
JSON-RPC (never -32603, never a closed connection) and still answers a valid request."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import ClientConnection, connect

from tests.support.server import RunningServer, ServerFactory

pytestmark = pytest.mark.anyio

MAX_FRAME = 64 * 1024

METHODS = [
    "system.ping", "system.info", "session.create", "session.get", "session.list",
    "session.fork", "session.rewind", "session.end", "session.getState", "session.getTree",
    "events.list", "events.sync", "events.search", "events.subscribe", "events.unsubscribe",
    "model.switch", "nope", "", "session.", "system.ping\x00",
]  # fmt: skip

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=20,
)
param_keys = st.sampled_from(
    ["sessionId", "eventId", "workingDirectory", "afterSequence", "limit", "query", "types",
     "model", "cascade", "session_id", "x"]
)  # fmt: skip
params = st.dictionaries(param_keys, json_values, max_size=4) | json_values
requests = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2.0]) | scalars,
        "id": st.integers() | st.text(max_size=8) | st.none() | json_values,
        "method": st.sampled_from(METHODS) | scalars,
        "params": params,
        "extra": scalars,
    },
)


def nested(depth: int, kind: str) -> str:
    if kind == "list":
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


frames = st.one_of(
    requests.map(json.dumps),
    st.lists(requests, max_size=5).map(json.dumps),
    json_values.map(json.dumps),
    st.text(max_size=200),
    st.binary(max_size=200),
    st.builds(nested, st.integers(1, 3000), st.sampled_from(["list", "dict"])),
    st.integers(MAX_FRAME + 1, MAX_FRAME * 2).map(
        lambda n: json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "system.ping", "params": {"p": "x" * n}}
        )
    ),
)


async def ping_after(ws: ClientConnection, sent: int) -> list[Any]:
    """Send a ping and read until its reply; every frame read must be valid JSON-RPC."""
    await ws.send(json.dumps({"jsonrpc": "2.0", "id": "final-ping", "method": "system.ping"}))
    seen: list[Any] = []
    while True:
        raw = await asyncio.wait_for(ws.recv(), 10)
        reply = json.loads(raw)
        for item in reply if isinstance(reply, list) else [reply]:
            assert item["jsonrpc"] == "2.0"
            if "method" in item:  # a notification (session.created, ...)
                continue
            assert ("result" in item) != ("error" in item), item
            if "error" in item:
                err = item["error"]
                assert err["code"] != -32603, err  # an internal error is a bug
                assert {"category", "retryable"} <= set(err["data"])
            if item.get("id") == "final-ping":
                assert item["result"]["pong"] is True
                return seen
            seen.append(item)


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tests.support.server import RunningServer

    server = RunningServer(tmp_path_factory.mktemp("fuzz-home"), max_frame_bytes=MAX_FRAME).start()
    yield server
    server.stop()


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(batch=st.lists(frames, min_size=1, max_size=6))
async def test_server_survives_any_frames(fuzz_server: RunningServer, batch: list[Any]) -> None:
    headers = {"Authorization": f"Bearer {fuzz_server.token}"}
    async with connect(fuzz_server.ws_url, additional_headers=headers, max_size=None) as ws:
        for frame in batch:
            await ws.send(frame)
        await ping_after(ws, len(batch))
    # A fresh connection works too.
    async with connect(fuzz_server.ws_url, additional_headers=headers) as ws:
        await ping_after(ws, 0)


async def test_invalid_utf8_text_is_dropped_not_fatal(server_factory: ServerFactory) -> None:
    server = server_factory()
    headers = {"Authorization": f"Bearer {server.token}"}
    async with connect(server.ws_url, additional_headers=headers) as ws:
        await ws.send(b"\xff\xfe not utf-8")  # a binary frame
        replies = await ping_after(ws, 1)
    assert [r["error"]["code"] for r in replies] == [-32700]
