"""``tron acp``: Tron as an Agent Client Protocol agent on stdin/stdout.

    tron acp                      # what an editor runs (Zed: agent_servers, see docs/editors.md)
    tron acp --home ~/.tron-work  # another home (its server, token and sessions)

It attaches to the running tron-server (or starts one in the background, as ``tron``
does) and speaks ACP with the editor: newline-delimited JSON-RPC on stdin and stdout.
Nothing else is ever written to stdout: the protocol gets its own copy of the stdout
file descriptor and descriptor 1 points at stderr from the start, so a stray print (ours,
a library's, a child process's) cannot corrupt the stream. Logs go to
``<home>/logs/acp.log`` (and warnings to stderr, which editors show in their logs). The
process exits with status 0 when stdin closes.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import stat
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from acp import run_agent

from ..logging import LEVELS, configure_logging
from ..terminal.attach import ServerAddress, default_home
from .agent import TronAgent
from .link import Link

log = logging.getLogger("tron_server.acp")

#: The largest frame read from the editor (a prompt with images).
STDIN_LIMIT = 50 * 1024 * 1024


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("tron-server")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0+unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tron acp",
        description="Tron as an ACP agent for editors (Zed, JetBrains, Neovim, Emacs): "
        "JSON-RPC on stdin/stdout. It attaches to the running tron-server, or starts one "
        "in the background. See docs/editors.md for each editor's configuration.",
        epilog="environment: TRON_HOME (default ~/.tron): the server's token and address, "
        "and the log (<home>/logs/acp.log); TRON_PORT: the port of a server it starts.",
    )
    parser.add_argument("--server", metavar="URL", help="ws://HOST:PORT/rpc of the server to use")
    parser.add_argument(
        "--home", type=Path, help="Tron's home: token, server record, logs (default ~/.tron)"
    )
    parser.add_argument(
        "--no-start",
        action="store_true",
        help="do not start tron-server when none answers (the editor gets an error)",
    )
    parser.add_argument("--log-level", choices=LEVELS, default="info", help="of acp.log")
    parser.add_argument("--version", action="version", version=f"tron acp {version()}")
    return parser


class _PipeProtocol(asyncio.BaseProtocol):
    """A write pipe's flow control, as ``asyncio.StreamWriter.drain`` expects it."""

    def __init__(self) -> None:
        self._paused = False
        self._waiter: asyncio.Future[None] | None = None

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        self._waiter = None

    async def _drain_helper(self) -> None:
        if self._paused:
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter


def protect_stdout() -> int:
    """A private copy of stdout for the protocol; descriptor 1 becomes stderr."""
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.set_inheritable(protocol_fd, False)
    os.dup2(2, 1)
    return protocol_fd


def _is_pipe(fd: int) -> bool:
    """Whether asyncio's pipe transports take ``fd`` (a pipe, socket or terminal; not a
    regular file, as when a script redirects a file in or out)."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


class _FileTransport(asyncio.WriteTransport):
    """Writes to a descriptor that is not a pipe (a regular file) as they come."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd
        self._closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        self._closing = True


def _feed(reader: asyncio.StreamReader, loop: asyncio.AbstractEventLoop) -> None:
    """Read stdin in a thread (a regular file cannot be watched by the event loop)."""

    def run() -> None:
        try:
            while data := sys.stdin.buffer.readline():
                loop.call_soon_threadsafe(reader.feed_data, data)
        finally:
            loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=run, name="acp-stdin", daemon=True).start()


async def stdio(protocol_fd: int) -> tuple[asyncio.StreamWriter, asyncio.StreamReader]:
    """The editor's streams: stdin, and the protocol's copy of stdout."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=STDIN_LIMIT)
    if _is_pipe(sys.stdin.fileno()):
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    else:
        _feed(reader, loop)
    pipe = _PipeProtocol()
    transport: asyncio.WriteTransport
    if _is_pipe(protocol_fd):
        out = os.fdopen(protocol_fd, "wb", buffering=0)
        transport, _ = await loop.connect_write_pipe(lambda: pipe, out)
    else:
        transport = _FileTransport(protocol_fd)
    return asyncio.StreamWriter(transport, pipe, None, loop), reader


async def serve(address: ServerAddress, *, start: bool, protocol_fd: int) -> int:
    """Run the agent until stdin closes."""
    link = Link(address, start=start)
    agent = TronAgent(link, version())
    writer, reader = await stdio(protocol_fd)
    try:
        await run_agent(agent, writer, reader, use_unstable_protocol=True)
    finally:
        await agent.close()
        writer.close()
    log.info("stdin closed: tron acp exits")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The ``tron acp`` command; returns the exit status."""
    args = build_parser().parse_args(argv)
    home: Path = (args.home or default_home()).expanduser()
    protocol_fd = protect_stdout()
    configure_logging(args.log_level, log_file=home / "logs" / "acp.log", fmt="text")
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler) and not isinstance(
            handler, logging.FileHandler
        ):
            handler.setLevel(logging.WARNING)  # stderr: what an editor's log should show
    log.info("tron acp %s starting (home %s)", version(), home)
    try:
        return asyncio.run(
            serve(
                ServerAddress(home, args.server), start=not args.no_start, protocol_fd=protocol_fd
            )
        )
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if os.environ.get("TRON_DEBUG"):
            raise
        log.exception("tron acp failed")
        print(f"tron acp: unexpected error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 70


__all__ = ["build_parser", "main", "serve"]
