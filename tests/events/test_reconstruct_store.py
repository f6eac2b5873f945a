"""Reconstruction through the real store: forks, rewinds, compaction, deletion, storage."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tron_events import EventStore
from tron_events.messages import Message, TokenUsage, ToolUseBlock
from tron_events.models import Event, Session
from tron_events.normalize import MAX_TOOL_RESULT_CHARS, truncation_marker
from tron_events.reconstruct import COMPACTION_ACK, INTERRUPTED_RESULT, SUMMARY_PREFIX
from tron_events.validate import validate_history


def new_session(store: EventStore, model: str = "claude-a") -> Session:
    return store.create_session(
        working_directory="/work/app", model=model, provider="anthropic", system_prompt="v1"
    )


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def use(id_: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": "write", "input": args}


def result(id_: str, content: Any = "ok", is_error: bool = False) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": id_, "content": content, "is_error": is_error}


def wire(messages: list[Message]) -> list[dict[str, Any]]:
    assert validate_history(messages) == []
    return [m.to_anthropic() for m in messages]


def U(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def A(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def tool_loop(store: EventStore, sid: str, args: dict[str, Any]) -> list[Event]:
    """One user turn with one tool call, recorded as the server does."""
    return [
        store.append(sid, "message.user", {"content": "write the file", "turn": 1}),
        store.append(
            sid,
            "message.assistant",
            {
                "content": [text("writing"), use("toolu_1", args)],
                "turn": 1,
                "tokenUsage": {"inputTokens": 100, "outputTokens": 10},
            },
        ),
        store.append(
            sid, "tool.call", {"toolCallId": "toolu_1", "name": "write", "arguments": args}
        ),
        store.append(sid, "tool.result", {"toolCallId": "toolu_1", "content": "ok"}),
        store.append(
            sid,
            "message.assistant",
            {
                "content": [text("done")],
                "turn": 1,
                "tokenUsage": {"inputTokens": 120, "outputTokens": 5},
            },
        ),
    ]


BIG = {"path": "/work/app/big.py", "content": "".join(f"line {i}\n" for i in range(700))}


def test_six_kb_input_is_truncated_in_storage_and_restored_exactly(store: EventStore) -> None:
    assert 6_000 < len(json.dumps(BIG)) < 7_000
    sid = new_session(store).id
    events = tool_loop(store, sid, BIG)
    stored = store.get_event(events[1].id)
    assert stored is not None
    stub = stored.payload["content"][1]["input"]
    assert stub["_truncated"] is True and stub["_originalSize"] > 5_120
    call = store.get_event(events[2].id)
    assert call is not None and call.payload["arguments"] == BIG

    messages = store.get_messages_at(events[-1].id)
    assert wire(messages) == [
        U(text("write the file")),
        A(text("writing"), use("toolu_1", BIG)),
        U(result("toolu_1")),
        A(text("done")),
    ]
    assert [m.event_ids for m in messages] == [[e.id] for e in events[:2]] + [
        [events[3].id],
        [events[4].id],
    ]


def test_long_result_is_truncated_in_storage_with_its_marker(store: EventStore) -> None:
    sid = new_session(store).id
    store.append(sid, "message.user", {"content": "cat it", "turn": 1})
    store.append(sid, "message.assistant", {"content": [use("t1", {"p": "x"})], "turn": 1})
    store.append(sid, "tool.call", {"toolCallId": "t1", "name": "cat", "arguments": {"p": "x"}})
    event = store.append(sid, "tool.result", {"toolCallId": "t1", "content": "z" * 30_000})
    assert event.payload["truncated"] is True
    block = store.get_messages_at(event.id)[2].to_anthropic()["content"][0]
    assert len(block["content"]) <= MAX_TOOL_RESULT_CHARS
    kept = block["content"].split("\n")[0]
    assert kept == "z" * len(kept)
    assert block["content"] == kept + truncation_marker(30_000 - len(kept))


def test_fork_at_every_event_of_a_tool_loop(store: EventStore) -> None:
    session = new_session(store)
    events = tool_loop(store, session.id, BIG)
    path = [session.root_event_id] + [e.id for e in events]
    expected = {
        session.root_event_id: [],
        events[0].id: [U(text("write the file"))],
        # Forked right after the assistant message: the tool never reported.
        events[1].id: [
            U(text("write the file")),
            A(text("writing"), use("toolu_1", {})),  # input checked below
            U(result("toolu_1", INTERRUPTED_RESULT, True)),
        ],
        events[2].id: [
            U(text("write the file")),
            A(text("writing"), use("toolu_1", BIG)),
            U(result("toolu_1", INTERRUPTED_RESULT, True)),
        ],
        events[3].id: [
            U(text("write the file")),
            A(text("writing"), use("toolu_1", BIG)),
            U(result("toolu_1")),
        ],
        events[4].id: [
            U(text("write the file")),
            A(text("writing"), use("toolu_1", BIG)),
            U(result("toolu_1")),
            A(text("done")),
        ],
    }
    for point in path:
        fork = store.fork(point, model="claude-b")
        at_fork = store.get_state_at_head(fork.session.id)
        got = wire(at_fork.messages)
        if point == events[1].id:
            # Before its tool.call the full input is not on the path: the stub stays.
            stub = got[1]["content"][1]["input"]
            assert stub["_truncated"] is True
            got[1]["content"][1]["input"] = {}
        assert got == expected[point], point
        assert at_fork.model == "claude-b"
        assert at_fork.messages == store.get_messages_at(point)
        # The fork goes on, and its history stays valid.
        store.append(fork.session.id, "message.user", {"content": "next", "turn": 2})
        wire(store.get_messages_at(store.get_session(fork.session.id).head_event_id))


def test_rewind_to_before_a_model_switch_gives_the_old_model(store: EventStore) -> None:
    sid = new_session(store, model="claude-a").id
    events = tool_loop(store, sid, {"p": 1})
    store.append(sid, "config.model_switch", {"previousModel": "claude-a", "newModel": "claude-b"})
    store.append(sid, "config.reasoning_level", {"newLevel": "high"})
    store.append(sid, "config.prompt_update", {"systemPrompt": "v2"})
    store.append(
        sid,
        "message.user",
        {"content": "again", "turn": 2},
    )
    store.append(
        sid,
        "message.assistant",
        {"content": [text("sure")], "turn": 2, "tokenUsage": {"inputTokens": 1, "outputTokens": 1}},
    )
    now = store.get_state_at_head(sid)
    assert (now.model, now.reasoning_level, now.system_prompt, now.turn_count) == (
        "claude-b",
        "high",
        "v2",
        2,
    )
    assert now.token_usage == TokenUsage(input_tokens=221, output_tokens=16)

    store.rewind(sid, events[-1].id)
    back = store.get_state_at_head(sid)
    assert (back.model, back.reasoning_level, back.system_prompt, back.turn_count) == (
        "claude-a",
        None,
        "v1",
        1,
    )
    assert back.token_usage == TokenUsage(input_tokens=220, output_tokens=15)
    assert back.provider == "anthropic" and back.working_directory == "/work/app"
    assert back.head_event_id == events[-1].id
    assert len(back.messages) == 4


def test_compaction_then_fork(store: EventStore) -> None:
    sid = new_session(store).id
    events = tool_loop(store, sid, {"p": 1})
    summary = store.append(sid, "compact.summary", {"summary": "wrote the file"})
    after = store.append(sid, "message.user", {"content": "now test it", "turn": 2})

    compacted = [U(text(SUMMARY_PREFIX + "wrote the file")), A(text(COMPACTION_ACK))]
    fork_after = store.fork(after.id)
    state = store.get_state_at_head(fork_after.session.id)
    assert wire(state.messages) == [*compacted, U(text("now test it"))]
    assert [m.event_ids for m in state.messages] == [[summary.id], [summary.id], [after.id]]
    # Tokens of compacted messages still count.
    assert state.token_usage == TokenUsage(input_tokens=220, output_tokens=15)

    fork_before = store.fork(events[-1].id)
    assert len(store.get_state_at_head(fork_before.session.id).messages) == 4


def test_deletion_then_rewind(store: EventStore) -> None:
    sid = new_session(store).id
    first = store.append(sid, "message.user", {"content": "one", "turn": 1})
    store.append(sid, "message.assistant", {"content": [text("two")], "turn": 1})
    third = store.append(sid, "message.user", {"content": "three", "turn": 2})
    store.append(sid, "message.assistant", {"content": [text("four")], "turn": 2})
    before_delete = store.get_session(sid).head_event_id
    store.append(sid, "message.deleted", {"targetEventId": third.id, "targetType": "message.user"})
    assert wire(store.get_state_at_head(sid).messages) == [
        U(text("one")),
        A(text("two"), text("four")),
    ]
    store.rewind(sid, before_delete)
    assert wire(store.get_state_at_head(sid).messages) == [
        U(text("one")),
        A(text("two")),
        U(text("three")),
        A(text("four")),
    ]
    assert store.get_messages_at(first.id)[0].event_ids == [first.id]


def test_deleting_a_result_and_an_assistant_message(store: EventStore) -> None:
    sid = new_session(store).id
    events = tool_loop(store, sid, {"p": 1})
    store.append(
        sid, "message.deleted", {"targetEventId": events[3].id, "targetType": "tool.result"}
    )
    assert wire(store.get_state_at_head(sid).messages)[2] == U(
        result("toolu_1", INTERRUPTED_RESULT, True)
    )
    store.append(
        sid,
        "message.deleted",
        {"targetEventId": events[1].id, "targetType": "message.assistant"},
    )
    state = store.get_state_at_head(sid)
    assert wire(state.messages) == [U(text("write the file")), A(text("done"))]
    assert state.token_usage == TokenUsage(input_tokens=120, output_tokens=5)


def test_legacy_recording_order_from_the_store(store: EventStore) -> None:
    sid = new_session(store).id
    store.append(sid, "message.user", {"content": "go", "turn": 1})
    store.append(sid, "tool.call", {"toolCallId": "t1", "name": "write", "arguments": BIG})
    store.append(sid, "tool.result", {"toolCallId": "t1", "content": "ok"})
    store.append(sid, "message.assistant", {"content": [use("t1", BIG)], "turn": 1})
    store.append(sid, "message.assistant", {"content": [text("done")], "turn": 1})
    messages = store.get_state_at_head(sid).messages
    assert wire(messages) == [U(text("go")), A(use("t1", BIG)), U(result("t1")), A(text("done"))]
    block = messages[1].content[0]
    assert isinstance(block, ToolUseBlock) and block.input == BIG


@pytest.mark.parametrize("clear", ["context.cleared", "compact.summary"])
def test_state_survives_a_reset_of_the_history(store: EventStore, clear: str) -> None:
    sid = new_session(store).id
    tool_loop(store, sid, {"p": 1})
    store.append(sid, "config.model_switch", {"previousModel": "claude-a", "newModel": "claude-c"})
    store.append(sid, clear, {"summary": "s"} if clear == "compact.summary" else {})
    state = store.get_state_at_head(sid)
    assert state.model == "claude-c" and state.turn_count == 1
    assert state.token_usage == TokenUsage(input_tokens=220, output_tokens=15)
    assert len(state.messages) == (1 if clear == "compact.summary" else 0)
