"""The distributions' READMEs (their PyPI pages) hold examples that run as written:
tron-events' against a real SQLite file, tron-llm's against the scripted model speaking
Anthropic's wire format (tron-server's is in tests/server/test_readme_client.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.scripted_llm import Response, Text, scripted_llm_thread

ROOT = Path(__file__).resolve().parents[1]


def example(distribution: str) -> str:
    [block] = re.findall(
        r"```python\n(.*?)```", (ROOT / distribution / "README.md").read_text(), re.S
    )
    return block


def test_tron_events_readme_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    exec(compile(example("tron_events"), "tron_events/README.md", "exec"), namespace)
    assert (tmp_path / "events.db").exists()
    out = capsys.readouterr().out
    assert "snippet='List the «files»'" in out  # the search found the message
    assert "text='List the files'" in out and "src/ and tests/" not in out  # rewound


def test_tron_llm_readme_example_streams_a_reply(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = example("tron_llm")
    call = 'create_provider("anthropic")'
    assert call in code
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with scripted_llm_thread([Response([Text("Quicksort, mergesort, heapsort.")])]) as llm:
        # The one change: the scripted model's address instead of api.anthropic.com.
        code = code.replace(call, f'create_provider("anthropic", base_url="{llm.base_url}")')
        exec(compile(code, "tron_llm/README.md", "exec"), {"__name__": "readme"})
        [request] = llm.requests
    out = capsys.readouterr().out
    assert out.startswith("Quicksort, mergesort, heapsort.\n[end_turn: ")
    assert "Be brief." in str(request["system"])
