"""events.search answers any query text normally: never an internal error.

The store reads NUL and lone surrogates in a literal query as spaces
(tests/events/test_bad_input.py has the property); here the same queries go
through the server, as JSON text a client sends.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect

from tests.support.server import RunningServer
from tron_server.client import TronClient

pytestmark = pytest.mark.anyio

QUERIES = ["nul\x00banana", "\x00", 'NEAR( "banana', "banana*", "-banana", "AND OR NOT", ":"]


async def test_search_answers_any_query_text(
    running_server: RunningServer, client: TronClient, tmp_path: Path
) -> None:
    sid = (await client.call("session.create", {"workingDirectory": str(tmp_path)}))["id"]
    store = running_server.services.store
    assert store is not None
    event = await running_server.run(
        lambda: store.append(sid, "message.user", {"content": "banana\x00bread recipe"})
    )
    for query in QUERIES:
        result = await client.call("events.search", {"query": query, "sessionId": sid})
        assert all(h["eventId"] == event.id for h in result["hits"]), query
    hits = (await client.call("events.search", {"query": "nul\x00banana"}))["hits"]
    assert hits == []  # "nul" is in no event
    hits = (await client.call("events.search", {"query": "bread\x00banana", "sessionId": sid}))[
        "hits"
    ]
    assert [h["eventId"] for h in hits] == [event.id] and "«banana»" in hits[0]["snippet"]
    # Filters no row can match find nothing.
    for params in ({"sessionId": "sess_\x00"}, {"workspaceId": "\x00"}, {"types": ["a\x00.b"]}):
        result = await client.call("events.search", {"query": "banana", **params})
        assert result["hits"] == [], params


async def test_lone_surrogate_in_a_query_is_not_an_internal_error(
    running_server: RunningServer,
) -> None:
    """JSON text can carry a lone surrogate (``"\\ud800"``); whatever the
    server's JSON reader makes of it, the answer is not -32603."""
    headers = {"Authorization": f"Bearer {running_server.token}"}
    async with connect(running_server.ws_url, additional_headers=headers) as ws:
        for n, query in enumerate(['"\\ud800"', '"banana \\udfff bread"', '"\\ud83d"']):
            frame = (
                f'{{"jsonrpc": "2.0", "id": {n}, "method": "events.search", '
                f'"params": {{"query": {query}}}}}'
            )
            await ws.send(frame)
            reply: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), 30))
            if "error" in reply:
                assert reply["error"]["code"] != -32603, reply
            else:
                assert isinstance(reply["result"]["hits"], list)
