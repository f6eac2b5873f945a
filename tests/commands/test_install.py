"""The slash commands install themselves on the method registry: the methods know
nothing of them (no import, no lazy lookup), the app's registry has them."""

from __future__ import annotations

from typing import Any

import pytest

from tron_server import commands, methods
from tron_server.app import build_registry
from tron_server.rpc import MethodRegistry, RpcContext


def test_the_methods_alone_have_no_commands() -> None:
    bare = MethodRegistry()
    methods.register(bare)
    full = build_registry()
    assert "agent.message" in bare and "command.list" not in bare
    assert set(full.names()) == set(bare.names()) | {"command.list"}
    routed, plain = full.get("agent.message"), bare.get("agent.message")
    assert routed is not None and plain is not None
    assert routed.handler is not plain.handler  # the router stands in front
    assert (routed.params, routed.needs, routed.description) == (
        plain.params,
        plain.needs,
        plain.description,
    )


def test_commands_need_agent_message_registered_first() -> None:
    with pytest.raises(ValueError, match=r"agent\.message"):
        commands.register(MethodRegistry())


@pytest.mark.anyio
async def test_wrap_puts_the_wrapper_in_front_of_the_handler() -> None:
    registry = MethodRegistry()
    calls: list[str] = []

    @registry.method("x.y", methods.agent.SessionParams, description="d", needs=())
    async def handler(ctx: RpcContext, p: Any) -> str:
        calls.append("handler")
        return "inner"

    def wrapper(inner: Any) -> Any:
        async def outer(ctx: RpcContext, p: Any) -> str:
            calls.append("wrapper")
            return f"outer({await inner(ctx, p)})"

        return outer

    registry.wrap("x.y", wrapper)
    spec = registry.get("x.y")
    assert spec is not None
    params = spec.parse_params({"sessionId": "s"})
    assert await spec.handler(None, params) == "outer(inner)"  # type: ignore[arg-type]
    assert calls == ["wrapper", "handler"]
