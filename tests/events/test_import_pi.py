"""pi sessions → export records (tron_events.importers.pi).

The fixtures under fixtures/importers/pi/ were written from pi's session format
documentation (docs/session.md of pi-mono): a version-3 tree with a branch left
through ``/tree`` (with its branch summary), a pasted image, Anthropic thinking
with its signature, parallel tool calls and a failed one, a label, a shell
command run by the user, a switch to an OpenAI Codex model (reasoning item and
text signatures), extension entries, a compaction keeping the last messages,
thinking level changes, a session name, a failed request and an entry type from
a newer pi; and a version-1 (linear) file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.events._importers import Stream, check_history
from tron_events.importers import IMPORTERS
from tron_events.reconstruct import SUMMARY_PREFIX, build_state

FIXTURES = (
    Path(__file__).parent / "fixtures" / "importers" / "pi" / "sessions" / "--home-dev-notes--"
)
TREE = FIXTURES / "2026-03-03T08-00-00-000Z_019cb2f0-3333-7ccc-8ddd-000000000003.jsonl"
LINEAR = FIXTURES / "2025-11-02T12-00-00-000Z_8d7c6b5a-4e3f-4a2b-9c1d-0e9f8a7b6c5d.jsonl"


def by_type(events: list[dict[str, Any]], type: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == type]


def texts(messages: Any) -> list[str]:
    return [getattr(b, "text", "") for m in messages for b in m.content]


@pytest.fixture(scope="module")
def tree() -> Stream:
    return Stream(IMPORTERS["pi"](TREE))


def test_the_branch_left_behind_is_a_fork(tree: Stream) -> None:
    main_id, fork_id = tree.sessions
    main = tree.sessions[main_id]
    assert main["title"] == "Launch notes"  # session_info
    assert tree.workspaces[main["workspaceId"]]["path"] == "/home/dev/notes"
    root = tree.session_events(fork_id)[0]
    point = tree.events[root["parentId"]]
    # pi left the branch at the label entry: the fork starts there.
    assert point["payload"]["recordType"] == "label" and point["sessionId"] == main_id
    assert tree.session_events(fork_id)[1]["payload"]["content"] == (
        "Move the launch to May 11 in every note."
    )
    history = tree.messages_at_head(fork_id)
    assert "plan.md says the launch is on May 4." in texts(history)
    assert "Undo the edit, then summarise the notes." not in texts(history)
    for session_id in tree.sessions:
        check_history(tree.messages_at_head(session_id))


def test_messages_keep_signatures_usage_and_cost(tree: Stream) -> None:
    main_id = next(iter(tree.sessions))
    events = tree.session_events(main_id)
    first = by_type(events, "message.user")[0]["payload"]["content"]
    assert first[1] == {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": "image/png",
            "data": json.loads(TREE.read_text().splitlines()[3])["message"]["content"][1]["data"],
        },
    }
    answer = by_type(events, "message.assistant")[0]["payload"]
    thinking, _text, grep, ls = answer["content"]
    assert thinking == {
        "type": "thinking",
        "thinking": "Search the notes folder.",
        "signature": "EqYBCkYIBhgCKkDpiAnthropicSig==",
        "provider": "anthropic",
    }
    assert (grep["type"], grep["id"], ls["id"]) == ("tool_use", "toolu_01Grep", "toolu_02Ls")
    assert answer["tokenUsage"] == {
        "inputTokens": 120 + 2000 + 500,
        "outputTokens": 60,
        "cacheReadTokens": 2000,
        "cacheCreationTokens": 500,
    }
    assert answer["stopReason"] == "tool_use"
    turn_end = by_type(events, "stream.turn_end")[0]["payload"]
    assert turn_end["cost"] == pytest.approx(0.0123)
    results = {e["payload"]["toolCallId"]: e["payload"] for e in by_type(events, "tool.result")}
    assert results["toolu_02Ls"]["isError"] is True
    assert results["toolu_01Grep"]["imported"]["message"]["details"] == {"matches": 1}


def test_the_switch_to_an_openai_model(tree: Stream) -> None:
    main_id = next(iter(tree.sessions))
    events = tree.session_events(main_id)
    [switch] = by_type(events, "config.model_switch")
    assert switch["payload"]["newModel"] == "gpt-5.2-codex"
    assert switch["payload"]["provider"] == "openai-responses"
    assert switch["payload"]["imported"]["provider"] == "openai-codex"
    answer = next(
        e["payload"]
        for e in by_type(events, "message.assistant")
        if e["payload"].get("model") == "gpt-5.2-codex" and not e["payload"].get("replayOf")
    )
    thinking, text, call = answer["content"]
    # pi keeps the whole reasoning item in the signature: unpacked for replay.
    assert (thinking["provider"], thinking["item_id"], thinking["signature"]) == (
        "openai",
        "rs_0a1b2c",
        "gAAAAABpPiReasoning==",
    )
    assert json.loads(text["textSignature"])["id"] == "msg_0f9e8d"
    assert call["id"] == "call_9x8y|fc_7w6v"
    state = build_state(tree.path_to(tree.sessions[main_id]["headEventId"]))
    assert (state.model, state.provider, state.reasoning_level) == (
        "gpt-5.2-codex",
        "openai-responses",
        None,  # thinking level "off"
    )


def test_entries_pi_sends_as_user_text(tree: Stream) -> None:
    main_id = next(iter(tree.sessions))
    users = [e["payload"]["content"] for e in by_type(tree.session_events(main_id), "message.user")]
    assert any(isinstance(c, str) and "<summary>\nTried moving the launch" in c for c in users)
    assert "Ran `git status --short`\n```\n M plan.md\n\n```" in users
    assert "Open todo: summarise the notes." in users  # custom_message


def test_the_compaction_replays_the_messages_pi_keeps(tree: Stream) -> None:
    main_id = next(iter(tree.sessions))
    events = tree.session_events(main_id)
    [summary] = by_type(events, "compact.summary")
    assert summary["payload"]["imported"]["firstKeptEntryId"] == "e0000015"
    assert summary["payload"]["imported"]["tokensBefore"] == 48211
    copies = [e for e in events if e["payload"].get("replayOf")]
    assert [e["type"] for e in copies] == [
        "message.user",
        "message.assistant",
        "tool.call",
        "tool.result",
        "message.user",
    ]
    for copy in copies:
        original = tree.events[copy["payload"]["replayOf"]]
        assert (
            original["payload"]["content" if "content" in original["payload"] else "arguments"]
            is not None
        )
        assert original["sequence"] < summary["sequence"] < copy["sequence"]
        assert copy["timestamp"] == summary["timestamp"]
    history = tree.messages_at_head(main_id)
    assert texts(history)[0] == SUMMARY_PREFIX + summary["payload"]["summary"]
    assert "Undo the edit, then summarise the notes." in texts(history)
    assert "Which notes mention the launch date? Here is the calendar." not in texts(history)


def test_failed_requests_unknown_entries_and_extension_state(tree: Stream) -> None:
    main_id = next(iter(tree.sessions))
    failed = by_type(tree.session_events(main_id), "message.assistant")[-1]["payload"]
    assert failed["content"] == [] and failed["stopReason"] == "error"
    assert failed["errorMessage"] == "429 Too Many Requests"
    kept = sorted(e["payload"]["recordType"] for e in tree.of_type("metadata.import"))
    assert kept == ["bookmark_v9", "custom", "label", "model_change", "session_info"]
    assert "unknown entry type 'bookmark_v9' ×1" in tree.notice_text()


def test_a_version_1_file_is_one_linear_session() -> None:
    stream = Stream(IMPORTERS["pi"](LINEAR))
    [(session_id, session)] = stream.sessions.items()
    assert (session["model"], session["provider"]) == ("claude-sonnet-4-5", "anthropic")
    events = stream.session_events(session_id)
    levels = [
        (e["payload"]["newLevel"], e["payload"]["sourceLevel"])
        for e in by_type(events, "config.reasoning_level")
    ]
    assert levels == [("high", "high"), ("low", "minimal")]
    aborted = by_type(events, "message.assistant")[-1]["payload"]
    assert aborted["stopReason"] == "aborted" and aborted["interrupted"] is True
    assert [e["sequence"] for e in events] == list(range(len(events)))
    check_history(stream.messages_at_head(session_id))
