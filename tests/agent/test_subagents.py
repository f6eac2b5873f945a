"""Sub-agents through the agent runtime: the Task tool, child sessions, parallel runs,
abort, failures, continuing a child, the depth limit and agent definition files.

A real SQLite store, the scripted LLM behind the real Anthropic adapter, the real tools
(Bash, Read, Write) and the real hook engine. Parent and children call the LLM in an
order no test can fix, so the script is a router: each request is answered from the queue
of the conversation it belongs to (recognized by its first user message).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from tests.agent.harness import assert_event_order, no_sleep
from tests.support.scripted_llm import Response, ScriptedLLM, Text, ToolUse, scripted_llm
from tests.support.trust import trust_folder
from tron_events import AsyncEventStore, Event, Session
from tron_llm import RetryPolicy
from tron_llm.anthropic import AnthropicProvider
from tron_server.agent import Orchestrator
from tron_server.agent.subagents import SubagentSettings
from tron_server.hooks import build_hook_engine
from tron_server.tools import Bash, Read, Write
from tron_server.tools.base import Tool, ToolContext, ToolRegistry, ToolResult

pytestmark = pytest.mark.anyio

MODEL = "claude-sonnet-4-5"


# -- the routed script ----------------------------------------------------------------------


def first_user_text(body: dict[str, Any]) -> str:
    for message in body.get("messages", []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        return " ".join(b.get("text", "") for b in content if b.get("type") == "text")
    return ""


class Routes:
    """A script item answering each request from the queue of its conversation: the
    first queue whose key is in the request's first user message."""

    def __init__(self, llm: ScriptedLLM) -> None:
        self.llm = llm
        self.queues: dict[str, deque[Response]] = {}
        self.requests: dict[str, list[dict[str, Any]]] = {}

    def add(self, key: str, *responses: Response) -> None:
        self.queues.setdefault(key, deque()).extend(responses)
        self.llm.add(*[self] * len(responses))

    def __call__(self, body: dict[str, Any]) -> Response:
        text = first_user_text(body)
        for key, queue in self.queues.items():
            if key in text:
                self.requests.setdefault(key, []).append(body)
                if queue:
                    return queue.popleft()
        return Response(status=400, error_type="invalid_request_error",
                        message=f"no scripted reply for {text[:60]!r}")  # fmt: skip

    def last(self, key: str) -> dict[str, Any]:
        return self.requests[key][-1]


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t["name"] for t in body.get("tools", [])]


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool_result blocks of the request's last user message."""
    content = body["messages"][-1]["content"]
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [])


# -- test tools -----------------------------------------------------------------------------


class GateParams(BaseModel):
    key: str


class WaitFor(Tool[GateParams]):
    """Waits (cancellably) until the test opens the gate ``key``."""

    name = "WaitFor"
    description = "Wait for a signal."
    Params = GateParams

    def __init__(self) -> None:
        self.gates: dict[str, anyio.Event] = {}

    def gate(self, key: str) -> anyio.Event:
        return self.gates.setdefault(key, anyio.Event())

    async def run(self, params: GateParams, ctx: ToolContext) -> ToolResult:
        with anyio.fail_after(15):
            await self.gate(params.key).wait()
        return ToolResult(content=f"{params.key} happened first")


# -- the environment ------------------------------------------------------------------------


@dataclass
class Env:
    store: AsyncEventStore
    llm: ScriptedLLM
    routes: Routes
    orch: Orchestrator
    workdir: Path
    home: Path
    wait: WaitFor
    notes: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    on_note: list[Callable[[str, str, dict[str, Any]], None]] = field(default_factory=list)

    async def session(self) -> Session:
        return await self.store.create_session(
            working_directory=str(self.workdir), model=MODEL, provider="anthropic"
        )

    def of(self, session_id: str, method: str) -> list[dict[str, Any]]:
        return [d for m, s, d in self.notes if s == session_id and m == method]

    async def wait_for(
        self, session_id: str, method: str, count: int = 1, timeout: float = 15
    ) -> list[dict[str, Any]]:
        with anyio.fail_after(timeout):
            while len(self.of(session_id, method)) < count:
                await anyio.sleep(0.01)
        return self.of(session_id, method)

    async def run(self, session_id: str, content: str) -> dict[str, Any]:
        before = len(self.of(session_id, "agent.complete"))
        await self.orch.send_message(session_id, content)
        return (await self.wait_for(session_id, "agent.complete", before + 1))[-1]

    async def path(self, session_id: str) -> list[Event]:
        session = await self.store.get_session(session_id)
        return await self.store.get_ancestors(session.head_event_id)

    async def children(self, session_id: str) -> list[Session]:
        return await self.store.get_child_sessions(session_id)


