"""events.*: list/sync paging, search, and the live events.new stream — shared by
several clients, resumable with subscribe-then-sync, bounded for slow clients."""

from __future__ import annotations

import asyncio
import gc
import json
import socket
import weakref
from pathlib import Path
from typing import Any

import anyio
import pytest
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.protocol import State
from websockets.uri import parse_uri

from tests.support.server import RunningServer, ServerFactory
from tron_server.client import Notification, NotificationStream, TronClient

pytestmark = pytest.mark.anyio


async def new_session(client: TronClient, tmp_path: Path) -> str:
    session = await client.call("session.create", {"workingDirectory": str(tmp_path)})
    sid: str = session["id"]
    return sid


async def append_users(server: RunningServer, session_id: str, n: int, delay: float = 0) -> None:
    """Append ``n`` user messages on the server's loop (each commit is its own write)."""
    store = server.services.store
    assert store is not None

    async def run() -> None:
        for i in range(n):
            await store.append(session_id, "message.user", {"content": f"m{i}", "turn": i})
            if delay:
                await anyio.sleep(delay)

    await server.run(run)


async def collect_until(stream: NotificationStream, last_sequence: int) -> list[dict[str, Any]]:
    """events.new data until the event with ``last_sequence`` arrives."""
    out: list[dict[str, Any]] = []
    while not out or out[-1]["sequence"] < last_sequence:
        n: Notification = await stream.next(timeout=10)
        out.append(n.data)
    return out


async def test_list_sync_paging_and_search(
    running_server: RunningServer, client: TronClient, tmp_path: Path
) -> None:
    sid = await new_session(client, tmp_path)
    await append_users(running_server, sid, 24)
    listed = (await client.call("events.list", {"sessionId": sid}))["events"]
    assert [e["sequence"] for e in listed] == list(range(25))  # session.start + 24
    assert set(listed[0]) == {
        "id", "parentId", "sessionId", "workspaceId", "sequence", "depth", "type",
        "timestamp", "payload",
    }  # fmt: skip
    typed = await client.call("events.list", {"sessionId": sid, "types": ["session.start"]})
    assert [e["type"] for e in typed["events"]] == ["session.start"]

    pages, after = [], -1
    while True:
        page = await client.call(
            "events.sync", {"sessionId": sid, "afterSequence": after, "limit": 10}
        )
        pages.append(page)
        after = page["nextSequence"]
        if not page["hasMore"]:
            break
    assert [len(p["events"]) for p in pages] == [10, 10, 5]
    assert [e for p in pages for e in p["events"]] == listed
    empty = await client.call("events.sync", {"sessionId": sid, "afterSequence": 24})
    assert empty["events"] == [] and empty["hasMore"] is False and empty["nextSequence"] == 24
    assert await client.sync(sid) == listed

    await running_server.run(
        lambda: running_server.services.store.append(  # type: ignore[union-attr]
            sid, "message.user", {"content": "where is the banana bread recipe"}
        )
    )
    hits = (await client.call("events.search", {"query": "banana", "sessionId": sid}))["hits"]
    assert len(hits) == 1 and hits[0]["sessionId"] == sid and "banana" in hits[0]["snippet"]


async def test_subscribe_unknown_session_and_unsubscribe(
    client: TronClient, tmp_path: Path
) -> None:
    from tron_server.client import RpcCallError

    with pytest.raises(RpcCallError) as info:
        await client.call("events.subscribe", {"sessionId": "sess_nope"})
    assert info.value.code == -32000
    sid = await new_session(client, tmp_path)
    assert await client.call("events.subscribe", {"sessionId": sid}) == {
        "subscribed": True,
        "sessionId": sid,
    }
    assert await client.call("events.unsubscribe", {"sessionId": sid}) == {"unsubscribed": True}
    assert await client.call("events.unsubscribe", {"sessionId": sid}) == {"unsubscribed": False}


async def test_two_clients_see_the_same_stream(
    running_server: RunningServer, client: TronClient, tmp_path: Path
) -> None:
    sid = await new_session(client, tmp_path)
    async with running_server.connect() as other:
        streams = [c.notifications(["events.new"], session_id=sid) for c in (client, other)]
        await client.subscribe(sid)
        await other.subscribe(sid)
        await append_users(running_server, sid, 30)
        got = [await collect_until(s, 30) for s in streams]
    assert got[0] == got[1]
    assert [e["sequence"] for e in got[0]] == list(range(1, 31))
    assert got[0][0]["payload"] == {"content": "m0", "turn": 0}
    # After unsubscribing nothing more arrives.
    await client.call("events.unsubscribe", {"sessionId": sid})
    await append_users(running_server, sid, 1)
    with pytest.raises(TimeoutError):
        await streams[0].next(timeout=0.5)


