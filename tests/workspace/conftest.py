"""Fixtures for the workspace tests: real folders and git repositories, the real tools,
a real store on each backend, and a small harness that runs tool calls as a turn would
(``tool.call``, the tool's own events, ``tool.result``)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tron_events import AsyncEventStore
from tron_server.tools import ToolContext, ToolResult, default_tools
from tron_server.workspace import Workspace

#: A folder's files: path (relative, posix) -> ("file", bytes, executable) | ("link", target).
Tree = dict[str, tuple[Any, ...]]


def read_tree(root: Path) -> Tree:
    """Every file and symlink under ``root`` (``.git`` left out, folders only as the
    paths of what they hold)."""
    out: Tree = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if ".git" in dirnames:
            dirnames.remove(".git")
        here = Path(dirpath)
        for name in [*dirnames, *filenames]:
            path = here / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_file():
                out[rel] = ("file", path.read_bytes(), bool(path.stat().st_mode & 0o100))
    return out


def git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "test@example.com",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "test@example.com",
    }
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def make_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    """A git repository with one commit of ``files``."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    for name, text in (files or {"README.md": "hello\n"}).items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


@dataclass
class Harness:
    """Tool calls of one session, recorded as a turn records them."""

    store: AsyncEventStore
    workspace: Workspace
    session_id: str
    root: Path
    tools: Any
    calls: int = 0

    async def run(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        self.calls += 1
        call_id = f"toolu_{self.calls:04d}"
        store = self.store
        await store.append(
            self.session_id,
            "tool.call",
            {"toolCallId": call_id, "name": name, "arguments": arguments},
        )

        async def record(event_type: str, payload: dict[str, Any]) -> None:
            await store.append(self.session_id, event_type, payload)

        ctx = ToolContext(
            session_id=self.session_id,
            working_directory=self.root,
            tool_call_id=call_id,
            record=record,
        )
        result = await self.tools.execute(name, arguments, ctx)
        await store.append(
            self.session_id,
            "tool.result",
            {"toolCallId": call_id, "content": result.content, "isError": result.is_error},
        )
        return result

    async def head(self) -> str:
        return (await self.store.get_session(self.session_id)).head_event_id

    async def bash(self, command: str) -> ToolResult:
        return await self.run("Bash", {"command": command})

    async def write(self, path: str, content: str) -> ToolResult:
        return await self.run("Write", {"file_path": path, "content": content})

    async def edit(self, path: str, old: str, new: str) -> ToolResult:
        return await self.run("Edit", {"file_path": path, "old_string": old, "new_string": new})


async def new_harness(
    store: AsyncEventStore,
    home: Path,
    root: Path,
    *,
    max_file_bytes: int = 1 << 20,
    max_files: int = 100_000,
) -> Harness:
    root.mkdir(parents=True, exist_ok=True)
    session = await store.create_session(working_directory=str(root), model="m", provider="p")
    workspace = Workspace(store, home, max_file_bytes=max_file_bytes, max_files=max_files)
    tools = default_tools(workspace.recorder)
    return Harness(store, workspace, session.id, root.resolve(), tools)


@pytest.fixture
async def harness(astore: AsyncEventStore, tmp_path: Path) -> Harness:
    return await new_harness(astore, tmp_path / "home", tmp_path / "project")
