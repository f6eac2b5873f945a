"""The last few KiB a stdio server wrote to stderr, and when its stderr closed.

A server that fails to start or crashes usually says why on stderr; the tail is what the
user and the model are shown with the failure. A pipe (not a file) so nothing grows on
disk however chatty the server is; its end of file is also how a crash is noticed while
no request is in flight.
"""

from __future__ import annotations

import contextlib
import logging
import os
from typing import TextIO

import anyio

__all__ = ["StderrTail"]

log = logging.getLogger("tron_server.mcp")

TAIL_BYTES = 8192


class StderrTail:
    """``writer`` is handed to the child as its stderr; :meth:`pump` reads the other end."""

    def __init__(self, server: str, limit: int = TAIL_BYTES) -> None:
        self.server = server
        self.limit = limit
        self._buffer = bytearray()
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        self._read_fd: int | None = read_fd
        self.writer: TextIO | None = os.fdopen(write_fd, "w")
        self.closed = anyio.Event()

    def close_writer(self) -> None:
        """Our copy of the child's end (once the child has its own): end of file comes
        when the child (and whatever inherited its stderr) is gone."""
        if self.writer is not None:
            with contextlib.suppress(OSError):
                self.writer.close()
            self.writer = None

    def text(self, lines: int = 20) -> str:
        """The last ``lines`` lines written so far."""
        text = self._buffer.decode("utf-8", errors="replace")
        return "\n".join(text.rstrip("\n").splitlines()[-lines:])

    async def pump(self) -> None:
        """Read until end of file (or cancellation); then :attr:`closed` is set."""
        fd = self._read_fd
        try:
            while fd is not None:
                await anyio.wait_readable(fd)
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    break
                self._keep(chunk)
        finally:
            self.drain()
            self.closed.set()
            self.aclose()

    def _keep(self, chunk: bytes) -> None:
        self._buffer += chunk
        if len(self._buffer) > self.limit:
            del self._buffer[: len(self._buffer) - self.limit]
        log.debug("mcp server %s stderr: %s", self.server,
                  chunk.decode("utf-8", errors="replace").rstrip())  # fmt: skip

    def drain(self) -> None:
        """Take what the pipe holds now without waiting (a failure is reported with the
        last words the server wrote before it, even those not yet read)."""
        fd = self._read_fd
        while fd is not None:
            try:
                chunk = os.read(fd, 65536)
            except (BlockingIOError, OSError):
                return
            if not chunk:
                return
            self._keep(chunk)

    def aclose(self) -> None:
        """Close both ends (idempotent)."""
        self.close_writer()
        if self._read_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._read_fd)
            self._read_fd = None
