"""When memory is made and what it does, through a real tron-server and the scripted model
on both backends: a compaction records the handoff of the compacted part and the ledger,
then puts the ledger before the fresh history; a reply that does not fit the handoff's
schema still leaves a summary-only handoff; the ledger rewinds with the files; lessons
count across sessions; a ledger that leads outside the folder is neither read nor
written; ``/ledger`` and ``/handoff``; each part can be switched off on its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.server.test_memory import (
    LEDGER,
    events_of,
    first_user_text,
    memory_reply,
    mserver,
    new_session,
    work_and_end,
)
from tests.support.scripted_llm import Response, ScriptedLLM, Text, ToolUse
from tests.support.server import RunningServer
from tron_server.client import RpcCallError, TronClient

__all__ = ["mserver"]

pytestmark = pytest.mark.anyio


async def command(client: TronClient, session_id: str, text: str) -> dict[str, Any]:
    result: dict[str, Any] = await client.call(
        "agent.message", {"sessionId": session_id, "content": text}
    )
    assert result["builtin"] is True
    return result


async def test_compaction_records_a_handoff_and_puts_the_ledger_back(
    mserver: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    async with mserver.connect() as client:
        sid = await new_session(client, tmp_path)
        llm.add(Response([Text("Looked at the kestrel module.")]))
        await client.send_message_and_wait(sid, "study the kestrel module")
        head = (await client.call("session.get", {"sessionId": sid}))["headEventId"]
        llm.add(Response([Text("We studied kestrel.")]), memory_reply("Studied kestrel"))
        await command(client, sid, "/compact")
        types = [e["type"] for e in await client.sync(sid)]
        at = types.index("compact.summary")
        assert types[at + 1 :] == ["file.write", "memory.handoff", "memory.loaded"]
        [handoff] = await events_of(client, sid, "memory.handoff")
        assert handoff["payload"]["trigger"] == "compaction"
        assert handoff["payload"]["throughEventId"] == head
        side_call = llm.requests[-1]
        assert "study the kestrel module" in json.dumps(side_call["messages"])
        [loaded] = await events_of(client, sid, "memory.loaded")
        assert loaded["payload"]["source"] == "compact"
        assert loaded["payload"]["handoffIds"] == []  # the ledger and lessons only

        llm.add(Response([Text("Next.")]))
        await client.send_message_and_wait(sid, "what now?")
        assert llm.violations(-1) == []
        messages = llm.requests[-1]["messages"]
        assert "We studied kestrel." in json.dumps(messages[0])
        last = json.dumps(messages[-1])
        assert "Port the quokka parser to Rust." in last and "what now?" in last


async def test_a_reply_that_does_not_fit_still_leaves_a_handoff(
    mserver: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    async with mserver.connect() as client:
        sid = await new_session(client, tmp_path)
        with pytest.raises(RpcCallError) as info:
            await client.call("memory.handoff", {"sessionId": sid})
        assert info.value.code == -32004  # nothing to remember yet
        llm.add(Response([Text("Renamed the heron table.")]))
        await client.send_message_and_wait(sid, "rename the heron table")
        # Prose instead of the tool call: its text is the summary.
        llm.add(Response([Text("The session renamed the heron table to egret.")]))
        made = await command(client, sid, "/handoff")
        assert made["handoff"]["summary"] == "The session renamed the heron table to egret."
        assert made["handoff"]["complete"] is False
        assert "record_memory" in made["handoff"]["fallbackReason"]
        assert "summary only" in made["output"]
        # The tool called with fields of the wrong shape: the summary is kept.
        wrong = {"summary": "Heron renamed", "codeChanges": 7, "nextSteps": {"a": 1}}
        llm.add(Response([ToolUse("record_memory", wrong)]))
        made = await client.call("memory.handoff", {"sessionId": sid})
        assert made["handoff"]["summary"] == "Heron renamed"
        assert made["handoff"]["complete"] is False
        # A complete one: /handoff asks for the handoff only (no ledger in the schema).
        llm.add(memory_reply("Heron renamed to egret", ledger=None))
        made = await command(client, sid, "/handoff")
        assert made["handoff"]["complete"] is True and made["handoff"]["trigger"] == "manual"
        schema = llm.requests[-1]["tools"][0]["input_schema"]
        assert "ledger" not in schema["properties"] and "summary" in schema["properties"]
        stored = await events_of(client, sid, "memory.handoff")
        assert [e["payload"]["complete"] for e in stored] == [False, False, True]
        await client.call("session.end", {"sessionId": sid})
        assert len(await events_of(client, sid, "memory.handoff")) == 3  # nothing new to say
        with pytest.raises(RpcCallError) as info:
            await client.call("memory.handoff", {"sessionId": sid})
        assert info.value.code == -32001  # ended: takes no events


async def test_the_ledger_rewinds_with_the_files_and_shows_with_slash_ledger(
    mserver: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    ledger = tmp_path / ".tron" / "ledger.md"
    async with mserver.connect() as client:
        sid = await new_session(client, tmp_path)
        shown = await command(client, sid, "/ledger")
        assert "No ledger yet" in shown["output"] and shown["ledger"]["exists"] is False
        llm.add(Response([Text("First part done.")]))
        await client.send_message_and_wait(sid, "do the first part")
        before_compaction = (await client.call("session.get", {"sessionId": sid}))["headEventId"]
        llm.add(Response([Text("Summary one.")]), memory_reply("Part one"))
        await command(client, sid, "/compact")
        assert ledger.read_text() == LEDGER
        shown = await command(client, sid, "/ledger")
        assert "Port the quokka parser to Rust." in shown["output"]
        assert shown["ledger"]["path"] == str(ledger.resolve())
        # Rewinding with files to before the compaction takes the ledger away again.
        await client.call(
            "session.rewind",
            {"sessionId": sid, "eventId": before_compaction, "restoreFiles": True},
        )
        assert not ledger.exists()


async def test_lessons_count_across_sessions(
    mserver: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    lesson = "run cargo test before each commit"
    async with mserver.connect() as client:
        ids = []
        for n in (1, 2):
            sid = await work_and_end(
                client, llm, tmp_path, f"job {n}",
                memory_reply(f"Job {n}", ledger=None, patterns=[lesson, f"only in job {n}"]),
            )  # fmt: skip
            [handoff] = await events_of(client, sid, "memory.handoff")
            ids.append(handoff["id"])
        got = await client.call("memory.get", {"workingDirectory": str(tmp_path)})
        assert got["patterns"][0] == {"text": lesson, "count": 2, "handoffIds": ids[::-1]}
        assert {p["text"] for p in got["patterns"][1:]} == {"only in job 1", "only in job 2"}
        assert [h["eventId"] for h in got["handoffs"]] == ids[::-1]
        assert got["ledger"]["exists"] is False  # no ledger was asked to be written
        sid = await new_session(client, tmp_path)
        llm.add(Response([Text("ok")]))
        await client.send_message_and_wait(sid, "job 3")
        assert f"- {lesson} (2 sessions)" in first_user_text(llm, -1)


async def test_a_ledger_leading_outside_the_folder_is_neither_read_nor_written(
    mserver: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside.md"
    (project / ".tron").mkdir(parents=True)
    outside.write_text("## Goal\nexfiltrate me\n")
    (project / ".tron" / "ledger.md").symlink_to(outside)
    async with mserver.connect() as client:
        sid = await new_session(client, project)
        llm.add(Response([Text("Hello.")]))
        await client.send_message_and_wait(sid, "hello")
        assert first_user_text(llm, -1) == "hello"
        llm.add(memory_reply("Said hello"))
        await client.call("session.end", {"sessionId": sid})
        assert outside.read_text() == "## Goal\nexfiltrate me\n"
        assert await events_of(client, sid, "file.write") == []
        assert len(await events_of(client, sid, "memory.handoff")) == 1


async def test_each_part_switches_off_on_its_own(
    mserver: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    (tmp_path / ".tron").mkdir()
    (tmp_path / ".tron" / "settings.json").write_text(
        '{"memory": {"handoffs": false, "recall": false}}'
    )
    async with mserver.connect() as client:
        sid = await work_and_end(client, llm, tmp_path, "a job", memory_reply("ignored"))
        schema = llm.requests[-1]["tools"][0]["input_schema"]
        assert list(schema["properties"]) == ["ledger"]  # the ledger only
        assert await events_of(client, sid, "memory.handoff") == []
        assert (tmp_path / ".tron" / "ledger.md").read_text() == LEDGER
        got = await client.call("memory.get", {"workingDirectory": str(tmp_path)})
        assert got["settings"] == {"ledger": True, "handoffs": False, "lessons": True,
                                   "recall": False}  # fmt: skip
        # A wrong shape switches everything off and says why.
        (tmp_path / ".tron" / "settings.json").write_text('{"memory": {"ledgr": false}}')
        got = await client.call("memory.get", {"workingDirectory": str(tmp_path)})
        assert got["settings"]["ledger"] is False and "ledgr" in got["settings"]["error"]


async def test_slash_end_makes_the_handoff_and_ends_the_session(
    mserver: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    """``/end`` is how a user ends a session on purpose: the same ``session.end`` as the
    RPC, so the handoff is made and the session takes no more messages."""
    async with mserver.connect() as client:
        sid = await new_session(client, tmp_path)
        llm.add(Response([Text("Ported the lexer.")]))
        await client.send_message_and_wait(sid, "port the lexer")
        llm.add(memory_reply("Ported the lexer"))
        result = await command(client, sid, "/end")
        [handoff] = await events_of(client, sid, "memory.handoff")
        assert handoff["payload"]["trigger"] == "session_end"
        assert f"Handoff {handoff['id']}: Ported the lexer" in result["output"]
        session = await client.call("session.get", {"sessionId": sid})
        assert session["status"] != "active"
        with pytest.raises(RpcCallError):
            await client.send_message_and_wait(sid, "one more thing")
