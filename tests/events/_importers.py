"""Checks shared by the importer tests: a record stream obeys docs/export-format.md,
and every session in it reconstructs to a history the providers accept.

Independent of the store: the tree is rebuilt from the records alone, and
reconstruction runs on ``Event`` objects made from them (the end-to-end tests do
the same through ``import_records`` and a real database).
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from tron_events.messages import Message
from tron_events.models import Event
from tron_events.payloads import validate_payload
from tron_events.reconstruct import build_messages
from tron_events.validate import validate_history

ID = {
    "event": re.compile(r"evt_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"),
    "session": re.compile(
        r"sess_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
    ),
    "workspace": re.compile(
        r"ws_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
    ),
}
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
EVENT_KEYS = {
    "kind", "id", "parentId", "sessionId", "workspaceId", "sequence", "depth", "type",
    "timestamp", "payload",
}  # fmt: skip


def shared_transcripts() -> Path | None:
    """``<repo>/../shared/transcripts`` or ``$TRON_SHARED_DIR/transcripts``, if present."""
    env = os.environ.get("TRON_SHARED_DIR")
    candidates = [Path(env) / "transcripts"] if env else []
    candidates.append(Path(__file__).resolve().parents[2].parent / "shared" / "transcripts")
    return next((c for c in candidates if c.is_dir()), None)


class Stream:
    """A checked record stream: sessions, their events, notices."""

    def __init__(self, records: Iterable[dict[str, Any]]) -> None:
        self.records = list(records)
        self.header = self.records[0]
        self.workspaces: dict[str, dict[str, Any]] = {}
        self.sessions: dict[str, dict[str, Any]] = {}
        self.events: dict[str, dict[str, Any]] = {}
        self.by_session: dict[str, list[dict[str, Any]]] = {}
        self.notices: list[dict[str, Any]] = []
        check_stream(self)

    def session_events(self, session_id: str) -> list[dict[str, Any]]:
        return self.by_session[session_id]

    def path_to(self, event_id: str) -> list[Event]:
        """The ancestors of ``event_id`` (root first), across forks."""
        path: list[Event] = []
        current: str | None = event_id
        while current is not None:
            record = self.events[current]
            path.append(to_event(record))
            current = record["parentId"]
        path.reverse()
        return path

    def messages_at_head(self, session_id: str) -> list[Message]:
        return build_messages(self.path_to(self.sessions[session_id]["headEventId"]))

    def of_type(self, type: str, session_id: str | None = None) -> list[dict[str, Any]]:
        pool = self.by_session[session_id] if session_id else list(self.events.values())
        return [e for e in pool if e["type"] == type]

    def notice_text(self) -> str:
        return "\n".join(n["message"] for n in self.notices)


def to_event(record: dict[str, Any]) -> Event:
    return Event(
        id=record["id"],
        parent_id=record["parentId"],
        session_id=record["sessionId"],
        workspace_id=record["workspaceId"],
        sequence=record["sequence"],
        depth=record["depth"],
        type=record["type"],
        timestamp=record["timestamp"],
        payload=record["payload"],
    )


def check_stream(stream: Stream) -> None:
    """The contract of docs/export-format.md, record by record."""
    header = stream.header
    assert header["format"] == "tron-events-export" and header["version"] == 1, header
    assert header["source"]["kind"] in ("claude-code", "codex", "pi"), header
    assert "kind" not in header
    current: str | None = None
    for record in stream.records[1:]:
        kind = record["kind"]
        if kind == "workspace":
            assert ID["workspace"].fullmatch(record["id"]), record
            assert record["path"] not in {w["path"] for w in stream.workspaces.values()}
            stream.workspaces[record["id"]] = record
        elif kind == "session":
            assert ID["session"].fullmatch(record["id"]), record
            assert record["id"] not in stream.sessions, f"session {record['id']} twice"
            assert record["workspaceId"] in stream.workspaces, "workspace before its sessions"
            assert record["status"] in ("active", "ended")
            for name in ("createdAt", "lastActivityAt"):
                assert TIMESTAMP.fullmatch(record[name]), record
            if record["parentSessionId"] is not None:
                assert record["parentSessionId"] in stream.sessions, "parent session first"
            stream.sessions[record["id"]] = record
            stream.by_session[record["id"]] = []
            current = record["id"]
        elif kind == "event":
            assert set(record) == EVENT_KEYS, record.keys()
            assert record["sessionId"] == current, "a session's events follow its record"
            assert ID["event"].fullmatch(record["id"]), record["id"]
            assert record["id"] not in stream.events, f"event id {record['id']} twice"
            assert TIMESTAMP.fullmatch(record["timestamp"]), record["timestamp"]
            session = stream.sessions[current]
            events = stream.by_session[current]
            assert record["sequence"] == len(events), "sequence in order from 0"
            assert record["workspaceId"] == session["workspaceId"]
            parent = record["parentId"]
            if record["sequence"] == 0:
                assert record["id"] == session["rootEventId"]
                if record["type"] == "session.fork":
                    assert parent == session["forkFromEventId"] and parent in stream.events
                    assert record["payload"]["sourceEventId"] == parent
                    source = stream.events[parent]["sessionId"]
                    assert record["payload"]["sourceSessionId"] == source
                    assert session["parentSessionId"] == source
                else:
                    assert record["type"] == "session.start" and parent is None
                    assert record["depth"] == 0
            else:
                # In this importer's streams every event follows one of its session's.
                assert parent in {e["id"] for e in events[-1:]} or any(
                    e["id"] == parent for e in events
                ), f"parent {parent} of {record['id']} is not an earlier event of its session"
            if parent is not None:
                assert record["depth"] == stream.events[parent]["depth"] + 1
            # Payloads are what the store would store (validation and normalization
            # are idempotent on them).
            assert validate_payload(record["type"], record["payload"]) == record["payload"]
            json.dumps(record)  # JSON-ready
            stream.events[record["id"]] = record
            events.append(record)
        elif kind == "notice":
            assert isinstance(record["message"], str) and record["message"]
            if "sessionId" in record:
                assert record["sessionId"] in stream.sessions
            stream.notices.append(record)
        else:
            raise AssertionError(f"unexpected record kind {kind!r}")
    for session_id, session in stream.sessions.items():
        events = stream.by_session[session_id]
        assert events, f"session {session_id} has no events"
        assert session["headEventId"] in {e["id"] for e in events}


# --- provider request types ---------------------------------------------------------------

_ADAPTERS: dict[str, TypeAdapter[Any]] = {}


def _materialize(value: Any) -> Any:
    """The validated value with every lazy ``Iterable`` field iterated (pydantic
    validates the items of a TypedDict's ``Iterable`` only then)."""
    if isinstance(value, dict):
        return {k: _materialize(v) for k, v in value.items()}
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, Iterable):
        return [_materialize(v) for v in value]
    return value