async def test_reconnect_subscribe_then_sync_sees_every_event_once(
    running_server: RunningServer, client: TronClient, tmp_path: Path
) -> None:
    sid = await new_session(client, tmp_path)
    # A first connection sees part of the stream, then drops.
    async with running_server.connect() as first:
        stream = first.notifications(["events.new"], session_id=sid)
        await first.subscribe(sid)
        seen = await first.sync(sid)  # just session.start
        await append_users(running_server, sid, 10)
        seen += await collect_until(stream, 10)
    assert [e["sequence"] for e in seen] == list(range(11))
    last = seen[-1]["sequence"]

    # Appends keep coming while the client is away and while it resumes.
    writer = asyncio.create_task(append_users(running_server, sid, 60, delay=0.002))
    await asyncio.sleep(0.02)
    async with running_server.connect() as again:
        live = again.notifications(["events.new"], session_id=sid)
        await again.subscribe(sid)  # subscribe first ...
        synced = await again.sync(sid, after_sequence=last)  # ... then catch up
        await writer
        total = 1 + 10 + 60
        by_seq = {e["sequence"]: e for e in [*seen, *synced]}
        news: list[dict[str, Any]] = []
        while max(by_seq) < total - 1:
            n = await live.next(timeout=10)
            news.append(n.data)
            by_seq.setdefault(n.data["sequence"], n.data)
    # The live stream itself is in order without duplicates ...
    assert [e["sequence"] for e in news] == sorted({e["sequence"] for e in news})
    # ... and with what was synced it covers every stored event exactly once.
    stored = await client.sync(sid)
    assert [by_seq[s] for s in sorted(by_seq)] == stored
    assert sorted(by_seq) == list(range(total))


async def wait_for(condition: Any, what: str, timeout: float = 60) -> None:
    """Wait until ``condition()`` holds (checked every 10 ms), or fail after ``timeout``."""
    with anyio.fail_after(timeout):
        while not condition():
            await asyncio.sleep(0.01)


async def attached_connection(server: RunningServer, known: set[Any]) -> Any:
    """The server-side connection that appeared besides ``known``."""
    hub = server.services.hub
    await wait_for(lambda: hub.connections - known, "the connection to attach")
    [conn] = hub.connections - known
    return conn


async def test_a_slow_client_is_closed_with_4008_while_others_continue(
    server_factory: ServerFactory, tmp_path: Path
) -> None:
    budget = 1_000_000
    server = server_factory(outgoing_budget_bytes=budget)
    slow = RawClient(server.port, server.token)
    await asyncio.to_thread(slow.handshake)
    try:
        slow_conn = await attached_connection(server, set())
        async with server.connect() as fast:
            await _slow_client_scenario(server, slow, slow_conn, fast, tmp_path, budget)
    finally:
        slow.sock.close()


class RawClient:
    """A blocking WebSocket client that reads only when told to (websockets' asyncio
    client keeps reading into memory, which would hide a slow consumer). Its receive
    buffer is small and fixed, so the server's socket buffers fill quickly."""

    def __init__(self, port: int, token: str) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16_384)
        self.sock.settimeout(10)
        self.sock.connect(("127.0.0.1", port))
        self.proto = ClientProtocol(parse_uri(f"ws://127.0.0.1:{port}/rpc"))
        self.token = token
        self.texts: list[str] = []

    def _flush(self) -> None:
        for data in self.proto.data_to_send():
            if data:
                self.sock.sendall(data)

    def handshake(self) -> None:
        request = self.proto.connect()
        request.headers["Authorization"] = f"Bearer {self.token}"
        self.proto.send_request(request)
        self._flush()
        while self.proto.state is State.CONNECTING:
            self.proto.receive_data(self.sock.recv(4096))
        assert self.proto.state is State.OPEN, self.proto.handshake_exc
        self.proto.events_received()  # the handshake response

    def send(self, text: str) -> None:
        self.proto.send_text(text.encode())
        self._flush()

    def recv_text(self) -> str:
        # One read may bring several frames (a notification and a reply together,
        # more often under load): keep the ones not returned yet.
        while not self.texts:
            self.texts.extend(
                bytes(event.data).decode()
                for event in self.proto.events_received()
                if isinstance(event, Frame) and event.opcode is Opcode.TEXT
            )
            if not self.texts:
                self._read()
        return self.texts.pop(0)

    def read_until_close(self) -> int | None:
        """Read everything the server sent; the close code it sent (None if none)."""
        while self.proto.close_rcvd is None and self.proto.state is not State.CLOSED:
            self.proto.events_received()
            if not self._read():
                break
        self.proto.events_received()
        return self.proto.close_rcvd.code if self.proto.close_rcvd is not None else None

    def _read(self) -> bool:
        data = self.sock.recv(65_536)
        if not data:
            self.proto.receive_eof()
            return False
        self.proto.receive_data(data)
        self._flush()
        return True


