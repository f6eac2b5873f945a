"""Content normalization on append: tool inputs over 5,120 and results over 10,240."""

from __future__ import annotations

import copy
import json
import logging
import re
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tron_events import payloads
from tron_events.normalize import (
    MAX_TOOL_INPUT_CHARS,
    MAX_TOOL_RESULT_CHARS,
    TOOL_INPUT_PREVIEW_CHARS,
    normalize_assistant_payload,
    normalize_tool_result_payload,
    truncation_marker,
)

MARKER = re.compile(r"\n\n\.\.\. \[truncated (\d+) characters\]$")


def json_len(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def use(input_: dict[str, Any], id_: str = "toolu_1") -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": "write", "input": input_}


def input_of_json_len(n: int) -> dict[str, Any]:
    """A tool input whose compact JSON text is exactly ``n`` characters."""
    base = {"content": ""}
    return {"content": "x" * (n - json_len(base))}


# -- tool_use inputs -----------------------------------------------------------


def test_small_input_is_returned_untouched() -> None:
    payload = {"content": [{"type": "text", "text": "hi"}, use({"path": "a"})], "turn": 1}
    assert normalize_assistant_payload(payload) is payload


def test_input_at_the_limit_is_kept_and_one_more_character_truncates() -> None:
    at_limit = input_of_json_len(MAX_TOOL_INPUT_CHARS)
    assert json_len(at_limit) == MAX_TOOL_INPUT_CHARS
    payload = {"content": [use(at_limit)]}
    assert normalize_assistant_payload(payload)["content"][0]["input"] == at_limit

    over = input_of_json_len(MAX_TOOL_INPUT_CHARS + 1)
    out = normalize_assistant_payload({"content": [use(over)]})
    assert out["content"][0]["input"]["_truncated"] is True
    assert out["content"][0]["input"]["_originalSize"] == MAX_TOOL_INPUT_CHARS + 1


def test_six_kb_input_becomes_a_stub_and_the_payload_is_not_mutated() -> None:
    big = {"path": "/src/app.py", "content": "é" * 6_000}  # non-ASCII: counted in characters
    payload: dict[str, Any] = {
        "content": [{"type": "text", "text": "writing"}, use(big), use({"x": 1}, "toolu_2")],
        "turn": 3,
        "tokenUsage": {"inputTokens": 5, "outputTokens": 7},
    }
    before = copy.deepcopy(payload)
    out = normalize_assistant_payload(payload)
    assert payload == before
    text = json.dumps(big, separators=(",", ":"), ensure_ascii=False)
    assert out["content"][1] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "write",
        "input": {
            "_truncated": True,
            "_originalSize": len(text),
            "_preview": text[:TOOL_INPUT_PREVIEW_CHARS],
        },
    }
    assert out["content"][0] == payload["content"][0]
    assert out["content"][2] == payload["content"][2]
    assert out["turn"] == 3 and out["tokenUsage"] == payload["tokenUsage"]
    assert normalize_assistant_payload(out) == out  # idempotent


def test_non_object_blocks_are_dropped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    payload = {"content": ["stray", {"type": "text", "text": "ok"}, 7, None]}
    with caplog.at_level(logging.WARNING, logger="tron_events.normalize"):
        out = normalize_assistant_payload(payload)
    assert out["content"] == [{"type": "text", "text": "ok"}]
    assert len([r for r in caplog.records if "non-object" in r.getMessage()]) == 3


def test_unknown_block_types_are_preserved() -> None:
    odd = {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"q": "x"}}
    citation = {"type": "web_search_tool_result", "content": [{"any": "thing"}]}
    payload = {"content": [odd, citation, use({"x": "y" * 9_000})]}
    out = normalize_assistant_payload(payload)
    assert out["content"][0] == odd and out["content"][1] == citation
    assert out["content"][2]["input"]["_truncated"] is True


# -- tool results ----------------------------------------------------------------


def test_result_at_the_limit_is_untouched() -> None:
    payload = {"toolCallId": "t", "content": "a" * MAX_TOOL_RESULT_CHARS, "isError": False}
    assert normalize_tool_result_payload(payload) is payload


def test_long_string_result_is_cut_with_a_marker_counting_what_was_removed() -> None:
    content = "".join(f"line {i}\n" for i in range(5_000))
    out = normalize_tool_result_payload({"toolCallId": "t", "content": content, "isError": True})
    assert out["truncated"] is True and out["isError"] is True and out["toolCallId"] == "t"
    text = out["content"]
    assert len(text) <= MAX_TOOL_RESULT_CHARS
    match = MARKER.search(text)
    assert match is not None
    kept = text[: match.start()]
    assert content.startswith(kept)
    assert int(match.group(1)) == len(content) - len(kept)
    assert normalize_tool_result_payload(out) == out


