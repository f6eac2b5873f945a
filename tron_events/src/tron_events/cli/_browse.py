"""``tron-db sessions`` and ``tron-db show``: the database from the shell."""

from __future__ import annotations

import argparse
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

import orjson

from .._urls import normalize_url
from ..errors import SessionNotFound, TronEventsError
from ..models import Event, Session
from ..store import EventStore
from ..titles import session_titles
from ._main import OK

#: A tool result or a long text is shown up to this many lines.
SHOWN_LINES = 8


class AmbiguousSession(TronEventsError):
    pass


def run(args: argparse.Namespace, raw_url: str) -> int:
    url = normalize_url(raw_url)
    with EventStore.open(url, read_only=True) as store:
        if args.command == "sessions":
            return _sessions(store, args)
        return _show(store, args)


def resolve_session(store: EventStore, text: str) -> str:
    """A session id from an id or a unique prefix of one (``sess_`` optional)."""
    try:
        return store.get_session(text).id
    except SessionNotFound:
        pass
    prefix = text if text.startswith("sess_") else "sess_" + text
    rec = store.recorder
    with rec.read() as cur:
        cur.execute(
            rec.sql("SELECT id FROM sessions WHERE substr(id, 1, ?) = ? ORDER BY id LIMIT 6"),
            (len(prefix), prefix),
        )
        found = [row[0] for row in cur.fetchall()]
    if not found:
        raise SessionNotFound(text)
    if len(found) > 1:
        shown = ", ".join(found[:5]) + (" …" if len(found) > 5 else "")
        raise AmbiguousSession(f"{text!r} is the start of several sessions: {shown}")
    return str(found[0])


def workspace_arg(text: str) -> str:
    """A workspace given on the command line: an id, or a path (``.`` and
    relative paths mean the folder they name, as a session's working directory)."""
    if text.startswith("ws_") or Path(text).is_absolute():
        return text
    return str(Path(text).expanduser().resolve())


def _workspace_id(store: EventStore, text: str) -> str:
    text = workspace_arg(text)
    found = store.find_workspace(text)
    if found is not None:
        return found.id
    rec = store.recorder
    with rec.read() as cur:
        cur.execute(rec.sql("SELECT id FROM workspaces WHERE id = ?"), (text,))
        row = cur.fetchone()
    if row is None:
        raise TronEventsError(f"no workspace {text!r} in this database")
    return str(row[0])


def _short_time(ts: str) -> str:
    return ts[:16].replace("T", " ")


def _sessions(store: EventStore, args: argparse.Namespace) -> int:
    if args.limit < 1:
        raise TronEventsError("--limit must be at least 1")
    ws = _workspace_id(store, args.workspace) if args.workspace else None
    sessions = store.list_sessions(workspace_id=ws, status=args.status, limit=args.limit)
    # Untitled sessions are titled from their first prompt, as the server's session.list.
    titles = session_titles(store, sessions)
    if args.json:
        for s, title in zip(sessions, titles, strict=True):
            sys.stdout.write(orjson.dumps(_session_dict(s, title)).decode() + "\n")
        return OK
    if not sessions:
        print("no sessions" + (" match" if ws or args.status else ""))
        return OK
    rows = [
        (
            s.id,
            _short_time(s.last_activity_at),
            s.status,
            str(s.event_count),
            str(s.turn_count),
            s.model,
            (title or "") + (" (fork)" if s.parent_session_id else ""),
            s.working_directory,
        )
        for s, title in zip(sessions, titles, strict=True)
    ]
    head = ("ID", "LAST ACTIVE", "STATUS", "EVENTS", "TURNS", "MODEL", "TITLE", "FOLDER")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    right = {3, 4}
    for row in [head, *rows]:
        cells = [
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ]
        print("  ".join(cells).rstrip())
    return OK


def _session_dict(s: Session, title: str | None) -> dict[str, Any]:
    return {
        "id": s.id,
        "workspaceId": s.workspace_id,
        "status": s.status,
        "model": s.model,
        "provider": s.provider,
        "workingDirectory": s.working_directory,
        "title": title,
        "parentSessionId": s.parent_session_id,
        "createdAt": s.created_at,
        "lastActivityAt": s.last_activity_at,
        "eventCount": s.event_count,
        "turnCount": s.turn_count,
        "inputTokens": s.input_tokens,
        "outputTokens": s.output_tokens,
        "cost": s.cost,
    }


# -- show ---------------------------------------------------------------------


