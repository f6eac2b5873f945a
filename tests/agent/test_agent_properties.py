"""Property: whatever the model does (text, tool calls good and bad, several per
message, provider failures, aborts mid-stream), every request the runtime sends is a
valid history, the recorded events follow reference 004's order, and the session's
reconstruction stays valid."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.agent.harness import Harness, assert_event_order
from tests.support.scripted_llm import Response, Text, ToolUse, error_response
from tron_events.validate import validate_history

pytestmark = pytest.mark.anyio

tool_calls = st.one_of(
    st.builds(lambda t: ToolUse("Echo", {"text": t}), st.text("abc", min_size=1, max_size=3)),
    st.just(ToolUse("Echo", {"wrong": 1})),
    st.just(ToolUse("Missing", {})),
)
texts = st.builds(Text, st.sampled_from(["ok", "thinking aloud", "done here"]))
tool_response = st.builds(
    lambda pre, calls: Response([*pre, *calls]),
    st.lists(texts, max_size=1),
    st.lists(tool_calls, min_size=1, max_size=3),
)
final = st.one_of(
    st.builds(lambda t: ("ok", Response([t])), texts),
    st.just(("error", error_response(400, "invalid_request_error", "bad request"))),
    st.just(("error", Response([Text("half")], error_event="api_error"))),
    st.just(("abort", Response([Text("hanging MARK")], hang=True))),
    st.builds(
        lambda call: ("abort", Response([call, Text("hanging MARK")], hang=True)),
        tool_calls,
    ),
)
message_plan = st.tuples(st.lists(tool_response, max_size=2), final)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(plans=st.lists(message_plan, min_size=1, max_size=3))
async def test_any_script_keeps_the_history_valid(
    h: Harness, plans: list[tuple[list[Response], tuple[str, Response]]]
) -> None:
    s = await h.session()
    first_request = len(h.llm.requests)
    for i, (tool_rounds, (kind, last)) in enumerate(plans):
        h.llm.add(*tool_rounds, last)
        completes = len(h.of(s.id, "agent.complete"))
        await h.orch.send_message(s.id, f"message {i}")
        if kind == "abort":
            with anyio.fail_after(10):
                while "MARK" not in h.orch.get_state(s.id)["text"]:
                    await anyio.sleep(0.005)
            await h.orch.abort(s.id)
        done = (await h.wait_for(s.id, "agent.complete", completes + 1))[-1]
        expected = {"ok": "end_turn", "error": "error", "abort": "aborted"}[kind]
        assert done["stopReason"] == expected
    for index in range(first_request, len(h.llm.requests)):
        assert h.llm.violations(index) == [], index
    path = await h.path(s.id)
    assert_event_order(path)
    assert validate_history(await h.store.get_messages_at(path[-1].id)) == []
    uses: dict[str, Any] = {}
    for event in path:
        if event.type == "message.assistant":
            for block in event.payload["content"]:
                if block["type"] == "tool_use":
                    uses[block["id"]] = block
    results = [e.payload["toolCallId"] for e in path if e.type == "tool.result"]
    assert sorted(results) == sorted(uses), "every tool_use has exactly one recorded result"
