"""A connection's outgoing queue: bounded in bytes, reading paused while it is full.

No sockets: ``send`` is a function the test lets through frame by frame, so every
state is reached by a condition, never by a clock.
"""

from __future__ import annotations

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tron_server.connection import CLOSE_TOO_SLOW, Connection

pytestmark = pytest.mark.anyio


class Socket:
    """A fake socket that takes one frame each time the test says so."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.closed: tuple[int, str] | None = None
        self.gate = anyio.Semaphore(0)

    async def send(self, frame: str) -> None:
        await self.gate.acquire()
        self.sent.append(frame)

    async def close(self, code: int, reason: str) -> None:
        self.closed = (code, reason)


def connection(sock: Socket, *, budget: int, pause: int, frames: int = 1000) -> Connection:
    return Connection(
        sock.send, sock.close, queue_limit=frames, budget_bytes=budget, pause_bytes=pause
    )


async def until(condition: object) -> None:
    with anyio.fail_after(30):
        while not condition():  # type: ignore[operator]
            await anyio.sleep(0)


async def test_over_its_byte_budget_a_connection_is_closed_and_its_queue_dropped() -> None:
    sock = Socket()
    conn = connection(sock, budget=1000, pause=500)
    async with anyio.create_task_group() as tg:
        tg.start_soon(conn.run_writer)
        assert conn.enqueue("a" * 400)
        await until(lambda: conn.queued == 0)  # the writer holds it, waiting on the socket
        assert conn.pending_bytes == 400  # counted until the socket has taken it
        assert conn.enqueue("b" * 400)
        assert conn.pending_bytes == 800
        assert not conn.enqueue("c" * 300)  # 1,100 > 1,000: too far behind
        assert conn.closing and conn.close_code == CLOSE_TOO_SLOW
        assert conn.queued == 0  # dropped at once, not when the socket drains
        assert not conn.enqueue("d")
    assert sock.closed is not None and sock.closed[0] == CLOSE_TOO_SLOW
    assert sock.sent == [] and conn.pending_bytes == 0


async def test_one_frame_larger_than_the_budget_goes_when_nothing_waits() -> None:
    sock = Socket()
    conn = connection(sock, budget=1000, pause=500)
    async with anyio.create_task_group() as tg:
        tg.start_soon(conn.run_writer)
        assert conn.enqueue("p" * 5000)  # a big page: a legitimate answer
        sock.gate.release()
        await until(lambda: sock.sent)
        await until(lambda: conn.pending_bytes == 0)
        assert conn.enqueue("q" * 5000)
        assert not conn.closing
        sock.gate.release()
        await until(lambda: len(sock.sent) == 2)
        conn.close_soon(1000, "done")
    assert [len(f) for f in sock.sent] == [5000, 5000]


async def test_the_frame_limit_still_applies() -> None:
    sock = Socket()
    conn = connection(sock, budget=10**9, pause=10**9, frames=3)
    assert all(conn.enqueue("x") for _ in range(3))
    assert not conn.enqueue("x") and conn.close_code == CLOSE_TOO_SLOW


async def test_reading_waits_while_replies_pile_up_and_resumes_as_they_go() -> None:
    sock = Socket()
    conn = connection(sock, budget=10_000, pause=1000)
    resumed = anyio.Event()

    async def reader() -> None:
        await conn.wait_writable()
        resumed.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(conn.run_writer)
        for _ in range(4):
            assert conn.enqueue("r" * 400)  # 1,600 pending > 1,000
        tg.start_soon(reader)
        for _ in range(3):
            await anyio.sleep(0)
        assert not resumed.is_set()
        sock.gate.release()  # 1,200 left: still over
        await until(lambda: len(sock.sent) == 1)
        assert not resumed.is_set()
        sock.gate.release()  # 800 left: under the pause threshold
        await until(resumed.is_set)
        assert conn.pending_bytes <= 1000
        conn.close_soon(1000, "done")


async def test_closing_wakes_a_paused_reader() -> None:
    sock = Socket()
    conn = connection(sock, budget=10_000, pause=10)
    assert conn.enqueue("z" * 100)
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(conn.wait_writable)
            await anyio.sleep(0)
            conn.close_soon(1001, "going away")
    assert conn.pending_bytes == 0


@settings(deadline=None)
@given(sizes=st.lists(st.integers(1, 3000), min_size=1, max_size=60), budget=st.integers(1, 8000))
def test_pending_bytes_never_exceed_the_budget_but_for_one_frame(
    sizes: list[int], budget: int
) -> None:
    """Whatever arrives, a connection that nobody reads holds at most its budget, or a
    single frame larger than that; and once closed, nothing."""

    async def run() -> None:
        sock = Socket()
        conn = connection(sock, budget=budget, pause=budget // 8)
        for size in sizes:
            conn.enqueue("f" * size)
            assert conn.pending_bytes <= max(budget, size)
            if conn.closing:
                assert conn.pending_bytes == 0 and conn.queued == 0
                break

    anyio.run(run)


def _characters_memory(text: str) -> int:
    """The bytes CPython stores a string's characters in (1, 2 or 4 per character)."""
    widest = max(map(ord, text), default=0)
    return len(text) * (1 if widest < 0x100 else 2 if widest < 0x10000 else 4)


