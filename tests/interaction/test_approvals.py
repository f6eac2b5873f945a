"""Approvals and permission modes over a real server: rules in Claude Code's syntax from
the settings files, each mode, a hook answering "ask", "allow always", modes following
forks and rewinds, and a sub-agent's approval reaching its parent's clients."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.rpc import complete, new_session, of_type, respond, wait_for
from tests.support.scripted_llm import Response, ScriptedLLM, Text, ToolUse
from tests.support.server import RunningServer
from tests.support.trust import trust_folder
from tron_server.client import NotificationStream, RpcCallError, TronClient

pytestmark = pytest.mark.anyio


def settings(folder: Path, data: dict[str, Any], name: str = ".claude/settings.json") -> None:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def results_by_id(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["toolCallId"]: r for r in of_type(events, "tool.result")}


async def answer_next(
    client: TronClient, stream: NotificationStream, sid: str, answer: Any
) -> dict[str, Any]:
    asked = await wait_for(stream, "agent.approval")
    await client.call(
        "agent.respond", {"sessionId": sid, "requestId": asked.data["requestId"], "answer": answer}
    )
    data: dict[str, Any] = asked.data
    return data


async def test_default_mode_with_allow_ask_and_deny_rules(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    settings(tmp_path, {"permissions": {
        "allow": ["Bash(echo ok:*)"],
        "ask": ["Bash(touch:*)"],
        "deny": ["Bash(rm:*)", "Read(./.env)"],
    }})  # fmt: skip
    trust_folder(server.home, tmp_path)
    (tmp_path / ".env").write_text("SECRET=1\n")
    calls = [
        ToolUse("Bash", {"command": "echo ok allowed"}, id="t_allowed"),
        ToolUse("Bash", {"command": "echo hi && rm -f x"}, id="t_denied"),
        ToolUse("Read", {"file_path": ".env"}, id="t_env"),
        ToolUse("Bash", {"command": "touch made.txt"}, id="t_asked"),
        ToolUse("Bash", {"command": "ls"}, id="t_default"),
    ]
    llm.add(Response(calls), Response([Text("Done.")]))
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        stream = client.notifications(session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "go"})
        first = await answer_next(client, stream, sid, {"decision": "allow"})
        assert first["toolName"] == "Bash" and first["input"] == {"command": "touch made.txt"}
        assert "Bash(touch:*)" in first["reason"] and first["suggestion"] == "Bash(touch:*)"
        second = await answer_next(
            client, stream, sid, {"decision": "deny", "reason": "no listing today"}
        )
        assert second["input"] == {"command": "ls"} and "needs your approval" in second["reason"]
        await complete(stream)

        events = await client.sync(sid)
        results = results_by_id(events)
        assert "ok allowed" in results["t_allowed"]["content"]
        assert "Bash(rm:*)" in results["t_denied"]["content"]
        assert results["t_denied"]["isError"] is True
        assert "Read(./.env)" in results["t_env"]["content"]
        assert results["t_asked"]["isError"] is False and (tmp_path / "made.txt").exists()
        assert results["t_default"]["isError"] is True
        assert "no listing today" in results["t_default"]["content"]
        decisions = [r.get("decision") for r in of_type(events, "interaction.resolved")]
        assert decisions == ["allow", "deny"]
        assert llm.violations(1) == []


async def test_allow_always_covers_the_rest_of_the_session(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    llm.add(
        Response([ToolUse("Bash", {"command": "touch a.txt"})]),
        Response([ToolUse("Bash", {"command": "touch b.txt"})]),
        Response([Text("Both made.")]),
    )
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        stream = client.notifications(session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "go"})
        await answer_next(client, stream, sid, "allow_always")
        await complete(stream)
        events = await client.sync(sid)
        assert [e["type"] for e in events].count("interaction.requested") == 1
        [rule] = of_type(events, "config.permission_rule")
        assert rule["rule"] == "Bash(touch:*)" and rule["behavior"] == "allow"
        assert (tmp_path / "b.txt").exists()
        listed = await client.call("permissions.get", {"sessionId": sid})
        assert {"rule": "Bash(touch:*)", "behavior": "allow", "source": "this session"} in listed[
            "rules"
        ]


async def test_accept_edits_writes_inside_the_working_directory_only(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    outside = tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    # The guardrails let the agent write outside; the mode still asks for it.
    settings(work, {"guardrails": {"allowedWritePaths": [str(outside)]}}, ".tron/settings.json")
    trust_folder(server.home, work)
    llm.add(
        Response([
            ToolUse("Write", {"file_path": "in.txt", "content": "x"}, id="t_in"),
            ToolUse("Write", {"file_path": str(outside / "out.txt"), "content": "x"}, id="t_out"),
            ToolUse("Bash", {"command": "true"}, id="t_bash"),
        ]),
        Response([Text("Done.")]),
    )  # fmt: skip
    async with server.connect() as client:
        sid = await new_session(client, work)
        changed = await client.call("session.setMode", {"sessionId": sid, "mode": "acceptEdits"})
        assert changed == {"sessionId": sid, "previousMode": "default", "mode": "acceptEdits"}
        stream = client.notifications(session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "go"})
        asked = await answer_next(client, stream, sid, "deny")
        assert asked["toolName"] == "Write" and asked["input"]["file_path"].endswith("out.txt")
        bash = await answer_next(client, stream, sid, "allow")
        assert bash["toolName"] == "Bash"
        await complete(stream)
        results = results_by_id(await client.sync(sid))
        assert (work / "in.txt").exists() and results["t_in"]["isError"] is False
        assert not (outside / "out.txt").exists() and results["t_out"]["isError"] is True


async def test_plan_mode_refuses_writes_and_commands_but_reads(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("plan material\n")
    settings(tmp_path, {"permissions": {"allow": ["Bash", "Edit"]}})  # even allowed
    llm.add(
        Response([
            ToolUse("Read", {"file_path": "a.txt"}, id="t_read"),
            ToolUse("Write", {"file_path": "b.txt", "content": "x"}, id="t_write"),
            ToolUse("Edit", {"file_path": "a.txt", "old_string": "plan", "new_string": "x"},
                    id="t_edit"),
            ToolUse("Bash", {"command": "touch c.txt"}, id="t_bash"),
        ]),
        Response([Text("Here is my plan.")]),
    )  # fmt: skip
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        await client.call("agent.message", {"sessionId": sid, "content": "/mode plan"})
        stream = client.notifications(session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "plan it"})
        await complete(stream)
        results = results_by_id(await client.sync(sid))
        assert "plan material" in results["t_read"]["content"]
        for refused in ("t_write", "t_edit", "t_bash"):
            assert results[refused]["isError"] is True
            assert "plan mode" in results[refused]["content"]
        assert not (tmp_path / "b.txt").exists() and not (tmp_path / "c.txt").exists()
        assert (tmp_path / "a.txt").read_text() == "plan material\n"


async def test_dont_ask_refuses_instead_of_asking(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    settings(tmp_path, {"permissions": {"allow": ["Bash(echo:*)"], "defaultMode": "dontAsk"}})
    trust_folder(server.home, tmp_path)
    llm.add(
        Response([ToolUse("Bash", {"command": "echo yes"}, id="t_yes"),
                  ToolUse("Bash", {"command": "touch no.txt"}, id="t_no")]),
        Response([Text("Done.")]),
    )  # fmt: skip
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        assert (await client.call("session.get", {"sessionId": sid}))["permissionMode"] == "dontAsk"
        stream = client.notifications(session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "go"})
        await complete(stream)
        results = results_by_id(await client.sync(sid))
        assert "yes" in results["t_yes"]["content"]
        assert "dontAsk" in results["t_no"]["content"] and not (tmp_path / "no.txt").exists()


async def test_bypass_needs_the_server_option_and_keeps_deny_rules_and_guardrails(
    make_server: Callable[..., RunningServer], llm: ScriptedLLM, tmp_path: Path
) -> None:
    strict = make_server()
    async with strict.connect() as client:
        sid = await new_session(client, tmp_path)
        with pytest.raises(RpcCallError) as refused:
            await client.call("session.setMode", {"sessionId": sid, "mode": "bypassPermissions"})
        assert refused.value.code == -32602 and "--allow-bypass-permissions" in str(
            refused.value.message
        )
        modes = {m["id"]: m for m in (await client.call("mode.list"))["modes"]}
        assert modes["bypassPermissions"]["available"] is False
    lax = make_server(allow_bypass_permissions=True)
    settings(tmp_path, {"permissions": {"deny": ["Bash(curl:*)"]}})
    llm.add(
        Response([ToolUse("Bash", {"command": "touch free.txt"}, id="t_free"),
                  ToolUse("Bash", {"command": "curl http://example.invalid"}, id="t_curl"),
                  ToolUse("Bash", {"command": "rm -rf ~"}, id="t_guard")]),
        Response([Text("Done.")]),
    )  # fmt: skip
    async with lax.connect() as client:
        sid = await new_session(client, tmp_path)
        await client.call("session.setMode", {"sessionId": sid, "mode": "bypassPermissions"})
        stream = client.notifications(session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "go"})
        await complete(stream)
        events = await client.sync(sid)
        assert "interaction.requested" not in [e["type"] for e in events]
        results = results_by_id(events)
        assert results["t_free"]["isError"] is False and (tmp_path / "free.txt").exists()
        assert "Bash(curl:*)" in results["t_curl"]["content"]
        assert results["t_guard"]["isError"] is True and "blocked" in results["t_guard"]["content"]


async def test_a_pre_tool_use_hook_answering_ask(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    """A hook in Claude Code's output format asks before a Read (which needs no approval
    otherwise); the user denies it with a reason the model sees."""
    hook = tmp_path / "ask.sh"
    hook.write_text(
        "#!/bin/sh\ncat >/dev/null\n"
        """echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", """
        """"permissionDecision": "ask", "permissionDecisionReason": "secrets live here"}}'\n"""
    )
    hook.chmod(0o755)
    settings(
        tmp_path,
        {"hooks": {"PreToolUse": [{"matcher": "Read",
                                   "hooks": [{"type": "command", "command": str(hook)}]}]}},
        ".tron/settings.json",
    )  # fmt: skip
    trust_folder(server.home, tmp_path)
    (tmp_path / "a.txt").write_text("x\n")
    llm.add(Response([ToolUse("Read", {"file_path": "a.txt"})]), Response([Text("OK.")]))
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        stream = client.notifications(session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "read"})
        asked = await answer_next(
            client, stream, sid, {"decision": "deny", "reason": "not that file"}
        )
        assert asked["toolName"] == "Read" and asked["reason"] == "secrets live here"
        await complete(stream)
        events = await client.sync(sid)
        [result] = of_type(events, "tool.result")
        assert result["isError"] is True and "not that file" in result["content"]
        assert any(h["action"] == "ask" for h in of_type(events, "hook.completed"))


