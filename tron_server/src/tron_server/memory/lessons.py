"""Lessons: the ``patterns`` of a workspace's handoffs, accumulated.

Each pattern is a short sentence a handoff recorded ("run the migrations before the
tests"). The same lesson from several sessions counts once per handoff that gave it;
sentences are the same lesson when they are equal ignoring case, spacing and a final
full stop. The most frequent come first (the most recent on a tie), each with the
handoffs it came from.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tron_events import Event

__all__ = ["Lesson", "collect_lessons"]

_SPACE = re.compile(r"\s+")


@dataclass
class Lesson:
    """A lesson, how many handoffs gave it, and their event ids (newest first)."""

    text: str
    count: int = 0
    handoff_ids: list[str] = field(default_factory=list)
    last_seen: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "count": self.count, "handoffIds": list(self.handoff_ids)}


def _key(text: str) -> str:
    return _SPACE.sub(" ", text).strip().rstrip(".").casefold()


def collect_lessons(handoffs: Iterable[Event]) -> list[Lesson]:
    """The lessons of ``handoffs`` (``memory.handoff`` events), most frequent first."""
    lessons: dict[str, Lesson] = {}
    for event in sorted(handoffs, key=lambda e: (e.timestamp, e.id), reverse=True):
        patterns = event.payload.get("patterns")
        if not isinstance(patterns, list):
            continue
        for raw in dict.fromkeys(p for p in patterns if isinstance(p, str)):
            key = _key(raw)
            if not key:
                continue
            lesson = lessons.get(key)
            if lesson is None:
                # The newest wording of a lesson is the one shown.
                lesson = lessons[key] = Lesson(_SPACE.sub(" ", raw).strip(), 0, [], event.timestamp)
            if event.id not in lesson.handoff_ids:
                lesson.count += 1
                lesson.handoff_ids.append(event.id)
    return sorted(lessons.values(), key=lambda x: (x.count, x.last_seen), reverse=True)
