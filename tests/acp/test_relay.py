"""The relay behind Bash output in the editor's terminal (:mod:`tron_server.acp.terminals`)
and its viewer, run as the editor's terminal runs it."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest
from acp.schema import CreateTerminalResponse

from tron_server.acp import terminals
from tron_server.acp.terminals import Terminals, exit_status

pytestmark = pytest.mark.anyio


class Made:
    """The terminal side: records what it was asked to run."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, list[str]]] = []
        self.released: list[str] = []

    async def create_terminal(
        self, session_id: str, command: str, args: list[str] | None = None, **kwargs: Any
    ) -> CreateTerminalResponse:
        self.runs.append((command, list(args or [])))
        return CreateTerminalResponse(terminal_id=f"t{len(self.runs)}")

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kw: Any) -> None:
        pass

    async def kill_terminal(self, session_id: str, terminal_id: str, **kw: Any) -> None:
        pass

    async def release_terminal(self, session_id: str, terminal_id: str, **kw: Any) -> None:
        self.released.append(terminal_id)


async def view(command: str, args: list[str]) -> tuple[str, int]:
    process = await asyncio.create_subprocess_exec(
        command, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(process.communicate(), 30)
    return out.decode(), await process.wait()


async def test_a_late_viewer_prints_the_whole_output_and_the_exit_status(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(terminals, "MAX_KEPT", 10)
    editor = Made()
    relay = Terminals(editor)
    feed = await relay.open("s1", "/")
    assert feed is not None and feed.terminal_id == "t1"
    [(command, args)] = editor.runs
    assert command == sys.executable and args[:2] == ["-m", "tron_server.acp.viewer"]
    feed.write("0123456789")
    viewer = asyncio.create_task(view(command, args))
    while not viewer.done() and feed.changed.is_set():  # let it connect and read
        await asyncio.sleep(0.05)
    feed.write("abc")
    relay.close(feed, 5)
    out, code = await viewer
    # Output written before the viewer connected is printed; past MAX_KEPT, its end.
    assert out.endswith("abc") and "3456789" in out
    assert code == 5
    await relay.aclose()
    assert not relay.socket.parent.exists()


async def test_a_viewer_with_an_unknown_token_exits_with_an_error() -> None:
    relay = Terminals(Made())
    feed = await relay.open("s1", "/")
    assert feed is not None
    out, code = await view(
        sys.executable, ["-m", "tron_server.acp.viewer", str(relay.socket), "nope"]
    )
    assert (out, code) == ("", 1)
    await relay.aclose()


def test_exit_status_is_read_from_the_result() -> None:
    assert exit_status("hi\n\n[exit code: 3]", is_error=False) == 3
    assert exit_status([{"type": "text", "text": "x\n\n[exit code: 0]"}], is_error=False) == 0
    assert exit_status("[timed out after 5 s; every process it started was killed]",
                       is_error=True) == 1  # fmt: skip
    assert exit_status(None, is_error=False) == 0