async def test_modes_are_events_that_follow_rewind_and_fork(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    llm.add(Response([Text("Hello.")]))
    async with server.connect() as client, server.connect() as watcher:
        sid = await new_session(client, tmp_path)
        stream = client.notifications(session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "hi"})
        await complete(stream)
        before = (await client.call("session.get", {"sessionId": sid}))["headEventId"]
        told = watcher.notifications(["session.mode_changed"])
        await client.call("session.setMode", {"sessionId": sid, "mode": "plan"})
        changed = await told.next(timeout=10)
        assert (
            changed.data["mode"] == "plan" and changed.data["session"]["permissionMode"] == "plan"
        )
        assert (await client.call("session.get", {"sessionId": sid}))["permissionMode"] == "plan"
        head = (await client.call("session.get", {"sessionId": sid}))["headEventId"]
        fork_after = await client.call("session.fork", {"eventId": head})
        fork_before = await client.call("session.fork", {"eventId": before})
        mode_of = {}
        for key, fork in (("after", fork_after), ("before", fork_before)):
            got = await client.call("session.get", {"sessionId": fork["session"]["id"]})
            mode_of[key] = got["permissionMode"]
        assert mode_of == {"after": "plan", "before": "default"}
        await client.call("session.rewind", {"sessionId": sid, "eventId": before})
        assert (await client.call("session.get", {"sessionId": sid}))["permissionMode"] == "default"
        with pytest.raises(RpcCallError) as bad:
            await client.call("session.setMode", {"sessionId": sid, "mode": "yolo"})
        assert bad.value.code == -32602