def make_orchestrator(
    store: AsyncEventStore,
    provider: AnthropicProvider,
    tools: ToolRegistry,
    home: Path,
    subagents: SubagentSettings,
    notes: list[tuple[str, str, dict[str, Any]]],
    on_note: list[Callable[[str, str, dict[str, Any]], None]],
) -> Orchestrator:
    def emit(method: str, sid: str, data: dict[str, Any]) -> None:
        notes.append((method, sid, data))
        for callback in on_note:
            callback(method, sid, data)

    return Orchestrator(
        store,
        lambda _provider, _model: provider,
        tools,
        None,
        emit,
        home=home,
        hooks_factory=lambda wd, record: build_hook_engine(wd, home, record),
        subagents=subagents,
    )


@pytest.fixture
def subagent_settings() -> SubagentSettings:
    return SubagentSettings()


@pytest.fixture
async def env(tmp_path: Path, subagent_settings: SubagentSettings) -> AsyncIterator[Env]:
    store = await AsyncEventStore.open(f"sqlite:///{tmp_path / 'agent.db'}")
    workdir = tmp_path / "project"
    workdir.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    async with scripted_llm() as llm:
        provider = AnthropicProvider(
            api_key="test-key",
            base_url=llm.base_url,
            retry=RetryPolicy(max_retries=0, sleep=no_sleep),
        )
        wait = WaitFor()
        notes: list[tuple[str, str, dict[str, Any]]] = []
        on_note: list[Callable[[str, str, dict[str, Any]], None]] = []
        tools = ToolRegistry([Read(), Write(), Bash(), wait])
        orch = make_orchestrator(store, provider, tools, home, subagent_settings, notes, on_note)
        env = Env(store, llm, Routes(llm), orch, workdir.resolve(), home, wait, notes, on_note)
        try:
            yield env
        finally:
            await orch.shutdown(timeout=5)
            await provider.aclose()
            await store.aclose()


def task(description: str, prompt: str, id: str, **extra: Any) -> ToolUse:
    return ToolUse("Task", {"description": description, "prompt": prompt, **extra}, id=id)


# -- two children in parallel ---------------------------------------------------------------


