"""Codex CLI rollouts → export records (tron_events.importers.codex).

The fixtures under fixtures/importers/codex/ were written from the format's
documentation (FORMATS.md, the Codex protocol's item types): a parent thread with
developer instructions, an image, reasoning, parallel function calls, a
freeform (custom) tool call, a web search, a sub-agent spawn, a model and effort
change, an interrupted call, a remote compaction and a record type from a newer
Codex; the sub-agent's own rollout; and a rollout in the 2025 layout.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.events._importers import Stream, check_history
from tron_events.importers import IMPORTERS
from tron_events.reconstruct import SUMMARY_PREFIX, build_state

FIXTURES = Path(__file__).parent / "fixtures" / "importers" / "codex" / "sessions"
DAY = FIXTURES / "2026" / "03" / "02"
PARENT = DAY / "rollout-2026-03-02T09-00-00-019caa10-1111-7aaa-8bbb-000000000001.jsonl"
CHILD = DAY / "rollout-2026-03-02T09-01-00-019caa10-2222-7aaa-8bbb-000000000002.jsonl"
LEGACY = next((FIXTURES / "2025").rglob("*.jsonl"))


def by_type(events: list[dict[str, Any]], type: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == type]


def texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content if isinstance(b, dict)]


@pytest.fixture(scope="module")
def day() -> Stream:
    return Stream(IMPORTERS["codex"](DAY))


def sessions(stream: Stream) -> tuple[str, str]:
    parent, child = stream.sessions
    return parent, child


def test_the_thread_becomes_a_session_in_its_workspace(day: Stream) -> None:
    parent_id, _ = sessions(day)
    parent = day.sessions[parent_id]
    assert (parent["model"], parent["provider"]) == ("gpt-5.3-codex", "openai-responses")
    assert parent["title"] == "Double charge at checkout"  # thread_name_updated
    assert day.workspaces[parent["workspaceId"]]["path"] == "/work/shop"
    start = day.session_events(parent_id)[0]["payload"]
    assert start["imported"]["sessionMeta"]["git"]["branch"] == "main"
    for session_id in day.sessions:
        check_history(day.messages_at_head(session_id), model="gpt-5.2")


def test_items_become_messages_tool_calls_and_results(day: Stream) -> None:
    parent_id, _ = sessions(day)
    events = day.session_events(parent_id)
    [developer, *_] = by_type(events, "message.system")
    assert developer["payload"]["role"] == "developer"
    prompt = by_type(events, "message.user")[1]["payload"]["content"]
    assert [b["type"] for b in prompt] == ["text", "image"]
    assert prompt[1]["source"]["media_type"] == "image/png"
    first, second, _spawn, final, *_ = by_type(events, "message.assistant")
    thinking, call_a, call_b = first["payload"]["content"]
    assert thinking == {
        "type": "thinking",
        "thinking": "**Looking at the checkout handler**",
        "provider": "openai",
        "signature": "gAAAAABpEncryptedReasoningOne==",
    }
    assert (call_a["id"], call_a["input"]) == ("call_rg01", {"cmd": "rg -n 'charge(' src"})
    assert call_b["id"] == "call_sed02"
    # The token_count after the response is its usage (input includes the cache).
    assert first["payload"]["tokenUsage"] == {
        "inputTokens": 5200,
        "outputTokens": 180,
        "cacheReadTokens": 1024,
        "cacheCreationTokens": 0,
    }
    kinds = [b["type"] for b in second["payload"]["content"]]
    assert kinds == ["thinking", "text", "tool_use", "web_search_call"]
    patch = second["payload"]["content"][2]
    assert patch["name"] == "apply_patch" and patch["input"]["input"].startswith("*** Begin Patch")
    results = {e["payload"]["toolCallId"]: e["payload"] for e in by_type(events, "tool.result")}
    assert set(results) == {"call_rg01", "call_sed02", "call_patch03", "call_spawn04"}
    assert results["call_rg01"]["content"].startswith("src/checkout.py:18")
    assert texts(final["payload"]["content"]) == [
        "Fixed in src/checkout.py; a sub-agent is writing the test."
    ]
    # The UI's copies of messages are not stored twice.
    asked = [
        e
        for e in by_type(events, "message.user")
        if "Also log every charge." in texts(e["payload"]["content"])
    ]
    assert len(asked) == 2 and asked[1]["payload"]["replayed"] is True
    assert "an event_msg user_message repeats a user message item" in day.notice_text()


def test_settings_interruptions_and_compaction(day: Stream) -> None:
    parent_id, _ = sessions(day)
    events = day.session_events(parent_id)
    [switch] = by_type(events, "config.model_switch")
    assert switch["payload"] == {"previousModel": "gpt-5.3-codex", "newModel": "gpt-5.2"}
    levels = [e["payload"]["newLevel"] for e in by_type(events, "config.reasoning_level")]
    assert levels == ["high", "medium"]
    cut = [e for e in by_type(events, "tool.call") if e["payload"]["toolCallId"] == "call_cut05"]
    assert cut[0]["payload"]["arguments"] == {"arguments": '{"cmd": "pytest -q'}
    [interrupted] = by_type(events, "notification.interrupted")
    assert interrupted["payload"]["reason"] == "interrupted"
    [summary] = by_type(events, "compact.summary")
    assert summary["payload"]["imported"]["replacement_history"][-1]["type"] == "compaction"
    after = events[events.index(summary) + 1 : events.index(summary) + 4]
    assert [e["type"] for e in after] == ["message.user", "message.assistant", "message.user"]
    assert all(e["payload"]["replayed"] for e in after)
    history = day.messages_at_head(parent_id)
    first_text = history[0].content[0]
    assert getattr(first_text, "text", "").startswith(SUMMARY_PREFIX)
    assert getattr(history[-1].content[0], "text", "") == "Logging added to `charge`."
    state = build_state(day.path_to(day.sessions[parent_id]["headEventId"]))
    assert (state.model, state.provider, state.reasoning_level) == (
        "gpt-5.2",
        "openai-responses",
        "medium",
    )
    assert "unknown record type 'ghost_note' ×1" in day.notice_text()


def test_the_sub_agent_thread_is_a_child_of_its_spawn_call(day: Stream) -> None:
    parent_id, child_id = sessions(day)
    [spawn] = [
        e
        for e in by_type(day.session_events(parent_id), "tool.call")
        if e["payload"]["name"] == "spawn_agent"
    ]
    start = day.session_events(child_id)[0]["payload"]
    assert day.sessions[child_id]["parentSessionId"] == parent_id
    assert start["parentToolCallId"] == "call_spawn04"
    assert start["spawnedByEventId"] == spawn["id"]
    assert (start["subagentType"], start["description"]) == ("worker", "Tester")


def test_a_child_rollout_that_sorts_first_still_comes_after_its_parent(
    tmp_path: Path, day: Stream
) -> None:
    shutil.copy(CHILD, tmp_path / "a-child.jsonl")
    shutil.copy(PARENT, tmp_path / "b-parent.jsonl")
    stream = Stream(IMPORTERS["codex"](tmp_path))
    assert list(stream.sessions) == list(day.sessions)
    child = stream.session_events(list(stream.sessions)[1])[0]["payload"]
    assert child["parentToolCallId"] == "call_spawn04"


def test_a_child_rollout_alone_is_a_session_of_its_own(day: Stream) -> None:
    alone = Stream(IMPORTERS["codex"](CHILD))
    [(session_id, session)] = alone.sessions.items()
    assert session_id == list(day.sessions)[1]
    assert session["parentSessionId"] is None
    assert "not part of this import" in alone.notice_text()
    check_history(alone.messages_at_head(session_id))


def test_the_2025_layout(tmp_path: Path) -> None:
    stream = Stream(IMPORTERS["codex"](LEGACY))
    [(session_id, session)] = stream.sessions.items()
    # No cwd in the meta line: the environment context Codex sent says it.
    assert session["workingDirectory"] == "/home/dev/tools"
    assert session["model"] == "unknown"
    assert "names no model" in stream.notice_text()
    [assistant, _final] = by_type(stream.session_events(session_id), "message.assistant")
    assert assistant["payload"]["content"][0]["item_id"] == "rs_legacy1"
    [result] = by_type(stream.session_events(session_id), "tool.result")
    assert result["payload"]["toolCallId"] == "call_legacy1"
    assert [e["payload"]["recordType"] for e in stream.of_type("metadata.import")] == [
        "state",
        "state",
    ]
    check_history(stream.messages_at_head(session_id))