async def test_a_sub_agents_approval_reaches_the_parents_clients(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    llm.add(
        Response([ToolUse("Task", {"description": "make a file", "prompt": "touch c.txt"})]),
        Response([ToolUse("Bash", {"command": "touch c.txt"})]),  # the child
        Response([Text("Made it.")]),  # the child
        Response([Text("The sub-agent made it.")]),  # the parent
    )
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        stream = client.notifications()  # the parent's and, relayed, its child's
        await client.call("agent.message", {"sessionId": sid, "content": "delegate"})
        asked = await wait_for(stream, "agent.approval")
        assert asked.data["parentSessionId"] == sid and asked.session_id != sid
        state = await client.call("agent.getState", {"sessionId": sid})
        assert [p["requestId"] for p in state["pendingRequests"]] == [asked.data["requestId"]]
        # Answered through the parent, with "allow always": the rule lands in the parent.
        await respond(client, sid, asked.data["requestId"], "allow_always")
        while True:
            done = await wait_for(stream, "agent.complete")
            if done.session_id == sid:
                break
        assert (tmp_path / "c.txt").exists()
        [rule] = of_type(await client.sync(sid), "config.permission_rule")
        assert rule["rule"] == "Bash(touch:*)" and rule["fromSessionId"] == asked.session_id


async def test_a_child_follows_its_parents_mode(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    llm.add(
        Response([ToolUse("Task", {"description": "write", "prompt": "write c.txt"})]),
        Response([ToolUse("Write", {"file_path": "c.txt", "content": "x"})]),  # the child
        Response([Text("Could not.")]),  # the child
        Response([Text("Planned.")]),
    )
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        await client.call("session.setMode", {"sessionId": sid, "mode": "plan"})
        stream = client.notifications(session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "delegate"})
        await complete(stream)
        child = (await client.call("session.get", {"sessionId": sid}))["childSessionIds"][0]
        assert (await client.call("session.get", {"sessionId": child}))["permissionMode"] == "plan"
        [result] = of_type(await client.sync(child), "tool.result")
        assert "plan mode" in result["content"] and not (tmp_path / "c.txt").exists()


async def test_an_approval_answered_after_a_restart_runs_the_tool_then(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    llm.add(
        Response([ToolUse("Bash", {"command": "touch late.txt"}, id="t_late"),
                  ToolUse("Bash", {"command": "touch later.txt"}, id="t_later")]),
        Response([Text("Both ran.")]),
    )  # fmt: skip
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        stream = client.notifications(session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "go"})
        await wait_for(stream, "agent.approval")
    server.restart()
    assert not (tmp_path / "late.txt").exists()
    async with server.connect() as client:
        [pending] = (await client.call("agent.getState", {"sessionId": sid}))["pendingRequests"]
        assert pending["kind"] == "approval" and pending["input"] == {"command": "touch late.txt"}
        stream = client.notifications(session_id=sid)
        await respond(client, sid, pending["requestId"], "allow_always")
        await complete(stream)
        # The approved call ran now; the next one was allowed by the rule just added.
        assert (tmp_path / "late.txt").exists() and (tmp_path / "later.txt").exists()
        events = await client.sync(sid)
        assert [e["type"] for e in events].count("interaction.requested") == 1
        results = results_by_id(events)
        assert results["t_late"]["isError"] is False and results["t_later"]["isError"] is False
        assert llm.violations(1) == []


async def test_deny_and_ask_rules_also_match_the_name_a_call_uses(
    make_server: Callable[..., RunningServer], llm: ScriptedLLM, tmp_path: Path
) -> None:
    """``Read(./.env)`` refuses ``.env`` when it is a symlink to another file, and
    ``Edit(vendor/**)`` an edit through ``vendor`` when that is a link to a folder elsewhere:
    the tool acts on the target, but the rule names the link. Allow rules still need the
    real path (a link inside ``src/`` to a file elsewhere is not allowed by ``Edit(src/**)``)."""
    work = tmp_path / "work"
    elsewhere = tmp_path / "elsewhere"
    (work / "src").mkdir(parents=True)
    elsewhere.mkdir()
    (work / "prod.env").write_text("SECRET=1\n")
    (work / ".env").symlink_to("prod.env")
    (work / "vendor").symlink_to(elsewhere)
    (elsewhere / "lib.py").write_text("x = 1\n")
    (work / "src" / "outside.py").symlink_to(elsewhere / "lib.py")
    settings(work, {"permissions": {
        "allow": ["Edit(src/**)"],
        "deny": ["Read(./.env)", "Edit(vendor/**)"],
    }, "guardrails": {"allowedWritePaths": [str(elsewhere)]}}, ".tron/settings.json")  # fmt: skip
    server = make_server(allow_bypass_permissions=True)
    trust_folder(server.home, work)
    llm.add(
        Response([
            ToolUse("Read", {"file_path": ".env"}, id="t_env"),
            ToolUse("Write", {"file_path": "vendor/lib.py", "content": "y = 2\n"}, id="t_vendor"),
            ToolUse("Write", {"file_path": "src/outside.py", "content": "z = 3\n"}, id="t_link"),
        ]),
        Response([Text("Done.")]),
    )  # fmt: skip
    async with server.connect() as client:
        sid = await new_session(client, work)
        stream = client.notifications(session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "go"})
        # Only the write through src/outside.py (allowed by name, not by its real path) asks.
        asked = await answer_next(client, stream, sid, "deny")
        assert asked["input"]["file_path"] == "src/outside.py"
        await complete(stream)
        results = results_by_id(await client.sync(sid))
        assert results["t_env"]["isError"] is True and "Read(./.env)" in results["t_env"]["content"]
        assert "SECRET" not in results["t_env"]["content"]
        assert "Edit(vendor/**)" in results["t_vendor"]["content"]
        assert (elsewhere / "lib.py").read_text() == "x = 1\n"
        # Also in bypassPermissions mode, which otherwise runs everything.
        await client.call("session.setMode", {"sessionId": sid, "mode": "bypassPermissions"})
        llm.add(
            Response([ToolUse("Read", {"file_path": ".env"}, id="t_env2")]),
            Response([Text("Done.")]),
        )
        await client.call("agent.message", {"sessionId": sid, "content": "again"})
        await complete(stream)
        result = results_by_id(await client.sync(sid))["t_env2"]
        assert result["isError"] is True and "Read(./.env)" in result["content"]


