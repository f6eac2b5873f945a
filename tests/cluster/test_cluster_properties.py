"""A hypothesis state machine over three real servers on one database: messages, answers,
aborts and a kill -9, sent to any server. Whatever the order:

- no tool call ever runs twice (each call appends its id to a ledger file when it runs);
- a client never gets an event twice, nor out of order, and a client that stayed
  connected got every event stored after it subscribed (events.new);
- every stored tool call has exactly one result once the sessions are idle.

Small in the default profile (CI); ``HYPOTHESIS_PROFILE=dev`` runs many more steps.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
import uuid
from collections.abc import Coroutine
from typing import Any, TypeVar

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from tests.cluster.conftest import TOKEN, Server, Servers
from tests.support.scripted_llm import Response, Text, ToolUse
from tron_server.client import ConnectionLost, RpcCallError, TronClient

T = TypeVar("T")
DEV = os.environ.get("HYPOTHESIS_PROFILE") == "dev"
CALL_TIMEOUT = 60.0


def model_reply(ledger: str) -> Any:
    """The scripted model: a Bash call (logged to ``ledger`` when it runs) for a new
    message, a short text after a tool result."""

    def reply(body: dict[str, Any]) -> Response:
        last = body["messages"][-1]
        content = last.get("content")
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        ):
            return Response([Text("done")])
        call = f"toolu_{uuid.uuid4().hex[:12]}"
        command = f"echo {call} >> {ledger}; sleep 0.2"
        return Response([ToolUse("Bash", {"command": command}, id=call)])

    return reply


class Clients:
    """One client per server in a loop of their own (the state machine's rules are
    synchronous); each collects the ``events.new`` it is sent."""

    def __init__(self, servers: list[Server]) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.servers = servers
        self.clients: dict[str, TronClient] = {}
        self.stacks: dict[str, contextlib.AsyncExitStack] = {}
        self.seen: dict[str, dict[str, list[int]]] = {}  # server -> session -> sequences
        self.first: dict[str, dict[str, int]] = {}  # server -> session -> first sequence
        self.lost: set[str] = set()
        for server in servers:
            self.run(self._connect(server))

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(CALL_TIMEOUT)

    async def _connect(self, server: Server) -> None:
        stack = contextlib.AsyncExitStack()
        client = await stack.enter_async_context(TronClient.connect(server.url, token=TOKEN))
        self.clients[server.name] = client
        self.stacks[server.name] = stack
        self.seen[server.name] = {}
        self.first[server.name] = {}
        stream = client.notifications(methods=["events.new"])
        asyncio.get_running_loop().create_task(self._collect(server.name, stream))

    async def _collect(self, name: str, stream: Any) -> None:
        try:
            while True:
                note = await stream.next()
                seqs = self.seen[name].setdefault(note.session_id, [])
                seqs.append(int(note.data["sequence"]))
        except ConnectionLost:
            self.lost.add(name)

    async def subscribe_all(self, session_id: str) -> None:
        for name, client in self.clients.items():
            if name in self.lost:
                continue
            await client.subscribe(session_id)
            # Subscribed: every event from here on reaches it; note where it started.
            events = await client.sync(session_id)
            self.first[name][session_id] = max((e["sequence"] for e in events), default=-1)

    def close(self) -> None:
        for stack in self.stacks.values():
            with contextlib.suppress(Exception):
                self.run(stack.aclose())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)


class ClusterMachine(RuleBasedStateMachine):
    servers: Servers

    def __init__(self) -> None:
        super().__init__()
        self.ledger = self.servers.workdir / f"ledger-{uuid.uuid4().hex[:8]}.txt"
        self.ledger.touch()
        self.servers.llm.add(*[model_reply(str(self.ledger))] * 400)
        for server in self.servers.procs:  # one the last example killed
            if server.proc is None or server.proc.poll() is not None:
                server.start()
        for server in self.servers.procs:
            server.wait_ready()
        self.live = list(self.servers.procs)
        self.clients = Clients(self.live)
        self.sessions: list[str] = []
        self.killed = False
        first = self.live[0].name
        for mode in ("default", "bypassPermissions"):
            created = self.clients.run(self.clients.clients[first].call(
                "session.create", {"workingDirectory": str(self.servers.workdir)}))  # fmt: skip
            sid = created["id"]
            self.call(first, "session.setMode", {"sessionId": sid, "mode": mode})
            self.clients.run(self.clients.subscribe_all(sid))
            self.sessions.append(sid)

    def names(self) -> list[str]:
        return [s.name for s in self.live if s.name not in self.clients.lost]

    def call(self, server: str, method: str, params: dict[str, Any]) -> Any:
        client = self.clients.clients[server]
        try:
            return self.clients.run(client.call(method, params))
        except RpcCallError as exc:
            # busy (-32003), owner gone or unreachable for now (-32002), answered or
            # cancelled already (-32004..), not pending: all allowed outcomes
            assert exc.code in (-32002, -32003, -32004, -32010, -32602, -32603) or (
                -32099 <= exc.code <= -32000
            ), exc
            return None

    @rule(data=st.data(), queue=st.booleans())
    def message(self, data: st.DataObject, queue: bool) -> None:
        server = data.draw(st.sampled_from(self.names()))
        sid = data.draw(st.sampled_from(self.sessions))
        self.call(server, "agent.message", {"sessionId": sid, "prompt": "step", "queue": queue})

    @rule(data=st.data(), allow=st.booleans())
    def answer(self, data: st.DataObject, allow: bool) -> None:
        server = data.draw(st.sampled_from(self.names()))
        sid = self.sessions[0]
        state = self.call(server, "agent.getState", {"sessionId": sid})
        if not state or not state.get("pendingRequests"):
            return
        request = state["pendingRequests"][0]
        decision = {"decision": "allow" if allow else "deny"}
        other = data.draw(st.sampled_from(self.names()))
        self.call(other, "agent.respond", {"sessionId": sid, "answer": decision,
                                           "requestId": request["requestId"]})  # fmt: skip

    @rule(data=st.data())
    def abort(self, data: st.DataObject) -> None:
        server = data.draw(st.sampled_from(self.names()))
        sid = data.draw(st.sampled_from(self.sessions))
        self.call(server, "agent.abort", {"sessionId": sid})

    @precondition(lambda self: not self.killed and len(self.live) == 3)
    @rule(data=st.data())
    def kill(self, data: st.DataObject) -> None:
        victim = data.draw(st.sampled_from(self.live))
        victim.kill()
        victim.start()  # back for the next example (or test) while this one goes on
        self.killed = True
        self.live = [s for s in self.live if s is not victim]
        self.clients.lost.add(victim.name)

    @rule()
    def pause(self) -> None:
        time.sleep(0.3)

    @invariant()
    def no_tool_call_ran_twice(self) -> None:
        calls = self.ledger.read_text().split()
        assert len(calls) == len(set(calls)), calls

    @invariant()
    def no_event_twice_or_out_of_order(self) -> None:
        for sessions in self.clients.seen.values():
            for seqs in sessions.values():
                assert seqs == sorted(set(seqs)), seqs

    def teardown(self) -> None:
        try:
            self._settle()
        finally:
            self.clients.close()
            self.servers.llm.drop_remaining()  # not for the next example or test

    def _settle(self) -> None:
        """Stop everything (abort, then wait out a takeover), then compare what each
        client that stayed connected was sent with what is stored."""
        survivor = self.names()[0]
        deadline = time.monotonic() + 60
        for sid in self.sessions:
            while time.monotonic() < deadline:
                self.call(survivor, "agent.abort", {"sessionId": sid})
                state = self.call(survivor, "agent.getState", {"sessionId": sid})
                if state and not state["busy"] and not state.get("pendingRequests"):
                    break
                time.sleep(0.5)
        time.sleep(1.0)  # the last events.new on their way
        client = self.clients.clients[survivor]
        for sid in self.sessions:
            stored = self.clients.run(client.sync(sid))
            calls = [e["payload"]["toolCallId"] for e in stored if e["type"] == "tool.call"]
            results = [e["payload"]["toolCallId"] for e in stored if e["type"] == "tool.result"]
            assert sorted(calls) == sorted(results), (calls, results)
            sequences = [e["sequence"] for e in stored]
            for name in self.names():
                first = self.clients.first[name].get(sid, -1)
                got = self.clients.seen[name].get(sid, [])
                assert got == [s for s in sequences if s > first], (name, sid)


def test_messages_answers_aborts_and_a_kill_across_servers(servers: Servers) -> None:
    ClusterMachine.servers = servers
    run_state_machine_as_test(
        ClusterMachine,
        settings=settings(
            max_examples=12 if DEV else 1,
            stateful_step_count=30 if DEV else 8,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
