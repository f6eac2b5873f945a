"""Fixtures for ``tron acp``: a real tron-server (in a thread, temp home, SQLite) answering
with the scripted LLM, and the official ACP Python SDK's client side driving ``tron acp``
as a subprocess, started exactly as Zed's configuration in docs/editors.md says.

Every message ``tron acp`` sends is checked against the ACP schema (:mod:`.schema`).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    ReadTextFileResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from tests.acp.schema import Checker
from tests.support.scripted_llm import ScriptedLLM, scripted_llm_thread
from tests.support.server import RunningServer
from tron_server.server_record import new_record, write_server_record

ROOT = Path(__file__).resolve().parents[2]
EDITORS = ROOT / "docs" / "editors.md"


def zed_config() -> dict[str, Any]:
    """The Tron entry of the Zed block in docs/editors.md."""
    text = EDITORS.read_text()
    section = text.split("## Zed", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```json\n(.*?)```", section, re.S)
    assert block is not None, "docs/editors.md has no JSON block for Zed"
    entry: dict[str, Any] = json.loads(block.group(1))["agent_servers"]["Tron"]
    return entry


def zed_command() -> tuple[str, list[str], dict[str, str]]:
    """The command, args and env an editor configured as in docs/editors.md runs: the
    ``tron`` of this environment (the editor finds it on PATH)."""
    entry = zed_config()
    command = entry["command"]
    assert command == "tron"
    executable = Path(sys.executable).parent / command
    assert executable.exists(), f"{executable} is not installed"
    return str(executable), list(entry["args"]), dict(entry.get("env") or {})


class Editor:
    """An ACP client (the SDK's ``Client`` interface): it records every update, answers
    permission requests as told, and serves files from in-memory buffers when asked to."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, Any]] = []
        self.permissions: list[Any] = []
        self.choices: list[str | None] = []  # option ids to pick, in order (None: cancel)
        self.buffers: dict[str, str] = {}
        self.reads: list[str] = []
        self.writes: list[tuple[str, str]] = []
        self.changed = asyncio.Event()
        self.asked = asyncio.Event()
        self.terminals: dict[str, Terminal] = {}
        self.released: list[str] = []
        self.refuse_terminals = False  # terminal/create fails (an editor that cannot)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        self.changed.set()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> RequestPermissionResponse:
        self.permissions.append((session_id, tool_call, options))
        self.asked.set()
        choice = self.choices.pop(0) if self.choices else None
        if choice is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=choice)
        )

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:  # fmt: skip
        self.reads.append(path)
        if path not in self.buffers:
            raise RequestError.resource_not_found(path)
        return ReadTextFileResponse(content=self.buffers[path])

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        self.writes.append((path, content))
        self.buffers[path] = content
        return WriteTextFileResponse()

    async def create_terminal(
        self, session_id: str, command: str, args: list[str] | None = None, env: Any = None,
        cwd: str | None = None, output_byte_limit: int | None = None, **kwargs: Any,
    ) -> CreateTerminalResponse:  # fmt: skip
        """Runs the command for real, as an editor's terminal does, collecting its output."""
        if self.refuse_terminals:
            raise RequestError.internal_error({"message": "no terminals here"})
        process = await asyncio.create_subprocess_exec(
            command, *(args or []), cwd=cwd, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        terminal = Terminal(command, list(args or []), process)
        terminal.reader = asyncio.create_task(terminal.collect(self.changed))
        terminal_id = f"term-{len(self.terminals) + 1}"
        self.terminals[terminal_id] = terminal
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        terminal = self.terminals[terminal_id]
        code = terminal.process.returncode
        return TerminalOutputResponse(
            output=terminal.output, truncated=False,
            exit_status=None if code is None else TerminalExitStatus(exit_code=code),
        )  # fmt: skip

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        terminal = self.terminals[terminal_id]
        assert terminal.reader is not None
        await terminal.reader
        return WaitForTerminalExitResponse(exit_code=await terminal.process.wait())

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> None:
        process = self.terminals[terminal_id].process
        if process.returncode is None:
            process.kill()

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> None:
        await self.kill_terminal(session_id, terminal_id)
        self.released.append(terminal_id)
        self.changed.set()

    def on_connect(self, conn: Any) -> None:
        pass

    def of(self, kind: str, session_id: str | None = None) -> list[Any]:
        """The updates of one kind (``sessionUpdate``), optionally of one session."""
        return [
            u
            for sid, u in self.updates
            if u.session_update == kind and (session_id is None or sid == session_id)
        ]

    async def wait_for(self, predicate: Any, timeout: float = 60) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                self.changed.clear()
                await self.changed.wait()


@dataclass
class Terminal:
    """A terminal the agent had the :class:`Editor` make: its process and its output."""

    command: str
    args: list[str]
    process: asyncio.subprocess.Process
    output: str = ""
    reader: asyncio.Task[None] | None = None

    async def collect(self, changed: asyncio.Event) -> None:
        assert self.process.stdout is not None
        while chunk := await self.process.stdout.read(4096):
            self.output += chunk.decode()
            changed.set()
        await self.process.wait()
        changed.set()


@dataclass
class AcpEnv:
    """The module's server and LLM, and a factory of project folders."""

    server: RunningServer
    llm: ScriptedLLM
    root: Path
    checker: Checker = field(default_factory=Checker)

    def project(self, name: str) -> Path:
        path = self.root / name
        path.mkdir()
        return path.resolve()

    def store(self, method: str, *args: Any, **kwargs: Any) -> Any:
        fn = getattr(self.server.services.store, method)
        return self.server.run_sync(lambda: fn(*args, **kwargs))

    @asynccontextmanager
    async def editor(
        self, *, fs: bool = False, terminal: bool = False, editor: Editor | None = None,
        initialize: bool = True,
    ) -> AsyncIterator[tuple[Any, Editor, Any]]:  # fmt: skip
        """``tron acp`` started as Zed starts it, connected to an :class:`Editor`;
        initialized (with the fs capabilities when ``fs``, the terminal capability when
        ``terminal``) unless told not to."""
        command, args, env = zed_command()
        client = editor or Editor()
        environment = {**env, "TRON_HOME": str(self.server.home)}
        checker = self.checker = Checker()

        def observe(event: StreamEvent) -> None:
            message = event.message
            if event.direction == StreamDirection.OUTGOING:
                if "method" in message and "id" in message:
                    checker.requested(message["id"], message["method"])
                return
            checker.received(message)

        async with spawn_agent_process(
            client, command, *args, env=environment, cwd=self.root,
            use_unstable_protocol=True, observers=[observe],
        ) as (conn, process):  # fmt: skip
            if initialize:
                caps = ClientCapabilities(
                    fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs),
                    terminal=terminal,
                )
                await conn.initialize(
                    protocol_version=PROTOCOL_VERSION, client_capabilities=caps,
                    client_info=Implementation(name="tests", version="1"),
                )  # fmt: skip
            try:
                yield conn, client, process
            finally:
                for terminal in client.terminals.values():
                    if terminal.process.returncode is None:
                        terminal.process.kill()
        problems = checker.finish()
        assert not problems, "\n".join(problems)
        assert checker.checked > 0


@pytest.fixture(scope="module")
def acp_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AcpEnv]:
    root = tmp_path_factory.mktemp("acp")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ANTHROPIC_API_KEY", "test-key")  # the adapter wants one; the LLM ignores it
        with scripted_llm_thread() as llm:
            server = RunningServer(
                root / "tron-home",
                anthropic_base_url=llm.base_url,
                default_provider="anthropic",
                default_model="claude-sonnet-4-5",
                default_permission_mode="default",
            ).start()
            # What tron-server's command writes when it listens: how `tron acp` finds it.
            write_server_record(server.home, new_record("127.0.0.1", server.port, pid=os.getpid()))
            try:
                yield AcpEnv(server=server, llm=llm, root=root)
            finally:
                server.stop()


@pytest.fixture
def env(acp_env: AcpEnv) -> AcpEnv:
    """The module's environment with the LLM's script emptied of what an earlier test left."""
    llm = acp_env.llm
    with llm._lock:
        llm._position = len(llm.script)
        llm._served_of_current = 0
    return acp_env
