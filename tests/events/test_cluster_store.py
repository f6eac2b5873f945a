"""tron_events.cluster on the real PostgreSQL: leases (claim, renew, release, expiry,
one winner among racing claimers) and messages (order, size, targets)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import pg

pytestmark = pytest.mark.skipif(pg.unavailable_reason() is not None,
                                reason=str(pg.unavailable_reason()))  # fmt: skip


@pytest.fixture
def pg_url() -> Iterator[str]:
    from tron_events import migrate

    with pg.fresh_database() as url:
        migrate.upgrade(url)
        yield url


def test_a_lease_is_claimed_once_renewed_released_and_taken_when_expired(pg_url: str) -> None:
    from tron_events.cluster import Cluster

    # Generous margins: a loaded CI machine may take a second between two statements.
    a, b = Cluster(pg_url, "a", ttl=4.0), Cluster(pg_url, "b", ttl=4.0)
    try:
        assert a.claim("s1").owned
        again = a.claim("s1")  # ours already: renewed, not taken from anyone
        assert again.owned and again.taken_from is None
        other = b.claim("s1")
        assert not other.owned and other.owner == "a"
        assert b.renew(["s1"]) == {"s1"}  # b never held it
        time.sleep(2.5)
        assert a.renew(["s1"]) == set()
        time.sleep(2.0)  # 4.5 s after the claim, 2 after the renewal: still a's
        assert not b.claim("s1").owned
        [lease] = b.leases(["s1"])
        assert lease.owner == "a" and not lease.expired
        time.sleep(4.5)  # a stopped renewing: expired, and b takes it saying from whom
        taken = b.claim("s1")
        assert taken.owned and taken.taken_from == "a"
        assert a.renew(["s1"]) == {"s1"}  # a learns it lost it
        assert not a.release("s1") and b.release("s1")
        assert b.leases() == []
    finally:
        a.close()
        b.close()


def test_racing_claimers_get_one_owner(pg_url: str) -> None:
    from tron_events.cluster import Cluster

    nodes = [Cluster(pg_url, f"n{i}") for i in range(4)]
    wins: list[str] = []
    barrier = threading.Barrier(len(nodes))

    def claim(node: Cluster) -> None:
        barrier.wait()
        for k in range(10):
            if node.claim(f"s{k}").owned:
                wins.append(f"s{k}")

    try:
        threads = [threading.Thread(target=claim, args=(n,)) for n in nodes]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(wins) == sorted(f"s{k}" for k in range(10))  # each exactly once
    finally:
        for n in nodes:
            n.close()


def test_messages_arrive_in_order_once_large_ones_through_the_table(pg_url: str) -> None:
    from tron_events.cluster import BROADCAST, Cluster

    a, b, c = (Cluster(pg_url, name) for name in "abc")
    got: dict[str, list[dict[str, Any]]] = {"a": [], "b": [], "c": []}
    done = threading.Event()

    def on(name: str):  # type: ignore[no-untyped-def]
        def handle(body: dict[str, Any]) -> None:
            got[name].append(body)
            if len(got["b"]) == 60 and len(got["c"]) == 50:
                done.set()

        return handle

    try:
        for node in (a, b, c):
            node.start(on(node.server_id))
        big = "x" * 20_000
        for i in range(50):
            a.send(BROADCAST, {"i": i, "text": big if i % 7 == 0 else "small"})
            if i % 5 == 0:
                a.send("b", {"i": i, "direct": True})
        assert done.wait(20)
        assert got["a"] == []  # its own broadcasts are not echoed
        assert [m["i"] for m in got["c"]] == list(range(50))
        assert all(m["text"] == (big if m["i"] % 7 == 0 else "small") for m in got["c"])
        assert [m["sender"] for m in got["c"]] == ["a"] * 50
        order = [(m["i"], bool(m.get("direct"))) for m in got["b"]]
        expected = []
        for i in range(50):
            expected.append((i, False))
            if i % 5 == 0:
                expected.append((i, True))
        assert order == expected
    finally:
        for node in (a, b, c):
            node.close()


def test_a_listener_that_lost_its_connection_says_so_and_listens_again(pg_url: str) -> None:
    import psycopg

    from tron_events.cluster import BROADCAST, Cluster

    a, b = Cluster(pg_url, "a"), Cluster(pg_url, "b")
    got: list[dict[str, Any]] = []
    gaps = threading.Event()
    try:
        b.start(got.append, on_reconnect=gaps.set)
        a.start(lambda body: None)
        conninfo = b.conninfo
        with psycopg.connect(conninfo, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                "AND query LIKE 'LISTEN%%'"
            )
        assert gaps.wait(15)  # the server then makes its clients resync
        deadline = time.monotonic() + 15
        while not got and time.monotonic() < deadline:
            a.send(BROADCAST, {"after": True})
            time.sleep(0.3)
        assert got and got[0]["after"] is True
    finally:
        a.close()
        b.close()


def test_a_listener_that_listens_only_after_start_returned_says_so(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tron_events import cluster
    from tron_events.cluster import BROADCAST, Cluster

    monkeypatch.setattr(cluster, "LISTEN_WAIT_S", 0.0)  # a database slow to answer
    a, b = Cluster(pg_url, "a"), Cluster(pg_url, "b")
    gaps = threading.Event()
    got: list[dict[str, Any]] = []
    try:
        b.start(got.append, on_reconnect=gaps.set)  # returns before it listens
        assert gaps.wait(15)  # what was sent before it listened is missed: the gap is said
        monkeypatch.setattr(cluster, "LISTEN_WAIT_S", 10.0)
        a.start(lambda body: None)
        a.send(BROADCAST, {"after": True})
        deadline = time.monotonic() + 15
        while not got and time.monotonic() < deadline:
            time.sleep(0.05)
        assert got == [{"after": True, "target": BROADCAST, "sender": "a"}]
    finally:
        a.close()
        b.close()


def test_a_listener_that_listens_before_start_returns_reports_no_gap(pg_url: str) -> None:
    from tron_events.cluster import Cluster

    b = Cluster(pg_url, "b")
    gaps = threading.Event()
    try:
        b.start(lambda body: None, on_reconnect=gaps.set)
        assert not gaps.wait(1.0)
    finally:
        b.close()