def test_one_character_over_the_limit_is_truncated() -> None:
    content = "b" * (MAX_TOOL_RESULT_CHARS + 1)
    out = normalize_tool_result_payload({"toolCallId": "t", "content": content})
    match = MARKER.search(out["content"])
    assert match is not None
    kept = match.start()
    assert out["content"][:kept] == "b" * kept
    assert int(match.group(1)) == len(content) - kept
    # The marker fits inside the limit, so the result is exactly at it.
    assert len(out["content"]) == MAX_TOOL_RESULT_CHARS
    assert out["content"].endswith(truncation_marker(len(content) - kept))


def test_list_results_share_the_budget_keep_images_and_drop_later_text() -> None:
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "QQ=="},
    }
    parts = [
        {"type": "text", "text": "a" * 6_000},
        image,
        {"type": "text", "text": "b" * 6_000},
        {"type": "text", "text": "c" * 500},
    ]
    out = normalize_tool_result_payload({"toolCallId": "t", "content": parts})
    assert out["truncated"] is True
    content = out["content"]
    assert content[0] == parts[0] and content[1] == image
    assert len(content) == 3  # the "c" part is gone
    cut = content[2]["text"]
    match = MARKER.search(cut)
    assert match is not None
    kept_b = match.start()
    assert cut[:kept_b] == "b" * kept_b
    assert int(match.group(1)) == (6_000 - kept_b) + 500
    assert 6_000 + len(cut) <= MAX_TOOL_RESULT_CHARS
    assert normalize_tool_result_payload(out) == out


def test_non_object_parts_are_dropped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="tron_events.normalize"):
        out = normalize_tool_result_payload(
            {"toolCallId": "t", "content": [{"type": "text", "text": "ok"}, 3]}
        )
    assert out["content"] == [{"type": "text", "text": "ok"}]
    assert "truncated" not in out
    assert any("non-object" in r.getMessage() for r in caplog.records)


text_parts = st.lists(
    st.one_of(
        st.builds(
            lambda n, c: {"type": "text", "text": c * n},
            st.integers(0, 8_000),
            st.sampled_from("xyé"),
        ),
        st.just({"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}),
    ),
    max_size=6,
)


@given(st.one_of(st.text(max_size=50).map(lambda s: s * 400), text_parts))
def test_results_fit_the_limit_keep_a_prefix_and_are_idempotent(content: Any) -> None:
    out = normalize_tool_result_payload({"toolCallId": "t", "content": content})
    again = normalize_tool_result_payload(out)
    assert again == out

    def texts(c: Any) -> str:
        if isinstance(c, str):
            return c
        return "".join(p["text"] for p in c if p.get("type") == "text")

    original, kept = texts(content), texts(out["content"])
    if len(original) <= MAX_TOOL_RESULT_CHARS:
        assert out["content"] == content and "truncated" not in out
    else:
        assert out["truncated"] is True
        assert len(kept) <= MAX_TOOL_RESULT_CHARS
        match = MARKER.search(kept)
        assert match is not None
        assert original.startswith(kept[: match.start()])
        assert int(match.group(1)) == len(original) - match.start()


# -- registration ----------------------------------------------------------------


def test_the_registry_normalizes_what_it_validates() -> None:
    # What the store calls on append: the two normalized types come out normalized,
    # with nothing to install first.
    stored = payloads.validate_payload(
        "message.assistant", {"content": [use({"blob": "z" * 7_000})], "turn": 1}
    )
    assert stored["content"][0]["input"]["_truncated"] is True
    result = payloads.validate_payload(
        "tool.result", {"toolCallId": "t", "content": "r" * 20_000, "isError": False}
    )
    assert result["truncated"] is True and len(result["content"]) <= MAX_TOOL_RESULT_CHARS
    call = payloads.validate_payload(
        "tool.call", {"toolCallId": "t", "name": "w", "arguments": {"blob": "z" * 7_000}}
    )
    assert call["arguments"] == {"blob": "z" * 7_000}  # tool.call keeps the full arguments


def test_the_store_registry_installs_the_normalizers_by_itself() -> None:
    # A fresh interpreter: nothing in the test suite may have installed them.
    code = (
        "from tron_events import payloads, normalize\n"
        "assert payloads.get_event_type('message.assistant').normalizer"
        " is normalize.normalize_assistant_payload\n"
        "assert payloads.get_event_type('tool.result').normalizer"
        " is normalize.normalize_tool_result_payload\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
