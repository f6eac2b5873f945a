"""Answers are checked against their request; what a request records."""

from __future__ import annotations

from typing import Any

import pytest

from tron_server.errors import InvalidParams
from tron_server.interaction import parse_answer
from tron_server.interaction.requests import MAX_INPUT_VALUE_CHARS, _requested_payload

QUESTION = {"kind": "question", "question": "Which?", "options": ["a", "b"]}
MULTI = {**QUESTION, "multiSelect": True}
APPROVAL = {"kind": "approval", "toolName": "Bash", "suggestion": "Bash(ls:*)"}


@pytest.mark.parametrize(
    ("info", "raw", "expected"),
    [
        (QUESTION, "a", {"value": "a"}),
        (QUESTION, "  something else ", {"value": "something else"}),
        (MULTI, ["a", "b"], {"value": ["a", "b"]}),
        (MULTI, "a", {"value": ["a"]}),
        (MULTI, [], {"value": []}),
        (APPROVAL, "allow", {"decision": "allow", "rule": None}),
        (
            APPROVAL,
            {"decision": "allow_always"},
            {"decision": "allow_always", "rule": "Bash(ls:*)"},
        ),
        (APPROVAL, {"decision": "deny", "reason": " no "}, {"decision": "deny", "reason": "no"}),
    ],
)
def test_answers_that_fit(info: dict[str, Any], raw: Any, expected: dict[str, Any]) -> None:
    answer = parse_answer(info, raw, "conn")
    assert answer.outcome == "answered" and answer.responder == "conn"
    for key, value in expected.items():
        assert getattr(answer, key) == value


@pytest.mark.parametrize(
    ("info", "raw"),
    [
        (QUESTION, ["a", "b"]),
        (QUESTION, "   "),
        (QUESTION, {"decision": "allow"}),
        (MULTI, {"x": 1}),
        (MULTI, [1, 2]),
        (APPROVAL, "yes"),
        (APPROVAL, {"decision": "deny", "reason": 3}),
        (QUESTION, "x" * 20_001),
    ],
)
def test_answers_that_do_not_fit(info: dict[str, Any], raw: Any) -> None:
    with pytest.raises(InvalidParams):
        parse_answer(info, raw)


def test_long_input_values_are_cut_in_the_event() -> None:
    content = "y" * (MAX_INPUT_VALUE_CHARS + 5)
    payload = _requested_payload(
        {
            "requestId": "req_1",
            "kind": "approval",
            "toolCallId": "t",
            "toolName": "Write",
            "input": {"file_path": "a", "content": content},
        }
    )
    assert payload["inputTruncated"] is True and payload["input"]["file_path"] == "a"
    assert payload["input"]["content"].endswith("… [5 more characters]")
    short = _requested_payload({"requestId": "r", "kind": "approval", "toolCallId": "t",
                                "input": {"command": "ls"}})  # fmt: skip
    assert "inputTruncated" not in short and short["input"] == {"command": "ls"}
