"""HistoryCheckers: one checker per session, kept across runs, bounded, dropped when the
session's last client leaves."""

from __future__ import annotations

from pathlib import Path

import pytest

from tron_events.messages import Message, TextBlock
from tron_server.agent.context import HistoryCheckers, InvalidHistoryError, check_history
from tron_server.hub import Hub
from tron_server.services import open_services, stop_runtime
from tron_server.settings import Settings


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


def test_a_dropped_session_keeps_no_checker() -> None:
    checkers = HistoryCheckers()
    kept = checkers.get("a")
    checkers.get("b")
    checkers.drop("a")
    checkers.drop("never-seen")  # nothing to drop: no error
    assert "a" not in checkers._checkers and "b" in checkers._checkers
    assert checkers.get("a") is not kept  # the next check walks the whole history


@pytest.mark.anyio
async def test_the_server_drops_a_session_s_checker_when_its_last_client_leaves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    settings = Settings(home=tmp_path / "home", database_url=f"sqlite:///{tmp_path / 'e.db'}")
    services = await open_services(settings, Hub)
    try:
        orchestrator = services.orchestrator
        assert orchestrator is not None
        checkers = orchestrator._deps.history_checkers
        checkers.get("sess")
        for forget in services.hub.caches_dropped:
            forget("sess")
        assert "sess" not in checkers._checkers
    finally:
        await stop_runtime(services)
        if services.store is not None:
            await services.store.aclose()