async def test_two_children_run_in_parallel_and_their_results_come_back_in_call_order(
    env: Env,
) -> None:
    (env.workdir / "b.txt").write_text("the B file says hello\n")
    # Child A can only finish after child B has finished: were they run one after the
    # other (A first), A would wait forever and its result would be an error.
    env.on_note.append(
        lambda m, sid, d: (
            env.wait.gate("B done").set()
            if m == "agent.complete" and d.get("parentToolCallId") == "toolu_B"
            else None
        )
    )
    env.routes.add(
        "PARENT",
        Response([Text("Splitting the work."),
                  task("part A", "CHILD-A: wait for B", "toolu_A"),
                  task("part B", "CHILD-B: read b.txt", "toolu_B")]),
        Response([Text("Both parts are done.")]),
    )  # fmt: skip
    env.routes.add(
        "CHILD-A",
        Response([ToolUse("WaitFor", {"key": "B done"})]),
        Response([Text("A report: B finished before me.")]),
    )
    env.routes.add(
        "CHILD-B",
        Response([ToolUse("Read", {"file_path": "b.txt"})]),
        Response([Text("B report: the file says hello.")]),
    )
    parent = await env.session()
    done = await env.run(parent.id, "PARENT: do both parts")
    assert done["stopReason"] == "end_turn" and done["turns"] == 2

    # The parent's second request has both results, in the order of the calls.
    results = tool_results(env.routes.last("PARENT"))
    assert [r["tool_use_id"] for r in results] == ["toolu_A", "toolu_B"]
    assert not any(r.get("is_error") for r in results)
    text_a, text_b = result_text(results[0]), result_text(results[1])
    assert "A report: B finished before me." in text_a and "B report" in text_b

    # B really finished first (the gate), and each child saw its tool's result.
    completes = [d.get("parentToolCallId") for m, _s, d in env.notes if m == "agent.complete"]
    assert completes.index("toolu_B") < completes.index("toolu_A")
    assert "B done happened first" in str(env.routes.last("CHILD-A")["messages"])
    assert "the B file says hello" in str(env.routes.last("CHILD-B")["messages"])

    # Two children, linked to the parent's tool calls and the events that spawned them.
    children = await env.children(parent.id)
    assert len(children) == 2
    path = await env.path(parent.id)
    calls = {e.payload["toolCallId"]: e for e in path if e.type == "tool.call"}
    by_call: dict[str, Session] = {}
    for child in children:
        assert child.parent_session_id == parent.id and child.fork_from_event_id is None
        assert child.working_directory == parent.working_directory
        assert child.workspace_id == parent.workspace_id
        root = await env.store.get_event(child.root_event_id)
        assert root is not None and root.type == "session.start"
        start = root.payload
        assert start["parentSessionId"] == parent.id
        assert start["subagentType"] == "general-purpose"
        assert start["spawnedByEventId"] == calls[start["parentToolCallId"]].id
        spawning = await env.store.get_spawning_event(child.id)
        assert spawning is not None and spawning.id == start["spawnedByEventId"]
        by_call[start["parentToolCallId"]] = child
        assert child.id in (text_a if start["parentToolCallId"] == "toolu_A" else text_b)
        assert_event_order(await env.path(child.id))
    assert_event_order(path)

    # subagent.* in the parent, typed: both spawns before any result, and each child's
    # completion before its own call's result. (Not every completion before the first
    # result: a child's completion is recorded after its run's usage and reply are read,
    # and the other child's run may finish and be answered meanwhile.)
    types = [e.type for e in path]
    spawned = [e.payload for e in path if e.type == "subagent.spawned"]
    completed = [e.payload for e in path if e.type == "subagent.completed"]
    assert {p["toolCallId"] for p in spawned} == {"toolu_A", "toolu_B"}
    assert {p["childSessionId"] for p in completed} == {c.id for c in children}
    for p in completed:
        assert p["stopReason"] == "end_turn" and p["turns"] == 2
        assert p["usage"]["inputTokens"] == 20 and p["usage"]["outputTokens"] == 10
    assert max(i for i, t in enumerate(types) if t == "subagent.spawned") < types.index(
        "tool.result"
    )
    for call in ("toolu_A", "toolu_B"):
        done = [
            i for i, e in enumerate(path)
            if e.type == "subagent.completed" and e.payload["toolCallId"] == call
        ]  # fmt: skip
        answered = [
            i for i, e in enumerate(path)
            if e.type == "tool.result" and e.payload["toolCallId"] == call
        ]  # fmt: skip
        assert len(done) == 1 and len(answered) == 1 and done[0] < answered[0], (call, types)

    # Each child's usage is its own; the tool result's details say so.
    details = [e.payload["details"] for e in path if e.type == "tool.result"]
    assert [d["sessionId"] for d in details] == [by_call["toolu_A"].id, by_call["toolu_B"].id]
    assert all(d["turns"] == 2 for d in details)
    refreshed = await env.store.get_session(parent.id)
    assert refreshed.input_tokens == 20  # the parent's own two turns only

    # Children's notifications carry their parent; every request was a valid history.
    ids = {c.id for c in children}
    child_notes = [d for m, s, d in env.notes if s in ids and m.startswith("agent.")]
    assert child_notes and all(d["parentSessionId"] == parent.id for d in child_notes)
    created = [d["session"] for m, s, d in env.notes if m == "session.created"]
    assert {c["id"] for c in created} == ids and all(c["kind"] == "subagent" for c in created)
    for i in range(len(env.llm.requests)):
        assert env.llm.violations(i) == [], i
    # The children did not get the Task tool (depth limit 1); the parent did.
    assert "Task" in tool_names(env.routes.last("PARENT"))
    assert "Task" not in tool_names(env.routes.last("CHILD-A"))


