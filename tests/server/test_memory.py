"""Memory across sessions through a real tron-server, the scripted model and both
backends: a session that ends leaves a handoff (every field, searchable) and a ledger
recorded as a file change; the next session in the folder starts with both in its first
request, within the budget, never with another workspace's; ``memory.loaded`` replays the
request exactly through ``session.getState``, after a restart too; switching memory off
takes all of it out of the requests."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.scripted_llm import Response, ScriptedLLM, Text, ToolUse
from tests.support.server import RunningServer, ServerFactory
from tron_server.client import RpcCallError, TronClient
from tron_server.memory.loader import CHARS_PER_TOKEN, MEMORY_BUDGET_TOKENS

pytestmark = pytest.mark.anyio

LEDGER = (
    "# Ledger\n\n## Goal\nPort the quokka parser to Rust.\n\n## Current state\n"
    "Lexer done.\n\n## Decisions\nKeep the wombat grammar.\n\n## Next steps\n"
    "Write the numbat tests.\n"
)


def memory_reply(summary: str, *, ledger: str | None = LEDGER, **fields: Any) -> Response:
    """The model's answer to a memory side call: one record_memory call."""
    data: dict[str, Any] = {
        "summary": summary,
        "codeChanges": [{"path": "src/lexer.rs", "description": "new lexer"}],
        "currentState": "lexer passes its tests",
        "nextSteps": ["write the numbat tests"],
        "blockers": ["the echidna spec is missing"],
        "patterns": ["run cargo test before each commit"],
        **fields,
    }
    if ledger is not None:
        data["ledger"] = ledger
    return Response([ToolUse("record_memory", data)])


