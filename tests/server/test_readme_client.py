"""The README's "Drive a session from Python" example runs as written against a real
tron-server (the scripted LLM stands in for Anthropic)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.server.conftest import ServerFactory
from tests.server.scripted_llm import Response, Text, scripted_llm_thread

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_client_example_streams_a_reply_and_forks(
    server_factory: ServerFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    example = next(b for b in blocks if "TronClient" in b)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with scripted_llm_thread([Response([Text("A README and two scripts.")])]) as llm:
        server = server_factory(anthropic_base_url=llm.base_url)
        code = example.replace(
            "TronClient.from_home()",
            f"TronClient.from_home({str(server.home)!r}, url={server.ws_url!r})",
        ).replace('"/src/app"', repr(str(tmp_path)))
        assert code != example
        exec(compile(code, str(README), "exec"), {"__name__": "readme"})
        assert len(llm.requests) == 1
    out = capsys.readouterr().out
    assert "A README and two scripts." in out
    forked = re.search(r"forked: (\S+)", out)
    assert forked is not None
    sessions = server.run_sync(server.services.store.get_session, forked.group(1))
    assert sessions.parent_session_id is not None
