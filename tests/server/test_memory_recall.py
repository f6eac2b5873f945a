"""Recall through a real tron-server and the scripted model, on both backends: the agent's
Recall tool finds what a sub-agent did and what an imported Claude Code session said in
this folder, cites session and event ids, reads around a hit, never reaches another
workspace; ``/recall`` and ``memory.search`` find the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agent.test_subagents import Routes, result_text, task, tool_results
from tests.server.test_memory import mserver, new_session
from tests.support.scripted_llm import Response, ScriptedLLM, Text, ToolUse
from tests.support.server import RunningServer
from tron_events import EventStore
from tron_events.importers import IMPORTERS
from tron_events.transfer import import_records

__all__ = ["mserver"]

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).resolve().parents[1] / "events" / "fixtures" / "importers"
#: The repository's own Claude Code project: a session with a sub-agent, run in
#: /home/dev/parser, whose user asked why "the parser drops the last line of input".
PARSER_PROJECT = FIXTURES / "claude-code" / "projects" / "-home-dev-parser"
PARSER_SESSION = "5d3c2b1a-7e6f-4a5b-9c8d-0e1f2a3b4c5d.jsonl"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "transcripts" / "claude-code"
SHORT = SHARED / "marot__spotter" / "short.jsonl"


def _moved(text: str, cwd: Path) -> str:
    """A Claude Code JSONL file's records as if they had run in ``cwd``."""
    lines = []
    for line in text.splitlines():
        record = json.loads(line)
        if "cwd" in record:
            record["cwd"] = str(cwd)
        lines.append(json.dumps(record))
    return "\n".join(lines) + "\n"


def import_claude_code(store_url: str, source: Path, cwd: Path, into: Path) -> None:
    """Import a Claude Code transcript (with its ``<session>/subagents/`` files, when it
    has them) as if it had run in ``cwd``."""
    copy = into / source.name
    copy.write_text(_moved(source.read_text(), cwd))
    beside = source.with_suffix("")
    if beside.is_dir():
        for path in beside.rglob("*"):
            if path.is_file():
                target = copy.with_suffix("") / path.relative_to(beside)
                target.parent.mkdir(parents=True, exist_ok=True)
                text = path.read_text()
                target.write_text(_moved(text, cwd) if path.suffix == ".jsonl" else text)
    store = EventStore.open(store_url)
    try:
        summary = import_records(store, IMPORTERS["claude-code"](copy))
        assert summary.ok and summary.sessions_imported >= 1
    finally:
        store.close()


