"""The schemas real MCP servers publish (server-everything, mcp-server-time) are accepted
by every adapter's request builder: each validates against its provider's SDK request type
and keeps the provider's rules (:func:`tests.llm.test_tool_schemas.check_schema`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.llm.test_tool_schemas import check_schema, schema_nodes
from tron_server.mcp import McpOptions, parse_server
from tron_server.mcp.connection import Connection


def _list(configs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    async def main() -> list[dict[str, Any]]:
        schemas: list[dict[str, Any]] = []
        async with anyio.create_task_group() as tg:
            for n, raw in enumerate(configs):
                connection = Connection(parse_server(f"s{n}", raw, "user", "test"),
                                        root=Path.cwd(), options=McpOptions())  # fmt: skip
                connection.bind(tg)
                assert await connection.ensure(), connection.describe_error()
                assert connection.lists is not None
                schemas += [t["inputSchema"] for t in connection.lists.tools]
                await connection.close()
        return schemas

    return anyio.run(main)


@pytest.fixture(scope="module")
def published(everything: Path, time_program: Path) -> list[dict[str, Any]]:
    schemas = _list([{"command": "node", "args": [str(everything), "stdio"]},
                     {"command": str(time_program)}])  # fmt: skip
    assert len(schemas) > 10
    return schemas


def test_every_published_schema_is_accepted(published: list[dict[str, Any]]) -> None:
    for schema in published:
        sent = check_schema(schema)
        # These are well-formed object schemas: Anthropic and OpenAI get them unchanged.
        assert sent["anthropic"] == schema


SLOW = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]


@settings(max_examples=30, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_published_schemas_within_any_other_schema(
    published: list[dict[str, Any]], data: st.DataObject
) -> None:
    inner = data.draw(st.sampled_from(published))
    around = data.draw(schema_nodes)
    check_schema({"type": "object", "properties": {"inner": inner, "other": around},
                  "required": ["inner"]})  # fmt: skip