def check_history(messages: list[Message], *, model: str = "claude-sonnet-4-5") -> None:
    """Valid for ``validate_history``, and the request bodies tron_llm builds from it
    valid for each provider SDK's request type: Anthropic Messages, OpenAI Responses
    and Chat Completions, Gemini ``Content`` (as tests/llm/*_sdk.py check them)."""
    assert validate_history(messages) == [], validate_history(messages)[:5]
    if not messages:
        return
    from anthropic.types.message_create_params import MessageCreateParamsStreaming
    from google.genai import types as gemini_types
    from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
    from openai.types.responses.response_create_params import ResponseCreateParamsStreaming

    from tron_llm import LLMRequest
    from tron_llm.anthropic import build_body as anthropic_body
    from tron_llm.gemini import build_body as gemini_body
    from tron_llm.openai_chat import OpenAIChatProvider
    from tron_llm.openai_responses import OpenAIResponsesProvider

    if not _ADAPTERS:
        _ADAPTERS["anthropic"] = TypeAdapter(MessageCreateParamsStreaming)
        _ADAPTERS["responses"] = TypeAdapter(ResponseCreateParamsStreaming)
        _ADAPTERS["chat"] = TypeAdapter(CompletionCreateParamsStreaming)
    body = anthropic_body(LLMRequest(model=model, messages=messages))
    _materialize(_ADAPTERS["anthropic"].validate_python(body))
    roles = [m["role"] for m in body["messages"]]
    assert all(a != b for a, b in itertools.pairwise(roles)), roles
    responses = OpenAIResponsesProvider(api_key="k").build_body(
        LLMRequest(model="gpt-5", messages=messages)
    )
    _materialize(_ADAPTERS["responses"].validate_python(responses))
    chat = OpenAIChatProvider(api_key="k").build_body(LLMRequest(model="gpt-4o", messages=messages))
    _materialize(_ADAPTERS["chat"].validate_python(chat))
    gemini = gemini_body(LLMRequest(model="gemini-2.5-flash", messages=messages))
    for content in gemini["contents"]:
        assert gemini_types.Content.model_validate_json(json.dumps(content)).parts
