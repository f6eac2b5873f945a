"""The agent runtime: the orchestrator (one running loop per session) and the turn loop."""

from __future__ import annotations

from .orchestrator import Emit, HooksFactory, Orchestrator, ProviderFactory
from .turn import AgentRun, RunRequest, RunResult

__all__ = [
    "AgentRun",
    "Emit",
    "HooksFactory",
    "Orchestrator",
    "ProviderFactory",
    "RunRequest",
    "RunResult",
]
