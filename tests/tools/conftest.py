"""Fixtures for the tool tests: a real temporary working directory and a recorder."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tron_server.tools import ToolContext


@dataclass
class Recorder:
    """Collects what tools record ((event_type, payload)) and what they stream."""

    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    output: list[str] = field(default_factory=list)

    async def record(self, event_type: str, payload: dict[str, Any]) -> None:
        self.events.append((event_type, payload))

    def of(self, event_type: str) -> list[dict[str, Any]]:
        return [p for t, p in self.events if t == event_type]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    d = tmp_path / "project"
    d.mkdir()
    return d.resolve()


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def ctx(workdir: Path, recorder: Recorder) -> ToolContext:
    return ToolContext(
        session_id="sess_test",
        working_directory=workdir,
        tool_call_id="toolu_1",
        on_output=recorder.output.append,
        record=recorder.record,
    )
