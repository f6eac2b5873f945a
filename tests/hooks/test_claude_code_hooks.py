"""Claude Code's hooks, unchanged, over a real server: what they read on stdin (the common
fields, a transcript they can parse), and what they say back (context for the model, Stop
and SubagentStop hooks sending the model on, ``continue: false``, ``systemMessage``).

Every hook is a real command from the project's ``.claude/settings.json``: one script
(``.claude/hooks/log.py``) that logs its stdin (plus what it could read in
``transcript_path``, the way Claude Code hook scripts read it) and prints the answer the
test left in ``answers/<name>`` (``answers/<name>.active`` when ``stop_hook_active`` is
true; ``answers/<name>.exit2`` for stderr and exit code 2). The model is the scripted LLM;
each test checks what the model was sent, and that every request was a valid history.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.scripted_llm import Response, ScriptedLLM, Text, ToolUse
from tests.support.server import RunningServer
from tests.support.trust import trust_folder
from tron_server.client import TronClient

pytestmark = pytest.mark.anyio

MODE = "bypassPermissions"  # the test server's default mode (tests/support/fixtures.py)

LOG_SCRIPT = """#!{python}
import json, os, sys
data = json.load(sys.stdin)
name = sys.argv[1]
root = os.environ["CLAUDE_PROJECT_DIR"]
path = data.get("transcript_path")
if path:  # read it as Claude Code hook scripts do
    records = [json.loads(line) for line in open(path) if line.strip()]
    data["_records"] = [[r["type"], r["message"]["content"]] for r in records]
    texts = [b["text"] for r in records if r["type"] == "assistant"
             for b in r["message"]["content"] if b.get("type") == "text"]
    data["_last_assistant"] = texts[-1] if texts else None
with open(os.path.join(root, "logs", name + ".jsonl"), "a") as f:
    f.write(json.dumps(data) + "\\n")
answer = os.path.join(root, "answers", name)
if data.get("stop_hook_active"):
    answer += ".active"
if os.path.exists(answer):
    sys.stdout.write(open(answer).read())
if os.path.exists(answer + ".exit2"):
    sys.stderr.write(open(answer + ".exit2").read())
    sys.exit(2)
"""


class Project:
    """A Claude Code project: ``.claude/settings.json`` hooks running ``log.py <name>``."""

    def __init__(self, root: Path, hooks: dict[str, list[tuple[str | None, str]]]) -> None:
        self.root = root
        for folder in ("logs", "answers", ".claude/hooks"):
            (root / folder).mkdir(parents=True, exist_ok=True)
        script = root / ".claude" / "hooks" / "log.py"
        script.write_text(LOG_SCRIPT.format(python=sys.executable))
        script.chmod(0o755)
        (root / "a.txt").write_text("alpha\n")
        settings = {
            event: [
                {**({"matcher": m} if m is not None else {}),
                 "hooks": [{"type": "command", "timeout": 20,
                            "command": f'"$CLAUDE_PROJECT_DIR"/.claude/hooks/log.py {name}'}]}
                for m, name in groups
            ]
            for event, groups in hooks.items()
        }  # fmt: skip
        (root / ".claude" / "settings.json").write_text(json.dumps({"hooks": settings}))

    def answer(self, name: str, text: str | dict[str, Any]) -> None:
        value = text if isinstance(text, str) else json.dumps(text)
        (self.root / "answers" / name).write_text(value)

    def logged(self, name: str) -> list[dict[str, Any]]:
        path = self.root / "logs" / f"{name}.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]


def project(
    server: RunningServer, tmp_path: Path, hooks: dict[str, list[tuple[str | None, str]]]
) -> Project:
    """A project whose folder the server's user trusts (its hooks act)."""
    made = Project((tmp_path / "project").resolve(), hooks)
    trust_folder(server.home, made.root)
    return made


async def create(client: TronClient, root: Path) -> str:
    session: dict[str, Any] = await client.call("session.create", {"workingDirectory": str(root)})
    return str(session["id"])


async def run(client: TronClient, sid: str, prompt: str) -> dict[str, Any]:
    stream = client.notifications(["agent.complete"], session_id=sid)
    await client.call("agent.message", {"sessionId": sid, "prompt": prompt})
    data: dict[str, Any] = (await stream.next(timeout=30)).data
    return data


def user_texts(message: dict[str, Any]) -> list[str]:
    """The text (or ``tool_result:<id>``) of each block of a request's message."""
    content = message["content"]
    if isinstance(content, str):
        return [content]
    return [b["text"] if b["type"] == "text" else f"{b['type']}:{b.get('tool_use_id')}"
            for b in content]  # fmt: skip