async def test_every_task_call_of_a_message_runs_at_once_around_other_tools(env: Env) -> None:
    """``Task, Read, Task``: both children run at the same time (each waits for the other
    to have started: a barrier, run one after the other they would wait forever), the Read
    runs meanwhile, each call goes through its PreToolUse hooks (here a Claude Code hook on
    ``Agent``), and the results come back in the order of the calls."""
    (env.workdir / "r.txt").write_text("read while the children work\n")
    log = env.workdir / "pre.log"
    line = "json.load(sys.stdin)['tool_use_id'] + '\\n'"
    script = f"import sys, json; open({str(log)!r}, 'a').write({line})"
    hook = {"type": "command", "command": f'{sys.executable} -c "{script}"'}
    (env.workdir / ".claude").mkdir()
    (env.workdir / ".claude" / "settings.json").write_text(
        json.dumps({"hooks": {"PreToolUse": [{"matcher": "Agent", "hooks": [hook]}]}})
    )
    trust_folder(env.home, env.workdir)

    def started(m: str, sid: str, d: dict[str, Any]) -> None:
        if m == "agent.tool_start" and d.get("name") == "WaitFor":
            env.wait.gate(f"{d['parentToolCallId']} started").set()

    env.on_note.append(started)
    env.routes.add(
        "PARENT",
        Response([task("part A", "CHILD-A: meet B", "toolu_A"),
                  ToolUse("Read", {"file_path": "r.txt"}, id="toolu_R"),
                  task("part B", "CHILD-B: meet A", "toolu_B")]),
        Response([Text("All done.")]),
    )  # fmt: skip
    for me, other in (("A", "B"), ("B", "A")):
        env.routes.add(
            f"CHILD-{me}",
            Response([ToolUse("WaitFor", {"key": f"toolu_{other} started"})]),
            Response([Text(f"{me} report: met {other}.")]),
        )
    parent = await env.session()
    done = await env.run(parent.id, "PARENT: three calls")
    assert done["stopReason"] == "end_turn" and done["turns"] == 2

    results = tool_results(env.routes.last("PARENT"))
    assert [r["tool_use_id"] for r in results] == ["toolu_A", "toolu_R", "toolu_B"]
    assert not any(r.get("is_error") for r in results)
    assert "A report: met B." in result_text(results[0])
    assert "read while the children work" in result_text(results[1])
    assert "B report: met A." in result_text(results[2])
    assert sorted(log.read_text().split()) == ["toolu_A", "toolu_B"]
    path = await env.path(parent.id)
    recorded = [e.payload["toolCallId"] for e in path if e.type == "tool.result"]
    assert recorded == ["toolu_A", "toolu_R", "toolu_B"]
    assert_event_order(path)
    for i in range(len(env.llm.requests)):
        assert env.llm.violations(i) == [], i


# -- abort ----------------------------------------------------------------------------------


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead; only its parent has not reaped it yet.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][:1] != "Z"
    except OSError:
        return False


