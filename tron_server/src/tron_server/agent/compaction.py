"""Compaction: summarize older history into compact.summary (issue 7 §5)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .orchestrator import Orchestrator
    from .turn import AgentRun


async def maybe_auto_compact(orchestrator: Orchestrator, run: AgentRun) -> None:
    """Compact before a turn when the context is over the threshold (not yet built)."""
    return None