async def _slow_client_scenario(
    server: RunningServer,
    slow: RawClient,
    slow_conn: Any,
    fast: TronClient,
    tmp_path: Path,
    budget: int,
) -> None:
    hub = server.services.hub
    sid = await new_session(fast, tmp_path)
    subscribe = {"jsonrpc": "2.0", "id": 1, "method": "events.subscribe"}
    subscribe["params"] = {"sessionId": sid}
    await asyncio.to_thread(slow.send, json.dumps(subscribe))
    while '"id":1' not in await asyncio.to_thread(slow.recv_text):
        pass
    stream = fast.notifications(["agent.text_delta"], session_id=sid)
    await fast.subscribe(sid)
    assert len(hub.subscribers(sid)) == 2
    chunk = "x" * 100_000

    async def publish_until_slow_closes() -> int:
        # Never let the fast client fall behind: it is not the one under test. (No
        # clock here: the bound is on bytes, far above what the socket buffers take.)
        count = 0
        while not slow_conn.closing:
            while any(
                c.pending_bytes > budget // 2 for c in hub.subscribers(sid) if c is not slow_conn
            ):
                await anyio.sleep(0.001)
            hub.publish(sid, "agent.text_delta", {"turn": 1, "delta": chunk, "n": count})
            count += 1
            await anyio.sleep(0)
            if count * len(chunk) > 500 * budget:
                raise AssertionError(f"not closed after {slow_conn.frames_sent} frames")
        return count

    sent = await server.run(publish_until_slow_closes)
    assert slow_conn.close_code == 4008
    assert slow_conn.queued == 0  # what was queued for it was dropped at once
    # The slow client reads what reached it, then the close frame.
    assert await asyncio.to_thread(slow.read_until_close) == 4008

    received = [(await stream.next(timeout=60)).data["n"] for _ in range(sent)]
    assert received == list(range(sent))
    assert (await fast.call("system.ping"))["pong"] is True
    await wait_for(lambda: slow_conn not in hub.connections, "the slow client to be dropped")
    assert slow_conn not in hub.subscribers(sid) and slow_conn.pending_bytes == 0


async def test_a_client_that_does_not_read_its_answers_gets_no_more_computed(
    server_factory: ServerFactory, tmp_path: Path
) -> None:
    """Requests for big pages from a client that never reads: the server builds about
    one page beyond what the socket took, then leaves the rest unread, holds the
    connection under its budget, and drops everything when the client leaves."""
    budget = 24 * 1024 * 1024
    server = server_factory(outgoing_budget_bytes=budget)
    dispatcher = server.app.state.dispatcher
    async with server.connect() as writer:
        sid = await new_session(writer, tmp_path)

    async def fill() -> None:  # 400 events of 20 KB: pages of 200 are 4 MB
        store = server.services.store
        assert store is not None
        drafts = [
            {"type": "message.user", "payload": {"content": f"{i:05d}" + "y" * 20_000}}
            for i in range(400)
        ]
        await store.append_many(sid, drafts)

    await server.run(fill)
    reader = RawClient(server.port, server.token)
    await asyncio.to_thread(reader.handshake)
    try:
        held = [await attached_connection(server, set())]  # freed at the end: no local
        requests = 40
        for k in range(requests):
            params = {"sessionId": sid, "afterSequence": -1 if k % 2 else 200, "limit": 200}
            frame = {"jsonrpc": "2.0", "id": k, "method": "events.sync", "params": params}
            await asyncio.to_thread(reader.send, json.dumps(frame))

        def syncs_done() -> int:
            timing = dispatcher.timings.methods.get("events.sync")
            return timing.count if timing is not None else 0

        # It stops once replies pile up: the next bulk read waits for them to go out.
        await wait_for(
            lambda: held[0].pending_bytes > held[0].pause_bytes and held[0].bulk_lock.locked(),
            "the replies to pile up",
        )
        assert not held[0].closing  # within its budget: not closed, just not served
        assert held[0].pending_bytes <= budget
        done = syncs_done()
        # What the socket buffers took, plus one waiting to be sent:
        assert 1 <= done <= 4, f"{done} of {requests} pages were built"
        # Still nothing more: every other request waits (unread or behind the lock).
        assert (await server.run(_no_progress, held[0])) is True
        assert syncs_done() == done
    finally:
        reader.sock.close()
    # When the client leaves, the connection and everything queued for it go.
    hub = server.services.hub
    await wait_for(lambda: held[0] not in hub.connections, "the connection to be dropped")
    assert held[0].pending_bytes == 0 and held[0].queued == 0
    ref = weakref.ref(held.pop())
    await wait_for(lambda: _collected(ref), "the connection to be freed")