async def test_aborting_the_parent_aborts_the_child_and_kills_its_processes(env: Env) -> None:
    pids = env.workdir / "pids"
    command = f"sleep 300 & echo $! >> {pids}; (sleep 300 & echo $! >> {pids}; wait) & wait"
    env.routes.add("PARENT", Response([task("long job", "CHILD: run it", "toolu_T")]))
    env.routes.add("CHILD", Response([ToolUse("Bash", {"command": command})]))
    parent = await env.session()
    await env.orch.send_message(parent.id, "PARENT: start the long job")
    with anyio.fail_after(15):
        while not pids.exists() or len(pids.read_text().split()) < 2:
            await anyio.sleep(0.02)
    [child] = await env.children(parent.id)
    assert env.orch.is_running(child.id)
    running = [int(p) for p in pids.read_text().split()]
    assert all(alive(p) for p in running)

    assert await env.orch.abort(parent.id) is True
    # No time bound to flake under load, but an order: abort returns once both runs
    # recorded their interruption, which the child's Bash does only after its whole
    # process tree is dead. (The 1 s is measured by benchmarks/bench_subagents.py abort.)
    assert [p for p in running if alive(p)] == []
    assert not env.orch.is_running(child.id) and not env.orch.is_running(parent.id)
    assert (await env.wait_for(parent.id, "agent.complete"))[-1]["stopReason"] == "aborted"

    child_path = await env.path(child.id)
    assert [e.type for e in child_path][-2:] == ["notification.interrupted", "stream.turn_end"]
    [child_result] = [e.payload for e in child_path if e.type == "tool.result"]
    assert child_result["isError"] and child_result["interrupted"]
    path = await env.path(parent.id)
    [result] = [e.payload for e in path if e.type == "tool.result"]
    assert result["toolCallId"] == "toolu_T" and result["isError"] and result["interrupted"]
    [failed] = [e.payload for e in path if e.type == "subagent.failed"]
    assert failed["interrupted"] is True and failed["childSessionId"] == child.id
    assert_event_order(path)
    assert_event_order(child_path)

    # Both histories go on valid: the parent, then the child (continued through Task).
    env.routes.add("PARENT", Response([task("again", "ignored", "toolu_U", session_id=child.id)]),
                   Response([Text("Resumed.")]))  # fmt: skip
    env.routes.add("CHILD", Response([Text("Picked up where I was.")]))
    await env.run(parent.id, "go on")
    for i in range(len(env.llm.requests)):
        assert env.llm.violations(i) == [], i
    child_msgs = env.routes.last("CHILD")["messages"]
    assert "interrupted" in str(child_msgs) and child_msgs[-1]["role"] == "user"


async def test_an_abort_while_the_child_is_being_created_is_recorded_in_both(env: Env) -> None:
    """The parent is aborted right when the child session exists but before its run
    starts: the parent still records which child it made and that it failed."""
    parent = await env.session()

    def abort_on_creation(method: str, _sid: str, data: dict[str, Any]) -> None:
        if method == "session.created" and data["session"]["kind"] == "subagent":
            run = env.orch._runs[parent.id].current
            assert run is not None
            run.abort()  # synchronously, inside the Task call, between creation and run

    env.on_note.append(abort_on_creation)
    env.routes.add("PARENT", Response([task("never runs", "CHILD: hi", "toolu_X")]))
    done = await env.run(parent.id, "PARENT: go")
    assert done["stopReason"] == "aborted"
    [child] = await env.children(parent.id)
    path = await env.path(parent.id)
    [failed] = [e.payload for e in path if e.type == "subagent.failed"]
    assert failed["childSessionId"] == child.id and failed["interrupted"] is True
    assert failed["toolCallId"] == "toolu_X"
    [spawned] = [e.payload for e in path if e.type == "subagent.spawned"]
    assert spawned["childSessionId"] == child.id
    [result] = [e.payload for e in path if e.type == "tool.result"]
    assert result["isError"] and result["interrupted"]
    assert "CHILD" not in env.routes.requests  # the child never called the LLM
    assert [e.type for e in await env.path(child.id)] == ["session.start"]
    assert not env.orch.is_running(child.id)
    assert_event_order(path)


async def test_aborting_the_parent_aborts_every_child_running_in_parallel(env: Env) -> None:
    env.routes.add(
        "PARENT",
        Response([task("one", "CHILD-1: wait", "toolu_1"),
                  ToolUse("Read", {"file_path": "r.txt"}, id="toolu_R"),
                  task("two", "CHILD-2: wait", "toolu_2"),
                  task("three", "CHILD-3: wait", "toolu_3")]),
    )  # fmt: skip
    (env.workdir / "r.txt").write_text("read between the tasks\n")
    for key in ("CHILD-1", "CHILD-2", "CHILD-3"):
        env.routes.add(key, Response([ToolUse("WaitFor", {"key": "never"})]))
    parent = await env.session()
    await env.orch.send_message(parent.id, "PARENT: three at once")
    with anyio.fail_after(15):  # all three children are in their tool
        while len([d for m, _s, d in env.notes if m == "agent.tool_start"
                   and d.get("name") == "WaitFor"]) < 3:  # fmt: skip
            await anyio.sleep(0.01)
    children = await env.children(parent.id)
    assert len(children) == 3 and all(env.orch.is_running(c.id) for c in children)
    assert await env.orch.abort(parent.id) is True
    assert not any(env.orch.is_running(c.id) for c in children)
    path = await env.path(parent.id)
    results = [e.payload for e in path if e.type == "tool.result"]
    assert [r["toolCallId"] for r in results] == ["toolu_1", "toolu_R", "toolu_2", "toolu_3"]
    read = results.pop(1)  # it had finished: its result stands
    assert not read["isError"] and "read between the tasks" in read["content"]
    assert all(r["isError"] and r["interrupted"] for r in results)
    failed = [e.payload for e in path if e.type == "subagent.failed"]
    assert {f["childSessionId"] for f in failed} == {c.id for c in children}
    assert all(f["interrupted"] for f in failed)
    for child in children:
        assert [e.type for e in await env.path(child.id)][-2:] == [
            "notification.interrupted", "stream.turn_end"
        ]  # fmt: skip
    assert_event_order(path)


