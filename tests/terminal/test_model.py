"""The client's session model and what it derives (transcript items, tool cards,
commands) — pure code, no server: the rules the screen relies on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tron_server.terminal import cards, commands, sessions
from tron_server.terminal.capabilities import Capabilities
from tron_server.terminal.items import transcript_items
from tron_server.terminal.model import SessionModel, ToolState

SID = "sess_a"


def chain(turns: int) -> list[dict[str, Any]]:
    """A session's events: start, then per turn a user message and an assistant reply
    that calls a tool, its call and result, and a final reply."""
    events: list[dict[str, Any]] = []

    def add(kind: str, payload: dict[str, Any]) -> None:
        seq = len(events)
        events.append(
            {
                "id": f"evt_{seq}",
                "parentId": events[-1]["id"] if events else None,
                "sessionId": SID,
                "sequence": seq,
                "depth": seq,
                "type": kind,
                "payload": payload,
            }
        )

    add("session.start", {"model": "m"})
    turn = 0
    for k in range(turns):
        turn += 1
        add("message.user", {"content": f"question {k}", "turn": turn})
        add(
            "message.assistant",
            {
                "turn": turn,
                "content": [
                    {"type": "text", "text": f"looking {k}"},
                    {
                        "type": "tool_use",
                        "id": f"tool_{k}",
                        "name": "Bash",
                        "input": {"command": "ls"},
                    },
                ],
            },
        )
        add(
            "tool.call", {"toolCallId": f"tool_{k}", "name": "Bash", "arguments": {"command": "ls"}}
        )
        add("tool.result", {"toolCallId": f"tool_{k}", "content": f"out {k}", "isError": False})
        turn += 1
        add(
            "message.assistant",
            {"turn": turn, "content": [{"type": "text", "text": f"answer {k}"}]},
        )
    return events


@given(
    turns=st.integers(1, 4),
    data=st.data(),
)
def test_every_event_is_shown_once_whatever_the_delivery(turns: int, data: st.DataObject) -> None:
    """Events delivered in any order, some twice, live or synced, with text deltas
    before and after their stored message: the transcript is the path, each
    message once, and no streamed text is left over or doubled."""
    events = chain(turns)
    order = data.draw(st.permutations(events))
    repeats = data.draw(st.lists(st.sampled_from(events), max_size=len(events)))
    model = SessionModel({"id": SID, "headEventId": events[0]["id"]})
    assistant_turns = [e["payload"]["turn"] for e in events if e["type"] == "message.assistant"]
    for ev in [*order, *repeats]:
        if ev["type"] == "message.assistant" and data.draw(st.booleans()):
            # A delta of that turn arriving late, after its message is stored, or early.
            turn = ev["payload"]["turn"]
            model.apply_notification("agent.text_delta", {"turn": turn, "delta": "late "})
        model.add_event(ev, live=data.draw(st.booleans()))
    model.set_session({"id": SID, "headEventId": events[-1]["id"]}, "rewind")
    model.apply_notification("agent.complete", {"stopReason": "end_turn"})
    assert [e["id"] for e in model.path()] == [e["id"] for e in events]
    items = transcript_items(model)
    keys = [i.key for i in items]
    assert len(keys) == len(set(keys))
    texts = [i.text for i in items if i.kind in ("user", "text")]
    for k in range(turns):
        for text in (f"question {k}", f"looking {k}", f"answer {k}"):
            assert texts.count(text) == 1
    assert not any("late" in t for t in texts)
    tools = [i.tool for i in items if i.kind == "tool"]
    assert [t.id for t in tools if t] == [f"tool_{k}" for k in range(turns)]
    assert all(t is not None and t.status == "done" and t.result for t in tools)
    assert len(assistant_turns) == 2 * turns


def test_live_turn_then_stored_message_replaces_it() -> None:
    events = chain(1)
    model = SessionModel({"id": SID, "headEventId": events[1]["id"]})
    for ev in events[:2]:
        model.add_event(ev)
    model.apply_notification("agent.turn_start", {"turn": 1})
    model.apply_notification("agent.thinking_delta", {"turn": 1, "delta": "hmm"})
    model.apply_notification("agent.text_delta", {"turn": 1, "delta": "look"})
    model.apply_notification("agent.text_delta", {"turn": 1, "delta": "ing 0"})
    live = transcript_items(model)
    assert [(i.key, i.text) for i in live[-2:]] == [
        ("live:thinking", "hmm"),
        ("live:text", "looking 0"),
    ]
    model.add_event(events[2], live=True)
    model.apply_notification(
        "agent.tool_start",
        {"turn": 1, "toolCallId": "tool_0", "name": "Bash", "arguments": {"command": "ls"}},
    )
    model.apply_notification("agent.tool_output", {"toolCallId": "tool_0", "chunk": "out"})
    items = transcript_items(model)
    assert [i.key for i in items][-2:] == ["evt_2:0", "tool:tool_0"]
    assert items[-1].tool is not None and items[-1].tool.output == "out"
    assert model.busy


def test_snapshot_after_reconnect_skips_a_stored_turn_and_takes_a_running_one() -> None:
    events = chain(1)
    model = SessionModel({"id": SID})
    for ev in events[:3]:
        model.add_event(ev, live=True)
    model.live.ignore_until_snapshot = True
    assert not model.apply_notification("agent.text_delta", {"turn": 2, "delta": "x"})
    model.apply_snapshot(
        {
            "busy": True,
            "turn": 1,
            "text": "looking 0",
            "toolCalls": [
                {"toolCallId": "tool_0", "name": "Bash", "status": "running", "output": "partial"}
            ],
        }
    )
    assert model.live.text == ""  # turn 1's message is stored: its text is not live
    assert model.tools["tool_0"].output == "partial"
    model.apply_snapshot({"busy": True, "turn": 2, "text": "answ", "toolCalls": []})
    assert model.live.text == "answ"
    model.apply_notification("agent.text_delta", {"turn": 2, "delta": "er 0"})
    assert model.live.text == "answer 0"


def test_rewind_moves_the_transcript_back() -> None:
    events = chain(2)
    model = SessionModel({"id": SID})
    for ev in events:
        model.add_event(ev, live=True)
    assert transcript_items(model)[-1].text == "answer 1"
    model.set_session({"id": SID, "headEventId": "evt_5"}, "rewind")
    texts = [i.text for i in transcript_items(model) if i.kind == "text"]
    assert texts == ["looking 0", "answer 0"]


def test_failed_turn_shows_one_error() -> None:
    model = SessionModel({"id": SID})
    base = {"sessionId": SID, "depth": 0, "payload": {}}
    model.add_event(
        {**base, "id": "evt_0", "parentId": None, "sequence": 0, "type": "session.start"}
    )
    model.apply_notification("agent.error", {"message": "Overloaded"})
    assert [i.text for i in transcript_items(model) if i.kind == "error"] == ["Overloaded"]
    model.add_event(
        {
            **base,
            "id": "evt_1",
            "parentId": "evt_0",
            "sequence": 1,
            "type": "error.provider",
            "payload": {"message": "Overloaded"},
        },
        live=True,
    )
    model.add_event(
        {
            **base,
            "id": "evt_2",
            "parentId": "evt_1",
            "sequence": 2,
            "type": "turn.failed",
            "payload": {"error": "Overloaded"},
        },
        live=True,
    )
    assert [i.text for i in transcript_items(model) if i.kind == "error"] == ["Overloaded"]


def test_usage_totals_count_stored_and_live_turns_once() -> None:
    model = SessionModel({"id": SID})
    model.apply_notification(
        "agent.turn_end", {"turn": 1, "usage": {"inputTokens": 10, "outputTokens": 2}, "cost": 0.5}
    )
    model.add_event(
        {
            "id": "e1",
            "parentId": None,
            "sessionId": SID,
            "sequence": 0,
            "depth": 0,
            "type": "stream.turn_end",
            "payload": {
                "turn": 1,
                "tokenUsage": {"inputTokens": 10, "outputTokens": 2},
                "cost": 0.5,
            },
        }
    )
    model.apply_notification(
        "agent.turn_end", {"turn": 2, "usage": {"inputTokens": 5}, "cost": 0.25}
    )
    total = model.usage_totals()
    assert (total.input, total.output, total.cost, total.turns) == (15, 2, 0.75, 2)


def test_edit_and_write_cards_show_diffs() -> None:
    edit = ToolState(
        "t",
        "Edit",
        {"file_path": "a.py", "old_string": "x = 1\nz = 0", "new_string": "x = 2\nz = 0"},
        status="done",
    )
    lines = cards.diff_lines(edit)
    assert lines is not None
    assert "-x = 1" in lines and "+x = 2" in lines and " z = 0" in lines
    write = ToolState("w", "Write", {"file_path": "n.txt", "content": "one\ntwo\n"})
    assert cards.diff_lines(write) == ["+++ n.txt", "@@ 2 lines @@", "+one", "+two"]
    assert cards.diff_lines(ToolState("b", "Bash", {"command": "ls"})) is None
    body = cards.body(
        ToolState(
            "w",
            "Write",
            {"file_path": "n", "content": "\n".join(str(i) for i in range(100))},
            status="done",
        )
    )
    assert "more lines" in body.plain and "+99" not in body.plain
    assert (
        "+99"
        in cards.body(
            ToolState(
                "w",
                "Write",
                {"file_path": "n", "content": "\n".join(str(i) for i in range(100))},
                status="done",
            ),
            expanded=True,
        ).plain
    )


def test_card_output_tail_and_summary() -> None:
    tool = ToolState("b", "Bash", {"command": "seq 20"}, output="\n".join(map(str, range(20))))
    assert cards.summary(tool) == "seq 20"
    body = cards.body(tool).plain
    assert "14 earlier lines" in body and body.endswith("19") and "\n5\n" not in body
    tool.result = "final"
    assert cards.body(tool).plain == "final"
    assert cards.summary(ToolState("g", "Grep", {"pattern": "foo", "path": "src"})) == "foo in src"


def test_command_parsing_and_catalogue() -> None:
    assert commands.split("/model opus") == ("model", "opus")
    assert commands.split("/compact") == ("compact", "")
    assert commands.split("/usr/bin/env is broken") is None
    assert commands.split("hello /model") is None
    assert commands.split("//not a command") is None
    caps = Capabilities({"methods": ["model.switch", "session.getTree"]})
    names = [c.name for c in commands.client_commands(caps)]
    assert "model" in names and "tree" in names and "compact" not in names  # no context.compact
    server = commands.parse_server_commands(
        {
            "commands": [
                {"name": "/review", "description": "Review", "argumentHint": "[pr]"},
                {"name": "model", "description": "server model"},
                {"name": "help", "description": "server help"},
            ]
        }
    )
    merged = {c.name: c for c in commands.merge(commands.client_commands(caps), server)}
    assert merged["review"].source == "server" and merged["review"].argument_hint == "[pr]"
    assert merged["model"].source == "server"  # the server's command wins
    assert merged["help"].source == "client"  # the screen's own help stays
    assert commands.nearest(list(merged.values()), "modle") == ["model"]
    assert [c.name for c in commands.matching(list(merged.values()), "re")] == ["review", "tree"]


def test_session_descriptions() -> None:
    line = sessions.describe(
        {
            "id": "sess_1",
            "title": "Fix the tests",
            "status": "active",
            "messageCount": 4,
            "cost": 0.0123,
            "lastActivityAt": "2026-01-01T00:00:00Z",
        }
    )
    assert "Fix the tests" in line and "4 messages" in line and "$0.0123" in line
    assert sessions.title_of("  first line\nsecond") == "first line"
    assert sessions.title_of("x" * 80) == "x" * 59 + "…"
    assert sessions.age("not a date") == "?"


def test_sub_agent_activity_lands_on_its_task_card() -> None:
    """Issue 18's protocol: a child's agent.* notifications carry parentSessionId and
    parentToolCallId; subagent.spawned in the parent links the card to the child."""
    model = SessionModel({"id": SID})
    model.apply_notification(
        "agent.tool_start",
        {
            "toolCallId": "task_1",
            "name": "Task",
            "arguments": {"description": "scan", "prompt": "look"},
        },
    )
    model.apply_notification(
        "agent.tool_start",
        {
            "toolCallId": "task_2",
            "name": "Task",
            "arguments": {"description": "other", "prompt": "x"},
        },
    )
    child = {"parentSessionId": SID, "parentToolCallId": "task_2"}
    assert model.apply_child_notification(
        "agent.tool_start", "sess_child", {**child, "name": "Read"}
    )
    assert model.tools["task_2"].child_session_id == "sess_child"
    assert model.tools["task_2"].child_activity == "▸ Read"
    assert model.tools["task_1"].child_activity == ""
    model.add_event(
        {
            "id": "e9",
            "parentId": None,
            "sessionId": SID,
            "sequence": 9,
            "depth": 1,
            "type": "subagent.spawned",
            "payload": {"childSessionId": "sess_c1", "toolCallId": "task_1"},
        }
    )
    assert model.tools["task_1"].child_session_id == "sess_c1"
    model.apply_child_notification("agent.text_delta", "sess_c1", {"delta": "found it"})
    assert "found it" in cards.body(model.tools["task_1"]).plain
    assert cards.summary(model.tools["task_1"]) == "scan"
    assert sessions.is_subagent({"kind": "subagent", "parentSessionId": SID})
    assert not sessions.is_subagent({"kind": "fork", "parentSessionId": SID})
    assert sessions.is_subagent({"parentSessionId": SID, "forkFromEventId": None})
    assert not sessions.is_subagent({"parentSessionId": SID, "forkFromEventId": "evt_1"})


def test_input_history_file_is_private_and_bounded(tmp_path: Path) -> None:
    from tron_server.terminal.history import HISTORY_FILE, HISTORY_KEEP, load_history, save_history

    for i in range(2 * HISTORY_KEEP + 5):
        save_history(tmp_path, f"line {i}\nwith a newline")
    path = tmp_path / HISTORY_FILE
    assert path.stat().st_mode & 0o777 == 0o600
    history = load_history(tmp_path)
    assert (
        len(history) == HISTORY_KEEP
        and history[-1] == f"line {2 * HISTORY_KEEP + 4}\nwith a newline"
    )
    assert len(path.read_text().splitlines()) == HISTORY_KEEP  # cut back on load
    assert load_history(tmp_path) == history
