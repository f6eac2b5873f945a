"""The lifecycle hooks over a real server: SessionStart, SessionEnd, Stop and SubagentStop
fire once each, at the documented moment, with the documented JSON on stdin, and every run
is recorded as hook.triggered / hook.completed.

Each hook is a command from the project's ``.tron/settings.json`` that appends its stdin
(one JSON object) to a log file, so the test reads exactly what a user's script receives.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.scripted_llm import Response, ScriptedLLM, Text, ToolUse
from tests.support.server import RunningServer
from tests.support.trust import trust_folder
from tron_server.client import TronClient

pytestmark = pytest.mark.anyio

LIFECYCLE = ("SessionStart", "SessionEnd", "Stop", "SubagentStop")


@pytest.fixture
def project(tmp_path: Path, server: RunningServer) -> Path:
    """A project whose settings log every lifecycle hook's input to hooks.log, trusted by
    the server's user."""
    workdir = (tmp_path / "project").resolve()
    (workdir / ".tron").mkdir(parents=True)
    log = workdir / "hooks.log"
    # One write per run (O_APPEND): hooks running at once never interleave their lines.
    script = f"import sys; open({str(log)!r}, 'a').write(sys.stdin.read().strip() + '\\n')"
    command = f'{sys.executable} -c "{script}"'
    hooks = {event: [{"hooks": [{"type": "command", "command": command}]}] for event in LIFECYCLE}
    (workdir / ".tron" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    trust_folder(server.home, workdir)
    return workdir


def logged(project: Path, event: str | None = None) -> list[dict[str, Any]]:
    path = project / "hooks.log"
    if not path.exists():
        return []
    entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [e for e in entries if event is None or e["hook_event_name"] == event]


async def hook_events(client: TronClient, session_id: str, event: str) -> list[dict[str, Any]]:
    return [
        {"type": e["type"], **e["payload"]}
        for e in await client.sync(session_id)
        if e["type"].startswith("hook.") and e["payload"]["hookEvent"] == event
    ]


async def wait_recorded(
    client: TronClient, session_id: str, event: str, count: int = 1
) -> list[dict[str, Any]]:
    """Wait until ``count`` runs of ``event``'s hooks are recorded as completed."""
    with anyio.fail_after(15):
        while True:
            found = await hook_events(client, session_id, event)
            if sum(e["type"] == "hook.completed" for e in found) >= count:
                return found
            await anyio.sleep(0.02)


async def run(client: TronClient, session_id: str, prompt: str) -> dict[str, Any]:
    stream = client.notifications(["agent.complete"], session_id=session_id)
    await client.call("agent.message", {"sessionId": session_id, "prompt": prompt})
    note = await stream.next(timeout=20)
    data: dict[str, Any] = note.data
    return data


async def create(client: TronClient, project: Path) -> str:
    session = await client.call("session.create", {"workingDirectory": str(project)})
    session_id: str = session["id"]
    return session_id


async def test_session_start_fires_on_create_and_on_the_first_run_after_a_restart(
    server: RunningServer, llm: ScriptedLLM, project: Path
) -> None:
    llm.add(Response([Text("one")]), Response([Text("two")]), Response([Text("three")]))
    async with server.connect() as client:
        sid = await create(client, project)
        recorded = await wait_recorded(client, sid, "SessionStart")
        assert [e["type"] for e in recorded] == ["hook.triggered", "hook.completed"]
        assert recorded[1]["action"] == "allow" and "error" not in recorded[1]
        await run(client, sid, "hello")  # created here: no second SessionStart
    [started] = logged(project, "SessionStart")
    assert started["source"] == "startup" and started["session_id"] == sid
    assert started["cwd"] == str(project) and started["model"] == "claude-sonnet-4-5"

    server.restart()
    async with server.connect() as client:
        await run(client, sid, "after the restart")
        await wait_recorded(client, sid, "SessionStart", 2)
        await run(client, sid, "and again")
    server.stop()  # drains background hooks: nothing more can come
    starts = logged(project, "SessionStart")
    assert [s["source"] for s in starts] == ["startup", "resume"]


async def test_stop_fires_once_when_a_run_completes_and_not_when_aborted(
    server: RunningServer, llm: ScriptedLLM, project: Path
) -> None:
    (project / "a.txt").write_text("alpha\n")
    llm.add(
        Response([ToolUse("Read", {"file_path": "a.txt"})]),
        Response([Text("It says alpha.")]),
        Response([Text("never finishes")], hang=True),
    )
    async with server.connect() as client:
        sid = await create(client, project)
        done = await run(client, sid, "read a.txt")
        assert done["turns"] == 2
        recorded = await wait_recorded(client, sid, "Stop")
        assert [e["type"] for e in recorded] == ["hook.triggered", "hook.completed"]
        deltas = client.notifications(["agent.text_delta"], session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "prompt": "talk forever"})
        await deltas.next(timeout=10)
        assert (await client.call("agent.abort", {"sessionId": sid}))["aborted"] is True
    server.stop()
    [stop] = logged(project, "Stop")  # once for two turns; none for the aborted run
    assert stop["session_id"] == sid and stop["stop_hook_active"] is False
    assert stop["last_assistant_message"] == "It says alpha."
    assert stop["stop_reason"] == "end_turn"
    assert logged(project, "SubagentStop") == []