def _show(store: EventStore, args: argparse.Namespace) -> int:
    session = store.get_session(resolve_session(store, args.session))
    path = store.get_ancestors(session.head_event_id)
    if args.json:
        for e in path:
            sys.stdout.buffer.write(orjson.dumps(e.to_wire()) + b"\n")
        return OK
    width = args.width or min(shutil.get_terminal_size((100, 24)).columns, 120)
    out = _Transcript(width, every_event=args.all_events)
    [title] = session_titles(store, [session])
    title = f" · {title}" if title else ""
    out.line(
        f"session {session.id}{title}\n{session.model} ({session.provider}) · "
        f"{session.working_directory} · {session.status} · {session.event_count} event(s), "
        f"{session.turn_count} turn(s), {session.input_tokens:,} in / "
        f"{session.output_tokens:,} out tokens"
    )
    for event in path:
        out.event(event)
    sys.stdout.write("\n".join(out.lines) + "\n")
    return OK


class _Transcript:
    def __init__(self, width: int, *, every_event: bool) -> None:
        self.width = max(width, 40)
        self.every_event = every_event
        self.lines: list[str] = []

    def line(self, text: str) -> None:
        self.lines.append(text)

    def heading(self, e: Event, label: str) -> None:
        self.lines.append("")
        self.lines.append(f"[{_short_time(e.timestamp)}] {label}")

    def body(self, text: str, prefix: str = "  ", limit: int | None = None) -> None:
        paragraphs = text.strip("\n").split("\n")
        if limit is not None and len(paragraphs) > limit:
            hidden = len(paragraphs) - limit
            paragraphs = [*paragraphs[:limit], f"… ({hidden} more line(s))"]
        for para in paragraphs:
            wrapped = textwrap.wrap(
                para, self.width - len(prefix), break_long_words=True, replace_whitespace=False
            )
            for piece in wrapped or [""]:
                self.lines.append(prefix + piece)

    def event(self, e: Event) -> None:
        p = e.payload
        t = e.type
        if t == "session.start":
            return
        if t == "session.fork":
            self.note(e, f"forked from {p.get('sourceSessionId')} at {p.get('sourceEventId')}")
        elif t == "message.user":
            self.heading(e, f"user (turn {p.get('turn', '?')})")
            self.content(p.get("content"))
        elif t == "message.assistant":
            model = f", {p['model']}" if p.get("model") else ""
            self.heading(e, f"assistant{model}")
            self.content(p.get("content"))
        elif t == "message.system":
            self.heading(e, "system")
            self.content(p.get("content"))
        elif t == "tool.result":
            error = " (error)" if p.get("isError") else ""
            self.heading(e, f"tool result {p.get('toolCallId', '')}{error}")
            self.content(p.get("content"), limit=SHOWN_LINES)
        elif t == "compact.summary":
            self.note(e, "compacted; summary:")
            self.body(str(p.get("summary", "")), limit=SHOWN_LINES)
        elif t == "context.cleared":
            self.note(e, "context cleared")
        elif t == "message.deleted":
            self.note(e, f"deleted {p.get('targetType') or 'message'} {p.get('targetEventId')}")
        elif t == "config.model_switch":
            self.note(e, f"model: {p.get('previousModel')} → {p.get('newModel')}")
        elif t == "session.end":
            self.note(e, f"session ended ({p.get('reason', 'completed')})")
        elif self.every_event:
            self.note(e, f"{t} {_short_json(p, self.width - 30)}")

    def note(self, e: Event, text: str) -> None:
        self.lines.append("")
        self.lines.append(f"[{_short_time(e.timestamp)}] — {text}")

    def content(self, content: Any, limit: int | None = None) -> None:
        if isinstance(content, str):
            self.body(content, limit=limit)
            return
        if not isinstance(content, list):
            return
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                self.body(str(block.get("text", "")), limit=limit)
            elif kind == "thinking":
                thinking = str(block.get("thinking", ""))
                self.body(f"(thinking, {len(thinking):,} characters)")
            elif kind == "redacted_thinking":
                self.body("(thinking, redacted)")
            elif kind == "tool_use":
                args = _short_json(block.get("input", {}), self.width - 10)
                self.body(f"→ {block.get('name')} {args}", prefix="  ")
            elif kind == "tool_result":
                self.body(f"← result for {block.get('tool_use_id')}")
                self.content(block.get("content"), limit=SHOWN_LINES)
            elif kind == "image":
                self.body("(image)")
            else:
                self.body(f"({kind} block)")


def _short_json(value: Any, width: int) -> str:
    if isinstance(value, dict) and value.get("_truncated"):
        return f"(input of {value.get('_originalSize', '?')} characters)"
    text = orjson.dumps(value).decode()
    width = max(width, 20)
    return text if len(text) <= width else text[: width - 1] + "…"