async def events_of(client: TronClient, sid: str, kind: str) -> list[dict[str, Any]]:
    return [e["payload"] for e in await client.sync(sid) if e["type"] == kind]


def assert_has(entry: dict[str, Any], expected: dict[str, Any]) -> None:
    assert {k: entry.get(k) for k in expected} == expected


def assert_valid(llm: ScriptedLLM) -> None:
    for i in range(len(llm.requests)):
        assert llm.violations(i) == [], i


async def test_hooks_get_claude_codes_fields_and_a_transcript_they_can_read(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    p = project(server, tmp_path, {
        "PreToolUse": [("Read", "pre")], "PostToolUse": [("Read", "post")],
        "UserPromptSubmit": [(None, "prompt")], "Stop": [(None, "stop")],
        "SessionStart": [("startup", "start")]})  # fmt: skip
    llm.add(
        Response([ToolUse("Read", {"file_path": "a.txt"}, id="toolu_r")]),
        Response([Text("It says alpha.")]),
        Response([Text("Second answer.")]),
    )
    async with server.connect() as client:
        sid = await create(client, p.root)
        await run(client, sid, "read a.txt")
        await client.call("session.setMode", {"sessionId": sid, "mode": "acceptEdits"})
        await run(client, sid, "again")
    transcript = server.home / "transcripts" / f"{sid}.jsonl"
    [start] = p.logged("start")
    assert start["source"] == "startup" and start["transcript_path"] == str(transcript)
    common = {"session_id": sid, "cwd": str(p.root), "transcript_path": str(transcript)}
    [pre] = p.logged("pre")
    assert_has(pre, {**common, "hook_event_name": "PreToolUse", "permission_mode": MODE,
                           "tool_name": "Read", "tool_input": {"file_path": "a.txt"},
                           "tool_use_id": "toolu_r"})  # fmt: skip
    # The transcript is current when the hook runs: the call is in it, its result not yet.
    assert pre["_records"][0] == ["user", "read a.txt"] and len(pre["_records"]) == 2
    [post] = p.logged("post")
    assert post["tool_use_id"] == "toolu_r" and post["hook_event_name"] == "PostToolUse"
    assert post["tool_response"] == {"content": post["tool_response"]["content"], "isError": False}
    assert "alpha" in post["tool_response"]["content"]
    prompts = p.logged("prompt")
    assert [e["prompt"] for e in prompts] == ["read a.txt", "again"]
    assert [e["permission_mode"] for e in prompts] == [MODE, "acceptEdits"]
    first, second = p.logged("stop")
    assert_has(first, {**common, "hook_event_name": "Stop", "stop_hook_active": False,
                             "permission_mode": MODE})  # fmt: skip
    assert first["_last_assistant"] == first["last_assistant_message"] == "It says alpha."
    assert second["_last_assistant"] == "Second answer." and second["permission_mode"] == (
        "acceptEdits"
    )
    assert [t for t, _c in second["_records"]] == ["user", "assistant", "user", "assistant",
                                                    "user", "assistant"]  # fmt: skip
    assert transcript.stat().st_mode & 0o777 == 0o600
    assert_valid(llm)


async def test_what_hooks_say_reaches_the_model_and_the_user(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    p = project(server, tmp_path, {"SessionStart": [(None, "start")],
                           "UserPromptSubmit": [(None, "prompt")],
                           "PreToolUse": [("Read", "pre")], "PostToolUse": [("Read", "post")],
                           "PreCompact": [(None, "compact")]})  # fmt: skip
    p.answer("start", "This project uses uv.\n")  # plain stdout: context, as in Claude Code
    p.answer("prompt", {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                               "additionalContext": "Ticket ABC-1 is open."},
                        "systemMessage": "prompt checked"})  # fmt: skip
    p.answer("pre", {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                            "additionalContext": "a.txt is small"}})  # fmt: skip
    extra = {"hookEventName": "PostToolUse", "additionalContext": "a.txt changed today"}
    p.answer("post", {"decision": "block", "reason": "a.txt is generated: do not edit it",
                      "hookSpecificOutput": extra})  # fmt: skip
    llm.add(
        Response([ToolUse("Read", {"file_path": "a.txt"}, id="toolu_r")]),
        Response([Text("Noted.")]),
        Response([Text("Back again.")]),
    )
    async with server.connect() as client:
        told = client.notifications(["session.notification"])
        sid = await create(client, p.root)
        await run(client, sid, "read a.txt")
        note = await told.next(timeout=10)
        assert note.data["body"] == "prompt checked" and note.data["hookEvent"] == (
            "UserPromptSubmit"
        )
        contexts = await events_of(client, sid, "hook.context")
        notified = await events_of(client, sid, "notification.user")
    first, second = llm.requests[0]["messages"], llm.requests[1]["messages"]
    assert user_texts(first[0]) == [
        "<system-reminder>\nSessionStart hook additional context: This project uses uv."
        "\n</system-reminder>",
        "read a.txt",
        "<system-reminder>\nUserPromptSubmit hook additional context: Ticket ABC-1 is open."
        "\n</system-reminder>",
    ]
    assert user_texts(second[-1]) == [
        "tool_result:toolu_r",
        "<system-reminder>\nPreToolUse hook additional context: a.txt is small\n</system-reminder>",
        "PostToolUse hook feedback:\na.txt is generated: do not edit it",
        "<system-reminder>\nPostToolUse hook additional context: a.txt changed today"
        "\n</system-reminder>",
    ]
    assert [(c["hookEvent"], c.get("source"), c.get("toolCallId")) for c in contexts] == [
        ("SessionStart", "startup", None), ("UserPromptSubmit", None, None),
        ("PreToolUse", None, "toolu_r"), ("PostToolUse", None, "toolu_r"),
        ("PostToolUse", None, "toolu_r"),
    ]  # fmt: skip
    assert notified[0]["body"] == "prompt checked" and notified[0]["hookName"].endswith("prompt")

    # After a restart the first message fires SessionStart (resume) again, before the prompt.
    server.restart()
    (p.root / "answers" / "prompt").unlink()
    async with server.connect() as client:
        await run(client, sid, "hello again")
    last = llm.requests[2]["messages"][-1]
    assert user_texts(last) == [
        "<system-reminder>\nSessionStart hook additional context: This project uses uv."
        "\n</system-reminder>",
        "hello again",
    ]
    assert [e["source"] for e in p.logged("start")] == ["startup", "resume"]

    # /clear empties the history; SessionStart (source clear) gives its context again.
    llm.add(Response([Text("Fresh start.")]))
    async with server.connect() as client:
        await client.call("agent.message", {"sessionId": sid, "prompt": "/clear"})
        await run(client, sid, "after the clear")
    assert [user_texts(m) for m in llm.requests[3]["messages"]] == [[
        "<system-reminder>\nSessionStart hook additional context: This project uses uv."
        "\n</system-reminder>",
        "after the clear",
    ]]  # fmt: skip
    assert [e["source"] for e in p.logged("start")] == ["startup", "resume", "clear"]

    # So does a compaction (source compact); PreCompact gets the /compact instructions.
    # (Between the summary and the next turn, memory's side call records a handoff.)
    handoff = ToolUse("record_memory", {"summary": "Talked about uv.", "currentState": "",
                                        "nextSteps": []})  # fmt: skip
    llm.add(
        Response([Text("We talked about uv.")]), Response([handoff]), Response([Text("Compacted.")])
    )
    async with server.connect() as client:
        await client.call("agent.message", {"sessionId": sid, "prompt": "/compact keep uv"})
        await run(client, sid, "after the compaction")
    [compact] = p.logged("compact")
    assert (compact["trigger"], compact["custom_instructions"]) == ("manual", "keep uv")
    assert [e["source"] for e in p.logged("start")][-1] == "compact"
    summary, _ack, latest = llm.requests[6]["messages"]
    assert "We talked about uv." in user_texts(summary)[0]
    assert user_texts(latest) == [
        "<system-reminder>\nSessionStart hook additional context: This project uses uv."
        "\n</system-reminder>",
        "after the compaction",
    ]
    assert_valid(llm)