async def test_deny_beats_ask_beats_allow_across_the_settings_files(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    """Rules of ~/.tron/settings.json, .claude/settings.json and .tron/settings.json apply
    together: whichever file a rule is in, deny wins over ask, and ask over allow."""
    settings(server.home, {"permissions": {
        "allow": ["Bash(touch:*)"], "ask": ["Bash(echo ask:*)"], "deny": ["Bash(rm:*)"],
    }}, "settings.json")  # fmt: skip
    settings(tmp_path, {"permissions": {"allow": ["Bash(echo:*)"], "ask": ["Bash(touch b.txt)"]}})
    settings(tmp_path, {"permissions": {"allow": ["Bash(rm:*)"], "deny": ["Bash(touch c.txt)"]}},
             ".tron/settings.json")  # fmt: skip
    trust_folder(server.home, tmp_path)
    (tmp_path / "x").write_text("keep\n")
    llm.add(
        Response([
            ToolUse("Bash", {"command": "touch a.txt"}, id="t_a"),  # home allows
            ToolUse("Bash", {"command": "touch b.txt"}, id="t_b"),  # .claude asks
            ToolUse("Bash", {"command": "touch c.txt"}, id="t_c"),  # .tron denies
            ToolUse("Bash", {"command": "rm -f x"}, id="t_rm"),  # home denies, .tron allows
            ToolUse("Bash", {"command": "echo ask me"}, id="t_echo"),  # home asks
            ToolUse("Bash", {"command": "echo fine"}, id="t_fine"),  # .claude allows
        ]),
        Response([Text("Done.")]),
    )  # fmt: skip
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        listed = (await client.call("permissions.get", {"sessionId": sid}))["rules"]
        sources = {(r["rule"], r["behavior"]): r["source"] for r in listed}
        assert sources[("Bash(rm:*)", "deny")] == str(server.home / "settings.json")
        assert sources[("Bash(rm:*)", "allow")].endswith(".tron/settings.json")
        stream = client.notifications(session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "go"})
        first = await answer_next(client, stream, sid, "allow")
        assert first["input"] == {"command": "touch b.txt"}
        second = await answer_next(client, stream, sid, "allow")
        assert second["input"] == {"command": "echo ask me"}
        await complete(stream)
        events = await client.sync(sid)
        assert [e["type"] for e in events].count("interaction.requested") == 2
        results = results_by_id(events)
        assert (tmp_path / "a.txt").exists() and (tmp_path / "b.txt").exists()
        assert not (tmp_path / "c.txt").exists() and "touch c.txt" in results["t_c"]["content"]
        assert (tmp_path / "x").exists() and "Bash(rm:*)" in results["t_rm"]["content"]
        assert "fine" in results["t_fine"]["content"] and results["t_fine"]["isError"] is False


