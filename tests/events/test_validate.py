"""validate_history: each Anthropic rule, broken once and kept once."""

from __future__ import annotations

from typing import Any

from tron_events.messages import Message
from tron_events.validate import Violation, validate_history


def msg(role: str, *blocks: dict[str, Any]) -> Message:
    return Message.model_validate({"role": role, "content": list(blocks)})


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def use(id_: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": "bash", "input": {}}


def result(id_: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": id_, "content": "ok"}


def rules(messages: list[Message]) -> list[tuple[int, str]]:
    return [(v.index, v.rule) for v in validate_history(messages)]


def test_a_valid_tool_loop_has_no_violations() -> None:
    history = [
        msg("user", text("go")),
        msg(
            "assistant",
            {"type": "thinking", "thinking": "hm", "signature": "s"},
            use("a"),
            use("b"),
        ),
        msg("user", result("b"), result("a"), text("thanks")),
        msg("assistant", text("done")),
    ]
    assert validate_history(history) == []
    assert validate_history([]) == []


def test_first_message_must_be_from_the_user() -> None:
    assert rules([msg("assistant", text("hi"))]) == [(0, "first_user")]


def test_roles_must_alternate() -> None:
    history = [msg("user", text("a")), msg("user", text("b")), msg("assistant", text("c"))]
    assert rules(history) == [(1, "alternation")]


def test_empty_text_and_empty_messages() -> None:
    history = [
        msg("user", text("a")),
        msg("assistant", text(" \n")),
        msg("user"),
        msg("assistant", use("t")),
        msg("user", {"type": "tool_result", "tool_use_id": "t", "content": [text("")]}),
    ]
    assert rules(history) == [(1, "empty_text"), (2, "empty_message"), (4, "empty_text")]


def test_tool_use_must_be_answered_in_the_next_message() -> None:
    history = [
        msg("user", text("a")),
        msg("assistant", use("t1"), use("t2")),
        msg("user", result("t1")),
    ]
    violations = validate_history(history)
    assert violations == [Violation(2, "unanswered_tool_use", "no tool_result for t2 (message 1)")]
    assert rules(history[:2]) == [(2, "unanswered_tool_use")]


def test_results_must_answer_the_previous_assistant_message_only() -> None:
    history = [
        msg("user", text("a")),
        msg("assistant", use("t1")),
        msg("user", result("t1"), result("t9"), result("t1")),
        msg("assistant", text("b")),
        msg("user", result("t1")),
    ]
    assert rules(history) == [
        (2, "unexpected_tool_result"),
        (2, "duplicate_tool_result"),
        (4, "unexpected_tool_result"),
    ]


def test_results_come_before_other_user_content() -> None:
    history = [
        msg("user", text("a")),
        msg("assistant", use("t1")),
        msg("user", text("x"), result("t1")),
    ]
    assert rules(history) == [(2, "tool_result_order")]


def test_tool_use_ids_are_unique() -> None:
    history = [
        msg("user", text("a")),
        msg("assistant", use("t1")),
        msg("user", result("t1")),
        msg("assistant", use("t1")),
        msg("user", result("t1")),
    ]
    assert rules(history) == [(3, "duplicate_tool_use"), (4, "unexpected_tool_result")]


def test_blocks_in_the_wrong_role() -> None:
    history = [
        msg("user", text("a"), use("t1")),
        msg("assistant", text("b"), result("t1")),
    ]
    assert rules(history) == [(0, "misplaced_block"), (1, "misplaced_block")]


def test_a_native_block_is_the_assistants() -> None:
    native = {"type": "native", "provider": "anthropic", "data": {"type": "server_tool_use"}}
    history = [msg("user", text("a"), native), msg("assistant", native, text("b"))]
    assert rules(history) == [(0, "misplaced_block")]