@settings(deadline=None)
@given(
    texts=st.lists(st.text(min_size=1, max_size=400), min_size=1, max_size=30),
    budget=st.integers(1, 20_000),
)
def test_frames_count_by_the_memory_they_hold_whatever_their_characters(
    texts: list[str], budget: int
) -> None:
    """Text beyond ASCII (a page of emoji, CJK) counts by what it holds in memory, not
    by its length: the budget bounds memory. Every byte counted comes back as the
    frames are sent."""

    async def run() -> None:
        sock = Socket()
        conn = connection(sock, budget=budget, pause=budget + 1)
        held: list[str] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(conn.run_writer)
            for text in texts:
                if conn.enqueue(text):
                    held.append(text)
                else:
                    break
                assert conn.pending_bytes >= sum(map(_characters_memory, held))
                if len(held) > 1:  # only a lone frame may be larger than the budget
                    assert conn.pending_bytes <= budget
            if not conn.closing:
                for _ in held:
                    sock.gate.release()
                await until(lambda: len(sock.sent) == len(held))
                await until(lambda: conn.pending_bytes == 0)
                assert sock.sent == held
            conn.close_soon(1000, "done")

    anyio.run(run)


async def test_a_page_of_emoji_is_closed_at_the_budget_its_memory_reaches() -> None:
    sock = Socket()
    conn = connection(sock, budget=10_000, pause=10_000)
    assert conn.enqueue("x")  # something waits: no frame may go over the budget now
    assert not conn.enqueue("😀" * 2_600)  # 2,600 characters, 10,400 bytes of memory
    assert conn.close_code == CLOSE_TOO_SLOW


class BatchSocket:
    """A fake socket with ``send_many``: takes one batch each time the test says so."""

    def __init__(self) -> None:
        self.batches: list[list[str | bytes]] = []
        self.gate = anyio.Semaphore(0)

    async def send(self, frame: str) -> None:
        raise AssertionError("with send_many, frames go through it only")

    async def send_many(self, frames: list[str | bytes]) -> None:
        await self.gate.acquire()
        self.batches.append(list(frames))

    async def close(self, code: int, reason: str) -> None:
        pass


def batch_connection(sock: BatchSocket, *, budget: int = 10**9) -> Connection:
    return Connection(
        sock.send, sock.close, queue_limit=1000, budget_bytes=budget, send_many=sock.send_many
    )


async def test_frames_queued_while_the_writer_waits_go_out_together_in_order() -> None:
    sock = BatchSocket()
    conn = batch_connection(sock)
    async with anyio.create_task_group() as tg:
        tg.start_soon(conn.run_writer)
        assert conn.enqueue("first")
        await until(lambda: conn.queued == 0)  # the writer holds it, waiting on the socket
        frames: list[str | bytes] = [f"frame {i}" for i in range(5)] + [b'{"bytes":1}']
        assert all(conn.enqueue(f) for f in frames)
        sock.gate.release()
        sock.gate.release()
        await until(lambda: len(sock.batches) == 2)
        assert sock.batches == [["first"], frames]  # every frame, in order, bytes kept
        await until(lambda: conn.pending_bytes == 0)
        assert conn.frames_sent == 7
        conn.close_soon(1000, "done")


async def test_a_batch_stops_at_batch_bytes_and_a_big_frame_goes_alone() -> None:
    from tron_server.connection import BATCH_BYTES

    sock = BatchSocket()
    conn = batch_connection(sock)
    small = "s" * (BATCH_BYTES // 3)
    big = "b" * (BATCH_BYTES + 1)
    async with anyio.create_task_group() as tg:
        for frame in (small, small, small, small, big, small):
            assert conn.enqueue(frame)
        tg.start_soon(conn.run_writer)
        for _ in range(4):
            sock.gate.release()
        await until(lambda: len(sock.batches) == 4)
        assert [[len(f) for f in b] for b in sock.batches] == [
            [len(small)] * 3,
            [len(small)],
            [len(big)],
            [len(small)],
        ]
        await until(lambda: conn.pending_bytes == 0)
        conn.close_soon(1000, "done")


async def test_without_send_many_each_frame_is_sent_alone_and_bytes_as_text() -> None:
    sock = Socket()
    conn = connection(sock, budget=10_000, pause=10_000)
    async with anyio.create_task_group() as tg:
        assert conn.enqueue('{"n":1}')
        assert conn.enqueue('{"n":"é"}'.encode())  # a notification's JSON bytes
        tg.start_soon(conn.run_writer)
        sock.gate.release()
        sock.gate.release()
        await until(lambda: len(sock.sent) == 2)
        assert sock.sent == ['{"n":1}', '{"n":"é"}']
        assert conn.writes == 2 and conn.frames_sent == 2
        conn.close_soon(1000, "done")
