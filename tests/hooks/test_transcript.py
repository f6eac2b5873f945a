"""The transcripts hooks read (``transcript_path``) and ``hook.context`` in the history.

The real store on both backends. The transcript must read like Claude Code's (``type``, ``message``,
``uuid``/``parentUuid`` chained), follow the session's path (appending what is new,
rewritten after a rewind, a fork's starting in its source), and stay private. A
``hook.context`` must become user text where it stands, in a history every provider takes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tron_events import AsyncEventStore, Session
from tron_events.validate import validate_history
from tron_server.hooks.transcript import Transcripts

pytestmark = pytest.mark.anyio


def read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def texts(records: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(type, text) of each record: the string content, or its first text/result block."""
    out = []
    for r in records:
        content = r["message"]["content"]
        if isinstance(content, list):
            first = content[0]
            content = first.get("text") or first.get("content") or first.get("name")
        out.append((r["type"], content))
    return out


async def add(store: AsyncEventStore, sid: str, kind: str, **payload: Any) -> str:
    return (await store.append(sid, kind, payload)).id


async def converse(store: AsyncEventStore, session: Session) -> dict[str, str]:
    sid = session.id
    ids = {"prompt": await add(store, sid, "message.user", content="read a.txt", turn=1)}
    await add(store, sid, "stream.turn_start", turn=1)
    use = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a.txt"}}
    ids["call"] = await add(
        store, sid, "message.assistant", content=[{"type": "text", "text": "Let me look."}, use],
        turn=1, stopReason="tool_use", model="m", tokenUsage={"inputTokens": 3, "outputTokens": 2},
    )  # fmt: skip
    await add(store, sid, "tool.call", toolCallId="toolu_1", name="Read", arguments=use["input"])
    await add(store, sid, "tool.result", toolCallId="toolu_1", content="alpha", isError=False)
    await add(store, sid, "hook.context", hookEvent="PostToolUse", content="a.txt is generated",
              toolCallId="toolu_1")  # fmt: skip
    await add(store, sid, "stream.turn_end", turn=1, stopReason="tool_use")
    ids["reply"] = await add(
        store, sid, "message.assistant", content=[{"type": "text", "text": "It says alpha."}],
        turn=2, stopReason="end_turn", model="m",
    )  # fmt: skip
    return ids


async def test_a_transcript_reads_like_claude_codes_and_follows_the_session(
    astore: AsyncEventStore, session: Session, home: Path
) -> None:
    transcripts = Transcripts(astore, home / "transcripts")
    ids = await converse(astore, session)
    path = await transcripts.update(session.id)
    assert path == home / "transcripts" / f"{session.id}.jsonl"
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700
    records = read(path)
    assert texts(records) == [
        ("user", "read a.txt"), ("assistant", "Let me look."), ("user", "alpha"),
        ("user", "a.txt is generated"), ("assistant", "It says alpha."),
    ]  # fmt: skip
    assert [r["parentUuid"] for r in records] == [None] + [r["uuid"] for r in records[:-1]]
    assert records[0]["uuid"] == ids["prompt"] and records[-1]["uuid"] == ids["reply"]
    assert all(r["sessionId"] == session.id and r["cwd"] == session.working_directory
               and r["isSidechain"] is False for r in records)  # fmt: skip
    tool_use = records[1]["message"]["content"][1]
    assert tool_use == {"type": "tool_use", "id": "toolu_1", "name": "Read",
                        "input": {"file_path": "a.txt"}}  # fmt: skip
    assert records[1]["message"]["usage"]["input_tokens"] == 3
    result = records[2]["message"]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_1"
    assert records[3]["isMeta"] is True

    # New events are appended to what is there (the bytes before stay as they were).
    before = path.read_bytes()
    await add(astore, session.id, "message.user", content="and b.txt?", turn=3)
    assert (await transcripts.update(session.id)) == path
    assert path.read_bytes().startswith(before)
    assert texts(read(path))[-1] == ("user", "and b.txt?")
    assert read(path)[-1]["parentUuid"] == ids["reply"]

    # A rewind: the file is the new path, written again.
    await astore.rewind(session.id, ids["call"])
    await add(astore, session.id, "message.user", content="never mind", turn=2)
    assert texts(read(await transcripts.update(session.id))) == [
        ("user", "read a.txt"), ("assistant", "Let me look."), ("user", "never mind"),
    ]  # fmt: skip

    # A file removed meanwhile is written again; a fork's starts in its source session.
    path.unlink()
    assert len(read(await transcripts.update(session.id))) == 3
    fork = (await astore.fork(ids["prompt"])).session
    await add(astore, fork.id, "message.assistant", content=[{"type": "text", "text": "Forked."}],
              turn=1)  # fmt: skip
    forked = read(await transcripts.update(fork.id))
    assert texts(forked) == [("user", "read a.txt"), ("assistant", "Forked.")]
    assert forked[0]["uuid"] == ids["prompt"] and forked[1]["sessionId"] == fork.id


async def test_hook_context_is_user_text_where_it_stands_in_a_valid_history(
    astore: AsyncEventStore, session: Session
) -> None:
    sid = session.id
    await add(astore, sid, "hook.context", hookEvent="SessionStart", content="uses uv",
              source="startup")  # fmt: skip
    await converse(astore, session)
    await add(astore, sid, "hook.context", hookEvent="Stop", content="Stop hook feedback:\ntests?")
    messages = (await astore.get_state_at_head(sid)).messages
    assert validate_history(messages) == []
    shape = [
        (m.role, [getattr(b, "text", None) or getattr(b, "tool_use_id", None) for b in m.content])
        for m in messages
    ]
    assert shape == [
        ("user", ["uses uv", "read a.txt"]),
        ("assistant", ["Let me look.", None]),
        ("user", ["toolu_1", "a.txt is generated"]),  # after the call's result
        ("assistant", ["It says alpha."]),
        ("user", ["Stop hook feedback:\ntests?"]),
    ]


async def test_memory_put_before_the_model_is_a_meta_user_record(
    astore: AsyncEventStore, session: Session, home: Path
) -> None:
    await add(astore, session.id, "memory.loaded", content="<memory>the ledger</memory>")
    await add(astore, session.id, "message.user", content="go on", turn=1)
    records = read(await Transcripts(astore, home / "transcripts").update(session.id))
    assert texts(records) == [("user", "<memory>the ledger</memory>"), ("user", "go on")]
    assert records[0]["isMeta"] is True and "isMeta" not in records[1]
