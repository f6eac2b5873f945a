"""Context assembly: the system prompt and the history sent on each LLM call.

The history is ``get_state_at_head`` (reconstruction repairs what it can) and is
checked with :func:`tron_events.validate.validate_history` before every call (a
session's :class:`~tron_events.validate.HistoryChecker` walks only what is new): a
violation there is a bug in a writer or in reconstruction, so the turn fails
with :class:`InvalidHistoryError` (logged with every violation) instead of
sending a request the provider would reject.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from tron_events.messages import Message
from tron_events.validate import HistoryChecker, Violation, validate_history

from ..context.rules import RulesFile
from ..context.skills import discover_skills
from ..context.system_prompt import build_system_prompt as context_system_prompt

__all__ = [
    "HistoryCheckers",
    "InvalidHistoryError",
    "build_system_prompt",
    "check_history",
]

log = logging.getLogger("tron_server.agent")


class InvalidHistoryError(Exception):
    """The reconstructed history breaks a provider rule (a bug, never the user's fault)."""

    def __init__(self, session_id: str, violations: list[Violation]) -> None:
        shown = "; ".join(f"message {v.index}: {v.rule} ({v.detail})" for v in violations[:5])
        super().__init__(
            f"the history of session {session_id} is not valid for the provider ({shown}); "
            "nothing was sent. This is a bug: please report it with the session id"
        )
        self.session_id = session_id
        self.violations = violations


class HistoryCheckers:
    """A :class:`~tron_events.validate.HistoryChecker` per session, for the last
    ``max_sessions`` sessions checked (least recently used dropped).

    The store's live projection hands the same message objects from one model call
    to the next, across runs of a session too (a prompt without tools is one call
    per run), so the check goes on from the previous one whatever run made it. A
    checker's ``check`` does not await: two runs never interleave in one.
    """

    def __init__(self, max_sessions: int = 64) -> None:
        self.max_sessions = max_sessions
        self._checkers: OrderedDict[str, HistoryChecker] = OrderedDict()

    def get(self, session_id: str) -> HistoryChecker:
        """The checker of ``session_id`` (a new one the first time)."""
        checker = self._checkers.pop(session_id, None)
        if checker is None:
            checker = HistoryChecker()
            while len(self._checkers) >= self.max_sessions:
                self._checkers.popitem(last=False)
        self._checkers[session_id] = checker
        return checker

    def drop(self, session_id: str) -> None:
        """Forget ``session_id``'s checker (and the history it holds): its last client
        left. The next check walks the whole history again."""
        self._checkers.pop(session_id, None)


def check_history(
    session_id: str, messages: list[Message], checker: HistoryChecker | None = None
) -> None:
    """Raise :class:`InvalidHistoryError` (and log) when ``messages`` is not sendable.

    ``checker`` (the session's): only the messages after those it checked last are
    walked."""
    violations = validate_history(messages) if checker is None else checker.check(messages)
    if violations:
        log.error(
            "invalid history for session %s: %s",
            session_id,
            [(v.index, v.rule, v.detail) for v in violations],
        )
        raise InvalidHistoryError(session_id, violations)


def build_system_prompt(
    *,
    stored: str | None,
    working_directory: Path,
    home: Path,
    rules: Sequence[RulesFile] = (),
    now: datetime | None = None,
) -> str:
    """The system prompt of a turn: the context layer's template
    (:func:`tron_server.context.system_prompt.build_system_prompt`) with the environment,
    the session's loaded ``rules`` files and the discovered skills; a prompt stored in
    the session (``session.start`` / ``config.prompt_update``) replaces the template's
    instructions. Skills that cannot be read (an unreadable folder) are left out."""
    try:
        skills = discover_skills(home, working_directory)
    except OSError as exc:
        log.warning("skills not listed in the system prompt: %s", exc)
        skills = []
    return context_system_prompt(
        working_directory=working_directory, rules=list(rules), skills=skills, base=stored,
        now=now or datetime.now(UTC),
    )  # fmt: skip
