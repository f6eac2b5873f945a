"""The tool contract: schemas, argument validation, failures as results, cancellation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel, ConfigDict

from tests.tools.conftest import Recorder
from tron_events import AsyncEventStore
from tron_server.tools import Tool, ToolContext, ToolRegistry, ToolResult, default_tools

pytestmark = pytest.mark.anyio


def _walk(node: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if isinstance(node, dict):
        out.append(node)
        for key, value in node.items():
            if key == "properties":
                for sub in value.values():
                    out.extend(_walk(sub))
            else:
                out.extend(_walk(value))
    elif isinstance(node, list):
        for item in node:
            out.extend(_walk(item))
    return out


def test_default_tools_and_clean_schemas() -> None:
    registry = default_tools()
    assert registry.names() == ["Read", "Write", "Edit", "Bash", "Grep", "Glob", "TodoWrite"]
    for spec in registry.specs():
        schema = spec.input_schema
        assert schema["type"] == "object"
        assert spec.description
        text = json.dumps(schema)
        assert "$ref" not in text and "$defs" not in text
        for node in _walk(schema):
            assert "title" not in node
            if node.get("type") == "object":
                assert node["additionalProperties"] is False
    grep = registry.get("Grep")
    assert grep is not None
    props = grep.spec().input_schema["properties"]
    assert {"-A", "-B", "-C", "case_insensitive", "head_limit", "output_mode"} <= set(props)
    read = registry.get("Read")
    assert read is not None
    assert read.spec().input_schema["required"] == ["file_path"]
    assert read.spec().input_schema["properties"]["offset"] == {
        "description": "Line number to start reading at (1-based).",
        "minimum": 1,
        "type": "integer",
    }


async def test_invalid_arguments_list_every_field(ctx: ToolContext) -> None:
    registry = default_tools()
    result = await registry.execute("Read", {"offset": 0, "bogus": 1}, ctx)
    assert result.is_error
    assert isinstance(result.content, str)
    assert "Invalid arguments for tool Read" in result.content
    assert "- file_path: Field required" in result.content
    assert "- offset:" in result.content and "greater than or equal to 1" in result.content
    assert "- bogus: unknown parameter" in result.content

    result = await registry.execute("Bash", {"command": "true", "timeout": 601}, ctx)
    assert result.is_error and "timeout" in str(result.content)
    result = await registry.execute("Read", "not a dict", ctx)  # type: ignore[arg-type]
    assert result.is_error and "JSON object" in str(result.content)


async def test_unknown_tool(ctx: ToolContext) -> None:
    result = await default_tools().execute("Nope", {}, ctx)
    assert result.is_error
    assert "Unknown tool 'Nope'" in str(result.content) and "Read" in str(result.content)


class _BoomParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    what: str = "boom"


class _Boom(Tool[_BoomParams]):
    name = "Boom"
    description = "fails"
    Params = _BoomParams

    async def run(self, params: _BoomParams, ctx: ToolContext) -> ToolResult:
        if params.what == "sleep":
            await anyio.sleep(30)
        raise KeyError(params.what)


async def test_unexpected_exception_becomes_an_error_result(ctx: ToolContext) -> None:
    result = await ToolRegistry([_Boom()]).execute("Boom", {}, ctx)
    assert result.is_error
    assert result.content == "Tool Boom failed: KeyError: 'boom'"


async def test_cancellation_propagates(ctx: ToolContext) -> None:
    registry = ToolRegistry([_Boom()])
    finished: list[ToolResult] = []
    with anyio.move_on_after(0.1) as scope:
        finished.append(await registry.execute("Boom", {"what": "sleep"}, ctx))
    assert scope.cancelled_caught
    assert finished == []


async def test_todo_write_recorded(ctx: ToolContext, recorder: Recorder) -> None:
    todos = [
        {"content": "Read the code", "status": "completed"},
        {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
        {"content": "Run the tests", "status": "pending"},
    ]
    result = await default_tools().execute("TodoWrite", {"todos": todos}, ctx)
    assert not result.is_error
    assert result.content.startswith(  # type: ignore[union-attr]
        "Todo list updated: 3 items (1 completed, 1 in progress, 1 pending)."
    )
    assert "[~] Fix the bug" in str(result.content)
    assert recorder.events == [("todo.write", {"todos": todos, "toolCallId": "toolu_1"})]
    bad = await default_tools().execute(
        "TodoWrite", {"todos": [{"content": "x", "status": "done"}]}, ctx
    )
    assert bad.is_error and "todos.0.status" in str(bad.content)


async def test_recorded_payloads_are_accepted_by_the_event_store(
    tmp_path: Path, workdir: Path
) -> None:
    """What the tools record appends as-is to a real session (file.* and todo.write)."""
    store = await AsyncEventStore.open(f"sqlite:///{tmp_path / 'tools.db'}")
    try:
        session = await store.create_session(
            working_directory=str(workdir), model="m", provider="anthropic"
        )

        async def record(event_type: str, payload: dict[str, Any]) -> None:
            await store.append(session.id, event_type, payload)

        ctx = ToolContext(session.id, workdir, "toolu_9", record=record)
        tools = default_tools()
        assert not (
            await tools.execute("Write", {"file_path": "a.txt", "content": "x\n"}, ctx)
        ).is_error
        assert not (await tools.execute("Read", {"file_path": "a.txt"}, ctx)).is_error
        edit = {"file_path": "a.txt", "old_string": "x", "new_string": "y"}
        assert not (await tools.execute("Edit", edit, ctx)).is_error
        todos = {"todos": [{"content": "t", "status": "pending"}]}
        assert not (await tools.execute("TodoWrite", todos, ctx)).is_error
        events = await store.get_events(session.id)
        assert [e.type for e in events][1:] == [
            "file.write",
            "file.read",
            "file.edit",
            "todo.write",
        ]
        assert events[1].payload["path"] == str(workdir / "a.txt")
        assert events[3].payload["contentHashBefore"] == events[1].payload["contentHash"]
    finally:
        await store.aclose()
