"""The harness of the agent-runtime tests (the ``h`` fixture is in tests/agent/conftest.py).

A real SQLite store in ``tmp_path``, the scripted LLM on a local port, the real
Anthropic adapter pointed at it, test tools, and an ``emit`` that collects the
notifications. ``assert_event_order`` checks reference 004's recording order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel

from tests.support.scripted_llm import Response, ScriptedLLM, Text, ToolUse
from tron_events import AsyncEventStore, Event, Session
from tron_server.agent import Orchestrator
from tron_server.tools.base import Tool, ToolContext, ToolResult

MODEL = "claude-sonnet-4-5"


async def no_sleep(_seconds: float) -> None:
    return None


class EchoParams(BaseModel):
    text: str


class EchoTool(Tool[EchoParams]):
    """Returns its text; records a file.read as a real tool would."""

    name = "Echo"
    description = "Echo the text back."
    Params = EchoParams

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def run(self, params: EchoParams, ctx: ToolContext) -> ToolResult:
        self.calls.append(params.text)
        await ctx.record(
            "file.read", {"path": f"echo/{params.text}", "toolCallId": ctx.tool_call_id}
        )
        return ToolResult(content=f"echo: {params.text}")


class SlowParams(BaseModel):
    seconds: float = 30.0


class SlowTool(Tool[SlowParams]):
    """Streams a line of output, then sleeps (cancellable); records when it was cancelled."""

    name = "Slow"
    description = "Wait."
    Params = SlowParams

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.cancelled = False

    async def run(self, params: SlowParams, ctx: ToolContext) -> ToolResult:
        ctx.on_output("working...\n")
        self.started.set()
        try:
            await anyio.sleep(params.seconds)
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise
        return ToolResult(content="slept")


@dataclass
class Harness:
    store: AsyncEventStore
    llm: ScriptedLLM
    orch: Orchestrator
    tmp: Path
    echo: EchoTool
    slow: SlowTool
    notes: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)

    async def session(self, **kwargs: Any) -> Session:
        options: dict[str, Any] = {
            "working_directory": str(self.tmp), "model": MODEL, "provider": "anthropic"
        }  # fmt: skip
        return await self.store.create_session(**(options | kwargs))

    def of(self, session_id: str, method: str | None = None) -> list[dict[str, Any]]:
        return [d for m, s, d in self.notes if s == session_id and (method is None or m == method)]

    def methods(self, session_id: str) -> list[str]:
        return [m for m, s, _ in self.notes if s == session_id]

    async def wait_for(
        self, session_id: str, method: str, count: int = 1, timeout: float = 10.0
    ) -> list[dict[str, Any]]:
        with anyio.fail_after(timeout):
            while len(self.of(session_id, method)) < count:
                await anyio.sleep(0.01)
        return self.of(session_id, method)

    async def run(self, session_id: str, content: str, **kwargs: Any) -> dict[str, Any]:
        """Send a message and wait for its agent.complete."""
        before = len(self.of(session_id, "agent.complete"))
        await self.orch.send_message(session_id, content, **kwargs)
        return (await self.wait_for(session_id, "agent.complete", before + 1))[-1]

    async def path(self, session_id: str) -> list[Event]:
        session = await self.store.get_session(session_id)
        return await self.store.get_ancestors(session.head_event_id)

    async def types(self, session_id: str) -> list[str]:
        return [e.type for e in await self.path(session_id)]

    def nested_rules(self) -> Path:
        """Rules files in the working directory and in its ``pkg`` folder (loaded when
        ``pkg/mod.py`` is read, which the first of the scripted replies added does)."""
        (self.tmp / "AGENTS.md").write_text("Always answer in French.\n")
        sub = self.tmp / "pkg"
        sub.mkdir()
        (sub / "AGENTS.md").write_text("In pkg, never use tabs.\n")
        (sub / "mod.py").write_text("x = 1\n")
        self.llm.add(
            Response([ToolUse("Read", {"file_path": str(sub / "mod.py")}, id="toolu_r")]),
            Response([Text("Lu.")]),
        )
        return sub


def assert_event_order(events: list[Event]) -> None:
    """Reference 004 / DESIGN §4.3: each assistant message with tool_use blocks is
    followed by a tool.call per block (in order), then a tool.result per block (in
    order), before the next message or turn end; every turn start has its end."""
    types = [e.type for e in events]
    for i, event in enumerate(events):
        if event.type != "message.assistant":
            continue
        ids = [b["id"] for b in event.payload["content"] if b.get("type") == "tool_use"]
        if not ids:
            continue
        rest = [e for e in events[i + 1 :] if e.type in ("tool.call", "tool.result")]
        calls = [e.payload["toolCallId"] for e in rest if e.type == "tool.call"][: len(ids)]
        assert calls == ids, f"tool.call order after {event.id}: {calls} != {ids}"
        tail = events[i + 1 :]
        first_result = next(j for j, e in enumerate(tail) if e.type == "tool.result")
        last_call = max(j for j, e in enumerate(tail[: first_result + 2 * len(ids)])
                        if e.type == "tool.call" and e.payload["toolCallId"] in ids)  # fmt: skip
        assert last_call < first_result, "a tool.result came before all tool.calls"
        results = [e.payload["toolCallId"] for e in tail if e.type == "tool.result"][: len(ids)]
        assert results == ids, f"tool.result order after {event.id}: {results} != {ids}"
        end = next(j for j, e in enumerate(tail) if e.type in ("stream.turn_end", "message.user"))
        got = {e.payload["toolCallId"] for e in tail[:end] if e.type == "tool.result"}
        assert got == set(ids), "every tool_use has its result before the turn ends"
    starts = [e.payload["turn"] for e in events if e.type == "stream.turn_start"]
    ends = [e.payload["turn"] for e in events if e.type == "stream.turn_end"]
    assert starts == ends, f"turn starts {starts} vs ends {ends} ({types})"
