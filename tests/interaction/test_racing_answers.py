"""Answers racing each other to one approval (issue 26, item 5): over a real server and its
store, several clients answer the same request at once, round after round. Exactly one
answer is accepted and applied; every other one gets -32004 "already answered", never
-32003 (agent busy) nor another refusal."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.rpc import complete, new_session, of_type, wait_for
from tests.support.scripted_llm import Response, ScriptedLLM, Text, ToolUse
from tests.support.server import RunningServer
from tron_server.client import RpcCallError, TronClient

pytestmark = pytest.mark.anyio

ROUNDS = 12
RACERS = 4


async def answer(client: TronClient, params: dict[str, Any], into: list[tuple[str, Any]]) -> None:
    """``agent.respond`` with ``params``; (its decision, the result or the error) into ``into``."""
    try:
        into.append((params["answer"], await client.call("agent.respond", params)))
    except RpcCallError as error:
        into.append((params["answer"], error))


async def test_racing_answers_accept_one_and_refuse_the_rest_as_already_answered(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    rng = random.Random(26)
    for n in range(ROUNDS):
        llm.add(
            Response([ToolUse("Bash", {"command": f"echo round{n}"}, id=f"t_{n}")]),
            Response([Text("Done.")]),
        )
    async with server.connect() as a, server.connect() as b:
        sid = await new_session(a, tmp_path)
        await b.subscribe(sid)
        stream = a.notifications(session_id=sid)
        clients = [a, b]
        chosen: dict[str, str] = {}
        for n in range(ROUNDS):
            await a.call("agent.message", {"sessionId": sid, "content": f"round {n}"})
            asked = await wait_for(stream, "agent.approval")
            request = asked.data["requestId"]
            outcomes: list[tuple[str, Any]] = []
            async with anyio.create_task_group() as group:
                for i in range(RACERS):
                    decision = rng.choice(["allow", "deny"])
                    params = {"sessionId": sid, "requestId": request, "answer": decision}
                    group.start_soon(answer, clients[i % len(clients)], params, outcomes)
            accepted = [(d, r) for d, r in outcomes if not isinstance(r, RpcCallError)]
            refused = [r for _, r in outcomes if isinstance(r, RpcCallError)]
            assert len(accepted) == 1, outcomes
            assert accepted[0][1]["accepted"] is True
            for error in refused:
                assert error.code == -32004, (n, error.code, error.message)
                assert "already answered" in error.message
            chosen[f"t_{n}"] = accepted[0][0]
            await complete(stream)

        events = await a.sync(sid)
        resolved = of_type(events, "interaction.resolved")
        assert len(resolved) == ROUNDS
        assert {r["toolCallId"]: r["decision"] for r in resolved} == chosen
        results = {r["toolCallId"]: r for r in of_type(events, "tool.result")}
        for call, decision in chosen.items():
            ran = f"round{call[2:]}" in str(results[call]["content"])
            assert ran is (decision == "allow"), (call, decision, results[call])