@pytest.mark.parametrize("subagent_settings", [SubagentSettings(max_parallel=2)])
async def test_at_most_max_parallel_children_run_at_once(env: Env) -> None:
    env.routes.add(
        "PARENT",
        Response([task("one", "CHILD-1: go", "toolu_1"), task("two", "CHILD-2: go", "toolu_2"),
                  task("three", "CHILD-3: go", "toolu_3")]),
        Response([Text("All three reported.")]),
    )  # fmt: skip
    for n in (1, 2, 3):
        env.routes.add(
            f"CHILD-{n}",
            Response([ToolUse("WaitFor", {"key": f"g{n}"})]),
            Response([Text(f"report {n}")]),
        )

    def waiting() -> int:
        return len([d for m, _s, d in env.notes if m == "agent.tool_start"
                    and d.get("name") == "WaitFor"])  # fmt: skip

    parent = await env.session()
    await env.orch.send_message(parent.id, "PARENT: three, two at a time")
    with anyio.fail_after(15):
        while waiting() < 2:
            await anyio.sleep(0.01)
    await anyio.sleep(0.2)  # room for a third to start, were the limit not kept
    assert waiting() == 2 and len(await env.children(parent.id)) == 2
    env.wait.gate("g1").set()  # a slot frees: the third child starts
    with anyio.fail_after(15):
        while waiting() < 3:
            await anyio.sleep(0.01)
    env.wait.gate("g2").set()
    env.wait.gate("g3").set()
    done = await env.wait_for(parent.id, "agent.complete")
    assert done[-1]["stopReason"] == "end_turn"
    results = tool_results(env.routes.last("PARENT"))
    assert [r["tool_use_id"] for r in results] == ["toolu_1", "toolu_2", "toolu_3"]
    assert [f"report {n}" in result_text(r) for n, r in enumerate(results, 1)] == [True] * 3


# -- failures -------------------------------------------------------------------------------


async def test_a_child_whose_provider_fails_gives_the_parent_an_error_result(env: Env) -> None:
    env.routes.add(
        "PARENT",
        Response([task("doomed", "CHILD: try", "toolu_F")]),
        Response([Text("The sub-agent failed; telling the user.")]),
    )
    env.routes.add("CHILD", Response(status=400, error_type="invalid_request_error",
                                     message="prompt is too long: 999999 tokens"))  # fmt: skip
    parent = await env.session()
    done = await env.run(parent.id, "PARENT: delegate")
    assert done["stopReason"] == "end_turn"
    [result] = tool_results(env.routes.last("PARENT"))
    assert result["is_error"] is True
    assert "prompt is too long" in result_text(result)
    [child] = await env.children(parent.id)
    assert child.id in result_text(result)
    [failed] = [e.payload for e in await env.path(parent.id) if e.type == "subagent.failed"]
    assert "prompt is too long" in failed["error"] and failed["stopReason"] == "error"
    assert failed["interrupted"] is False
    assert "error.provider" in [e.type for e in await env.path(child.id)]


