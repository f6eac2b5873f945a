"""The README's "Drive a session from Python" example runs exactly as written against a
real tron-server (the scripted LLM stands in for Anthropic): the user's home is a
temporary one holding the server's token and ``server.json``, as ``tron-server``
leaves them, and the example runs in a folder of its own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.scripted_llm import Response, Text, scripted_llm_thread
from tests.support.server import RunningServer
from tron_server.server_record import new_record, write_server_record

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_client_example_streams_a_reply_and_forks(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    example = next(b for b in blocks if "TronClient" in b)
    user_home = tmp_path / "user"
    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("# a project\n")
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.chdir(project)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with scripted_llm_thread([Response([Text("A README and two scripts.")])]) as llm:
        server = RunningServer(user_home / ".tron", anthropic_base_url=llm.base_url).start()
        try:
            # What tron-server records once it listens (the fixture's server does not).
            write_server_record(server.home, new_record("127.0.0.1", server.port))
            exec(compile(example, str(README), "exec"), {"__name__": "readme"})
            assert len(llm.requests) == 1
            out = capsys.readouterr().out
            assert "A README and two scripts." in out
            forked = re.search(r"forked: (\S+)", out)
            assert forked is not None
            fork = server.run_sync(server.services.store.get_session, forked.group(1))
            assert fork.parent_session_id is not None
            source = server.run_sync(server.services.store.get_session, fork.parent_session_id)
            assert Path(source.working_directory) == project.resolve()
        finally:
            server.stop()


def test_tron_server_readme_example_runs_a_turn(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The PyPI page's example (tron_server/README.md) against a real server."""
    page = README.parent / "tron_server" / "README.md"
    [example] = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
    user_home = tmp_path / "user"
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.chdir(project)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with scripted_llm_thread([Response([Text("Nothing yet.")])]) as llm:
        server = RunningServer(user_home / ".tron", anthropic_base_url=llm.base_url).start()
        try:
            write_server_record(server.home, new_record("127.0.0.1", server.port))
            exec(compile(example, str(page), "exec"), {"__name__": "readme"})
            assert len(llm.requests) == 1
            out = capsys.readouterr().out
            assert out.startswith("end_turn [") and "'message.assistant'" in out
        finally:
            server.stop()
