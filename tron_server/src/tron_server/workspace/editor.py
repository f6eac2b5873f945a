"""Files served by a client: an editor's buffers in place of the disk.

An editor (``tron acp`` for an ACP editor that advertises ``fs.readTextFile`` /
``fs.writeTextFile``) registers as its session's **file provider** with
``files.register`` (``docs/protocol.md``). While it is registered, Read, Write and Edit
of that session ask it for the text of a file (what the editor shows: an unsaved buffer
included) and hand it the text to write (the edit lands in the buffer), through a
``files.request`` notification the client answers with ``files.respond``.

The tools keep everything else: paths are resolved and checked by the session's path
policy first, Write and Edit record the contents before and after (so a rewind with
files restores them), Read records ``file.read``. A provider that is gone (its
connection closed), does not answer within :data:`ANSWER_TIMEOUT`, or answers a read
with an error leaves the tool to the disk; a refused write is an error the model sees.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import anyio

log = logging.getLogger("tron_server.workspace.editor")

#: How long a tool waits for the editor's answer before it gives up on it.
ANSWER_TIMEOUT = 30.0


class EditorRefused(Exception):
    """The editor answered a write with an error (its message says why)."""


class EditorFiles(Protocol):
    """What Read, Write and Edit use of a session's file provider."""

    @property
    def reads(self) -> bool: ...

    @property
    def writes(self) -> bool: ...

    async def read_text(self, path: Path) -> str | None:
        """The editor's text of ``path``; None when it cannot say (use the disk)."""

    async def write_text(self, path: Path, content: str) -> bool:
        """Hand the editor the new text of ``path``; False when it is gone (write the
        disk). Raises :class:`EditorRefused` when it answers with an error."""


#: ``send(data) -> bool``: queue a ``files.request`` for the provider's client (False:
#: the connection is closing).
Send = Callable[[dict[str, Any]], bool]


@dataclass
class _Waiting:
    owner: str
    done: anyio.Event = field(default_factory=anyio.Event)
    content: str | None = None
    error: str | None = None


class FileProvider:
    """One client serving one session's files."""

    def __init__(
        self,
        session_id: str,
        owner: str,
        send: Send,
        *,
        reads: bool,
        writes: bool,
        providers: FileProviders,
        timeout: float = ANSWER_TIMEOUT,
    ) -> None:
        self.session_id = session_id
        self.owner = owner
        self._send = send
        self._reads = reads
        self._writes = writes
        self._providers = providers
        self.timeout = timeout

    @property
    def reads(self) -> bool:
        return self._reads

    @property
    def writes(self) -> bool:
        return self._writes

    async def _ask(self, data: dict[str, Any]) -> _Waiting | None:
        request_id = "file_" + secrets.token_hex(8)
        waiting = _Waiting(self.owner)
        self._providers._waiting[request_id] = waiting
        try:
            if not self._send({"requestId": request_id, "sessionId": self.session_id, **data}):
                self._providers.drop_owner(self.owner)
                return None
            with anyio.move_on_after(self.timeout):
                await waiting.done.wait()
            if not waiting.done.is_set():
                log.warning(
                    "the editor did not answer a file request in %.0f s", self.timeout,
                    extra={"fields": {"sessionId": self.session_id, "op": data.get("op")}},
                )  # fmt: skip
                return None
            return waiting
        finally:
            self._providers._waiting.pop(request_id, None)

    async def read_text(self, path: Path) -> str | None:
        if not self._reads:
            return None
        answer = await self._ask({"op": "read", "path": str(path)})
        if answer is None or answer.error is not None:
            return None
        return answer.content

    async def write_text(self, path: Path, content: str) -> bool:
        if not self._writes:
            return False
        answer = await self._ask({"op": "write", "path": str(path), "content": content})
        if answer is None:
            return False
        if answer.error is not None:
            raise EditorRefused(answer.error)
        return True


class FileProviders:
    """The file provider of each session (at most one: the last to register wins)."""

    def __init__(self) -> None:
        self._by_session: dict[str, FileProvider] = {}
        self._waiting: dict[str, _Waiting] = {}

    def register(
        self, session_id: str, owner: str, send: Send, *, reads: bool, writes: bool
    ) -> FileProvider:
        provider = FileProvider(session_id, owner, send, reads=reads, writes=writes, providers=self)
        self._by_session[session_id] = provider
        return provider

    def unregister(self, session_id: str, owner: str) -> bool:
        """False when ``owner`` is not the session's provider."""
        provider = self._by_session.get(session_id)
        if provider is None or provider.owner != owner:
            return False
        del self._by_session[session_id]
        return True

    def drop_owner(self, owner: str) -> None:
        """Forget every registration of a client (its connection closed)."""
        for session_id, provider in list(self._by_session.items()):
            if provider.owner == owner:
                del self._by_session[session_id]

    def for_session(self, session_id: str) -> EditorFiles | None:
        """The session's provider, or None (the tools use the disk)."""
        return self._by_session.get(session_id)

    def answer(self, request_id: str, owner: str, content: str | None, error: str | None) -> bool:
        """A client's answer to a ``files.request``; False when nothing of ``owner``'s
        waits for it (another client cannot answer in its place)."""
        waiting = self._waiting.get(request_id)
        if waiting is None or waiting.owner != owner or waiting.done.is_set():
            return False
        waiting.content, waiting.error = content, error
        waiting.done.set()
        return True


__all__ = [
    "ANSWER_TIMEOUT",
    "EditorFiles",
    "EditorRefused",
    "FileProvider",
    "FileProviders",
]
