"""Checks on a finished stream shared by the adapter tests: it ends with exactly one
``Done`` or ``ErrorEvent``."""

from __future__ import annotations

from tron_llm import Done, ErrorEvent, StreamEvent


def last_done(events: list[StreamEvent]) -> Done:
    """The stream's ``Done``, asserting it is the last event and the only end."""
    last = events[-1]
    assert isinstance(last, Done), last
    assert sum(isinstance(e, Done | ErrorEvent) for e in events) == 1
    return last


def last_error(events: list[StreamEvent]) -> ErrorEvent:
    """The stream's ``ErrorEvent``, asserting it is the last event."""
    last = events[-1]
    assert isinstance(last, ErrorEvent), last
    return last
