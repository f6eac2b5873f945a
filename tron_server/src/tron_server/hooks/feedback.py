"""What hooks give the model, as ``hook.context`` events.

A hook's context (Claude Code's ``additionalContext``, the plain stdout of a SessionStart or
UserPromptSubmit hook) and a notice hook's ``block`` reason (a Stop hook's "not done yet: …",
a PostToolUse hook's feedback on a result) are recorded as ``hook.context`` events; the
history's reconstruction makes each one user text where it stands, so every provider gets
it as part of a user message (after the tool results of the same turn, or before the
prompt). The text is framed the way Claude Code frames it, so the model knows it comes
from a hook and not from the user.
"""

from __future__ import annotations

from typing import Any

from .base import HookDecision

__all__ = ["context_drafts", "context_text", "feedback_text"]

Draft = tuple[str, dict[str, Any]]


def context_text(event: str, text: str) -> str:
    """A hook's additional context, as the model sees it."""
    return f"<system-reminder>\n{event} hook additional context: {text}\n</system-reminder>"


def feedback_text(event: str, reason: str) -> str:
    """A notice hook's block reason (Stop: what to do before stopping), as the model sees it."""
    return f"{event} hook feedback:\n{reason}"


def context_drafts(
    event: str,
    decision: HookDecision,
    *,
    feedback: bool = False,
    tool_call_id: str | None = None,
    source: str | None = None,
) -> list[Draft]:
    """The ``hook.context`` events for ``decision``: its block reason when ``feedback``
    (notice events, where a block is something to tell the model), then its context."""
    texts: list[str] = []
    if feedback and decision.action == "block" and decision.reason:
        texts.append(feedback_text(event, decision.reason))
    if decision.context:
        texts.append(context_text(event, decision.context))
    drafts: list[Draft] = []
    for text in texts:
        payload: dict[str, Any] = {"hookEvent": event, "content": text}
        if tool_call_id is not None:
            payload["toolCallId"] = tool_call_id
        if source is not None:
            payload["source"] = source
        drafts.append(("hook.context", payload))
    return drafts
