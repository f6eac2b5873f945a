"""Slash commands over a real server: every built-in, a command file using every
substitution, refusals, an unknown command, ``command.list``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.rpc import complete, new_session, of_type, types, wait_for
from tests.support.scripted_llm import Response, ScriptedLLM, Text
from tests.support.server import RunningServer
from tests.support.trust import trust_folder
from tron_server.client import RpcCallError, TronClient

pytestmark = pytest.mark.anyio


async def command(client: TronClient, sid: str, text: str) -> dict[str, Any]:
    result: dict[str, Any] = await client.call("agent.message", {"sessionId": sid, "content": text})
    return result


async def test_every_built_in_command(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    llm.add(
        Response([Text("First answer.")]),
        Response([Text("Second answer.")]),
        Response([Text("SUMMARY: we said hello twice.")]),  # /compact's summary
    )
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        stream = client.notifications(session_id=sid)
        for text in ("hello", "again"):
            await command(client, sid, text)
            await complete(stream)

        shown = await command(client, sid, "/help")
        assert shown["builtin"] is True and shown["runId"] is None
        for name in ("clear", "compact", "model", "fork", "rewind", "cost", "context",
                     "agents", "permissions", "mode"):  # fmt: skip
            assert f"/{name}" in shown["output"]
        note = await wait_for(stream, "agent.command_output")
        assert note.data["name"] == "help" and note.data["output"] == shown["output"]

        cost = await command(client, sid, "/cost")
        assert "Cost $" in cost["output"] and cost["usage"]["inputTokens"] > 0
        context = await command(client, sid, "/context")
        assert "tokens in use" in context["output"] and context["context"]["usedTokens"] > 0
        agents = await command(client, sid, "/agents")
        assert "general-purpose" in agents["output"]
        perms = await command(client, sid, "/permissions")
        assert perms["output"].startswith("Mode: default")
        mode = await command(client, sid, "/mode acceptEdits")
        assert mode["mode"] == "acceptEdits" and mode["previousMode"] == "default"
        assert "acceptEdits" in (await command(client, sid, "/mode"))["output"]
        listed = await command(client, sid, "/model")
        assert "Current model: claude-sonnet-4-5" in listed["output"]
        switched = await command(client, sid, "/model claude-opus-4-5")
        assert switched["model"]["newModel"] == "claude-opus-4-5"

        compacted = await command(client, sid, "/compact keep the greetings")
        assert compacted["compaction"]["tokensBefore"] > 0
        assert "keep the greetings" in str(llm.requests[2]["messages"])

        forked = await command(client, sid, "/fork")
        assert forked["session"]["forkFromEventId"] and forked["session"]["id"] != sid

        rewound = await command(client, sid, "/rewind")
        events = await client.sync(sid)
        prompts = [e for e in events if e["type"] == "message.user"]
        assert rewound["session"]["headEventId"] == prompts[-1]["parentId"]
        with pytest.raises(RpcCallError) as too_far:
            await command(client, sid, "/rewind 5")
        assert "not 5" in too_far.value.message
        with pytest.raises(RpcCallError) as alone:
            await command(client, sid, "/rewind force")
        assert "goes with files" in alone.value.message

        cleared = await command(client, sid, "/clear")
        assert "cleared" in cleared["output"]
        events = await client.sync(sid)
        assert types(events)[-1] == "context.cleared"
        assert of_type(events, "context.cleared")[-1]["reason"] == "/clear"
        state = await client.call("session.getState", {"sessionId": sid})
        assert state["messages"] == []


async def test_a_command_file_with_every_substitution(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("print('hello from app')\n")
    folder = tmp_path / ".claude" / "commands" / "review"
    folder.mkdir(parents=True)
    (folder / "file.md").write_text(
        "---\n"
        "description: Review one file\n"
        "argument-hint: [file] [focus]\n"
        "allowed-tools: Bash(echo:*)\n"
        "model: haiku\n"
        "---\n"
        "Review @$1 with a focus on $2 (asked: $ARGUMENTS).\n"
        "Status: !`echo checked $2`\n"
        "Mail me at someone@example.com, not @nowhere.\n"
    )
    trust_folder(server.home, tmp_path)
    llm.add(Response([Text("Reviewed.")]))
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        commands = (await client.call("command.list", {"sessionId": sid}))["commands"]
        entry = next(c for c in commands if c["name"] == "review:file")
        assert entry["argumentHint"] == "[file] [focus]" and entry["source"] == "claude"
        assert entry["description"] == "Review one file (project:review)"
        stream = client.notifications(session_id=sid)
        # The short name works too ("file" is unique).
        started = await command(client, sid, "/file src/app.py speed")
        assert started["command"] == "review:file" and started["runId"]
        await complete(stream)

        events = await client.sync(sid)
        kinds = types(events)
        at = kinds.index("command.invoked")
        assert kinds[at + 1] == "message.user"
        invoked = events[at]["payload"]
        assert invoked["name"] == "review:file" and invoked["arguments"] == "src/app.py speed"
        assert (
            invoked["allowedTools"] == ["Bash(echo:*)"] and invoked["model"] == "claude-haiku-4-5"
        )
        assert invoked["files"] == [str((tmp_path / "src" / "app.py").resolve())]
        assert invoked["commands"] == [{"command": "echo checked speed", "exitCode": 0}]
        text = events[at + 1]["payload"]["content"]
        assert "Review @src/app.py with a focus on speed (asked: src/app.py speed)." in text
        assert "Status: checked speed" in text
        assert "someone@example.com, not @nowhere." in text
        assert "<file path=\"src/app.py\">\nprint('hello from app')\n</file>" in text
        # What the model got is the expanded text, on the command's model.
        assert llm.requests[0]["model"] == "claude-haiku-4-5"
        assert "hello from app" in str(llm.requests[0]["messages"])


async def test_refused_inclusions_and_unknown_commands(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    commands = tmp_path / ".tron" / "commands"
    commands.mkdir(parents=True)
    (commands / "deploy.md").write_text("Deploy: !`touch deployed.txt`\n")
    (commands / "peek.md").write_text("Look at @.env\n")
    (commands / "creds.md").write_text("Look at @creds\n")
    (commands / "wipe.md").write_text("---\nallowed-tools: Bash\n---\n!`rm -rf ~`\n")
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"permissions": {"deny": ["Read(./.env)", "Read(./creds)"]}}))
    (tmp_path / ".env").write_text("SECRET=1\n")
    (tmp_path / "creds.txt").write_text("TOKEN=1\n")
    (tmp_path / "creds").symlink_to("creds.txt")  # the rule names the link
    trust_folder(server.home, tmp_path)
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        with pytest.raises(RpcCallError) as needs:
            await command(client, sid, "/deploy")
        assert needs.value.code == -32602 and "needs approval" in needs.value.message
        assert not (tmp_path / "deployed.txt").exists()
        with pytest.raises(RpcCallError) as denied:
            await command(client, sid, "/peek")
        assert "Read(./.env)" in denied.value.message
        with pytest.raises(RpcCallError) as linked:
            await command(client, sid, "/creds")
        assert "Read(./creds)" in linked.value.message
        with pytest.raises(RpcCallError) as guarded:  # allowed, but the guardrails refuse
            await command(client, sid, "/wipe")
        assert "rm -rf ~" in guarded.value.message
        with pytest.raises(RpcCallError) as unknown:
            await command(client, sid, "/deplo now")
        assert unknown.value.code == -32602
        assert unknown.value.data["suggestions"][0] == "deploy"
        assert "Did you mean /deploy" in unknown.value.message
        # None of them sent anything (the guardrail's run is recorded as hook events), and
        # a path is a message, not a command.
        recorded = types(await client.sync(sid))
        assert "message.user" not in recorded and "command.invoked" not in recorded
        llm.add(Response([Text("It is a path.")]))
        stream = client.notifications(session_id=sid)
        sent = await command(client, sid, "/usr/bin/env is where env lives")
        assert "command" not in sent
        await complete(stream)
        # Without a session, command.list has the built-ins (and home commands).
        names = [c["name"] for c in (await client.call("command.list"))["commands"]]
        assert "help" in names and "deploy" not in names
        names = [c["name"] for c in (await client.call(
            "command.list", {"workingDirectory": str(tmp_path)}))["commands"]]  # fmt: skip
        assert {"deploy", "peek", "creds", "wipe"} <= set(names)


async def test_rewind_files_takes_the_files_back(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    from tests.support.scripted_llm import ToolUse

    llm.add(
        Response([Text("Writing."), ToolUse("Write", {"file_path": "a.txt", "content": "new\n"})]),
        Response([Text("Done.")]),
    )
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        await command(client, sid, "/mode acceptEdits")  # Write without asking
        stream = client.notifications(session_id=sid)
        await command(client, sid, "write it")
        await complete(stream)
        assert (tmp_path / "a.txt").read_text() == "new\n"
        (tmp_path / "a.txt").write_text("edited by hand\n")
        with pytest.raises(RpcCallError) as conflict:  # an outside edit: nothing written
            await command(client, sid, "/rewind files")
        assert conflict.value.code == -32006
        assert (tmp_path / "a.txt").read_text() == "edited by hand\n"
        rewound = await command(client, sid, "/rewind 1 files force")
        assert "1 file(s) restored, 1 over changes made outside the agent" in rewound["output"]
        assert rewound["restore"]["forced"] == [str((tmp_path / "a.txt").resolve())]
        assert not (tmp_path / "a.txt").exists()


SNEAK = "echo $'\\''; touch sneaked #'"


@pytest.mark.parametrize(
    ("permissions", "refusal"),
    [
        ({"allow": ["Bash(echo:*)"], "deny": ["Bash(touch:*)"]}, "Bash(touch:*)"),
        ({"allow": ["Bash(echo:*)"]}, "needs approval"),
    ],
)
async def test_a_command_files_shell_line_is_split_as_bash_reads_it(
    server: RunningServer, tmp_path: Path, permissions: dict[str, Any], refusal: str
) -> None:
    """Issue 26 item 2 through ``!`…` ``: bash runs ``echo`` and then ``touch``; the deny
    rule refuses it, and the echo rule alone does not allow it (nobody is asked while a
    command expands, so it is refused, saying it needs approval)."""
    commands = tmp_path / ".tron" / "commands"
    commands.mkdir(parents=True)
    (commands / "sneak.md").write_text(f"Run: !`{SNEAK}`\n")
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"permissions": permissions}))
    trust_folder(server.home, tmp_path)
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        with pytest.raises(RpcCallError) as refused:
            await command(client, sid, "/sneak")
        assert refusal in refused.value.message
        assert not (tmp_path / "sneaked").exists()
