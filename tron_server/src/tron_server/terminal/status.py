"""The status line's text: model · mode · context use · cost · state, cut to the width.

A pure function of what the chat knows, so it is tested without a screen.
"""

from __future__ import annotations

from typing import Any

from . import sessions
from .model import SessionModel


def _k(value: Any) -> str:
    if not isinstance(value, int | float):
        return "?"
    return f"{value / 1000:.0f}k" if value >= 1000 else str(int(value))


def status_text(
    model: SessionModel | None,
    context: dict[str, Any],
    *,
    online: bool,
    permission_mode: str | None,
    width: int,
) -> str:
    """The line for a screen ``width`` columns wide: the least important parts are
    dropped first when it does not fit."""
    parts: list[tuple[str, int]] = []  # (text, priority: lower is dropped first)
    if model is not None:
        # context.get reports the model from the session's events (model.switch
        # included); the session row's is the one it started with.
        parts.append((str(context.get("model") or model.session.get("model") or ""), 5))
        mode = model.session.get("permissionMode") or model.session.get("mode")
        if mode:
            # The mode decides what runs without asking: it is kept the longest.
            parts.append((f"mode {mode}", 4))
        percent = context.get("percent")
        if isinstance(percent, int | float):
            used = context.get("usedTokens")
            window = context.get("contextWindow")
            detail = f" ({_k(used)}/{_k(window)})" if used and window else ""
            parts.append((f"ctx {percent:.0f}%{detail}", 2))
        # With sub-agents, the session's cost includes its children's.
        total = model.session.get("totalWithChildren")
        cost = total.get("cost") if isinstance(total, dict) else model.session.get("cost")
        parts.append((sessions.money(cost if isinstance(cost, int | float) else None), 3))
    else:
        parts.append(("new session: type a message", 5))
        if permission_mode:
            parts.append((f"mode {permission_mode}", 4))
    if not online:
        state = "⚠ offline"
    elif model is not None and model.busy:
        state = "● working · Esc aborts"
    else:
        state = "ready"
    parts.append((state, 6))
    while len(parts) > 1 and len(" · ".join(p for p, _ in parts)) > width - 2:
        parts.remove(min(parts, key=lambda p: p[1]))
    return " · ".join(p for p, _ in parts)


__all__ = ["status_text"]