async def test_bad_task_calls_are_error_results_not_crashes(env: Env) -> None:
    other = await env.session()
    env.routes.add(
        "PARENT",
        Response([
            task("x", "CHILD: a", "toolu_1", subagent_type="no-such-agent"),
            task("y", "CHILD: b", "toolu_2", session_id=other.id),
            task("z", "CHILD: c", "toolu_3", session_id="sess_missing"),
        ]),
        Response([Text("ok")]),
    )  # fmt: skip
    parent = await env.session()
    await env.run(parent.id, "PARENT: go")
    results = [result_text(r) for r in tool_results(env.routes.last("PARENT"))]
    assert "Unknown subagent_type 'no-such-agent'" in results[0]
    assert "general-purpose" in results[0]
    assert "not a sub-agent of this session" in results[1]
    assert "No session 'sess_missing'" in results[2]
    assert await env.children(parent.id) == []
    # The calls run at once, so each failure is recorded as it happens (the results
    # above are what must follow the call order).
    failed = [e.payload for e in await env.path(parent.id) if e.type == "subagent.failed"]
    assert sorted(f["toolCallId"] for f in failed) == ["toolu_1", "toolu_2", "toolu_3"]


# -- continuing a child ---------------------------------------------------------------------


async def test_task_with_session_id_continues_an_earlier_child(env: Env) -> None:
    env.routes.add(
        "PARENT",
        Response([task("count", "CHILD: remember the number 41", "toolu_1")]),
        Response([Text("It remembered.")]),
    )
    env.routes.add("CHILD", Response([Text("Remembered 41.")]))
    parent = await env.session()
    await env.run(parent.id, "PARENT: first")
    [child] = await env.children(parent.id)

    env.routes.add(
        "PARENT",
        Response([task("follow-up", "Add one to it.", "toolu_2", session_id=child.id)]),
        Response([Text("42.")]),
    )
    env.routes.add("CHILD", Response([Text("41 + 1 = 42.")]))
    await env.run(parent.id, "ask it again")
    assert [c.id for c in await env.children(parent.id)] == [child.id]  # no new child
    request = env.routes.last("CHILD")
    texts = str(request["messages"])
    assert "remember the number 41" in texts and "Remembered 41." in texts
    assert "Add one to it." in texts and len(request["messages"]) == 3
    results = tool_results(env.routes.last("PARENT"))
    assert "41 + 1 = 42." in result_text(results[0])
    spawned = [e.payload for e in await env.path(parent.id) if e.type == "subagent.spawned"]
    assert [s["resumed"] for s in spawned] == [False, True]
    completed = [e.payload for e in await env.path(parent.id) if e.type == "subagent.completed"]
    assert completed[-1]["turns"] == 1 and completed[-1]["usage"]["inputTokens"] == 10
    child_after = await env.store.get_session(child.id)
    assert child_after.turn_count == 2 and child_after.input_tokens == 20


# -- depth ------------------------------------------------------------------------------------


async def test_children_do_not_get_task_and_cannot_call_it(env: Env) -> None:
    env.routes.add(
        "PARENT",
        Response([task("nest", "CHILD: try to nest", "toolu_1")]),
        Response([Text("done")]),
    )
    env.routes.add(
        "CHILD",
        Response([task("deeper", "DEEP: never", "toolu_2")]),
        Response([Text("I could not nest.")]),
    )
    parent = await env.session()
    await env.run(parent.id, "PARENT: nest")
    request = env.routes.last("CHILD")
    assert "Task" not in tool_names(request)
    [refusal] = tool_results(request)
    assert refusal["is_error"] and "Unknown tool 'Task'" in result_text(refusal)
    [child] = await env.children(parent.id)
    assert await env.children(child.id) == []


@pytest.mark.parametrize("subagent_settings", [SubagentSettings(max_depth=2)])
async def test_a_deeper_limit_lets_children_nest_once_more(env: Env) -> None:
    env.routes.add("PARENT", Response([task("nest", "CHILD: nest once", "toolu_1")]),
                   Response([Text("done")]))  # fmt: skip
    env.routes.add("CHILD", Response([task("deeper", "DEEP: hi", "toolu_2")]),
                   Response([Text("nested")]))  # fmt: skip
    env.routes.add("DEEP: ", Response([Text("hello from below")]))
    parent = await env.session()
    await env.run(parent.id, "PARENT: nest")
    assert "Task" in tool_names(env.routes.last("CHILD"))
    assert "Task" not in tool_names(env.routes.last("DEEP: "))
    [child] = await env.children(parent.id)
    [grandchild] = await env.children(child.id)
    descendants = await env.store.get_descendant_sessions(parent.id)
    assert [s.id for s in descendants] == [child.id, grandchild.id]
    assert "hello from below" in result_text(tool_results(env.routes.last("CHILD"))[0])
    # Search over the parent and its descendants finds the grandchild's words.
    hits = await env.store.search("below", session_id=parent.id, include_descendants=True)
    assert grandchild.id in {h.session_id for h in hits}
    assert await env.store.search("below", session_id=parent.id) == []