async def test_stop_hooks_send_the_model_on_a_bounded_number_of_times_and_can_stop_it(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    p = project(server, tmp_path, {"Stop": [(None, "stop")], "PreToolUse": [("Bash", "bash")]})
    p.answer("stop", {"decision": "block", "reason": "Run the tests first."})
    llm.add(Response([Text("Done.")]), Response([Text("Tests pass.")]))
    async with server.connect() as client:
        sid = await create(client, p.root)
        done = await run(client, sid, "fix it")
        assert done["stopReason"] == "end_turn" and done["turns"] == 2
        assert user_texts(llm.requests[1]["messages"][-1]) == [
            "Stop hook feedback:\nRun the tests first."
        ]
        assert [e["stop_hook_active"] for e in p.logged("stop")] == [False, True]
        assert p.logged("stop")[1]["last_assistant_message"] == "Tests pass."

        # A Stop hook that never lets go (exit code 2) is obeyed 8 times in a row, then the
        # run ends and the user is told.
        p.answer("stop.active.exit2", "Not yet.")
        llm.add(*[Response([Text(f"Attempt {n}.")]) for n in range(9)])
        told = client.notifications(["session.notification"], session_id=sid)
        done = await run(client, sid, "try again")
        assert done["turns"] == 9 and done["stopReason"] == "end_turn"
        assert "8 times in a row" in (await told.next(timeout=10)).data["body"]
        assert user_texts(llm.requests[-1]["messages"][-1]) == ["Stop hook feedback:\nNot yet."]

        # {"continue": false}: the run ends there; the calls not run get an error result.
        (p.root / "answers" / "stop").unlink()
        (p.root / "answers" / "stop.active.exit2").unlink()
        p.answer("bash", {"continue": False, "stopReason": "The repo is frozen."})
        calls = [ToolUse("Bash", {"command": "touch ran"}, id="toolu_b"),
                 ToolUse("Read", {"file_path": "a.txt"}, id="toolu_r")]  # fmt: skip
        llm.add(Response(calls), Response([Text("After the freeze.")]))
        before = len(llm.requests)
        done = await run(client, sid, "commit it")
        assert done["stopReason"] == "hook_stopped" and len(llm.requests) == before + 1
        results = {r["toolCallId"]: r for r in await events_of(client, sid, "tool.result")}
        assert results["toolu_b"]["content"] == "Tool call blocked: The repo is frozen."
        assert results["toolu_r"]["isError"] and "not run" in results["toolu_r"]["content"]
        assert not (p.root / "ran").exists()
        notified = await events_of(client, sid, "notification.user")
        assert notified[-1]["body"] == "The repo is frozen."
        (p.root / "answers" / "bash").unlink()
        await run(client, sid, "and now?")  # the history goes on, valid
    assert_valid(llm)


async def test_subagent_hooks_match_agent_and_subagent_stop_sends_the_child_on(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    p = project(server, tmp_path, {"PreToolUse": [("Agent", "agent"), ("Read", "read")],
                           "SubagentStop": [("general-purpose", "substop"),
                                            ("Explore", "explore")]})  # fmt: skip
    p.answer("substop", {"decision": "block", "reason": "End with a one-line summary."})
    task = {"description": "look", "prompt": "Read a.txt and report."}
    llm.add(
        Response([ToolUse("Task", task, id="toolu_t")]),  # the parent
        Response([ToolUse("Read", {"file_path": "a.txt"}, id="toolu_cr")]),  # the child
        Response([Text("It says alpha.")]),
        Response([Text("Summary: alpha.")]),  # after SubagentStop's feedback
        Response([Text("The sub-agent read it.")]),  # the parent again
    )
    async with server.connect() as client:
        parent = await create(client, p.root)
        done = await run(client, parent, "delegate")
        assert done["stopReason"] == "end_turn"
        [child] = (await client.call("session.get", {"sessionId": parent}))["childSessionIds"]
        [result] = await events_of(client, parent, "tool.result")
    assert "Summary: alpha." in result["content"]
    [agent] = p.logged("agent")
    assert agent["tool_name"] == "Task" and agent["session_id"] == parent
    assert "agent_id" not in agent
    [read] = p.logged("read")
    assert_has(read, {"session_id": child, "agent_id": child,
                            "agent_type": "general-purpose"})  # fmt: skip
    first, second = p.logged("substop")
    assert (first["stop_hook_active"], second["stop_hook_active"]) == (False, True)
    assert_has(first, {"session_id": parent, "agent_id": child, "tool_use_id": "toolu_t",
                             "last_assistant_message": "It says alpha."})  # fmt: skip
    child_transcript = Path(second["agent_transcript_path"])
    assert child_transcript == server.home / "transcripts" / f"{child}.jsonl"
    records = [json.loads(line) for line in child_transcript.read_text().splitlines()]
    assert all(r["isSidechain"] and r["sessionId"] == child for r in records)
    assert records[-1]["message"]["content"][0]["text"] == "Summary: alpha."
    assert p.logged("explore") == []
    assert_valid(llm)