async def test_recall_finds_a_sub_agents_event(
    mserver: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    for folder in (project, elsewhere):
        folder.mkdir()
    (project / "secret.txt").write_text("the vault code is zanzibarquill\n")
    routes = Routes(llm)
    routes.add(
        "PARENT",
        Response([task("read it", "KID: read secret.txt", "toolu_k1")]),
        Response([Text("The child read it.")]),
    )
    routes.add(
        "KID",
        Response([ToolUse("Read", {"file_path": "secret.txt"})]),
        Response([Text("It says zanzibarquill.")]),
    )
    async with mserver.connect() as client:
        parent = await new_session(client, project)
        await client.send_message_and_wait(parent, "PARENT: have a child read secret.txt")
        [child] = (await client.call("session.get", {"sessionId": parent}))["childSessionIds"]
        # Another workspace mentions the word too: never found from the project.
        other = await new_session(client, elsewhere)
        llm.add(Response([Text("zanzibarquill elsewhere")]))
        await client.send_message_and_wait(other, "say zanzibarquill")

        # A new session in the project recalls it, then reads around the child's hit.
        routes.add(
            "RECALL",
            Response([ToolUse("Recall", {"query": "zanzibarquill"}, id="toolu_r1")]),
            Response([Text("Found it.")]),
        )
        searcher = await new_session(client, project)
        await client.send_message_and_wait(searcher, "RECALL: what do we know?")
        first = result_text(tool_results(routes.requests["RECALL"][1])[0])
        assert f"session {child}" in first  # the sub-agent's Read result
        assert other not in first  # another workspace: never
        child_hits = [
            e for e in await client.sync(child)
            if e["type"] == "tool.result" and "zanzibarquill" in json.dumps(e["payload"])
        ]  # fmt: skip
        assert child_hits and f"event {child_hits[0]['id']}" in first

        # Reading around the child's hit: the path to it, with its ids.
        routes.add(
            "AROUND",
            Response([ToolUse("Recall", {"event_id": child_hits[0]["id"]}, id="toolu_r3")]),
            Response([ToolUse("Recall", {"event_id": "evt_nothing"}, id="toolu_r4")]),
            Response([Text("Read it.")]),
        )
        reader = await new_session(client, project)
        await client.send_message_and_wait(reader, "AROUND: read around it")
        around = tool_results(routes.requests["AROUND"][1])[0]
        text = result_text(around)
        assert around.get("is_error") is not True
        assert f">> [{child_hits[0]['id']}] tool.result" in text and "KID: read secret" in text
        missing = tool_results(routes.requests["AROUND"][2])[0]
        assert missing.get("is_error") is True

        # memory.search and /recall find the same, scoped to the folder.
        found = await client.call(
            "memory.search", {"query": "zanzibarquill", "workingDirectory": str(project)}
        )
        assert other not in {h["sessionId"] for h in found["hits"]}
        assert child in {h["sessionId"] for h in found["hits"]}
        everywhere = await client.call("memory.search", {"query": "zanzibarquill"})
        assert other in {h["sessionId"] for h in everywhere["hits"]}
        out = await client.call(
            "agent.message", {"sessionId": reader, "content": "/recall zanzibarquill"}
        )
        assert out["builtin"] is True and child in out["output"] and other not in out["output"]


@pytest.mark.parametrize(
    ("source", "query", "said"),
    [
        # The repository's fixture: runs on a clean checkout.
        (PARSER_PROJECT / PARSER_SESSION, "parser drops last line", "drops the last line"),
        # Its sub-agent (``subagents/agent-….jsonl``), imported as a child session.
        (PARSER_PROJECT / PARSER_SESSION, "caller parse repository", "List every caller"),
        # A real transcript, when the shared ones are here.
        (SHORT, "Phoenix server", "Phoenix"),
    ],
    ids=["fixture", "fixture-subagent", "shared-transcript"],
)
async def test_recall_finds_an_imported_claude_code_session(
    mserver: RunningServer,
    llm: ScriptedLLM,
    store_url: str,
    tmp_path: Path,
    source: Path,
    query: str,
    said: str,
) -> None:
    if not source.exists():
        pytest.skip(f"the shared transcripts are not here ({source})")
    project, imports = tmp_path / "project", tmp_path / "cc"
    for folder in (project, imports):
        folder.mkdir()
    import_claude_code(store_url, source, project.resolve(), imports)
    async with mserver.connect() as client:
        listed = await client.call("session.list", {"workingDirectory": str(project)})
        imported = {s["id"] for s in listed["sessions"]}
        assert imported
        llm.add(
            Response([ToolUse("Recall", {"query": query}, id="toolu_i1")]),
            Response([Text("Found it.")]),
        )
        searcher = await new_session(client, project)
        await client.send_message_and_wait(searcher, "what happened before?")
        [found] = tool_results(llm.requests[-1])
        text = result_text(found)
        plain = text.replace("«", "").replace("»", "")  # the hits' highlights
        assert found.get("is_error") is not True and said in plain, text
        cited = {sid for sid in imported if f"session {sid}" in text}
        assert cited, text  # cited by the imported session's id
        hits = await client.call(
            "memory.search", {"query": query, "workingDirectory": str(project)}
        )
        assert {h["sessionId"] for h in hits["hits"]} & cited


async def test_recall_needs_no_approval_but_a_deny_rule_refuses_it(
    mserver: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    async with mserver.connect() as client:
        sid = await new_session(client, tmp_path)
        await client.call("session.setMode", {"sessionId": sid, "mode": "plan"})
        llm.add(
            Response([ToolUse("Recall", {"query": "anything"}, id="toolu_p")]),
            Response([Text("ok")]),
        )
        await client.send_message_and_wait(sid, "look back")
        [allowed] = tool_results(llm.requests[-1])
        assert allowed.get("is_error") is not True  # read-only: runs even in plan mode
        (mserver.home / "settings.json").write_text(
            json.dumps({"permissions": {"deny": ["Recall"]}})
        )
        llm.add(
            Response([ToolUse("Recall", {"query": "anything"}, id="toolu_d")]),
            Response([Text("ok")]),
        )
        await client.send_message_and_wait(sid, "look back again")
        [denied] = tool_results(llm.requests[-1])
        assert denied.get("is_error") is True and "Recall" in result_text(denied)