async def _no_progress(conn: Any) -> bool:
    """Let the server's loop run many times; True if the connection stays stalled: nothing
    new queued for it (what is queued may still drain into socket buffers the kernel grows,
    which is not work done for the client) and its next bulk read still waiting."""
    before = conn.pending_bytes
    for _ in range(200):
        await asyncio.sleep(0)
    return conn.pending_bytes <= before and conn.bulk_lock.locked()


def _collected(ref: weakref.ref[Any]) -> bool:
    gc.collect()
    return ref() is None


async def sync_pages(client: TronClient, sid: str, limit: int, between: Any = None) -> list[Any]:
    """Page through events.sync; ``between(k)`` runs after the k-th page."""
    pages, after = [], -1
    while True:
        page = await client.call(
            "events.sync", {"sessionId": sid, "afterSequence": after, "limit": limit}
        )
        pages.append(page)
        after = page["nextSequence"]
        if not page["hasMore"]:
            return pages
        if between is not None:
            await between(len(pages))


async def test_sync_read_ahead_pages_are_what_a_fresh_read_returns(
    running_server: RunningServer, client: TronClient, tmp_path: Path
) -> None:
    """The server reads the next page while the client decodes one: a page read
    ahead is served only when it is exactly what a fresh read returns, so events
    appended while paging (even into the page read ahead) are all seen, once."""
    sid = await new_session(client, tmp_path)
    await append_users(running_server, sid, 11)  # 12 events: pages of 4, 4, 4 (+ more)

    async def append_two(k: int) -> None:
        if k <= 3:
            await append_users(running_server, sid, 2)

    pages = await sync_pages(client, sid, 4, append_two)
    seen = [e["sequence"] for p in pages for e in p["events"]]
    assert seen == list(range(12 + 6))  # nothing lost, nothing twice, in order
    listed = (await client.call("events.list", {"sessionId": sid}))["events"]
    assert [e for p in pages for e in p["events"]] == listed

    # Another page size, another position: the read-ahead is not used, the answer is exact.
    first = await client.call("events.sync", {"sessionId": sid, "limit": 5})
    other = await client.call("events.sync", {"sessionId": sid, "afterSequence": 2, "limit": 3})
    assert [e["sequence"] for e in first["events"]] == [0, 1, 2, 3, 4]
    assert [e["sequence"] for e in other["events"]] == [3, 4, 5] and other["hasMore"]


async def test_sync_read_ahead_of_a_deleted_session_is_not_served(
    running_server: RunningServer, client: TronClient, tmp_path: Path
) -> None:
    from tron_server.client import RpcCallError

    sid = await new_session(client, tmp_path)
    await append_users(running_server, sid, 9)
    page = await client.call("events.sync", {"sessionId": sid, "limit": 4})
    assert page["hasMore"]  # the next page is now being read ahead
    await client.call("session.delete", {"sessionId": sid})
    with pytest.raises(RpcCallError) as info:
        await client.call(
            "events.sync", {"sessionId": sid, "afterSequence": page["nextSequence"], "limit": 4}
        )
    assert info.value.code == -32000  # session not found, as without read-ahead


async def test_notifications_published_together_arrive_all_in_order_in_fewer_writes(
    server: RunningServer, tmp_path: Path
) -> None:
    """The server's WebSocket protocol sends the frames queued together in one write
    (``send_frames``): each is still its own message, none lost, none reordered."""
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        stream = client.notifications(["agent.text_delta"], session_id=sid)
        await client.subscribe(sid)
        hub = server.services.hub
        [conn] = hub.subscribers(sid)
        before = (conn.writes, conn.frames_sent)

        async def burst() -> None:
            # In one go, on the server's loop: all are queued before its writer runs.
            for n in range(50):
                hub.publish(sid, "agent.text_delta", {"turn": 1, "delta": "é" * n, "n": n})

        await server.run(burst)
        got = [(await stream.next(timeout=60)).data for _ in range(50)]
        assert [d["n"] for d in got] == list(range(50))
        assert [d["delta"] for d in got] == ["é" * n for n in range(50)]
        await wait_for(lambda: conn.frames_sent >= before[1] + 50, "the frames to be counted")
        assert conn.writes - before[0] < 50
