"""This server among several on one PostgreSQL database (:mod:`tron_events.cluster`).

A session's turn runs in one server, the owner of its lease. The node:

- **claims** the lease before this server starts a run (:meth:`ClusterNode.owning`), and
  gives it back when the session is idle again (no run, no call in progress);
- **renews** the leases it holds every ``ttl / 4`` seconds; a lease found lost (this
  server stalled longer than the lease time and another took the session over) aborts
  the local run, whose appends would conflict anyway;
- **sweeps** every second (and once before the server answers calls): it refreshes
  which sessions other servers run (for ``busy``, :meth:`owner_elsewhere`), and takes
  over the expired leases of dead servers: the interrupted turn is closed
  (:mod:`.recovery`) and the lease given back;
- **forwards** a call to the owner (:meth:`forward`; the RPC layer's cluster middleware
  decides what goes) and answers the calls forwarded to it (:attr:`serve_call`);
- **relays** notifications (:meth:`relay`) to every other server, whose hub publishes
  them to its own clients (:attr:`deliver`).

Messages: ``{"kind": "call", id, method, params, hops}``, ``{"kind": "reply", id,
result | error}``, ``{"kind": "note", method, sessionId, data, timestamp, alsoTo}``,
``{"kind": "lease", sessionId, owner}`` (owner None: released).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from tron_events.cluster import BROADCAST, Claim, Cluster

from ..errors import ManagerUnavailableError, RpcError
from .errors import ForwardedError, OwnedElsewhere
from .recovery import close_interrupted_turn

if TYPE_CHECKING:
    from tron_events import AsyncEventStore

    from ..agent.orchestrator import Emit, Orchestrator

__all__ = ["ClusterNode", "new_server_id"]

log = logging.getLogger("tron_server.cluster")

#: Seconds between sweeps (takeovers, the view of other servers' leases).
SWEEP_INTERVAL = 1.0

ServeCall = Callable[[str, object, int], Awaitable[Any]]
Deliver = Callable[[str, str | None, Any, str | None, str | None], object]


def new_server_id() -> str:
    """A name for this process among the servers: host, pid and a random part."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class ClusterNode:
    """This server's leases, calls and relayed notifications. Use as ``async with node:``
    (the app's lifespan does); :attr:`serve_call` and :attr:`deliver` are set by the app."""

    def __init__(
        self,
        cluster: Cluster,
        store: AsyncEventStore,
        orchestrator: Orchestrator | None,
        emit: Emit,
        *,
        call_timeout: float | None = None,
    ) -> None:
        self.cluster = cluster
        self.store = store
        self.orchestrator = orchestrator
        self.emit = emit
        self.server_id = cluster.server_id
        self.ttl = cluster.ttl
        self.call_timeout = call_timeout if call_timeout is not None else 2 * self.ttl + 5
        #: Runs a call forwarded here: (method, params, hops) -> result.
        self.serve_call: ServeCall | None = None
        #: Publishes a relayed notification to this server's clients.
        self.deliver: Deliver | None = None
        #: Called when relayed notifications may have been missed (the listener lost its
        #: connection): the app closes its clients' connections so that they resync.
        self.on_gap: Callable[[str], None] | None = None
        self._others: dict[str, str] = {}
        self._held: set[str] = set()
        self._in_flight: dict[str, int] = {}
        self._claiming: dict[str, asyncio.Future[Claim]] = {}
        #: One lease operation at a time per session: a release queued when a run ended
        #: must not delete the lease a new call claimed meanwhile.
        self._lease_ops: dict[str, asyncio.Lock] = {}
        self._replies: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    # -- lifecycle ---------------------------------------------------------------------

    async def __aenter__(self) -> ClusterNode:
        self._loop = asyncio.get_running_loop()
        await anyio.to_thread.run_sync(
            partial(self.cluster.start, self._from_thread, on_reconnect=self._reconnected)
        )
        try:  # who runs what, before this server answers a call (busy, forwarding)
            await self._sweep(take_over=False)
        except Exception:
            log.warning("cluster sweep failed", exc_info=True)
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._heartbeat)
        self._tg.start_soon(self._sweeper)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._tg is not None
        self._tg.cancel_scope.cancel()
        await self._tg.__aexit__(None, None, None)
        self._tg = None
        for task in list(self._tasks):
            task.cancel()
        held, self._held = set(self._held), set()
        for session_id in held:  # a clean stop frees its sessions at once
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self.cluster.release, session_id)
        await anyio.to_thread.run_sync(self.cluster.close)

    # -- who runs what -----------------------------------------------------------------

    def owner_elsewhere(self, session_id: str) -> str | None:
        """The other live server running the session, as last seen (None: none)."""
        if session_id in self._held:
            return None
        return self._others.get(session_id)

    def holds(self, session_id: str) -> bool:
        return session_id in self._held

    async def claim(self, session_id: str) -> Claim:
        """Claim the lease (one query at a time per session); a lease taken from a dead
        server gets its interrupted turn closed first."""
        pending = self._claiming.get(session_id)
        if pending is not None:
            return await asyncio.shield(pending)
        assert self._loop is not None
        future: asyncio.Future[Claim] = self._loop.create_future()
        self._claiming[session_id] = future
        try:
            async with self._lease_op(session_id):
                claim = await anyio.to_thread.run_sync(self.cluster.claim, session_id)
            if claim.owned:
                self._held.add(session_id)
                self._others.pop(session_id, None)
                self.cluster.send(BROADCAST, {"kind": "lease", "sessionId": session_id,
                                              "owner": self.server_id})  # fmt: skip
                if claim.taken_from is not None:
                    await self._recover(session_id, claim.taken_from)
            else:
                self._others[session_id] = claim.owner
            future.set_result(claim)
            return claim
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: nobody else may wait for it
            raise
        finally:
            del self._claiming[session_id]

    @asynccontextmanager
    async def owning(self, session_id: str) -> AsyncIterator[None]:
        """Hold the session's lease for a call that may start a run here; raises
        :class:`OwnedElsewhere` when another live server holds it. The lease stays while
        the run goes on, and is given back once the session is idle."""
        self._in_flight[session_id] = self._in_flight.get(session_id, 0) + 1
        try:
            if session_id not in self._held:
                claim = await self.claim(session_id)
                if not claim.owned:
                    raise OwnedElsewhere(session_id, claim.owner)
            yield
        finally:
            left = self._in_flight[session_id] - 1
            if left:
                self._in_flight[session_id] = left
            else:
                del self._in_flight[session_id]
            self._release_if_idle(session_id)

    def run_changed(self, session_id: str, running: bool) -> None:
        """The orchestrator's hook: a run started (a sub-agent's too: its session is
        claimed in the background) or ended (the lease goes once the session is idle)."""
        if running:
            if session_id not in self._held and session_id not in self._claiming:
                self._start(self._claim_quietly, session_id)
        else:
            self._release_if_idle(session_id)

    def _running(self, session_id: str) -> bool:
        return self.orchestrator is not None and self.orchestrator.is_running(session_id)

    def _release_if_idle(self, session_id: str) -> None:
        if session_id not in self._held or session_id in self._in_flight:
            return
        if self._running(session_id):
            return
        self._held.discard(session_id)
        self._start(self._release, session_id)

    async def _claim_quietly(self, session_id: str) -> None:
        try:
            await self.claim(session_id)
        except Exception:
            log.warning("could not claim the lease of %s", session_id, exc_info=True)

    @asynccontextmanager
    async def _lease_op(self, session_id: str) -> AsyncIterator[None]:
        lock = self._lease_ops.setdefault(session_id, asyncio.Lock())
        try:
            async with lock:
                yield
        finally:
            if not lock.locked() and self._lease_ops.get(session_id) is lock:
                del self._lease_ops[session_id]

    async def _release(self, session_id: str) -> None:
        try:
            async with self._lease_op(session_id):
                if session_id in self._held or session_id in self._claiming:
                    return  # claimed again since the session went idle: keep it
                await anyio.to_thread.run_sync(self.cluster.release, session_id)
            self.cluster.send(BROADCAST, {"kind": "lease", "sessionId": session_id, "owner": None})
        except Exception:  # it lapses by itself within the lease time
            log.warning("could not release the lease of %s", session_id, exc_info=True)

    def _start(self, fn: Callable[[str], Coroutine[Any, Any, None]], session_id: str) -> None:
        self._spawn(fn(session_id))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` in the background (also from a plain callback of the loop, where
        a task group cannot start tasks); cancelled when the node stops."""
        if self._tg is None or self._loop is None:
            work.close()
            return
        task = self._loop.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _heartbeat(self) -> None:
        while True:
            await anyio.sleep(self.ttl / 4)
            held = set(self._held)
            try:
                lost = await anyio.to_thread.run_sync(self.cluster.renew, held)
            except Exception:
                log.warning("could not renew the leases", exc_info=True)
                continue
            for session_id in lost & self._held:
                # Another server took the session over while this one did not renew (it
                # stalled): the local run must not go on beside the new owner.
                log.warning("lost the lease of %s; stopping its run here", session_id)
                self._held.discard(session_id)
                if self._running(session_id):
                    self._start(self._abort, session_id)

    async def _abort(self, session_id: str) -> None:
        assert self.orchestrator is not None
        try:
            await self.orchestrator.abort(session_id)
        except Exception:
            log.warning("aborting the run of %s failed", session_id, exc_info=True)

    async def _sweeper(self) -> None:
        while True:
            try:
                await self._sweep()
            except Exception:
                log.warning("cluster sweep failed", exc_info=True)
            await anyio.sleep(SWEEP_INTERVAL)

    async def _sweep(self, *, take_over: bool = True) -> None:
        """Refresh which sessions other servers run; ``take_over``: and recover the
        sessions of servers whose lease expired."""
        leases = await anyio.to_thread.run_sync(self.cluster.leases)
        others: dict[str, str] = {}
        for lease in leases:
            if lease.owner == self.server_id:
                continue
            if not lease.expired:
                others[lease.session_id] = lease.owner
            elif take_over and lease.session_id not in self._claiming:
                try:
                    async with self.owning(lease.session_id):  # takes it over, recovers
                        pass
                except OwnedElsewhere as other:  # another server was quicker
                    others[lease.session_id] = other.owner
        self._others = others

    async def _recover(self, session_id: str, dead: str) -> None:
        log.warning(
            "took over session %s from server %s (its lease expired)", session_id, dead,
            extra={"fields": {"sessionId": session_id, "from": dead}},
        )  # fmt: skip
        try:
            await close_interrupted_turn(self.store, session_id, self.emit)
        except Exception:
            log.exception("closing the interrupted turn of %s failed", session_id)

    # -- calls -------------------------------------------------------------------------

    async def forward(self, owner: str, method: str, params: object, hops: int) -> Any:
        """Run ``method`` on the owner; its result, or its error re-raised
        (:class:`ForwardedError`); -32002 when the owner does not answer in time."""
        assert self._loop is not None
        call_id = uuid.uuid4().hex
        future: asyncio.Future[dict[str, Any]] = self._loop.create_future()
        self._replies[call_id] = future
        self.cluster.send(owner, {"kind": "call", "id": call_id, "method": method,
                                  "params": params, "hops": hops + 1})  # fmt: skip
        try:
            with anyio.fail_after(self.call_timeout):
                reply = await future
        except TimeoutError:
            raise ManagerUnavailableError(
                f"the server running this session ({owner}) did not answer {method} within "
                f"{self.call_timeout:g} s; if it stopped, another server takes the session "
                "over within the lease time: try again",
                retryable=True,
            ) from None
        finally:
            self._replies.pop(call_id, None)
        if "error" in reply:
            raise ForwardedError(reply["error"])
        return reply.get("result")

    async def _answer(self, body: dict[str, Any]) -> None:
        sender = str(body.get("sender"))
        reply: dict[str, Any] = {"kind": "reply", "id": body.get("id")}
        try:
            if self.serve_call is None:
                raise ManagerUnavailableError("this server does not take forwarded calls")
            reply["result"] = await self.serve_call(
                str(body.get("method")), body.get("params"), int(body.get("hops") or 1)
            )
        except RpcError as exc:
            reply["error"] = exc.to_json()
        except Exception as exc:
            log.exception("a forwarded %s failed", body.get("method"))
            reply["error"] = RpcError(
                f"internal error on the owner: {type(exc).__name__}"
            ).to_json()
        self.cluster.send(sender, reply)

    # -- notifications -----------------------------------------------------------------

    def relay(
        self, method: str, session_id: str | None, data: Any, timestamp: str,
        also_to: str | None,
    ) -> None:  # fmt: skip
        """Send a notification published here to every other server's clients."""
        self.cluster.send(BROADCAST, {"kind": "note", "method": method, "sessionId": session_id,
                                      "data": data, "timestamp": timestamp,
                                      "alsoTo": also_to})  # fmt: skip

    # -- the listener thread -> the event loop -----------------------------------------

    def _from_thread(self, body: dict[str, Any]) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            # call_soon_threadsafe keeps the order the listener got them in.
            loop.call_soon_threadsafe(self._on_message, body)

    def _on_message(self, body: dict[str, Any]) -> None:
        kind = body.get("kind")
        if kind == "note":
            if self.deliver is not None:
                self.deliver(str(body.get("method")), body.get("sessionId"), body.get("data"),
                             body.get("timestamp"), body.get("alsoTo"))  # fmt: skip
        elif kind == "reply":
            future = self._replies.get(str(body.get("id")))
            if future is not None and not future.done():
                future.set_result(body)
        elif kind == "call":
            self._spawn(self._answer(body))
        elif kind == "lease":
            session_id, owner = str(body.get("sessionId")), body.get("owner")
            if owner is None:
                self._others.pop(session_id, None)
            elif owner != self.server_id:
                self._others[session_id] = str(owner)

    def _reconnected(self) -> None:
        """From the listener thread, once it listens again after losing its connection."""
        log.warning("the cluster listener reconnected: relayed notifications may be missing")
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._gap)

    def _gap(self) -> None:
        if self.on_gap is not None:
            self.on_gap("this server may have missed notifications of other servers: "
                        "reconnect, subscribe and sync")  # fmt: skip