@pytest.fixture
def mserver(
    server_factory: ServerFactory,
    llm: ScriptedLLM,
    store_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[RunningServer]:
    """A server on each backend whose Anthropic provider is the scripted model."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    for var in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    yield server_factory(anthropic_base_url=llm.base_url, database_url=store_url)


async def new_session(client: TronClient, folder: Path) -> str:
    session = await client.call("session.create", {"workingDirectory": str(folder)})
    session_id: str = session["id"]
    return session_id


async def events_of(client: TronClient, session_id: str, kind: str) -> list[dict[str, Any]]:
    return [e for e in await client.sync(session_id) if e["type"] == kind]


def first_user_text(llm: ScriptedLLM, index: int) -> str:
    first = llm.requests[index]["messages"][0]
    assert first["role"] == "user"
    return "\n".join(b.get("text", "") for b in first["content"] if b.get("type") == "text")


def tool_names(llm: ScriptedLLM, index: int) -> list[str]:
    return [t["name"] for t in llm.requests[index].get("tools", [])]


async def work_and_end(
    client: TronClient, llm: ScriptedLLM, folder: Path, prompt: str, reply: Response
) -> str:
    session_id = await new_session(client, folder)
    llm.add(Response([Text("Done: " + prompt)]))
    await client.send_message_and_wait(session_id, prompt)
    llm.add(reply)
    await client.call("session.end", {"sessionId": session_id})
    return session_id


async def test_a_handoff_and_the_ledger_reach_the_next_session(
    mserver: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    project, other = tmp_path / "project", tmp_path / "other"
    project.mkdir()
    other.mkdir()
    async with mserver.connect() as client:
        a = await work_and_end(
            client, llm, project, "port the quokka parser",
            memory_reply("Ported the quokka lexer to Rust"),
        )  # fmt: skip
        side_call = llm.requests[-1]
        assert side_call["tool_choice"] == {"type": "tool", "name": "record_memory"}
        assert "port the quokka parser" in json.dumps(side_call["messages"])

        # Session A: a handoff with every field, and the ledger written as a file change.
        [handoff] = await events_of(client, a, "memory.handoff")
        payload = handoff["payload"]
        assert payload["summary"] == "Ported the quokka lexer to Rust"
        assert payload["codeChanges"] == [{"path": "src/lexer.rs", "description": "new lexer"}]
        assert payload["currentState"] == "lexer passes its tests"
        assert payload["nextSteps"] == ["write the numbat tests"]
        assert payload["blockers"] == ["the echidna spec is missing"]
        assert payload["patterns"] == ["run cargo test before each commit"]
        assert payload["trigger"] == "session_end" and payload["complete"] is True
        [write] = await events_of(client, a, "file.write")
        ledger_path = project / ".tron" / "ledger.md"
        assert write["payload"]["source"] == "memory"
        assert write["payload"]["path"] == str(ledger_path.resolve())
        assert write["payload"]["before"] is None and write["payload"]["after"]["size"] > 0
        assert ledger_path.read_text() == LEDGER
        hits = await client.call(
            "memory.search", {"query": "echidna", "workingDirectory": str(project)}
        )
        assert [h["eventId"] for h in hits["hits"]] == [handoff["id"]]

        # Another workspace's handoff, which mentions the same words.
        await work_and_end(
            client, llm, other, "quokka elsewhere",
            memory_reply("Unrelated quokka cassowary work", ledger=None),
        )  # fmt: skip

        # Session B in the project: the first request carries the ledger and A's handoff.
        b = await new_session(client, project)
        llm.add(Response([Text("Carrying on.")]))
        await client.send_message_and_wait(b, "continue the quokka port")
        text = first_user_text(llm, -1)
        assert text.startswith("<memory>") and "</memory>" in text
        assert "Port the quokka parser to Rust." in text  # the ledger
        assert "Ported the quokka lexer to Rust" in text and handoff["id"] in text
        assert "run cargo test before each commit" in text  # the lesson
        assert "cassowary" not in text  # never another workspace's
        assert text.endswith("continue the quokka port")
        assert len(text) // CHARS_PER_TOKEN <= MEMORY_BUDGET_TOKENS
        [loaded] = await events_of(client, b, "memory.loaded")
        assert loaded["payload"]["handoffIds"] == [handoff["id"]]
        [ref] = loaded["payload"]["ledger"]
        assert ref["scope"] == "project"
        assert ref["revision"] == hashlib.sha256(LEDGER.encode()).hexdigest()
        assert "Recall" in tool_names(llm, -1)
        sent = llm.requests[-1]["messages"]
        [user] = await events_of(client, b, "message.user")
        replayed = await client.call("session.getState", {"sessionId": b, "eventId": user["id"]})

    def texts(messages: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
        return [
            (m["role"], [c["text"] for c in m["content"] if c.get("type") == "text"])
            for m in messages
        ]

    assert texts(replayed["messages"]) == texts(sent)
    # Reconstruction reads what was recorded, not the files: a changed ledger and a
    # restart do not change what that request was.
    ledger_path.write_text("# Ledger\n\n## Goal\nsomething else entirely\n")
    mserver.restart()
    async with mserver.connect() as client:
        again = await client.call("session.getState", {"sessionId": b, "eventId": user["id"]})
        assert texts(again["messages"]) == texts(sent)


async def test_memory_off_removes_it_from_the_requests(
    mserver: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    async with mserver.connect() as client:
        await work_and_end(client, llm, project, "first job", memory_reply("First job done"))
        assert (project / ".tron" / "ledger.md").exists()
        (project / ".tron" / "settings.json").write_text('{"memory": false}')

        b = await new_session(client, project)
        llm.add(Response([Text("Working.")]))
        await client.send_message_and_wait(b, "second job")
        assert first_user_text(llm, -1) == "second job"
        assert "Recall" not in tool_names(llm, -1)
        assert await events_of(client, b, "memory.loaded") == []
        requests = len(llm.requests)
        await client.call("session.end", {"sessionId": b})
        assert len(llm.requests) == requests  # no side call at the end
        assert await events_of(client, b, "memory.handoff") == []
        listed = await client.call("memory.get", {"workingDirectory": str(project)})
        assert listed["settings"] == {
            "ledger": False, "handoffs": False, "lessons": False, "recall": False,
        }  # fmt: skip
        with pytest.raises(RpcCallError) as info:
            await client.call("memory.handoff", {"sessionId": await new_session(client, project)})
        assert info.value.code == -32004
