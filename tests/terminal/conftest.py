"""Fixtures for the terminal client's tests: one real tron-server per module (uvicorn
in a thread, a temp home and SQLite database) answering with the scripted LLM,
and helpers to run ``tron`` as a subprocess against it.

Each test adds the LLM responses it needs and works in its own project folder,
so a test passes alone and in any order while sharing the module's server.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.scripted_llm import ScriptedLLM, scripted_llm_thread
from tests.support.server import RunningServer

TRON = [sys.executable, "-m", "tron_server.terminal"]


@dataclass
class TronEnv:
    """The module's server, its scripted LLM and a factory of project folders."""

    server: RunningServer
    llm: ScriptedLLM
    root: Path

    def project(self, name: str) -> Path:
        path = self.root / name
        path.mkdir()
        return path

    def store(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call an AsyncEventStore method of the server on its event loop."""
        fn = getattr(self.server.services.store, method)
        return self.server.run_sync(lambda: fn(*args, **kwargs))

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("NO_COLOR", None)
        env.pop("TRON_DEBUG", None)
        env["ANTHROPIC_API_KEY"] = "test-key"
        env.update(extra)
        return env

    def tron(
        self,
        *args: str,
        cwd: Path,
        input: str | None = None,
        timeout: float = 60,
        server: bool = True,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``tron ARGS`` in ``cwd`` against the module's server (no TTY)."""
        command = [*TRON, "--home", str(self.server.home)]
        if server:
            command += ["--server", self.server.ws_url]
        return subprocess.run(
            [*command, *args],
            cwd=cwd,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env or self.env(),
        )


@pytest.fixture(scope="module")
def tron_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TronEnv]:
    root = tmp_path_factory.mktemp("terminal")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ANTHROPIC_API_KEY", "test-key")  # the adapter wants one; the LLM ignores it
        with scripted_llm_thread() as llm:
            server = RunningServer(
                root / "tron-home",
                anthropic_base_url=llm.base_url,
                default_provider="anthropic",
                default_model="claude-sonnet-4-5",
            ).start()
            try:
                yield TronEnv(server=server, llm=llm, root=root)
            finally:
                server.stop()


@pytest.fixture
def env(tron_env: TronEnv) -> TronEnv:
    """The module's environment with the LLM's script emptied of anything an earlier
    (maybe failed) test left unserved: each test scripts exactly what it needs."""
    llm = tron_env.llm
    with llm._lock:
        llm._position = len(llm.script)
        llm._served_of_current = 0
    return tron_env


@pytest.fixture(scope="module")
def tmux(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A tmux server of the module's own (skipped, or failed under TRON_REQUIRE_TMUX,
    without tmux); a module may define its own instead."""
    from tests.terminal.tmux import Tmux, require_tmux  # it imports this module

    require_tmux()
    server = Tmux(tmp_path_factory.mktemp("tmux") / "socket")
    try:
        yield server
    finally:
        server.kill()
