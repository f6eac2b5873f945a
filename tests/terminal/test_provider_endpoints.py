"""A Claude Code user's endpoints and keys (issue 27 item 10), through real ``tron -p``
processes and the server they start: ``ANTHROPIC_BASE_URL``, ``OPENAI_BASE_URL`` and
``GOOGLE_GEMINI_BASE_URL`` are honoured without any ``TRON_*_BASE_URL``; a connection
that fails names its URL and the variable that set it; a key with a character that
is not ASCII is one line naming its variable. The stream-json output carries the
server's RPC notifications as they are, so it shows what an RPC client is told."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.llm._serve import free_port
from tests.support.ports import port_for_later
from tests.support.scripted_llm import Response, Text
from tests.terminal.conftest import TRON, TronEnv
from tron_server.server_record import process_exists, read_server_record

PROVIDER_VARIABLES = (
    "TRON_ANTHROPIC_BASE_URL", "TRON_OPENAI_BASE_URL", "TRON_GOOGLE_BASE_URL",
    "TRON_OPENAI_COMPATIBLE_BASE_URL", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL",
    "GOOGLE_GEMINI_BASE_URL", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
    "TRON_DEFAULT_PROVIDER", "TRON_DEFAULT_MODEL",
)  # fmt: skip


class World:
    """A fresh home whose server ``tron`` starts with this shell's environment."""

    def __init__(self, env: TronEnv, home: Path, variables: dict[str, str]) -> None:
        self.home = home
        self.env = {k: v for k, v in env.env().items() if k not in PROVIDER_VARIABLES}
        self.env.update(TRON_PORT=str(port_for_later()), TRON_LOG_LEVEL="warning", **variables)
        self.project = env.project(home.name)

    def tron(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*TRON, "--home", str(self.home), "-p", *args],
            cwd=self.project,
            capture_output=True,
            text=True,
            timeout=90,
            env=self.env,
            stdin=subprocess.DEVNULL,
        )

    def stop(self) -> None:
        record = read_server_record(self.home)
        if record is not None and process_exists(record.pid):
            os.kill(record.pid, signal.SIGTERM)  # the server this test's tron started
            deadline = time.monotonic() + 20
            while process_exists(record.pid) and time.monotonic() < deadline:
                time.sleep(0.1)


@pytest.fixture
def world(env: TronEnv, tmp_path: Path) -> Iterator[World]:
    made = World(
        env,
        tmp_path / "sdk-variables",
        {
            "ANTHROPIC_BASE_URL": env.llm.base_url,  # the scripted LLM
            "OPENAI_BASE_URL": f"http://127.0.0.1:{free_port()}/v1",  # nothing listens
            "OPENAI_API_KEY": "sk-test",
            "GEMINI_API_KEY": "sk-ant-\u2026",  # a placeholder copied with its ellipsis
        },
    )
    try:
        yield made
    finally:
        made.stop()


def test_sdk_variables_point_tron_at_its_endpoints(env: TronEnv, world: World) -> None:
    env.llm.add(Response([Text("through ANTHROPIC_BASE_URL")]))
    served = len(env.llm.requests)
    ok = world.tron("hello")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout == "through ANTHROPIC_BASE_URL\n"
    assert len(env.llm.requests) == served + 1  # the request reached the scripted LLM

    refused = world.tron("hello", "--model", "gpt-4.1")
    assert refused.returncode != 0
    url = world.env["OPENAI_BASE_URL"]
    lines = [line for line in refused.stderr.splitlines() if "connection failed" in line]
    assert len(lines) == 1, refused.stderr
    assert f"connection failed: {url} (OPENAI_BASE_URL): " in lines[0]
    assert "Traceback" not in refused.stderr

    bad_key = world.tron("hello", "--model", "gemini-2.5-flash", "--output-format", "stream-json")
    assert bad_key.returncode != 0
    expected = (
        "the API key in GEMINI_API_KEY has a character that is not ASCII "
        "('\u2026', U+2026, at position 8 of 8): an API key is plain ASCII; copy the key again"
    )
    notes = [json.loads(line) for line in bad_key.stdout.splitlines()]
    errors = [n["data"] for n in notes if n.get("method") == "agent.error"]
    assert [e["message"] for e in errors] == [expected], bad_key.stdout
    text = world.tron("hello", "--model", "gemini-2.5-flash")
    assert text.returncode != 0 and expected in text.stderr
    assert "UnicodeEncodeError" not in text.stderr + bad_key.stdout
    assert "Traceback" not in text.stderr
    log = (world.home / "logs" / "tron-server.log").read_text()
    assert "UnicodeEncodeError" not in log and "sk-ant-\u2026" not in log
