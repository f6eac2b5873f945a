"""The pure parts of ``tron acp``: tool calls as ACP shows them, prompts as Tron content,
stop reasons, permissions, and the replay of a path (no server, no process)."""

from __future__ import annotations

import base64

import pytest
from acp.helpers import (
    audio_block,
    embedded_blob_resource,
    embedded_text_resource,
    image_block,
    resource_block,
    resource_link_block,
    text_block,
)
from hypothesis import given
from hypothesis import strategies as st

from tron_server.acp.content import UnsupportedContent, to_tron
from tron_server.acp.live import STOP_REASONS, stop_reason
from tron_server.acp.permissions import IN_CHAT, for_request
from tron_server.acp.replay import head_path, replay
from tron_server.acp.toolcalls import absolute, kind_of, locations_of, plan_of, title_of

CWD = "/work/project"


@pytest.mark.parametrize(
    ("name", "arguments", "kind"),
    [
        ("Read", {"file_path": "a.py"}, "read"),
        ("Edit", {}, "edit"),
        ("Write", {}, "edit"),
        ("Grep", {"pattern": "x"}, "search"),
        ("Glob", {"pattern": "*.py"}, "search"),
        ("WebFetch", {"url": "https://example.com"}, "fetch"),
        ("TodoWrite", {"todos": []}, "think"),
        ("Task", {}, "think"),
        ("Bash", {"command": "pytest -q"}, "execute"),
        ("Bash", {"command": "rm -rf build"}, "delete"),
        ("Bash", {"command": "mv a.py b.py"}, "move"),
        ("Bash", {"command": "git mv a.py b.py"}, "move"),
        ("Bash", {"command": "echo 'unclosed"}, "execute"),
        ("mcp__github__create_issue", {}, "other"),
        ("AskUser", {}, "other"),
    ],
)
def test_kinds(name: str, arguments: dict[str, object], kind: str) -> None:
    assert kind_of(name, arguments) == kind


def test_titles_and_locations_are_absolute_with_lines() -> None:
    assert title_of("Read", {"file_path": "src/a.py"}, CWD) == "Read src/a.py"
    assert title_of("Edit", {"file_path": "/elsewhere/b.py"}, CWD) == "Edit /elsewhere/b.py"
    assert title_of("Bash", {"command": "make test\nmake lint"}, CWD) == "`make test`"
    assert title_of("mcp__github__create_issue", {}, CWD) == "create_issue (github)"
    [loc] = locations_of("Read", {"file_path": "src/../a.py", "offset": 40}, CWD)
    assert (loc.path, loc.line) == ("/work/project/a.py", 40)
    assert locations_of("Bash", {"command": "ls"}, CWD) == []


@given(st.lists(st.sampled_from(["a", "b", "..", ".", "c d", "é"]), min_size=1, max_size=6))
def test_absolute_paths_are_absolute_and_normal(parts: list[str]) -> None:
    path = absolute("/".join(parts), CWD)
    assert path.startswith("/") and "/./" not in path and not path.endswith("/.")
    assert "/../" not in path


def test_plan_from_todos() -> None:
    plan = plan_of({"todos": [{"content": "a", "status": "completed"},
                              {"content": "b", "status": "bogus"}, "junk"]})  # fmt: skip
    assert plan is not None
    assert [(e.content, e.status) for e in plan.entries] == [("a", "completed"), ("b", "pending")]
    assert plan_of({"todos": "no"}) is None


def test_stop_reasons_cover_what_tron_ends_with() -> None:
    assert stop_reason("end_turn") == "end_turn"
    assert stop_reason("max_tokens") == "max_tokens"
    assert stop_reason("max_turns") == "max_turn_requests"
    assert stop_reason("refusal") == "refusal"
    assert stop_reason("aborted") == "cancelled"
    assert stop_reason("end_turn", cancelled=True) == "cancelled"
    assert set(STOP_REASONS.values()) == {
        "end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"
    }  # fmt: skip


PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 8).decode()


def test_prompt_blocks() -> None:
    uri = "file:///work/project/a%20b.py"
    blocks = to_tron([
        text_block("see"),
        resource_link_block("a b.py", uri),
        image_block(PNG, "image/png"),
        resource_block(embedded_text_resource("https://x.test/doc", "the doc")),
        resource_block(embedded_blob_resource(uri, PNG, mime_type="image/png")),
        resource_block(embedded_blob_resource(uri, "AAAA", mime_type="application/zip")),
    ])  # fmt: skip
    assert blocks[0] == {"type": "text", "text": "see @/work/project/a b.py"}
    assert blocks[1]["source"] == {"type": "base64", "media_type": "image/png", "data": PNG}
    assert blocks[2]["text"] == '<context ref="https://x.test/doc">\nthe doc\n</context>'
    assert blocks[3]["type"] == "image"
    assert "application/zip" in blocks[4]["text"] and "not included" in blocks[4]["text"]
    with pytest.raises(UnsupportedContent, match="audio"):
        to_tron([audio_block("AAAA", "audio/wav")])
    with pytest.raises(UnsupportedContent, match="PNG, JPEG"):
        to_tron([image_block(PNG, "image/tiff")])
    with pytest.raises(UnsupportedContent, match="base64"):
        to_tron([image_block("not base64!", "image/png")])


@given(st.lists(st.text(max_size=20), min_size=1, max_size=6))
def test_text_blocks_keep_every_character(texts: list[str]) -> None:
    """Adjacent texts are joined (a separating space at most between two): nothing lost."""
    [joined] = to_tron([text_block(t) for t in texts])
    assert joined["text"].replace(" ", "") == "".join(texts).replace(" ", "")


def test_approval_options_and_question_without_options() -> None:
    ask = for_request({"kind": "approval", "toolName": "Bash", "toolCallId": "t1",
                       "input": {"command": "ls"}, "suggestion": None}, CWD)  # fmt: skip
    assert [o.kind for o in ask.options] == ["allow_once", "reject_once"]  # no rule: no always
    question = for_request({"kind": "question", "question": "Why?", "toolCallId": "t2"}, CWD)
    assert [o.option_id for o in question.options] == ["in_chat"]
    assert question.answers["in_chat"] == IN_CHAT
    multi = for_request({"kind": "question", "question": "Which?", "options": ["a", "b"],
                         "multiSelect": True, "toolCallId": "t3"}, CWD)  # fmt: skip
    assert multi.answers["option-1"] == ["b"]


def test_replay_follows_the_head_path_only() -> None:
    def ev(i: str, parent: str | None, kind: str, payload: dict[str, object]) -> dict[str, object]:
        return {"id": i, "parentId": parent, "type": kind, "payload": payload}

    events = [
        ev("e1", None, "session.start", {}),
        ev("e2", "e1", "message.user", {"content": "kept"}),
        ev("e3", "e2", "message.assistant", {"content": [{"type": "text", "text": "old"}]}),
        ev("e4", "e2", "message.assistant", {"content": [
            {"type": "tool_use", "id": "t", "name": "Edit",
             "input": {"file_path": "a", "old_string": "x", "new_string": "y"}}]}),
        ev("e5", "e4", "tool.result", {"toolCallId": "t", "content": "Edited", "isError": False}),
    ]  # fmt: skip
    assert [e["id"] for e in head_path(events, "e5")] == ["e1", "e2", "e4", "e5"]
    updates = replay(events, "e5", CWD)
    kinds = [u.session_update for u in updates]
    assert kinds == ["user_message_chunk", "tool_call", "tool_call_update"]
    assert updates[0].message_id == "e2"
    assert updates[2].status == "completed"
    assert updates[2].content[0].type == "diff" and updates[2].content[0].new_text == "y"