async def test_allow_always_is_honoured_after_a_restart(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    llm.add(Response([ToolUse("Bash", {"command": "touch a.txt"})]), Response([Text("Made.")]))
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        stream = client.notifications(session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "go"})
        await answer_next(client, stream, sid, "allow_always")
        await complete(stream)
    server.restart()
    llm.add(Response([ToolUse("Bash", {"command": "touch b.txt"})]), Response([Text("Made.")]))
    async with server.connect() as client:
        stream = client.notifications(session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "again"})
        await complete(stream)
        events = await client.sync(sid)
        assert [e["type"] for e in events].count("interaction.requested") == 1
        assert (tmp_path / "b.txt").exists()


@pytest.mark.parametrize("mode", ["default", "bypassPermissions"])
async def test_a_deny_rule_refuses_a_command_hidden_by_ansi_c_quoting(
    make_server: Callable[..., RunningServer], llm: ScriptedLLM, tmp_path: Path, mode: str
) -> None:
    """Issue 26 item 2: bash reads ``$'\\''`` as one quote character, so this line runs
    ``echo`` and then ``touch``; the deny rule sees the touch in every mode (with echo
    allowed), and nothing is created."""
    server = make_server(default_permission_mode=mode, allow_bypass_permissions=True)
    settings(tmp_path, {"permissions": {"allow": ["Bash(echo:*)"], "deny": ["Bash(touch:*)"]}})
    trust_folder(server.home, tmp_path)
    line = "echo $'\\''; touch sneaked #'"
    llm.add(Response([ToolUse("Bash", {"command": line}, id="t_sneak")]), Response([Text("ok")]))
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        stream = client.notifications(session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "go"})
        await complete(stream)
        result = results_by_id(await client.sync(sid))["t_sneak"]
        assert result["isError"] is True and "Bash(touch:*)" in result["content"]
    assert not (tmp_path / "sneaked").exists()
