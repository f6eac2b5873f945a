"""HistoryChecker: the incremental history check equals validate_history on the whole
list, whatever happens to the list between two checks (prefix kept, last message
replaced, prefix replaced, shortened, the same list grown in place)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tron_events.messages import Message
from tron_events.validate import HistoryChecker, validate_history

_IDS = ["a", "b", "c"]

_blocks = st.one_of(
    st.sampled_from(["hi", "", " "]).map(lambda t: {"type": "text", "text": t}),
    st.sampled_from(_IDS).map(lambda i: {"type": "tool_use", "id": i, "name": "bash", "input": {}}),
    st.tuples(st.sampled_from(_IDS), st.sampled_from(["ok", [{"type": "text", "text": " "}]])).map(
        lambda t: {"type": "tool_result", "tool_use_id": t[0], "content": t[1]}
    ),
    st.just({"type": "thinking", "thinking": "hm", "signature": "s"}),
    st.just(
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}
    ),
)


def _message(data: tuple[str, list[dict[str, Any]]]) -> Message:
    role, blocks = data
    return Message.model_validate({"role": role, "content": blocks})


_messages = st.tuples(st.sampled_from(["user", "assistant"]), st.lists(_blocks, max_size=3)).map(
    _message
)
_ops = st.one_of(
    st.tuples(st.just("append"), st.lists(_messages, min_size=1, max_size=3)),
    st.tuples(st.just("replace_last"), st.lists(_messages, min_size=1, max_size=2)),
    st.tuples(st.just("replace_at"), st.tuples(st.integers(0, 20), _messages)),
    st.tuples(st.just("truncate"), st.integers(0, 20)),
    st.tuples(st.just("grow_in_place"), st.lists(_messages, min_size=1, max_size=2)),
    st.tuples(st.just("new"), st.lists(_messages, max_size=6)),
    st.tuples(st.just("same"), st.none()),
)


@settings(max_examples=300, deadline=None)
@given(start=st.lists(_messages, max_size=6), ops=st.lists(_ops, max_size=12))
def test_incremental_check_equals_the_full_walk(
    start: list[Message], ops: list[tuple[str, Any]]
) -> None:
    checker = HistoryChecker()
    history = list(start)
    assert checker.check(history) == validate_history(history)
    for op, arg in ops:
        if op == "append":
            history = [*history, *arg]
        elif op == "replace_last":
            history = [*history[:-1], *arg]
        elif op == "replace_at":
            op_index, message = arg
            history = list(history)
            if history:
                history[op_index % len(history)] = message
        elif op == "truncate":
            history = history[: arg % (len(history) + 1)]
        elif op == "grow_in_place":
            history.extend(arg)  # the list the checker saw, changed after the check
        elif op == "new":
            history = list(arg)
        assert checker.check(history) == validate_history(history), op


def test_a_replaced_last_message_is_checked_again() -> None:
    use = {"type": "tool_use", "id": "a", "name": "bash", "input": {}}
    user = Message.model_validate({"role": "user", "content": [{"type": "text", "text": "go"}]})
    calls = Message.model_validate({"role": "assistant", "content": [use]})
    checker = HistoryChecker()
    assert [v.rule for v in checker.check([user, calls])] == ["unanswered_tool_use"]
    answer = {"type": "tool_result", "tool_use_id": "a", "content": "ok"}
    replaced = Message.model_validate({"role": "assistant", "content": [use, use]})
    assert [v.rule for v in checker.check([user, replaced])] == [
        "duplicate_tool_use",
        "unanswered_tool_use",
    ]
    reply = Message.model_validate({"role": "user", "content": [answer]})
    assert checker.check([user, calls, reply]) == []
