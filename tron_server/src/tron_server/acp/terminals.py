"""Bash output in the editor's terminal (ACP ``terminal/*``), the command still run by Tron.

Tron's Bash tool runs every command in tron-server, so its hooks, permissions, process
tree kill and recorded events are the same in every client. When the editor advertises
the ``terminal`` capability, ``tron acp`` also shows a Bash call's output in one of the
editor's terminals: at the call's start it asks the editor (``terminal/create``) to run
a small viewer, ``python -m tron_server.acp.viewer SOCKET TOKEN``, that prints the
call's output as this process relays it and exits with the command's exit status; the
tool call's content is then ``{"type": "terminal", "terminalId": …}``. When the call has
ended and the viewer exited, the terminal is released (the editor keeps showing it).

The viewer reads from this process, not from tron-server: ``tron acp`` already follows
the call's output from its start, so a viewer that starts late still prints all of it,
and nothing secret (the server's token) goes on a command line. The relay is a Unix
socket in a private temporary folder (mode 0700, removed on exit); each call has its
own random token. Frames are JSON lines: ``{"out": text}`` … then ``{"exit": code}``.

When the editor cannot make the terminal (``terminal/create`` fails), the call shows
its output as text, as without the capability.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import secrets
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from acp.schema import TerminalToolCallContent

log = logging.getLogger("tron_server.acp")

#: Output kept for a viewer that connects late (its end).
MAX_KEPT = 1_000_000
#: How long a released terminal's viewer may take to print the rest and exit.
EXIT_WAIT = 30.0
#: How long a viewer has to say which call it shows.
HELLO_WAIT = 10.0
#: The exit status Bash's result ends with (see tron_server.tools.bash).
_EXIT = re.compile(r"\[exit code: (\d+)\]\s*$")


class EditorTerminals(Protocol):
    """What this uses of the ACP client (``acp.interfaces.Client``)."""

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: Any = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> Any: ...

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> Any: ...

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any: ...

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any: ...


def exit_status(content: Any, *, is_error: bool) -> int:
    """The exit status a Bash result names (its text ends ``[exit code: N]``); 1 for an
    error without one (a timeout), 0 otherwise."""
    texts = [content] if isinstance(content, str) else []
    if isinstance(content, list):
        texts = [b.get("text", "") for b in content if isinstance(b, dict)]
    for text in reversed(texts):
        found = _EXIT.search(text) if isinstance(text, str) else None
        if found:
            return min(255, int(found.group(1)))
    return 1 if is_error else 0


@dataclass
class Feed:
    """One call's output for its viewers: what came so far, and what comes next."""

    session_id: str
    token: str
    terminal_id: str | None = None
    output: str = ""
    total: int = 0  # characters written, kept or not
    exit: int | None = None
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def write(self, chunk: str) -> None:
        self.output = (self.output + chunk)[-MAX_KEPT:]
        self.total += len(chunk)
        self.changed.set()

    def finish(self, code: int) -> None:
        if self.exit is None:
            self.exit = code
            self.changed.set()


class Terminals:
    """The editor's terminals of one ``tron acp`` connection, and the relay their viewers
    read from."""

    def __init__(self, editor: EditorTerminals) -> None:
        self.editor = editor
        self._feeds: dict[str, Feed] = {}
        self._folder: Path | None = None
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def socket(self) -> Path:
        assert self._folder is not None
        return self._folder / "relay"

    async def _listen(self) -> None:
        if self._server is None:
            self._folder = Path(tempfile.mkdtemp(prefix="tron-acp-"))  # mode 0700
            self._server = await asyncio.start_unix_server(self._serve, path=str(self.socket))

    async def open(self, session_id: str, cwd: str) -> Feed | None:
        """A terminal in the editor showing a call's output; None when the editor could
        not make one (the call then shows its output as text)."""
        try:
            await self._listen()
            feed = Feed(session_id, secrets.token_urlsafe(16))
            self._feeds[feed.token] = feed
            made = await self.editor.create_terminal(
                session_id,
                sys.executable,
                ["-m", "tron_server.acp.viewer", str(self.socket), feed.token],
                cwd=cwd,
            )
            feed.terminal_id = str(made.terminal_id)
            return feed
        except Exception as exc:  # the editor's refusal, whatever it is: show text
            log.info("the editor made no terminal (%s): Bash output is shown as text", exc)
            return None

    def content(self, feed: Feed) -> list[TerminalToolCallContent]:
        """The tool call content showing the terminal."""
        assert feed.terminal_id is not None
        return [TerminalToolCallContent(type="terminal", terminal_id=feed.terminal_id)]

    def close(self, feed: Feed, code: int) -> None:
        """The call ended with ``code``: the viewer prints the rest and exits; the terminal
        is released once it did (killed first if it did not within :data:`EXIT_WAIT`)."""
        feed.finish(code)
        task = asyncio.create_task(self._release(feed))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _release(self, feed: Feed) -> None:
        assert feed.terminal_id is not None
        sid, tid = feed.session_id, feed.terminal_id
        try:
            try:
                await asyncio.wait_for(self.editor.wait_for_terminal_exit(sid, tid), EXIT_WAIT)
            except TimeoutError:
                await self.editor.kill_terminal(sid, tid)
            await self.editor.release_terminal(sid, tid)
        except Exception as exc:  # the editor went away or forgot the terminal
            log.info("releasing terminal %s: %s", tid, exc)
        finally:
            self._feeds.pop(feed.token, None)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One viewer: its token, then the call's output so far, what follows, the exit."""
        try:
            async with asyncio.timeout(HELLO_WAIT):
                token = (await reader.readline()).decode().strip()
            feed = self._feeds.get(token)
            if feed is None:
                writer.write(b'{"error": "no such call", "exit": 1}\n')
                return
            sent = 0
            while True:
                feed.changed.clear()
                new = feed.total - sent
                if new > 0:
                    # What was trimmed before this viewer read it is skipped.
                    chunk = feed.output[-new:] if new < len(feed.output) else feed.output
                    writer.write(json.dumps({"out": chunk}).encode() + b"\n")
                    sent = feed.total
                    await writer.drain()
                if feed.exit is not None:
                    writer.write(json.dumps({"exit": feed.exit}).encode() + b"\n")
                    return
                await feed.changed.wait()
        except (TimeoutError, ConnectionError, UnicodeDecodeError) as exc:
            log.info("a terminal viewer went away: %s", exc)
        finally:
            with contextlib.suppress(ConnectionError):
                await writer.drain()
            writer.close()

    async def aclose(self) -> None:
        """Stop relaying (the connection ends): running viewers are told the call ended."""
        for feed in self._feeds.values():
            feed.finish(130)
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=1)
        if self._server is not None:
            self._server.close()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)


__all__ = ["EditorTerminals", "Feed", "Terminals", "exit_status"]
