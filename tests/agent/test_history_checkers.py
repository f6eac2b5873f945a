"""HistoryCheckers: one checker per session, kept across runs, bounded."""

from __future__ import annotations

from tron_events.messages import Message, TextBlock
from tron_server.agent.context import HistoryCheckers, InvalidHistoryError, check_history


def test_a_session_keeps_its_checker_and_old_sessions_are_dropped() -> None:
    checkers = HistoryCheckers(max_sessions=2)
    first = checkers.get("a")
    assert checkers.get("a") is first
    checkers.get("b")
    checkers.get("a")  # used again: "b" is now the oldest
    checkers.get("c")
    assert checkers.get("a") is first
    assert len(checkers._checkers) == 2 and "b" not in checkers._checkers


def test_the_check_goes_on_from_the_session_s_last_one() -> None:
    checker = HistoryCheckers().get("s")
    user = Message(role="user", content=[TextBlock(text="go")])
    reply = Message(role="assistant", content=[TextBlock(text="ok")])
    check_history("s", [user], checker)
    check_history(
        "s", [user, reply, Message(role="user", content=[TextBlock(text="more")])], checker
    )
    try:
        check_history("s", [user, reply, reply], checker)
    except InvalidHistoryError as exc:
        assert [(v.index, v.rule) for v in exc.violations] == [(2, "alternation")]
    else:
        raise AssertionError("two assistant messages in a row were accepted")
