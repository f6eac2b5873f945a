"""Hooks: the engine (:mod:`.base`), the built-in guardrails (:mod:`.guardrails`), user
command hooks from settings.json (:mod:`.command`, :mod:`.settings`), what hooks give the
model (:mod:`.feedback`) and the transcripts they read (:mod:`.transcript`).

:func:`build_hook_engine` assembles them for one working directory.
"""

from __future__ import annotations

from pathlib import Path

from .base import (
    BACKGROUND_EVENTS,
    BLOCKING_EVENTS,
    HOOK_EVENTS,
    TOOL_ALIASES,
    HookContext,
    HookDecision,
    HookEngine,
    HookEvent,
    HookFn,
    NotifyFn,
    RecordFn,
    SessionInfoFn,
)
from .command import CommandHookError, register_command_hooks
from .guardrails import GUARDRAILS_HOOK_NAME, Guardrails, register_guardrails
from .settings import GuardrailSettings, HookSettingsError, LoadedSettings, load_settings
from .transcript import Transcripts

__all__ = [
    "BACKGROUND_EVENTS",
    "BLOCKING_EVENTS",
    "GUARDRAILS_HOOK_NAME",
    "HOOK_EVENTS",
    "TOOL_ALIASES",
    "CommandHookError",
    "GuardrailSettings",
    "Guardrails",
    "HookContext",
    "HookDecision",
    "HookEngine",
    "HookEvent",
    "HookFn",
    "HookSettingsError",
    "LoadedSettings",
    "NotifyFn",
    "RecordFn",
    "SessionInfoFn",
    "Transcripts",
    "build_hook_engine",
    "load_settings",
]


def build_hook_engine(
    working_directory: Path, home: Path, record: RecordFn | None = None
) -> HookEngine:
    """An engine with the guardrails and the user's command hooks for ``working_directory``.

    ``home`` is Tron's home directory (``Settings.home``, ``~/.tron`` by default): hooks
    and guardrail settings come from ``<home>/settings.json``, then Claude Code's
    ``.claude/settings.json`` and ``.claude/settings.local.json`` of ``working_directory``,
    then its ``.tron/settings.json`` (hooks run in that order for the same event;
    guardrails run after every other PreToolUse hook, so they check the final input).
    ``record(session_id, event_type, payload)`` receives hook.triggered /
    hook.completed. Raises :class:`HookSettingsError` for a settings file that cannot be used.
    """
    settings = load_settings(working_directory, home)
    engine = HookEngine(record)
    register_command_hooks(engine, settings.hooks)
    register_guardrails(
        engine,
        settings.guardrails,
        working_directory=working_directory,
        home=home,
        hook_commands=[spec.command for spec in settings.hooks],
    )
    return engine
