"""Reconstruction rules, one example each, over hand-built ancestor paths (no database)."""

from __future__ import annotations

import gc
import json
from typing import Any

import pytest

from tron_events.messages import (
    ImageBlock,
    Message,
    NativeBlock,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    TokenUsage,
    ToolResultBlock,
    ToolUseBlock,
)
from tron_events.models import Event
from tron_events.normalize import normalize_assistant_payload, normalize_tool_result_payload
from tron_events.reconstruct import (
    COMPACTION_ACK,
    INTERRUPTED_RESULT,
    SUMMARY_PREFIX,
    SessionState,
    build_messages,
    build_state,
)
from tron_events.validate import validate_history


class Path:
    """An ancestor path under construction: each event the parent of the next."""

    def __init__(self, **start: Any) -> None:
        self.events: list[Event] = []
        self.add(
            "session.start",
            {"workingDirectory": "/w", "model": "m1", "provider": "anthropic", **start},
        )

    def add(self, type_: str, payload: dict[str, Any]) -> str:
        n = len(self.events)
        event = Event(
            id=f"evt_{n}",
            parent_id=self.events[-1].id if self.events else None,
            session_id="sess_1",
            workspace_id="ws_1",
            sequence=n,
            depth=n,
            type=type_,
            timestamp="2026-01-01T00:00:00Z",
            payload=payload,
        )
        self.events.append(event)
        return event.id

    def user(self, content: Any, turn: int = 1) -> str:
        return self.add("message.user", {"content": content, "turn": turn})

    def assistant(self, *blocks: dict[str, Any], turn: int = 1, **extra: Any) -> str:
        payload = normalize_assistant_payload({"content": list(blocks), "turn": turn, **extra})
        return self.add("message.assistant", payload)

    def call(self, id_: str, args: dict[str, Any] | None = None, name: str = "bash") -> str:
        return self.add(
            "tool.call", {"toolCallId": id_, "name": name, "arguments": args or {"cmd": id_}}
        )

    def result(self, id_: str, content: Any = None, is_error: bool = False) -> str:
        payload = {"toolCallId": id_, "content": f"out {id_}" if content is None else content}
        payload["isError"] = is_error
        return self.add("tool.result", normalize_tool_result_payload(payload))

    def delete(self, target: str, target_type: str = "message.user") -> str:
        return self.add("message.deleted", {"targetEventId": target, "targetType": target_type})

    def messages(self) -> list[Message]:
        msgs = build_messages(self.events)
        assert validate_history(msgs) == []
        return msgs

    def state(self) -> SessionState:
        return build_state(self.events)


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def tu(id_: str, args: dict[str, Any] | None = None, name: str = "bash") -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": name, "input": args or {"cmd": id_}}


def tr(id_: str, content: Any = None, is_error: bool = False) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "tool_use_id": id_,
        "content": f"out {id_}" if content is None else content,
        "is_error": is_error,
    }


def interrupted(id_: str) -> dict[str, Any]:
    return tr(id_, INTERRUPTED_RESULT, True)


def wire(msgs: list[Message]) -> list[dict[str, Any]]:
    return [m.to_anthropic() for m in msgs]


