"""Transcripts for hooks: the ``transcript_path`` Claude Code gives every hook.

Claude Code's hooks open ``transcript_path`` as a JSONL file of the conversation (one
record per line: ``{"type": "user" | "assistant", "message": {"role", "content"}, "uuid",
"parentUuid", "sessionId", "timestamp", "cwd", ...}``) to find the last reply, the tools used
or the prompts. So that such scripts work unchanged, :class:`Transcripts` writes each
session's conversation in that shape to ``<home>/transcripts/<session id>.jsonl`` (folder
0700, files 0600: only the user reads them):

- a ``message.user`` is a ``user`` record (its content as stored: a string or blocks);
- a ``message.assistant`` is an ``assistant`` record (``message.content`` in the Anthropic
  block shape Claude Code writes: ``text``, ``thinking``, ``tool_use``; ``model``,
  ``stop_reason``, ``usage``);
- a ``tool.result`` is a ``user`` record holding one ``tool_result`` block (and
  ``toolUseResult``, the result's content, as Claude Code adds);
- a ``hook.context`` (and ``memory.loaded``, the memory put before the model) is a
  ``user`` record with ``isMeta: true``;
- a ``compact.summary`` is a ``user`` record with ``isCompactSummary: true``.

Other events are left out (``tron-db export`` or ``events.sync`` give everything). ``uuid``
is the event's id, so a line leads back to the event; ``isSidechain`` is true in a
sub-agent's transcript, and ``tronEventType`` names the event type.

The file is the path from the session's root to its head (a fork's starts in its source
session). It is brought up to date just before a hook that reads it runs: the events
recorded since the last write are appended (one read of the new events, one append); when
the head is no longer below the last line written (a rewind), the file is written again
from scratch (to a temporary file, then renamed).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from tron_events import AsyncEventStore, Event
from tron_events.reconstruct import SUMMARY_PREFIX

__all__ = ["Transcripts", "transcript_record"]

log = logging.getLogger("tron_server.hooks")


def _user(content: Any) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": content}}


def transcript_record(event: Event) -> dict[str, Any] | None:
    """The Claude Code transcript record for ``event`` (without the fields every record
    repeats), or None for an event the transcript leaves out."""
    kind = event.type
    payload = event.payload
    if kind == "message.user":
        return _user(payload.get("content", ""))
    if kind == "message.assistant":
        message: dict[str, Any] = {
            "role": "assistant",
            "content": payload.get("content", []),
            "stop_reason": payload.get("stopReason"),
        }
        if payload.get("model"):
            message["model"] = payload["model"]
        usage = payload.get("tokenUsage")
        if isinstance(usage, dict):
            message["usage"] = {
                "input_tokens": usage.get("inputTokens", 0),
                "output_tokens": usage.get("outputTokens", 0),
                "cache_read_input_tokens": usage.get("cacheReadTokens") or 0,
                "cache_creation_input_tokens": usage.get("cacheCreationTokens") or 0,
            }
        return {"type": "assistant", "message": message}
    if kind == "tool.result":
        block = {
            "type": "tool_result",
            "tool_use_id": payload.get("toolCallId"),
            "content": payload.get("content", ""),
            "is_error": bool(payload.get("isError")),
        }
        return {**_user([block]), "toolUseResult": payload.get("content", "")}
    if kind in ("hook.context", "memory.loaded"):
        return {**_user(payload.get("content", "")), "isMeta": True}
    if kind == "compact.summary":
        summary = SUMMARY_PREFIX + str(payload.get("summary", ""))
        return {**_user(summary), "isCompactSummary": True}
    return None


@dataclass
class _Written:
    """What the file holds: the path up to ``head`` (its last event), ``size`` bytes, and
    the uuid of its last record (the ``parentUuid`` of the next)."""

    head: str
    sequence: int
    size: int
    last_uuid: str | None


class Transcripts:
    """Keeps ``<directory>/<session id>.jsonl`` current for the hooks that read it."""

    def __init__(self, store: AsyncEventStore, directory: Path) -> None:
        self.store = store
        self.directory = directory
        self._written: dict[str, _Written] = {}
        self._locks: dict[str, anyio.Lock] = {}

    def path_of(self, session_id: str) -> Path:
        """Where the transcript of ``session_id`` is written."""
        return self.directory / f"{session_id}.jsonl"

    async def update(self, session_id: str) -> Path:
        """Bring the session's transcript up to its head; return its path."""
        lock = self._locks.setdefault(session_id, anyio.Lock())
        async with lock:
            session = await self.store.get_session(session_id)
            path = self.path_of(session_id)
            written = self._written.get(session_id)
            head = session.head_event_id
            if written is not None and written.head == head and _size(path) == written.size:
                return path
            context = {
                "sessionId": session_id,
                "cwd": session.working_directory,
                "isSidechain": session.parent_session_id is not None,
                "userType": "external",
                "version": "tron",
            }
            if written is not None and _size(path) == written.size:
                new = await self.store.get_events(session_id, after_sequence=written.sequence)
                chain = _chain(new, head, written.head)
                if chain is not None:
                    self._written[session_id] = await anyio.to_thread.run_sync(
                        _append, path, chain, context, written
                    )
                    return path
            events = await self.store.get_ancestors(head)
            self._written[session_id] = await anyio.to_thread.run_sync(
                _rewrite, path, events, context
            )
            return path


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


def _chain(new: list[Event], head: str, written_head: str) -> list[Event] | None:
    """The events from just after ``written_head`` down to ``head`` (root first), when the
    head is below the last event written; None otherwise (a rewind: write it all again)."""
    by_id = {e.id: e for e in new}
    chain: list[Event] = []
    current: str | None = head
    while current != written_head:
        event = by_id.get(current) if current is not None else None
        if event is None:
            return None
        chain.append(event)
        current = event.parent_id
    chain.reverse()
    return chain


def _lines(
    events: list[Event], context: dict[str, Any], parent: str | None
) -> tuple[bytes, str | None]:
    out: list[bytes] = []
    for event in events:
        record = transcript_record(event)
        if record is None:
            continue
        line = {
            "parentUuid": parent,
            **context,
            **record,
            "uuid": event.id,
            "timestamp": event.timestamp,
            "tronEventType": event.type,
        }
        out.append(json.dumps(line, ensure_ascii=False, default=str).encode() + b"\n")
        parent = event.id
    return b"".join(out), parent


def _private_dir(path: Path) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)


def _append(path: Path, chain: list[Event], context: dict[str, Any], written: _Written) -> _Written:
    data, last = _lines(chain, context, written.last_uuid)
    if data:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "ab") as f:
            f.write(data)
    sequence = max([written.sequence, *(e.sequence for e in chain)])
    return _Written(chain[-1].id if chain else written.head, sequence, written.size + len(data),
                    last)  # fmt: skip


def _rewrite(path: Path, events: list[Event], context: dict[str, Any]) -> _Written:
    _private_dir(path)
    data, last = _lines(events, context, None)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    own = [e.sequence for e in events if e.session_id == context["sessionId"]]
    return _Written(events[-1].id if events else "", max(own, default=-1), len(data), last)
