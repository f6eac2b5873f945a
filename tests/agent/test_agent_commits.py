"""How many commits a tool step costs (issue 29): the reply and its calls in one, before
the tool runs; an in-code hook's records, the result, the turn's end and the next turn's
start in one, after it. What waits for the next commit is never lost (the run's end, a
turn limit, an abort) and the order of the events is reference 004's."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from tests.agent.harness import Harness, assert_event_order
from tests.support.scripted_llm import Response, Text, ToolUse, Usage
from tron_server.agent import compaction
from tron_server.agent.turn import AgentRun
from tron_server.hooks.base import HookContext, HookDecision
from tron_server.tools.base import Tool, ToolContext, ToolResult

pytestmark = pytest.mark.anyio


class NoteParams(BaseModel):
    text: str


class NoteTool(Tool[NoteParams]):
    """Returns its text and records nothing of its own."""

    name = "Note"
    description = "Return the text."
    Params = NoteParams

    async def run(self, params: NoteParams, ctx: ToolContext) -> ToolResult:
        return ToolResult(content="noted: " + params.text * 40)


@pytest.fixture
async def counted(h: Harness, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[list[list[str]]]:
    """The event types of every commit made through the store, in order."""
    h.orch.tools.register(NoteTool())
    commits: list[list[str]] = []
    append, append_many = h.store.append, h.store.append_many

    async def one(session_id: str, type: str, payload: dict[str, Any], **kw: Any) -> Any:
        commits.append([type])
        return await append(session_id, type, payload, **kw)

    async def many(session_id: str, drafts: list[dict[str, Any]], **kw: Any) -> Any:
        commits.append([d["type"] for d in drafts])
        return await append_many(session_id, drafts, **kw)

    with_state = h.store.append_many_and_state

    async def many_and_state(session_id: str, drafts: list[dict[str, Any]], **kw: Any) -> Any:
        commits.append([d["type"] for d in drafts])
        return await with_state(session_id, drafts, **kw)

    monkeypatch.setattr(h.store, "append", one)
    monkeypatch.setattr(h.store, "append_many", many)
    monkeypatch.setattr(h.store, "append_many_and_state", many_and_state)
    yield commits


def _code_hook(h: Harness) -> None:
    """An in-code PreToolUse hook, as the guardrails are (its records may wait)."""
    engine = h.orch.lifecycle.hooks
    assert engine is not None

    async def allow(ctx: HookContext) -> HookDecision:
        return HookDecision(action="allow")

    engine.register("audit", "PreToolUse", allow)


async def _run(h: Harness, session_id: str, content: str, **kwargs: Any) -> dict[str, Any]:
    """``h.run`` with room for a loaded machine (several model calls, tools and commits)."""
    before = len(h.of(session_id, "agent.complete"))
    await h.orch.send_message(session_id, content, **kwargs)
    return (await h.wait_for(session_id, "agent.complete", before + 1, timeout=90))[-1]


def _steps(n: int) -> list[Response]:
    calls = [Response([ToolUse("Note", {"text": f"t{i}"})], usage=Usage(100 + i, 7))
             for i in range(n)]  # fmt: skip
    return [*calls, Response([Text("done")])]


async def test_a_tool_step_is_two_commits(h: Harness, counted: list[list[str]]) -> None:
    _code_hook(h)
    h.llm.add(*_steps(3))
    s = await h.session()
    counted.clear()
    done = await _run(h, s.id, "go")
    assert done["stopReason"] == "end_turn" and done["turns"] == 4
    step_call = ["message.assistant", "tool.call"]
    step_rest = ["hook.triggered", "hook.completed", "tool.result", "stream.turn_end",
                 "stream.turn_start"]  # fmt: skip
    assert counted == [
        ["message.user", "stream.turn_start"],
        step_call, step_rest,
        step_call, step_rest,
        step_call, step_rest,
        ["message.assistant", "stream.turn_end"],
    ]  # fmt: skip
    path = await h.path(s.id)
    assert_event_order(path)
    assert [e.type for e in path].count("hook.completed") == 3


async def test_what_waits_is_committed_when_the_turn_limit_stops_the_run(
    h: Harness, counted: list[list[str]]
) -> None:
    _code_hook(h)
    h.llm.add(*_steps(2))
    s = await h.session()
    done = await _run(h, s.id, "go", max_turns=1)
    assert done["stopReason"] == "max_turns"
    types = await h.types(s.id)
    assert types[-4:] == ["hook.triggered", "hook.completed", "tool.result", "stream.turn_end"]
    assert_event_order(await h.path(s.id))
    assert h.orch.lifecycle.hooks is not None
    # Between runs nothing waits: a later hook record is committed at once.
    writer = h.orch._writer(s.id)
    assert writer.deferred == 0


async def test_an_abort_in_the_next_model_call_keeps_the_last_result(h: Harness) -> None:
    h.llm.add(Response([ToolUse("Echo", {"text": "a"})]), Response([Text("slow")], hang=True))
    s = await h.session()
    await h.orch.send_message(s.id, "go")
    await h.wait_for(s.id, "agent.turn_start", 2, timeout=90)
    await h.orch.abort(s.id)
    await h.wait_for(s.id, "agent.complete", timeout=90)
    path = await h.path(s.id)
    types = [e.type for e in path]
    assert types.count("tool.result") == 1 and types[-1] == "stream.turn_end"
    assert_event_order(path)


async def test_the_loops_context_use_is_the_stores(
    h: Harness, counted: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Auto-compaction's check no longer reads the store before every turn: the loop's own
    figure must be the one the store gives for the same history."""
    seen: list[tuple[int, int]] = []

    async def compare(run: AgentRun) -> None:
        mine = compaction.run_context_usage(run)
        if mine is None:
            return
        await run.writer.flush()
        stored = await compaction.context_usage(h.store, run.session_id)
        seen.append((mine.used_tokens, stored.used_tokens))
        assert (mine.model, mine.context_window) == (stored.model, stored.context_window)

    h.orch._deps.before_turn = compare
    h.llm.add(*_steps(3))
    s = await h.session()
    await _run(h, s.id, "go")
    assert len(seen) == 3
    assert all(a == b for a, b in seen), seen
    assert seen[0][0] > 107  # the counted tokens and the result's estimate


async def test_auto_compaction_sees_the_last_result(tmp_path: Path, h: Harness) -> None:
    """A compaction between steps reads the history: the deferred result is in it."""
    h.orch.auto_compact_threshold = 0.5
    h.orch.tools.register(NoteTool())
    huge = Usage(input_tokens=150_000, output_tokens=10)
    h.llm.add(
        Response([ToolUse("Note", {"text": "x"})], usage=huge),
        Response([Text("Summary of the work.")]),  # the compaction's own call
        Response([Text("done")]),
    )
    s = await h.session()
    await _run(h, s.id, "go")
    types = await h.types(s.id)
    assert "compact.summary" in types
    summary_call = h.llm.requests[1]
    assert "noted: x" in str(summary_call["messages"])
