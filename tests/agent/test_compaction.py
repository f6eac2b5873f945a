"""Compaction through the scripted LLM: preview records nothing; compaction records
compact.boundary + compact.summary, later turns start from the summary, and the raw
events stay searchable and forkable; automatic compaction past the threshold."""

from __future__ import annotations

import pytest

from tests.agent.harness import Harness
from tests.support.scripted_llm import Response, Text, ToolUse, Usage, error_response
from tron_events.messages import TextBlock
from tron_events.reconstruct import COMPACTION_ACK, SUMMARY_PREFIX
from tron_server.agent.compaction import (
    NothingToCompact,
    compact_session,
    context_usage,
    render_transcript,
)
from tron_server.errors import InvalidOperationError, ProviderError
from tron_server.hooks.base import HookContext, HookDecision

pytestmark = pytest.mark.anyio

SUMMARY = "The user asked to echo zebrafish; the Echo tool returned it. Next: nothing pending."


async def two_turns(h: Harness) -> str:
    h.llm.add(
        Response([Text("Echoing."), ToolUse("Echo", {"text": "zebrafish"}, id="toolu_z")],
                 usage=Usage(input_tokens=900, output_tokens=40)),
        Response([Text("Echoed zebrafish.")], usage=Usage(input_tokens=1000, output_tokens=20)),
    )  # fmt: skip
    s = await h.session()
    await h.run(s.id, "please echo zebrafish")
    return s.id


def text_of(block: object) -> str:
    assert isinstance(block, TextBlock)
    return block.text


async def test_context_usage_counts_the_last_call(h: Harness) -> None:
    sid = await two_turns(h)
    usage = await context_usage(h.store, sid)
    assert usage.model == "claude-sonnet-4-5"
    assert usage.context_window >= 200_000
    assert usage.used_tokens == 1000 + 20
    assert 0 < usage.percent < 1


async def test_preview_returns_a_summary_and_records_nothing(h: Harness) -> None:
    sid = await two_turns(h)
    before = await h.types(sid)
    h.llm.add(Response([Text(SUMMARY)]))
    result = await compact_session(h.orch, sid, record=False)
    assert result.summary == SUMMARY
    assert result.tokens_before == 1020
    assert 0 < result.tokens_after < result.tokens_before
    assert await h.types(sid) == before
    # One user message holding the transcript; no tools needed.
    request = h.llm.requests[-1]
    assert "tools" not in request or not request["tools"]
    [message] = request["messages"]
    text = message["content"][0]["text"]
    assert "please echo zebrafish" in text and "Echo" in text and "echo: zebrafish" in text


async def test_compaction_then_a_turn_starts_from_the_summary(h: Harness) -> None:
    sid = await two_turns(h)
    raw_path = await h.path(sid)
    h.llm.add(Response([Text(SUMMARY)]))
    result = await compact_session(h.orch, sid, record=True)
    path = await h.path(sid)
    assert [e.type for e in path[-2:]] == ["compact.boundary", "compact.summary"]
    boundary, summary = path[-2:]
    assert boundary.payload["originalTokens"] == result.tokens_before == 1020
    assert boundary.payload["compactedTokens"] == result.tokens_after
    assert summary.payload["summary"] == SUMMARY
    assert summary.payload["boundaryEventId"] == boundary.id

    messages = await h.store.get_messages_at(summary.id)
    assert [m.role for m in messages] == ["user"]
    assert text_of(messages[0].content[0]) == SUMMARY_PREFIX + SUMMARY

    h.llm.add(Response([Text("Continuing from the summary.")]))
    await h.run(sid, "what next?")
    assert h.llm.violations(-1) == []
    sent = h.llm.messages(-1)
    assert [m.role for m in sent] == ["user", "assistant", "user"]
    assert text_of(sent[0].content[0]).endswith(SUMMARY)
    assert text_of(sent[1].content[0]) == COMPACTION_ACK
    assert text_of(sent[2].content[0]) == "what next?"
    # Token totals still include the compacted messages.
    state = await h.store.get_state_at_head(sid)
    assert state.token_usage.input_tokens >= 1900

    # The raw events stay: search finds them, a fork before the boundary sees them.
    hits = await h.store.search("zebrafish", session_id=sid)
    assert {hit.type for hit in hits} >= {"message.user", "tool.result"}
    fork = await h.store.fork(raw_path[-1].id)
    fork_messages = await h.store.get_messages_at(fork.fork_event.id)
    assert [m.role for m in fork_messages] == ["user", "assistant", "user", "assistant"]
    h.llm.add(Response([Text("on the fork")]))
    await h.run(fork.session.id, "fork question")
    assert h.llm.violations(-1) == []
    assert len(h.llm.messages(-1)) == 5


async def test_automatic_compaction_before_a_turn(h: Harness) -> None:
    sid = await two_turns(h)
    h.orch.auto_compact_threshold = 0.001  # 1020 tokens is over 0.1% of 200k
    h.llm.add(Response([Text(SUMMARY)]), Response([Text("Fresh start.")]))
    await h.run(sid, "continue please")
    types = await h.types(sid)
    assert types[-6:] == [
        "compact.boundary", "compact.summary", "message.user", "stream.turn_start",
        "message.assistant", "stream.turn_end",
    ]  # fmt: skip
    [note] = h.of(sid, "agent.compacted")
    assert note["reason"] == "auto" and note["tokensBefore"] == 1020
    sent = h.llm.messages(-1)
    assert h.llm.violations(-1) == []
    assert text_of(sent[0].content[0]).endswith(SUMMARY)
    # The new prompt comes after the summary, verbatim.
    assert text_of(sent[-1].content[0]) == "continue please"


async def test_fresh_sessions_are_not_auto_compacted(h: Harness) -> None:
    h.orch.auto_compact_threshold = 0.000001
    h.llm.add(Response([Text("hello")]))
    s = await h.session()
    await h.run(s.id, "hi")
    assert "compact.summary" not in await h.types(s.id)
    assert h.of(s.id, "agent.error") == []
    with pytest.raises(NothingToCompact):
        await compact_session(h.orch, (await h.session()).id, record=True)


async def test_a_precompact_hook_can_refuse(h: Harness) -> None:
    sid = await two_turns(h)
    assert h.orch.hooks is not None

    async def no(ctx: HookContext) -> HookDecision:
        assert ctx.data["trigger"] == "manual"
        return HookDecision(action="block", reason="keep everything")

    h.orch.hooks.register("keep", "PreCompact", no)
    with pytest.raises(InvalidOperationError, match="keep everything"):
        await compact_session(h.orch, sid, record=True)
    assert "compact.summary" not in await h.types(sid)


async def test_a_failed_summary_call_records_nothing(h: Harness) -> None:
    sid = await two_turns(h)
    before = await h.types(sid)
    h.llm.add(error_response(400, "invalid_request_error", "prompt is too long"))
    with pytest.raises(ProviderError) as info:
        await compact_session(h.orch, sid, record=True)
    assert info.value.code == -32005
    assert await h.types(sid) == before


def test_the_transcript_cuts_huge_parts() -> None:
    from tron_events.messages import Message, ToolResultBlock, ToolUseBlock

    messages = [
        Message(role="user", content=[TextBlock(text="go")]),
        Message(role="assistant", content=[ToolUseBlock(id="t", name="Read", input={"p": "a"})]),
        Message(role="user", content=[ToolResultBlock(tool_use_id="t", content="x" * 50_000)]),
    ]
    text = render_transcript(messages)
    assert "User: go" in text and "tool Read (t)" in text
    assert len(text) < 6_000 and "more characters" in text