# -- agent definition files -------------------------------------------------------------------

REVIEWER = """\
---
name: reviewer
description: Reads code and reports problems; never changes anything.
tools: Read, Grep
model: haiku
maxTurns: 3
color: blue
---
You are REVIEWER-PROMPT: read, never write.
"""


async def test_a_definition_file_in_claude_codes_format_limits_the_childs_tools(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    agents = env.workdir / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text(REVIEWER)
    (agents / "broken.md").write_text("---\nname: broken\n")  # no closing line
    (agents / "nameless.md").write_text("---\ndescription: no name\n---\nbody\n")
    trust_folder(env.home, env.workdir)
    env.routes.add(
        "PARENT",
        Response([task("review", "CHILD: review a.txt", "toolu_1", subagent_type="reviewer")]),
        Response([Text("Reviewed.")]),
    )
    env.routes.add(
        "CHILD",
        Response([ToolUse("Write", {"file_path": "evil.txt", "content": "x"}),
                  ToolUse("Bash", {"command": "touch evil2.txt"})]),
        Response([Text("I was not allowed to write.")]),
    )  # fmt: skip
    parent = await env.session()
    with caplog.at_level(logging.WARNING, logger="tron_server.agent.subagents"):
        await env.run(parent.id, "PARENT: review")
    task_spec = next(t for t in env.routes.last("PARENT")["tools"] if t["name"] == "Task")
    assert "- reviewer: Reads code and reports problems" in task_spec["description"]
    assert "broken" not in task_spec["description"]
    reasons = " ".join(r.getMessage() for r in caplog.records)
    assert "broken.md: the front matter has no closing '---' line" in reasons
    assert "nameless.md: 'name' is required" in reasons

    first, second = env.routes.requests["CHILD"]
    assert tool_names(first) == ["Read"]  # Grep is not in this server's tools
    assert first["model"] == "claude-haiku-4-5"
    assert "REVIEWER-PROMPT" in str(first["system"])
    refusals = tool_results(second)
    assert all(r["is_error"] and "Unknown tool" in result_text(r) for r in refusals)
    assert not (env.workdir / "evil.txt").exists() and not (env.workdir / "evil2.txt").exists()
    [child] = await env.children(parent.id)
    assert child.model == "claude-haiku-4-5"
    root = await env.store.get_event(child.root_event_id)
    assert root is not None and root.payload["tools"] == ["Read"]
    assert root.payload["maxTurns"] == 3 and root.payload["subagentType"] == "reviewer"

    # A user messaging the child directly gets the same limits.
    env.routes.add("CHILD", Response([Text("still only Read")]))
    await env.run(child.id, "and now?")
    assert tool_names(env.routes.last("CHILD")) == ["Read"]


async def test_project_tron_agents_override_claude_and_home_ones(env: Env) -> None:
    for folder, prompt in [
        (env.home / "agents", "HOME-PROMPT"),
        (env.workdir / ".claude" / "agents", "CLAUDE-PROMPT"),
        (env.workdir / ".tron" / "agents", "TRON-PROMPT"),
    ]:
        folder.mkdir(parents=True)
        (folder / "helper.md").write_text(
            f"---\nname: helper\ndescription: helps\ntools: [Read, Bash]\n---\n{prompt}\n"
        )
    trust_folder(env.home, env.workdir)
    env.routes.add(
        "PARENT",
        Response([task("h", "CHILD: help", "toolu_1", subagent_type="helper")]),
        Response([Text("ok")]),
    )
    env.routes.add("CHILD", Response([Text("helped")]))
    parent = await env.session()
    await env.run(parent.id, "PARENT: go")
    request = env.routes.last("CHILD")
    assert "TRON-PROMPT" in str(request["system"]) and "CLAUDE-PROMPT" not in str(request["system"])
    assert tool_names(request) == ["Read", "Bash"]