def U(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def A(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


# -- basics ----------------------------------------------------------------------


def test_conversation_with_event_ids() -> None:
    p = Path()
    u1 = p.user("hello")
    a1 = p.assistant(text("hi there"))
    msgs = p.messages()
    assert wire(msgs) == [U(text("hello")), A(text("hi there"))]
    assert [m.event_ids for m in msgs] == [[u1], [a1]]


def test_empty_path_gives_no_messages_and_build_state_needs_a_head() -> None:
    assert build_messages([]) == []
    with pytest.raises(ValueError):
        build_state([])


def test_user_content_as_blocks_with_image() -> None:
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
    }
    p = Path()
    p.user([text("look"), image])
    msgs = p.messages()
    assert wire(msgs) == [U(text("look"), image)]
    assert isinstance(msgs[0].content[1], ImageBlock)


# -- tool loops ------------------------------------------------------------------


def test_tool_loop_in_the_recording_order() -> None:
    p = Path()
    u1 = p.user("list files")
    a1 = p.assistant(text("running"), tu("t1"), tu("t2"))
    p.call("t1")
    p.call("t2")
    r1 = p.result("t1")
    r2 = p.result("t2", is_error=True)
    a2 = p.assistant(text("done"))
    msgs = p.messages()
    assert wire(msgs) == [
        U(text("list files")),
        A(text("running"), tu("t1"), tu("t2")),
        U(tr("t1"), tr("t2", is_error=True)),
        A(text("done")),
    ]
    assert [m.event_ids for m in msgs] == [[u1], [a1], [r1, r2], [a2]]


def test_results_follow_tool_use_order_whatever_order_they_were_recorded_in() -> None:
    p = Path()
    p.user("go")
    p.assistant(tu("t1"), tu("t2"), tu("t3"))
    for t in ("t3", "t1", "t2"):
        p.result(t)
    assert wire(p.messages())[2] == U(tr("t1"), tr("t2"), tr("t3"))


def test_legacy_order_tool_events_before_the_assistant_message() -> None:
    p = Path()
    p.user("go")
    p.call("t1")
    p.result("t1")
    p.assistant(text("step 1"), tu("t1"))
    p.call("t2")
    p.result("t2")
    p.assistant(tu("t2"))
    p.assistant(text("all done"))
    assert wire(p.messages()) == [
        U(text("go")),
        A(text("step 1"), tu("t1")),
        U(tr("t1")),
        A(tu("t2")),
        U(tr("t2")),
        A(text("all done")),
    ]


def test_multi_step_loop_then_user_reply_joins_the_results_message() -> None:
    p = Path()
    p.user("go")
    p.assistant(tu("t1"))
    p.call("t1")
    p.result("t1")
    p.assistant(tu("t2"))
    p.call("t2")
    r2 = p.result("t2")
    u2 = p.user("and also this", turn=2)
    msgs = p.messages()
    assert wire(msgs) == [
        U(text("go")),
        A(tu("t1")),
        U(tr("t1")),
        A(tu("t2")),
        U(tr("t2"), text("and also this")),
    ]
    assert msgs[-1].event_ids == [r2, u2]


def test_truncated_six_kb_input_is_stored_truncated_and_restored_exactly() -> None:
    big = {"path": "/src/big.py", "content": "".join(f"row {i};\n" for i in range(700))}
    assert 6_000 < len(json.dumps(big)) < 7_000
    p = Path()
    p.user("write it")
    a1 = p.assistant(tu("t1", big, "write"))
    stored = p.events[-1].payload["content"][0]["input"]
    assert stored["_truncated"] is True  # storage holds the stub
    p.call("t1", big, "write")
    p.result("t1")
    msgs = p.messages()
    assert msgs[1].event_ids == [a1]
    block = msgs[1].content[0]
    assert isinstance(block, ToolUseBlock) and block.input == big


def test_truncated_input_without_its_tool_call_stays_a_valid_stub() -> None:
    p = Path()
    p.user("write it")
    p.assistant(tu("t1", {"blob": "q" * 9_000}))
    msgs = p.messages()
    block = msgs[1].content[0]
    assert isinstance(block, ToolUseBlock) and block.input["_truncated"] is True


def test_result_content_as_parts() -> None:
    parts = [text("line"), {"type": "image", "source": {"type": "url", "url": "https://x/p.png"}}]
    p = Path()
    p.user("shot")
    p.assistant(tu("t1"))
    p.result("t1", parts)
    msgs = p.messages()
    assert wire(msgs)[2] == U(tr("t1", parts))
    block = msgs[2].content[0]
    assert isinstance(block, ToolResultBlock) and isinstance(block.content, list)


def test_tool_results_inside_a_user_message_are_placed_like_tool_result_events() -> None:
    p = Path()
    p.user("go")
    p.assistant(tu("t1"), tu("t2"))
    u2 = p.user([text("here you are"), tr("t2"), tr("t1"), tr("zzz")])
    msgs = p.messages()
    assert wire(msgs)[2] == U(tr("t1"), tr("t2"), text("here you are"))
    assert msgs[2].event_ids == [u2]


# -- repair ----------------------------------------------------------------------


def test_interrupted_tool_use_gets_a_synthetic_error_result_before_the_next_reply() -> None:
    p = Path()
    p.user("go")
    p.assistant(tu("t1"), tu("t2"), interrupted=True)
    r1 = p.result("t1")
    u2 = p.user("stop, do something else", turn=2)
    p.assistant(text("ok"), turn=2)
    msgs = p.messages()
    assert wire(msgs)[2] == U(tr("t1"), interrupted("t2"), text("stop, do something else"))
    assert msgs[2].event_ids == [r1, u2]


def test_path_ending_in_unanswered_tool_use_ends_with_synthetic_results() -> None:
    p = Path()
    p.user("go")
    p.assistant(tu("t1"))
    p.call("t1")  # a fork or crash right here, before the result
    msgs = p.messages()
    assert wire(msgs)[-1] == U(interrupted("t1"))
    assert msgs[-1].event_ids == []


def test_assistant_after_unanswered_tool_use_is_not_merged_into_it() -> None:
    p = Path()
    p.user("go")
    p.assistant(tu("t1"))
    p.assistant(text("carrying on"))
    p.result("t1")  # too late: its tool_use is no longer in the message before it
    assert wire(p.messages()) == [
        U(text("go")),
        A(tu("t1")),
        U(interrupted("t1")),
        A(text("carrying on")),
    ]


def test_orphan_and_duplicate_results_are_dropped() -> None:
    p = Path()
    p.user("go")
    p.result("nobody")  # never matched by a tool_use
    p.assistant(tu("t1"))
    p.result("t1")
    p.result("t1", "second answer")
    p.assistant(text("next"))
    p.result("t1", "late")
    assert wire(p.messages()) == [U(text("go")), A(tu("t1")), U(tr("t1")), A(text("next"))]


def test_repeated_tool_use_id_is_dropped() -> None:
    p = Path()
    p.user("go")
    p.assistant(tu("t1"))
    p.result("t1")
    p.assistant(text("again"), tu("t1"))
    assert wire(p.messages())[3] == A(text("again"))


def test_empty_text_is_dropped_and_empty_messages_vanish() -> None:
    p = Path()
    p.user("")
    p.user([text("  "), text("real")])
    p.assistant(text(""), text("\n"))
    p.assistant(text("answer"), text(""))
    assert wire(p.messages()) == [U(text("real")), A(text("answer"))]


def test_leading_assistant_messages_are_dropped() -> None:
    p = Path()
    p.assistant(text("I speak first"), tu("t0"))
    p.result("t0")
    p.user("hello")
    p.assistant(text("hi"))
    assert wire(p.messages()) == [U(text("hello")), A(text("hi"))]


def test_consecutive_messages_of_one_role_merge() -> None:
    p = Path()
    u1 = p.user("one")
    u2 = p.user("two")
    a1 = p.assistant(text("three"))
    a2 = p.assistant(text("four"), tu("t1"))
    msgs = p.messages()
    assert wire(msgs) == [
        U(text("one"), text("two")),
        A(text("three"), text("four"), tu("t1")),
        U(interrupted("t1")),
    ]
    assert [m.event_ids for m in msgs[:2]] == [[u1, u2], [a1, a2]]


def test_thinking_signature_is_kept_byte_for_byte_and_unknown_blocks_dropped() -> None:
    sig = "EqQBCkYIARgCIkDx+/=\u00e9\n  tail"
    p = Path()
    p.user("think")
    p.assistant(
        {"type": "thinking", "thinking": "let me see", "signature": sig},
        {"type": "redacted_thinking", "data": "c2VjcmV0"},
        {"type": "server_tool_use", "id": "s1", "name": "web", "input": {}},
        text("answer"),
    )
    msgs = p.messages()
    thinking, redacted, answer = msgs[1].content
    assert isinstance(thinking, ThinkingBlock) and thinking.signature == sig
    assert isinstance(redacted, RedactedThinkingBlock) and redacted.data == "c2VjcmV0"
    assert isinstance(answer, TextBlock)


def test_native_blocks_are_kept_in_place_and_survive_a_snapshot() -> None:
    from tron_events import _state_snapshots
    from tron_events.reconstruct import project

    native = {
        "type": "native",
        "provider": "anthropic",
        "data": {
            "type": "server_tool_use",
            "id": "srvtoolu_1",
            "name": "web_search",
            "input": {"query": "q", "deep": [1, None, {"a": "b"}]},
        },
    }
    p = Path()
    p.user("search")
    p.assistant(
        text("looking"),
        native,
        {"type": "native", "provider": "anthropic"},  # no data: dropped
        {"type": "native", "provider": 1, "data": {}},  # not a provider name: dropped
        {"type": "native", "provider": "google", "data": "x"},  # data not an object
        text("found"),
    )
    msgs = p.messages()
    assert [b.type for b in msgs[1].content] == ["text", "native", "text"]
    assert msgs[1].content[1] == NativeBlock.model_validate(native)
    assert msgs[1].to_payload()[1] == native
    projection = project(p.events)
    again = _state_snapshots.loads(_state_snapshots.dumps(projection))
    assert again.messages == projection.messages


# -- compaction, clearing, deletion ------------------------------------------------


def test_compaction_replaces_everything_before_it() -> None:
    p = Path()
    p.user("old question")
    p.assistant(text("old answer"))
    s = p.add("compact.summary", {"summary": "we talked about X"})
    assert wire(p.messages()) == [U(text(SUMMARY_PREFIX + "we talked about X"))]
    u2 = p.user("new question", turn=2)
    msgs = p.messages()
    assert wire(msgs) == [
        U(text(SUMMARY_PREFIX + "we talked about X")),
        A(text(COMPACTION_ACK)),
        U(text("new question")),
    ]
    assert [m.event_ids for m in msgs] == [[s], [s], [u2]]


def test_no_acknowledgement_when_the_assistant_speaks_next() -> None:
    p = Path()
    p.user("q")
    p.add("compact.summary", {"summary": "S"})
    p.assistant(text("continuing"))
    assert wire(p.messages()) == [U(text(SUMMARY_PREFIX + "S")), A(text("continuing"))]


def test_results_of_tool_uses_compacted_away_are_dropped() -> None:
    p = Path()
    p.user("go")
    p.assistant(tu("t1"))
    p.add("compact.summary", {"summary": "S"})
    p.result("t1")
    p.user("next")
    assert wire(p.messages()) == [
        U(text(SUMMARY_PREFIX + "S")),
        A(text(COMPACTION_ACK)),
        U(text("next")),
    ]


def test_context_cleared_empties_the_history() -> None:
    p = Path()
    p.user("a")
    p.assistant(text("b"))
    p.add("context.cleared", {"reason": "user"})
    assert p.messages() == []
    p.assistant(text("orphan assistant"))
    p.user("fresh start")
    assert wire(p.messages()) == [U(text("fresh start"))]


def test_deleting_a_user_message_merges_its_neighbours() -> None:
    p = Path()
    p.user("one")
    a1 = p.assistant(text("two"))
    u2 = p.user("three")
    a2 = p.assistant(text("four"))
    p.delete(u2)
    p.delete(u2)  # twice is harmless
    msgs = p.messages()
    assert wire(msgs) == [U(text("one")), A(text("two"), text("four"))]
    assert msgs[1].event_ids == [a1, a2]


def test_deleting_the_assistant_message_drops_its_results() -> None:
    p = Path()
    p.user("one")
    a1 = p.assistant(tu("t1"))
    p.result("t1")
    p.user("two")
    p.delete(a1, "message.assistant")
    assert wire(p.messages()) == [U(text("one"), text("two"))]


def test_deleting_a_result_leaves_an_interrupted_result() -> None:
    p = Path()
    p.user("one")
    p.assistant(tu("t1"), tu("t2"))
    p.result("t1")
    r2 = p.result("t2")
    p.delete(r2, "tool.result")
    assert wire(p.messages())[2] == U(tr("t1"), interrupted("t2"))


def test_deleting_the_first_user_message_drops_the_leading_assistant() -> None:
    p = Path()
    u1 = p.user("one")
    p.assistant(text("two"))
    p.user("three")
    p.delete(u1)
    assert wire(p.messages()) == [U(text("three"))]


# -- state -----------------------------------------------------------------------


def test_state_from_the_path() -> None:
    p = Path(systemPrompt="be brief", model="claude-a")
    p.user("q", turn=1)
    p.assistant(text("a"), turn=1, tokenUsage={"inputTokens": 10, "outputTokens": 2})
    p.add("config.model_switch", {"previousModel": "claude-a", "newModel": "claude-b"})
    p.add("config.reasoning_level", {"previousLevel": None, "newLevel": "high"})
    p.add("config.prompt_update", {"systemPrompt": "be thorough"})
    p.user("q2", turn=2)
    p.assistant(
        text("a2"),
        turn=2,
        tokenUsage={
            "inputTokens": 100,
            "outputTokens": 20,
            "cacheReadTokens": 5,
            "cacheCreationTokens": None,
        },
    )
    state = p.state()
    assert state.model == "claude-b"
    assert state.provider == "anthropic"
    assert state.working_directory == "/w"
    assert state.system_prompt == "be thorough"
    assert state.reasoning_level == "high"
    assert state.token_usage == TokenUsage(
        input_tokens=110, output_tokens=22, cache_read_tokens=5, cache_creation_tokens=0
    )
    assert state.turn_count == 2
    assert state.head_event_id == p.events[-1].id
    assert state.messages == build_messages(p.events)


def test_a_prefix_of_the_path_rolls_every_field_back() -> None:
    p = Path(systemPrompt="v1")
    p.user("q", turn=1)
    p.assistant(text("a"), turn=1, tokenUsage={"inputTokens": 10, "outputTokens": 1})
    point = len(p.events)
    p.add("config.model_switch", {"previousModel": "m1", "newModel": "m2"})
    p.add("config.reasoning_level", {"newLevel": "low"})
    p.add("config.prompt_update", {"systemPrompt": "v2"})
    p.user("q2", turn=2)
    p.assistant(text("a2"), turn=2, tokenUsage={"inputTokens": 50, "outputTokens": 5})
    p.add("config.reasoning_level", {"previousLevel": "low", "newLevel": None})
    assert p.state().reasoning_level is None
    old = build_state(p.events[:point])
    assert (old.model, old.system_prompt, old.reasoning_level, old.turn_count) == (
        "m1",
        "v1",
        None,
        1,
    )
    assert old.token_usage == TokenUsage(input_tokens=10, output_tokens=1)
    assert old.head_event_id == p.events[point - 1].id


def test_fork_model_overrides_and_compacted_and_deleted_tokens() -> None:
    p = Path()
    p.user("q", turn=1)
    p.assistant(text("a"), turn=1, tokenUsage={"inputTokens": 10, "outputTokens": 1})
    p.add("compact.summary", {"summary": "S"})
    p.user("q2", turn=2)
    a2 = p.assistant(text("a2"), turn=2, tokenUsage={"inputTokens": 7, "outputTokens": 3})
    p.add("session.fork", {"sourceSessionId": "sess_1", "sourceEventId": a2, "model": "m9"})
    a3 = p.assistant(text("a3"), turn=3, tokenUsage={"inputTokens": 1000, "outputTokens": 1000})
    p.delete(a3, "message.assistant")
    state = p.state()
    assert state.model == "m9"
    # Compacted messages still count; the deleted one does not.
    assert state.token_usage == TokenUsage(input_tokens=17, output_tokens=4)
    assert state.turn_count == 3


# -- the fast construction path ------------------------------------------------------


def test_built_objects_equal_validated_ones_and_serialize_cleanly() -> None:
    p = Path()
    p.user([text("hi"), {"type": "image", "source": {"type": "url", "url": "https://a/b.png"}}])
    p.assistant(
        {"type": "thinking", "thinking": "t", "signature": "s"},
        {"type": "thinking", "thinking": "unsigned"},
        tu("t1"),
    )
    p.result("t1", [text("x")])
    p.assistant(tu("t2"))
    state = p.state()
    again = SessionState.model_validate(state.model_dump())
    assert again == state
    assert again.model_dump_json() == state.model_dump_json()
    for m in state.messages:
        assert Message.model_validate(m.to_anthropic() | {"event_ids": m.event_ids}) == m


def test_gc_state_is_restored() -> None:
    p = Path()
    p.user("x")
    assert gc.isenabled()
    build_state(p.events)
    assert gc.isenabled()
    gc.disable()
    try:
        build_messages(p.events)
        assert not gc.isenabled()
    finally:
        gc.enable()


# -- other providers' replay fields -------------------------------------------------


def test_provider_replay_fields_survive_storage_and_stay_out_of_anthropic_wire() -> None:
    stored = [
        ThinkingBlock(thinking="plan", signature="enc", provider="openai", item_id="rs_1"),
        TextBlock(text="", signature="sig_empty"),
        TextBlock(text="answer", signature="sig_text"),
        ToolUseBlock(id="c1", name="bash", input={"cmd": "ls"}, signature="sig_call"),
    ]
    p = Path()
    p.user("hi")
    p.assistant(*[b.to_payload() for b in stored])
    p.call("c1", {"cmd": "ls"})
    p.result("c1")
    msgs = p.messages()
    assert msgs[1].content == stored  # every field, the signed empty part included
    assert wire(msgs)[1] == A(
        {"type": "thinking", "thinking": "plan", "signature": "enc"},
        text(""),
        text("answer"),
        tu("c1", {"cmd": "ls"}),
    )


def test_unsigned_empty_text_is_still_dropped() -> None:
    p = Path()
    p.user("hi")
    p.assistant(text(""), text("ok"))
    assert wire(p.messages())[1] == A(text("ok"))


def test_the_phase_of_assistant_text_is_kept() -> None:
    p = Path()
    p.user([{"type": "text", "text": "go", "phase": "commentary"}])  # not the user's
    p.assistant({"type": "text", "text": "Looking.", "phase": "commentary"}, text("Done."))
    msgs = p.messages()
    assert msgs[0].content == [TextBlock(text="go")]
    assert msgs[1].content == [
        TextBlock(text="Looking.", phase="commentary"),
        TextBlock(text="Done."),
    ]