async def test_subagent_stop_fires_once_per_child_in_the_parent(
    server: RunningServer, llm: ScriptedLLM, project: Path
) -> None:
    task = {"description": "look", "prompt": "Say what you see."}
    llm.add(
        Response([ToolUse("Task", task, id="toolu_task")]),
        Response([Text("I see nothing.")]),  # the child
        Response([Text("The sub-agent saw nothing.")]),  # the parent again
    )
    async with server.connect() as client:
        parent = await create(client, project)
        await run(client, parent, "delegate")
        recorded = await wait_recorded(client, parent, "SubagentStop")
        assert recorded[0]["toolCallId"] == "toolu_task"
        [child] = (await client.call("session.get", {"sessionId": parent}))["childSessionIds"]
        await wait_recorded(client, parent, "Stop")
    server.stop()
    [stop] = logged(project, "SubagentStop")
    assert stop["session_id"] == parent and stop["agent_id"] == child
    assert stop["agent_type"] == "general-purpose" and stop["tool_use_id"] == "toolu_task"
    assert stop["last_assistant_message"] == "I see nothing."
    # The child's run fires SubagentStop (in the parent), never Stop; the parent's fires Stop.
    assert [s["session_id"] for s in logged(project, "Stop")] == [parent]
    assert [s["session_id"] for s in logged(project, "SessionStart")] == [parent]


async def test_session_end_runs_before_the_session_ends(
    server: RunningServer, project: Path
) -> None:
    async with server.connect() as client:
        sid = await create(client, project)
        ended = await client.call("session.end", {"sessionId": sid, "reason": "user_exit"})
        assert ended["status"] == "ended"
        events = await client.sync(sid)
    [end] = logged(project, "SessionEnd")
    assert end["reason"] == "user_exit" and end["session_id"] == sid
    types = [(e["type"], e["payload"].get("hookEvent")) for e in events]
    assert types[-3:] == [
        ("hook.triggered", "SessionEnd"), ("hook.completed", "SessionEnd"), ("session.end", None)
    ]  # fmt: skip


async def test_claude_codes_project_settings_work_unchanged(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    """Hooks in Claude Code's own ``.claude/settings.json`` and ``settings.local.json``
    run as they do there: ``$CLAUDE_PROJECT_DIR`` in the command, and SessionStart's
    matcher selecting the source."""
    workdir = (tmp_path / "cc-project").resolve()
    hooks_dir = workdir / ".claude" / "hooks"
    hooks_dir.mkdir(parents=True)
    script = hooks_dir / "log.sh"
    script.write_text('#!/bin/sh\n{ cat; echo; } >> "$CLAUDE_PROJECT_DIR/$1.log"\n')
    script.chmod(0o755)

    def hook(name: str) -> dict[str, Any]:
        command = f'"$CLAUDE_PROJECT_DIR"/.claude/hooks/log.sh {name}'
        return {"type": "command", "command": command, "timeout": 10}

    shared = {"hooks": {"SessionStart": [{"matcher": "startup", "hooks": [hook("startup")]},
                                         {"matcher": "resume", "hooks": [hook("resume")]}]},
              "permissions": {"allow": ["Bash(git status:*)"]}}  # fmt: skip
    local = {"hooks": {"Stop": [{"hooks": [hook("stop")]}]}}
    (workdir / ".claude" / "settings.json").write_text(json.dumps(shared))
    (workdir / ".claude" / "settings.local.json").write_text(json.dumps(local))
    trust_folder(server.home, workdir)

    def entries(name: str) -> list[dict[str, Any]]:
        path = workdir / f"{name}.log"
        lines = path.read_text().splitlines() if path.exists() else []
        return [json.loads(line) for line in lines if line.strip()]

    llm.add(Response([Text("one")]), Response([Text("two")]))
    async with server.connect() as client:
        sid = await create(client, workdir)
        await run(client, sid, "hello")
        await wait_recorded(client, sid, "Stop")
    server.restart()
    async with server.connect() as client:
        await run(client, sid, "after the restart")
    server.stop()  # drains background hooks
    assert [e["source"] for e in entries("startup")] == ["startup"]
    assert [e["source"] for e in entries("resume")] == ["resume"]
    assert [e["session_id"] for e in entries("stop")] == [sid, sid]
    assert entries("startup")[0]["cwd"] == str(workdir)


async def test_a_hook_added_while_the_server_runs_is_used_by_the_next_run(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    """Settings are read again when a file changes: no restart needed, and a file broken
    meanwhile stops the turn (rather than running without the user's hooks)."""
    workdir = (tmp_path / "live").resolve()
    workdir.mkdir()
    trust_folder(server.home, workdir)
    log = workdir / "stop.log"
    command = f"{sys.executable} -c \"import sys; open({str(log)!r}, 'a').write('x\\\\n')\""
    llm.add(Response([Text("one")]), Response([Text("two")]), Response([Text("three")]))
    async with server.connect() as client:
        sid = await create(client, workdir)
        await run(client, sid, "no hooks yet")
        (workdir / ".tron").mkdir()
        settings = workdir / ".tron" / "settings.json"
        settings.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [{"command": command}]}]}}))
        await run(client, sid, "now with a Stop hook")
        await wait_recorded(client, sid, "Stop")
        settings.write_text("{not json")
        failed = await run(client, sid, "broken settings")
        assert failed["stopReason"] == "error"
    server.stop()
    assert log.read_text() == "x\n"  # the second run's Stop only
