"""The parts of memory on their own, with properties where a rule is general: a side call's
reply is never lost (any text becomes at least a summary-only handoff the store accepts),
what is put before the model stays within its budget whatever the ledgers and handoffs,
lessons count handoffs, keywords leave common words out, settings only switch off."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tron_events import Event
from tron_events.messages import Message, TextBlock, ToolUseBlock
from tron_events.payloads import validate_payload
from tron_server.memory import (
    MEMORY_BUDGET_TOKENS,
    MEMORY_TOOL,
    LedgerFile,
    collect_lessons,
    compose,
    cut_text,
    keywords,
    load_memory_settings,
    parse_reply,
    with_sections,
)
from tron_server.memory.loader import CHARS_PER_TOKEN

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 10) | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
fields = st.dictionaries(
    st.sampled_from(
        [
            "summary",
            "codeChanges",
            "currentState",
            "nextSteps",
            "blockers",
            "patterns",
            "ledger",
            "other",
        ]
    ),
    json_values,
    max_size=7,
)


def handoff_event(n: int, summary: str, patterns: list[str] | None = None) -> Event:
    return Event(
        id=f"evt_h{n}", parent_id=None, session_id=f"sess_{n}", workspace_id="ws_1",
        sequence=n, depth=1, type="memory.handoff", timestamp=f"2026-01-01T00:00:{n:02d}.000Z",
        payload={"summary": summary, "patterns": patterns or [], "nextSteps": ["next"]},
    )  # fmt: skip


def has_text(value: Any) -> bool:
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, list):
        return any(has_text(v) for v in value)
    if isinstance(value, dict):
        return any(has_text(v) for v in value.values())
    return value not in (None, False, 0)


@given(text=st.text(max_size=40), tool=st.none() | fields)
def test_a_reply_is_never_lost(text: str, tool: dict[str, Any] | None) -> None:
    blocks: list[Any] = [TextBlock(text=text)] if text else []
    if tool is not None:
        blocks.append(ToolUseBlock(id="toolu_1", name=MEMORY_TOOL, input=tool))
    parsed = parse_reply(
        Message(role="assistant", content=blocks), handoff=True, ledger=True,
        extra={"trigger": "session_end", "model": "m"},
    )  # fmt: skip
    handoff_fields = {k: v for k, v in (tool or {}).items() if k != "ledger"}
    if parsed.handoff is None:
        assert not text.strip() and not has_text(handoff_fields)
        return
    stored = validate_payload("memory.handoff", parsed.handoff)  # the store takes it
    assert stored["summary"].strip() and stored["trigger"] == "session_end"
    if not stored["complete"]:
        assert stored["fallbackReason"]
    ledger = (tool or {}).get("ledger")
    if isinstance(ledger, str) and ledger.strip():
        assert parsed.ledger == ledger
    else:
        assert parsed.ledger is None


def test_a_complete_handoff_keeps_every_field() -> None:
    data = {"summary": "s", "codeChanges": [{"path": "a.py", "description": "d"}],
            "currentState": "c", "nextSteps": ["n"], "blockers": ["b"], "patterns": ["p"],
            "ledger": "## Goal\nx"}  # fmt: skip
    parsed = parse_reply(
        Message(role="assistant", content=[ToolUseBlock(id="t", name=MEMORY_TOOL, input=data)]),
        handoff=True, ledger=True,
    )  # fmt: skip
    assert parsed.handoff == {**{k: v for k, v in data.items() if k != "ledger"},
                              "complete": True}  # fmt: skip
    assert parsed.ledger == "## Goal\nx"
    # Near misses are made to fit rather than cut down to a summary.
    loose = {"summary": "s", "nextSteps": "one step", "codeChanges": ["b.py"]}
    parsed = parse_reply(
        Message(role="assistant", content=[ToolUseBlock(id="t", name=MEMORY_TOOL, input=loose)]),
        handoff=True, ledger=False,
    )  # fmt: skip
    assert parsed.handoff is not None and parsed.handoff["complete"] is True
    assert parsed.handoff["nextSteps"] == ["one step"]
    assert parsed.handoff["codeChanges"] == [{"path": "b.py", "description": ""}]


ledger_texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=30_000)


@given(
    project=st.none() | ledger_texts,
    user=st.none() | ledger_texts,
    summaries=st.lists(st.text(min_size=1, max_size=6_000), max_size=8),
    lessons=st.lists(st.text(min_size=1, max_size=300), max_size=12),
)
def test_what_is_put_before_the_model_stays_within_the_budget(
    project: str | None, user: str | None, summaries: list[str], lessons: list[str]
) -> None:
    ledgers = [
        LedgerFile(Path(f"/{scope}/ledger.md"), scope, text, "ab" * 32, len(text.encode()))
        for scope, text in (("user", user), ("project", project))
        if text is not None and text.strip()
    ]
    handoffs = [handoff_event(n, s) for n, s in enumerate(summaries) if s.strip()]
    counted = collect_lessons([handoff_event(99, "x", [x for x in lessons if x.strip()])])
    injection = compose(
        working_directory=Path("/p"), ledgers=ledgers, lessons=counted, handoffs=handoffs
    )
    if injection is None:
        assert not ledgers and not handoffs and not counted
        return
    assert len(injection.content) // CHARS_PER_TOKEN <= MEMORY_BUDGET_TOKENS
    payload = validate_payload("memory.loaded", injection.payload)
    assert payload["content"] == injection.content
    ids = [e.id for e in handoffs]
    assert payload["handoffIds"] == [i for i in ids if i in payload["handoffIds"]]
    for ref in payload["ledger"]:
        marker = f"more characters in {ref['path']}]"
        assert ref["truncated"] == (marker in injection.content)


def test_a_ledger_longer_than_its_share_is_cut_with_a_marker_naming_it() -> None:
    text = "\n".join(f"line {n}" for n in range(5_000))
    cut, was_cut = cut_text(text, 100, "/p/.tron/ledger.md")
    assert was_cut and cut.endswith("more characters in /p/.tron/ledger.md]")
    assert len(cut) < 200 and cut.startswith("line 0\n")
    assert cut_text("short", 100, "x") == ("short", False)
    assert with_sections("just prose").startswith("# Ledger\n\n## Goal")
    assert with_sections("## Goal\nx") == "## Goal\nx\n"


def test_lessons_count_the_handoffs_that_gave_them() -> None:
    lessons = collect_lessons([
        handoff_event(1, "a", ["Run the tests first.", "use uv"]),
        handoff_event(2, "b", ["run  the tests first", "run the tests first"]),
        handoff_event(3, "c", ["use uv"]),
        handoff_event(4, "d", ["rare one"]),
    ])  # fmt: skip
    assert [(x.text, x.count, x.handoff_ids) for x in lessons] == [
        ("use uv", 2, ["evt_h3", "evt_h1"]),
        ("run the tests first", 2, ["evt_h2", "evt_h1"]),
        ("rare one", 1, ["evt_h4"]),
    ]


def test_keywords_leave_common_words_out() -> None:
    assert keywords("Please continue the quokka port, and the quokka tests!") == [
        "continue", "quokka", "port", "tests",
    ]  # fmt: skip
    many = " ".join(f"word{n}" for n in range(30))
    assert len(keywords(many)) == 8
    assert keywords("go on") == []


@pytest.mark.parametrize(
    ("home", "project", "expected"),
    [
        (None, None, (True, True, True, True)),
        ({"memory": False}, None, (False, False, False, False)),
        (None, {"memory": {"ledger": False}}, (False, True, True, True)),
        (
            {"memory": {"recall": False}},
            {"memory": {"recall": True, "lessons": False}},
            (True, True, False, False),
        ),  # a folder cannot switch on what the user switched off
        ({"memory": True}, {"memory": True}, (True, True, True, True)),
    ],
)
def test_settings_only_switch_parts_off(
    tmp_path: Path, home: Any, project: Any, expected: tuple[bool, ...]
) -> None:
    folder = tmp_path / "p"
    (folder / ".tron").mkdir(parents=True)
    if home is not None:
        (tmp_path / "settings.json").write_text(json.dumps(home))
    if project is not None:
        (folder / ".tron" / "settings.json").write_text(json.dumps(project))
    got = load_memory_settings(folder, tmp_path)
    assert (got.ledger, got.handoffs, got.lessons, got.recall) == expected
    assert got.error is None


@pytest.mark.parametrize(
    "bad", ['{"memory": "off"}', '{"memory": {"ledger": "no"}}', "{not json", "[1, 2]"]
)
def test_unreadable_memory_settings_switch_everything_off_and_say_why(
    tmp_path: Path, bad: str
) -> None:
    (tmp_path / "p" / ".tron").mkdir(parents=True)
    (tmp_path / "p" / ".tron" / "settings.json").write_text(bad)
    got = load_memory_settings(tmp_path / "p", tmp_path)
    assert not got.any and got.error and "settings.json" in got.error
