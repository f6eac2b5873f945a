"""What memory is put before the model, within a token budget.

At a session's first message (and again after a compaction or ``/clear``, ledger and
lessons only), :func:`compose` builds the text of a ``memory.loaded`` event, which the
history turns into user text in front of the prompt. Tokens are estimated at 4 characters
each, the budget (:data:`MEMORY_BUDGET_TOKENS`, 4,000 tokens) shared in this order:

===================  ====================================================================
the user's ledger    ``~/.tron/ledger.md``, at most :data:`USER_LEDGER_TOKENS` (500)
the project ledger   ``.tron/ledger.md``, at most :data:`LEDGER_TOKENS` (2,000)
lessons              the most frequent patterns, at most :data:`MAX_LESSONS` (8) and
                     :data:`LESSON_TOKENS` (400)
handoffs             the most relevant to the first prompt (:mod:`.handoffs`), at most
                     :data:`MAX_HANDOFFS` (4), each whole or not at all, while the budget lasts
===================  ====================================================================

A ledger longer than its share is cut with a marker that names the file (the agent can
read the rest). Nothing at all to put (no ledger, no handoff, no lesson): no event.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tron_events import Event

from .handoffs import render_handoff
from .ledger import LedgerFile, cut_text, project_ledger_path
from .lessons import Lesson

__all__ = [
    "CHARS_PER_TOKEN",
    "LEDGER_TOKENS",
    "LESSON_TOKENS",
    "MAX_HANDOFFS",
    "MAX_LESSONS",
    "MEMORY_BUDGET_TOKENS",
    "USER_LEDGER_TOKENS",
    "Injection",
    "compose",
]

CHARS_PER_TOKEN = 4
MEMORY_BUDGET_TOKENS = 4_000
USER_LEDGER_TOKENS = 500
LEDGER_TOKENS = 2_000
LESSON_TOKENS = 400
MAX_LESSONS = 8
MAX_HANDOFFS = 4

_OPEN = (
    "<memory>\nTron's memory of this workspace, from earlier sessions (read at the start of "
    "this one; cite a handoff by its event id, search further with the Recall tool)."
)
_CLOSE = "</memory>"


@dataclass(frozen=True)
class Injection:
    """The text put before the model and the ``memory.loaded`` payload recording it."""

    content: str
    payload: dict[str, Any]


def _tokens(text: str) -> int:
    return len(text) // CHARS_PER_TOKEN


def _ledger_section(ledger: LedgerFile, max_tokens: int) -> tuple[str, bool]:
    if ledger.scope == "project":
        shown = str(project_ledger_path(Path(".")))
        title = (
            f"## Ledger ({shown}, this project's working memory: goal, current state, "
            "decisions, next steps. Keep it up to date with Edit as the work goes on)"
        )
    else:
        title = f"## Your ledger ({ledger.path}, the user's own notes for every project)"
    body, cut = cut_text(ledger.text.strip(), max_tokens * CHARS_PER_TOKEN, str(ledger.path))
    return f"{title}\n{body}", cut


def compose(
    *,
    working_directory: Path,
    ledgers: Sequence[LedgerFile] = (),
    lessons: Sequence[Lesson] = (),
    handoffs: Sequence[Event] = (),
    source: str = "startup",
    budget_tokens: int = MEMORY_BUDGET_TOKENS,
) -> Injection | None:
    """The memory text within ``budget_tokens`` (see the module docstring), or None when
    there is nothing to put."""
    sections: list[str] = []
    refs: list[dict[str, Any]] = []
    used = _tokens(_OPEN + _CLOSE)
    for ledger in ledgers:
        share = USER_LEDGER_TOKENS if ledger.scope == "user" else LEDGER_TOKENS
        share = min(share, budget_tokens - used)
        if share <= 50:
            continue
        text, cut = _ledger_section(ledger, share)
        sections.append(text)
        used += _tokens(text)
        refs.append(
            {
                "path": str(ledger.path),
                "scope": ledger.scope,
                "revision": ledger.revision,
                "bytes": ledger.size,
                "truncated": cut,
            }
        )
    shown_lessons: list[str] = []
    if lessons:
        lines = ["## Lessons from earlier sessions (most frequent first)"]
        spent = _tokens(lines[0])
        for lesson in lessons[:MAX_LESSONS]:
            times = f" ({lesson.count} sessions)" if lesson.count > 1 else ""
            line = f"- {lesson.text}{times}"
            if spent + _tokens(line) > min(LESSON_TOKENS, budget_tokens - used):
                break
            lines.append(line)
            spent += _tokens(line)
            shown_lessons.append(lesson.text)
        if shown_lessons:
            sections.append("\n".join(lines))
            used += spent
    handoff_ids: list[str] = []
    if handoffs:
        header = "## Handoffs from earlier sessions (the most relevant first)"
        rendered: list[str] = []
        spent = _tokens(header)
        for event in handoffs[:MAX_HANDOFFS]:
            text = render_handoff(event)
            if used + spent + _tokens(text) > budget_tokens:
                continue
            rendered.append(text)
            spent += _tokens(text)
            handoff_ids.append(event.id)
        if rendered:
            sections.append("\n\n".join([header, *rendered]))
            used += spent
    if not sections:
        return None
    content = "\n\n".join([_OPEN, *sections, _CLOSE])
    payload: dict[str, Any] = {
        "content": content,
        "ledger": refs,
        "handoffIds": handoff_ids,
        "patterns": shown_lessons,
        "budgetTokens": budget_tokens,
        "tokens": _tokens(content),
        "source": source,
    }
    return Injection(content, payload)
