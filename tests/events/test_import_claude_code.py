"""Claude Code transcripts → export records (tron_events.importers.claude_code).

The fixtures under fixtures/importers/claude-code/ were written from the format's
documentation (FORMATS.md and the public viewers' parsers): a 2.1-style session
with parallel tool calls split over records, hook progress in the parent chain, a
failed tool, an API-error retry, an edited prompt (a branch), a Task sub-agent in
its own file, a model switch, a compaction, a rejected tool call, Claude Code's
own API-error message and unknown record types; and a 1.0-style session whose
sub-agents are written into the main file.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.events._importers import Stream, check_history
from tron_events.importers import IMPORTERS
from tron_events.reconstruct import SUMMARY_PREFIX, build_state

FIXTURES = Path(__file__).parent / "fixtures" / "importers" / "claude-code" / "projects"
MAIN = FIXTURES / "-home-dev-parser" / "5d3c2b1a-7e6f-4a5b-9c8d-0e1f2a3b4c5d.jsonl"
SUBAGENT = MAIN.with_suffix("") / "subagents" / "agent-a1b2c3d.jsonl"
OLD = FIXTURES / "-srv-app" / "7f8e9d0c-1b2a-4c3d-8e4f-5a6b7c8d9e0f.jsonl"


def load(path: Path) -> Stream:
    return Stream(IMPORTERS["claude-code"](path))


def texts(messages: Any) -> list[str]:
    return [getattr(b, "text", "") for m in messages for b in m.content]


def by_type(events: list[dict[str, Any]], type: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == type]


@pytest.fixture(scope="module")
def tree() -> Stream:
    return load(MAIN)


def test_one_session_per_branch_and_per_sub_agent(tree: Stream) -> None:
    assert tree.header["source"] == {"kind": "claude-code", "path": str(MAIN)}
    main, fork, agent, compaction = tree.sessions.values()
    assert main["parentSessionId"] is None and main["forkFromEventId"] is None
    assert main["title"] == "Parser drops the last line"  # the custom-title record
    assert (main["model"], main["provider"]) == ("claude-opus-4-6", "anthropic")
    assert tree.workspaces[main["workspaceId"]]["path"] == "/home/dev/parser"
    # The edited prompt: the branch written first becomes the fork.
    assert fork["forkFromEventId"] is not None and fork["parentSessionId"] == main["id"]
    assert agent["parentSessionId"] == main["id"] and agent["forkFromEventId"] is None
    assert compaction["parentSessionId"] == main["id"]
    for session_id in tree.sessions:
        check_history(tree.messages_at_head(session_id))


def test_one_api_response_split_over_records_is_one_message(tree: Stream) -> None:
    main = next(iter(tree.sessions))
    first = by_type(tree.session_events(main), "message.assistant")[0]["payload"]
    assert [b["type"] for b in first["content"]] == ["thinking", "text", "tool_use", "tool_use"]
    assert first["content"][0]["signature"] == "EqQBCkYIBxgCKkB0aGlua2luZyBzaWduYXR1cmU="
    assert first["content"][3]["id"] == "toolu_02Grep"
    # The last record's usage (the response's final counts), the whole input counted.
    assert first["tokenUsage"] == {
        "inputTokens": 3 + 12000 + 800,
        "outputTokens": 180,
        "cacheReadTokens": 12000,
        "cacheCreationTokens": 800,
    }
    assert first["stopReason"] == "tool_use" and first["model"] == "claude-opus-4-6"
    assert len(first["imported"]["records"]) == 4  # each source record's other fields
    events = tree.session_events(main)
    start = events.index(by_type(events, "message.assistant")[0])
    kinds = [(e["type"], e["payload"].get("toolCallId")) for e in events[start + 1 : start + 5]]
    assert kinds == [
        ("tool.call", "toolu_01Read"),
        ("tool.call", "toolu_02Grep"),
        ("tool.result", "toolu_01Read"),
        ("tool.result", "toolu_02Grep"),
    ]
    grep = events[start + 4]["payload"]
    assert grep["content"] == "src/parser.py:12:def parse(text):" and grep["isError"] is False
    assert events[start + 3]["payload"]["imported"]["toolUseResult"]["file"]["numLines"] == 3


def test_tool_errors_model_switches_and_compaction(tree: Stream) -> None:
    main = next(iter(tree.sessions))
    events = tree.session_events(main)
    results = {e["payload"]["toolCallId"]: e["payload"] for e in by_type(events, "tool.result")}
    assert results["toolu_03Bash"]["isError"] is True
    assert results["toolu_06Write"]["isError"] is True
    [switch] = by_type(events, "config.model_switch")
    assert switch["payload"] == {
        "previousModel": "claude-opus-4-6",
        "newModel": "claude-sonnet-4-5",
    }
    [boundary] = by_type(events, "compact.boundary")
    assert boundary["payload"]["reason"] == "manual"
    assert boundary["payload"]["originalTokens"] == 15432
    [summary] = by_type(events, "compact.summary")
    assert summary["payload"]["boundaryEventId"] == boundary["id"]
    assert summary["parentId"] == boundary["id"]
    # After the compaction the history starts from the summary.
    history = tree.messages_at_head(main)
    assert texts(history)[0] == SUMMARY_PREFIX + summary["payload"]["summary"]
    assert "Put the test in tests/test_parser.py instead" in texts(history)
    state = build_state(tree.path_to(tree.sessions[main]["headEventId"]))
    assert state.model == "claude-sonnet-4-5" and state.turn_count == 8


def test_a_compaction_summary_is_also_a_handoff(tree: Stream) -> None:
    main = next(iter(tree.sessions))
    events = tree.session_events(main)
    [summary] = by_type(events, "compact.summary")
    [handoff] = by_type(events, "memory.handoff")
    assert handoff["parentId"] == summary["id"]
    assert handoff["payload"]["summary"] == summary["payload"]["summary"]
    assert handoff["payload"]["trigger"] == "import"
    assert handoff["payload"]["source"] == "claude-code"
    assert handoff["payload"]["complete"] is False
    assert handoff["payload"]["throughEventId"] == summary["id"]


def test_a_rejected_call_keeps_its_result_and_the_text_beside_it(tree: Stream) -> None:
    main = next(iter(tree.sessions))
    events = tree.session_events(main)
    [result] = [
        e for e in by_type(events, "tool.result") if e["payload"]["toolCallId"] == "toolu_06Write"
    ]
    after = events[events.index(result) + 1]
    assert after["type"] == "message.user"
    assert after["payload"]["content"] == [
        {"type": "text", "text": "[Request interrupted by user for tool use]"}
    ]
    assert after["payload"]["imported"]["splitFromToolResults"] is True


def test_the_branch_written_first_is_a_fork_from_the_shared_message(tree: Stream) -> None:
    main_id, fork_id = list(tree.sessions)[:2]
    fork_events = tree.session_events(fork_id)
    root = fork_events[0]
    assert root["type"] == "session.fork"
    point = tree.events[root["parentId"]]
    assert point["sessionId"] == main_id
    # The fork point is the answer both prompts followed.
    assert point["type"] == "message.assistant"
    assert point["payload"]["content"][0]["text"].startswith("`parse` drops the last line")
    first = fork_events[1]["payload"]["content"]
    assert [b["type"] for b in first] == ["text", "image"]
    history = tree.messages_at_head(fork_id)
    assert "Fix it, and ask a sub-agent to check the callers" not in texts(history)
    assert texts(history)[-1] == "It is called from `cli.main` only."
    assert any(b.type == "image" for m in history for b in m.content)


def test_the_sub_agent_is_a_child_of_the_call_that_started_it(tree: Stream) -> None:
    main_id, _, agent_id, compaction_id = tree.sessions
    [call] = [
        e
        for e in by_type(tree.session_events(main_id), "tool.call")
        if e["payload"]["toolCallId"] == "toolu_04Task"
    ]
    start = tree.session_events(agent_id)[0]["payload"]
    assert start["parentSessionId"] == main_id
    assert start["parentToolCallId"] == "toolu_04Task"
    assert start["spawnedByEventId"] == call["id"]
    assert start["subagentType"] == "Explore" and start["description"] == "Find callers"
    assert start["model"] == "claude-haiku-4-5-20251001"
    assert start["imported"]["meta"] == {"agentType": "Explore", "description": "Find callers"}
    assert texts(tree.messages_at_head(agent_id))[-1] == (
        "Two callers: cli.main and tests/test_parser.py."
    )
    run = tree.session_events(compaction_id)[0]["payload"]
    assert "parentToolCallId" not in run
    assert "compaction run" in tree.notice_text()


def test_every_source_line_is_kept_somewhere(tree: Stream) -> None:
    """Nothing is dropped silently: each record's uuid is in some event, and each
    record without one is kept whole in a metadata.import event."""
    dumped = json.dumps([e["payload"] for e in tree.events.values()])
    kept = [e["payload"]["record"] for e in tree.of_type("metadata.import")]
    for line in MAIN.read_text().splitlines():
        record = json.loads(line)
        if "uuid" in record:
            assert record["uuid"] in dumped, record["type"]
        else:
            assert record in kept, record["type"]
    kinds = sorted({e["payload"]["recordType"] for e in tree.of_type("metadata.import")})
    assert kinds == [
        "agent-color",
        "assistant",
        "custom-title",
        "file-history-snapshot",
        "progress",
        "queue-operation",
        "system",
    ]
    notices = tree.notice_text()
    assert "unknown record type 'agent-color' ×1" in notices
    assert "assistant (API error shown by Claude Code) ×1" in notices
    # Claude Code's API-error message never reaches a history.
    for session_id in tree.sessions:
        assert "API Error: 500 Internal server error" not in texts(
            tree.messages_at_head(session_id)
        )


def test_context_fields_are_kept_once_per_session(tree: Stream) -> None:
    main = next(iter(tree.sessions))
    events = tree.session_events(main)
    context = events[0]["payload"]["imported"]["context"]
    assert context["cwd"] == "/home/dev/parser" and context["version"] == "2.1.39"
    prompt = by_type(events, "message.user")[0]["payload"]["imported"]
    assert prompt["promptId"] == "prompt-1" and "cwd" not in prompt and "version" not in prompt


def test_sub_agents_written_into_the_main_file_are_children_too() -> None:
    stream = load(OLD)
    main_id, worker_id, warmup_id = stream.sessions
    main = stream.sessions[main_id]
    assert main["title"] == "Counting TODOs with a sub-agent"  # the summary record
    [call] = by_type(stream.session_events(main_id), "tool.call")
    start = stream.session_events(worker_id)[0]["payload"]
    # Linked by the prompt the Task call gave.
    assert start["parentToolCallId"] == "toolu_O1Task"
    assert start["spawnedByEventId"] == call["id"]
    assert texts(stream.messages_at_head(worker_id))[-1] == "There are 7 TODO comments."
    # A sidechain no call names (Claude Code's warm-up) is a child without a call.
    warmup = stream.session_events(warmup_id)[0]["payload"]
    assert warmup["parentSessionId"] == main_id and "parentToolCallId" not in warmup
    assert "no tool call in the parent session names this sub-agent" in stream.notice_text()
    # The main line holds no sidechain message.
    assert "There are 7 TODO comments." not in [
        b.get("text")
        for e in by_type(stream.session_events(main_id), "message.assistant")
        for b in e["payload"]["content"]
    ]
    for session_id in stream.sessions:
        check_history(stream.messages_at_head(session_id))


def test_a_sub_agent_file_alone_is_a_session_of_its_own_with_the_same_id(tree: Stream) -> None:
    alone = load(SUBAGENT)
    [(session_id, session)] = alone.sessions.items()
    assert session_id == list(tree.sessions)[2]  # the id it has when paired
    assert session["parentSessionId"] is None
    start = alone.session_events(session_id)[0]["payload"]
    assert start["subagentType"] == "Explore"
    assert start["imported"]["parentSourceSessionId"] == "5d3c2b1a-7e6f-4a5b-9c8d-0e1f2a3b4c5d"
    check_history(alone.messages_at_head(session_id))


def test_a_folder_imports_every_session_once_with_one_header(tmp_path: Path) -> None:
    stream = load(FIXTURES)
    assert stream.header["source"]["path"] == str(FIXTURES)
    assert len(stream.sessions) == 7
    assert sorted(w["path"] for w in stream.workspaces.values()) == ["/home/dev/parser", "/srv/app"]
    # Ids come from the source: the same files give the same records.
    again = list(IMPORTERS["claude-code"](FIXTURES))
    assert again[1:] == stream.records[1:]
    # ... wherever the files are.
    moved = tmp_path / "elsewhere"
    shutil.copytree(FIXTURES, moved)
    assert list(IMPORTERS["claude-code"](moved))[1:] == stream.records[1:]
