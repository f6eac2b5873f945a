"""An imported session goes on under Tron: a real agent turn (the runtime, the real
Anthropic adapter, the scripted LLM) continues the main session of each format's
fixture, and the request the model gets holds the imported history and is valid."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agent.harness import Harness
from tests.support.scripted_llm import Response, Text
from tron_events.importers import IMPORTERS
from tron_events.transfer import import_records

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).parents[1] / "events" / "fixtures" / "importers"
MAINS = {
    "claude-code": (
        FIXTURES / "claude-code" / "projects" / "-home-dev-parser"
        / "5d3c2b1a-7e6f-4a5b-9c8d-0e1f2a3b4c5d.jsonl",
        "Put the test in tests/test_parser.py instead",
    ),
    "codex": (
        next((FIXTURES / "codex").rglob("rollout-2026-03-02T09-00-00-*.jsonl")),
        "Continue with the logging.",
    ),
    "pi": (
        next((FIXTURES / "pi").rglob("2026-*.jsonl")),
        "Now the summary, please.",
    ),
}  # fmt: skip


@pytest.mark.parametrize("kind", list(MAINS))
async def test_a_turn_continues_an_imported_session(h: Harness, kind: str) -> None:
    path, last_prompt = MAINS[kind]
    summary = import_records(h.store.sync, IMPORTERS[kind](path))
    session_id = summary.imported[0]
    h.llm.add(Response([Text("Carrying on from there.")]))
    done = await h.run(session_id, "Please carry on.")
    assert done["stopReason"] == "end_turn" and done["turns"] == 1
    assert h.llm.violations(0) == []
    sent = h.llm.messages(0)
    said = [getattr(b, "text", "") for m in sent for b in m.content]
    assert last_prompt in said  # the imported history went to the model
    assert said[-1] == "Please carry on."
    path_events = await h.path(session_id)
    assert [e.type for e in path_events[-4:]] == [
        "message.user", "stream.turn_start", "message.assistant", "stream.turn_end",
    ]  # fmt: skip
    state = await h.store.get_state_at_head(session_id)
    assert state.messages[-1].role == "assistant"
    imported_turns = max(
        e.payload.get("turn", 0) for e in path_events[:-4] if isinstance(e.payload.get("turn"), int)
    )
    assert path_events[-4].payload["turn"] == imported_turns + 1
