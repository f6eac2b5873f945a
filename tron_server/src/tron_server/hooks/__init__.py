"""Hooks: the engine (base), the built-in guardrails and user command hooks from settings.json."""

from __future__ import annotations

from .base import (
    BACKGROUND_EVENTS,
    BLOCKING_EVENTS,
    HOOK_EVENTS,
    HookContext,
    HookDecision,
    HookEngine,
    HookEvent,
    HookFn,
    RecordFn,
)

__all__ = [
    "BACKGROUND_EVENTS",
    "BLOCKING_EVENTS",
    "HOOK_EVENTS",
    "HookContext",
    "HookDecision",
    "HookEngine",
    "HookEvent",
    "HookFn",
    "RecordFn",
]
