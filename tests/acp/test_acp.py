"""``tron acp`` driven by the official ACP Python SDK's client side, as Zed starts it
(docs/editors.md), with a real tron-server and the scripted model behind it.

Every message it sends is checked against the ACP schema by the fixture (tests/acp/schema.py).
"""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, text_block
from acp.helpers import embedded_text_resource, image_block, resource_block, resource_link_block
from acp.schema import ClientCapabilities, Implementation

from tests.acp.conftest import AcpEnv, Editor
from tests.support.scripted_llm import Response, Text, Thinking, ToolUse

pytestmark = pytest.mark.anyio

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()


def texts(updates: list[Any]) -> str:
    return "".join(u.content.text for u in updates)


def dumped(update: Any) -> dict[str, Any]:
    out: dict[str, Any] = update.model_dump(by_alias=True, exclude_none=True, mode="json")
    return out


async def test_initialize_advertises_what_tron_does(env: AcpEnv) -> None:
    async with env.editor(initialize=False) as (conn, _editor, _process):
        answer = await conn.initialize(
            protocol_version=PROTOCOL_VERSION + 6, client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="tests", version="1"),
        )  # fmt: skip
    assert answer.protocol_version == PROTOCOL_VERSION
    caps = answer.agent_capabilities
    assert caps is not None and caps.load_session is True
    assert caps.prompt_capabilities is not None
    assert caps.prompt_capabilities.image and caps.prompt_capabilities.embedded_context
    assert not caps.prompt_capabilities.audio
    session_caps = caps.session_capabilities
    assert session_caps is not None
    for name in ("list", "fork", "resume", "close"):
        assert getattr(session_caps, name) is not None, name
    assert answer.auth_methods == []  # the server has a provider key
    assert answer.agent_info is not None and answer.agent_info.name == "tron"


async def test_prompt_streams_asks_permission_and_shows_the_diff(env: AcpEnv) -> None:
    project = env.project("edit")
    (project / "a.txt").write_text("hello world\n")
    env.llm.add(
        Response([
            Thinking("The user wants an edit."),
            Text("Let me change it."),
            ToolUse("Edit", {"file_path": "a.txt", "old_string": "hello", "new_string": "bye"}),
        ]),
        Response([Text("Done: it says bye now.")]),
    )  # fmt: skip
    async with env.editor() as (conn, editor, _process):
        new = await conn.new_session(cwd=str(project), mcp_servers=[])
        sid = new.session_id
        assert new.modes is not None and new.modes.current_mode_id == "default"
        editor.choices = ["allow"]
        answer = await conn.prompt(session_id=sid, prompt=[text_block("edit a.txt")])
        assert answer.stop_reason == "end_turn"
        assert (project / "a.txt").read_text() == "bye world\n"
        assert texts(editor.of("agent_thought_chunk", sid)) == "The user wants an edit."
        assert texts(editor.of("agent_message_chunk", sid)) == (
            "Let me change it.Done: it says bye now."
        )
        [start] = editor.of("tool_call", sid)
        assert start.kind == "edit" and start.title == "Edit a.txt"
        assert start.locations[0].path == str(project / "a.txt")
        [(_, asked, options)] = editor.permissions
        assert asked.tool_call_id == start.tool_call_id and asked.status == "pending"
        assert {o.kind for o in options} == {
            "allow_once", "allow_always", "reject_once", "reject_always"
        }  # fmt: skip
        final = editor.of("tool_call_update", sid)[-1]
        assert final.status == "completed"
        diff = dumped(final.content[0])
        assert diff == {
            "type": "diff", "path": str(project / "a.txt"), "oldText": "hello", "newText": "bye",
        }  # fmt: skip
        # The editor learned the slash commands.
        await editor.wait_for(lambda: editor.of("available_commands_update", sid))
        names = {c.name for c in editor.of("available_commands_update", sid)[0].available_commands}
        assert {"help", "compact", "mode"} <= names
    # The approval is recorded as any client's.
    resolved = env.store("get_events", sid, types=["interaction.resolved"])
    assert [e.payload["decision"] for e in resolved] == ["allow"]


async def test_reject_always_records_a_deny_rule(env: AcpEnv) -> None:
    project = env.project("deny")
    env.llm.add(
        Response([ToolUse("Bash", {"command": "echo no"})]),
        Response([Text("Refused, fine.")]),
        Response([ToolUse("Bash", {"command": "echo no"})]),
        Response([Text("Still refused.")]),
    )
    async with env.editor() as (conn, editor, _process):
        sid = (await conn.new_session(cwd=str(project))).session_id
        editor.choices = ["deny_always"]
        answer = await conn.prompt(session_id=sid, prompt=[text_block("run it")])
        assert answer.stop_reason == "end_turn"
        assert editor.of("tool_call_update", sid)[-1].status == "failed"
        # The rule acts: the same call again is refused without asking.
        await conn.prompt(session_id=sid, prompt=[text_block("run it again")])
        assert len(editor.permissions) == 1
        last = editor.of("tool_call_update", sid)[-1]
        assert last.status == "failed" and "denied" in str(last.raw_output).lower()
    [asked] = env.store("get_events", sid, types=["interaction.requested"])
    rules = env.store("get_events", sid, types=["config.permission_rule"])
    assert [(e.payload["rule"], e.payload["behavior"]) for e in rules] == [
        (asked.payload["suggestion"], "deny")
    ]


async def test_allow_always_records_the_rule_as_other_clients_do(env: AcpEnv) -> None:
    project = env.project("always")
    env.llm.add(
        Response([ToolUse("Bash", {"command": "echo one"})]),
        Response([ToolUse("Bash", {"command": "echo one"})]),
        Response([Text("Twice.")]),
    )
    async with env.editor() as (conn, editor, _process):
        sid = (await conn.new_session(cwd=str(project))).session_id
        editor.choices = ["allow_always"]
        answer = await conn.prompt(session_id=sid, prompt=[text_block("run it twice")])
        assert answer.stop_reason == "end_turn"
        assert len(editor.permissions) == 1  # the second call ran under the new rule
    rules = env.store("get_events", sid, types=["config.permission_rule"])
    assert [e.payload["behavior"] for e in rules] == ["allow"]


async def test_ask_user_question_is_a_permission_request(env: AcpEnv) -> None:
    project = env.project("question")
    env.llm.add(
        Response([ToolUse("AskUser", {"question": "Which one?", "options": ["red", "blue"]})]),
        Response([Text("Blue it is.")]),
    )
    async with env.editor() as (conn, editor, _process):
        sid = (await conn.new_session(cwd=str(project))).session_id
        editor.choices = ["option-1"]
        answer = await conn.prompt(session_id=sid, prompt=[text_block("ask me")])
        assert answer.stop_reason == "end_turn"
        [(_, call, options)] = editor.permissions
        assert call.title == "Which one?"
        assert [o.name for o in options] == ["red", "blue", "Skip"]
    resolved = env.store("get_events", sid, types=["interaction.resolved"])
    assert [e.payload["answer"] for e in resolved] == ["blue"]


async def test_cancel_mid_tool_answers_cancelled(env: AcpEnv) -> None:
    project = env.project("cancel")
    env.llm.add(Response([ToolUse("Bash", {"command": "echo started; sleep 120"})]))
    async with env.editor() as (conn, editor, _process):
        sid = (await conn.new_session(cwd=str(project))).session_id
        editor.choices = ["allow"]
        prompt = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block("sleep")]))

        def running() -> bool:
            return any(
                u.status == "in_progress" and u.content and "started" in u.content[0].content.text
                for u in editor.of("tool_call_update", sid)
            )

        await editor.wait_for(running)
        await conn.cancel(session_id=sid)
        answer = await asyncio.wait_for(prompt, 60)
        assert answer.stop_reason == "cancelled"
        assert editor.of("tool_call_update", sid)[-1].status == "failed"
    results = env.store("get_events", sid, types=["tool.result"])
    assert results[-1].payload.get("interrupted") is True


async def test_load_after_restart_replays_what_was_sent(env: AcpEnv) -> None:
    project = env.project("load")
    (project / "notes.md").write_text("one\n")
    env.llm.add(
        Response([
            Thinking("Plan first."),
            Text("Planning."),
            ToolUse("TodoWrite", {"todos": [
                {"content": "Read the notes", "status": "in_progress"},
                {"content": "Write more", "status": "pending"},
            ]}),
        ]),
        Response([ToolUse("Read", {"file_path": "notes.md"})]),
        Response([ToolUse("Write", {"file_path": "notes.md", "content": "one\ntwo\n"})]),
        Response([Text("All done.")]),
    )  # fmt: skip
    live = Editor()
    async with env.editor(editor=live) as (conn, _, _process):
        sid = (await conn.new_session(cwd=str(project))).session_id
        live.choices = ["allow"]
        answer = await conn.prompt(
            session_id=sid, prompt=[text_block("take notes"), image_block(PNG, "image/png")]
        )
        assert answer.stop_reason == "end_turn"
    # A new tron acp (the editor restarted) loads the session.
    loaded = Editor()
    async with env.editor(editor=loaded) as (conn, _, _process):
        answer = await conn.load_session(cwd=str(project), session_id=sid, mcp_servers=[])
        assert answer.modes is not None and answer.modes.current_mode_id == "default"
    replayed = [u for s, u in loaded.updates if s == sid and u.session_update != (
        "available_commands_update")]  # fmt: skip
    users = [u for u in replayed if u.session_update == "user_message_chunk"]
    assert [u.content.type for u in users] == ["text", "image"]
    assert users[0].content.text == "take notes" and users[1].content.data == PNG

    def shown(updates: list[Any], kind: str) -> list[Any]:
        return [u for u in updates if u.session_update == kind]

    sent = [u for s, u in live.updates if s == sid]
    for kind in ("agent_message_chunk", "agent_thought_chunk"):
        assert texts(shown(replayed, kind)) == texts(shown(sent, kind)), kind
    # Each tool call: the same id, kind, title and locations, and its final status and
    # content as the live stream ended them.
    for start in shown(sent, "tool_call"):
        [again] = [u for u in shown(replayed, "tool_call") if u.tool_call_id == start.tool_call_id]
        for key in ("kind", "title", "locations", "raw_input"):
            assert getattr(again, key) == getattr(start, key), key
        end = [u for u in shown(sent, "tool_call_update") if u.tool_call_id == start.tool_call_id]
        end_again = [
            u for u in shown(replayed, "tool_call_update") if u.tool_call_id == start.tool_call_id
        ]
        assert end_again[-1].status == end[-1].status == "completed"
        assert dumped(end_again[-1])["content"] == dumped(end[-1])["content"]
    assert [dumped(p) for p in shown(replayed, "plan")] == [dumped(p) for p in shown(sent, "plan")]
    assert shown(replayed, "plan")[0].entries[0].status == "in_progress"
    write = next(u for u in shown(replayed, "tool_call") if u.kind == "edit")
    assert dumped(write.content[0])["newText"] == "one\ntwo\n"
    # messageId: the Tron event of each message.
    ids = {u.message_id for u in users}
    assert len(ids) == 1 and next(iter(ids)).startswith("evt_")


async def test_list_fork_resume_close(env: AcpEnv) -> None:
    project = env.project("many")
    env.llm.add(Response([Text("First answer.")]), Response([Text("Second answer.")]))
    async with env.editor() as (conn, editor, _process):
        first = (await conn.new_session(cwd=str(project))).session_id
        await conn.prompt(session_id=first, prompt=[text_block("first question")])
        await conn.prompt(session_id=first, prompt=[text_block("second question")])
        second = (await conn.new_session(cwd=str(project))).session_id
        listed = await conn.list_sessions(cwd=str(project))
        assert [s.session_id for s in listed.sessions] == [second, first]
        by_id = {s.session_id: s for s in listed.sessions}
        assert by_id[first].title == "first question"
        assert by_id[first].cwd == str(project) and by_id[first].updated_at
        assert listed.next_cursor is None
        # Fork at the head: the fork continues with the whole conversation.
        fork = await conn.fork_session(session_id=first, cwd=str(project))
        assert fork.session_id not in (first, second)
        forked = env.store("get_session", fork.session_id)
        assert forked.parent_session_id == first
        env.llm.add(Response([Text("In the fork.")]))
        await conn.prompt(session_id=fork.session_id, prompt=[text_block("go on")])
        seen = env.llm.requests[-1]["messages"]
        assert "second question" in json.dumps(seen)
        # Close: prompts are refused until the session is resumed.
        await conn.close_session(session_id=first)
        with pytest.raises(RequestError) as closed:
            await conn.prompt(session_id=first, prompt=[text_block("hello?")])
        assert closed.value.code == -32002 and "session/resume" in str(closed.value)
    # Resume in a new tron acp: nothing replayed, prompts work.
    async with env.editor() as (conn, editor, _process):
        resumed = await conn.resume_session(session_id=first, cwd=str(project))
        assert resumed.modes is not None
        env.llm.add(Response([Text("Third answer.")]))
        answer = await conn.prompt(session_id=first, prompt=[text_block("third question")])
        assert answer.stop_reason == "end_turn"
        assert not editor.of("user_message_chunk") and not editor.of("tool_call")
        assert texts(editor.of("agent_message_chunk", first)) == "Third answer."
        # Fork at a message: the messageId session/load gives.
        loaded = Editor()
    async with env.editor(editor=loaded) as (conn, _, _process):
        await conn.load_session(cwd=str(project), session_id=first)
        users = [u for u in loaded.of("user_message_chunk", first)]
        at = users[0].message_id  # "first question"
        fork = await conn.fork_session(session_id=first, cwd=str(project), messageId=at)
        env.llm.add(Response([Text("From the first question.")]))
        await conn.prompt(session_id=fork.session_id, prompt=[text_block("and then?")])
        seen = json.dumps(env.llm.requests[-1]["messages"])
        assert "first question" in seen and "second question" not in seen


async def test_list_pages(env: AcpEnv) -> None:
    project = env.project("pages")
    async with env.editor() as (conn, _editor, _process):
        made = [(await conn.new_session(cwd=str(project))).session_id for _ in range(52)]
        first = await conn.list_sessions(cwd=str(project))
        assert len(first.sessions) == 50 and first.next_cursor
        rest = await conn.list_sessions(cwd=str(project), cursor=first.next_cursor)
        assert rest.next_cursor is None
        listed = [s.session_id for s in [*first.sessions, *rest.sessions]]
        assert sorted(listed) == sorted(made) and len(set(listed)) == 52
        with pytest.raises(RequestError) as bad:
            await conn.list_sessions(cwd=str(project), cursor="nonsense")
        assert bad.value.code == -32602


async def test_set_mode_and_mode_changes_made_elsewhere(env: AcpEnv) -> None:
    project = env.project("modes")
    async with env.editor() as (conn, editor, _process):
        new = await conn.new_session(cwd=str(project))
        sid = new.session_id
        assert new.modes is not None
        ids = [m.id for m in new.modes.available_modes]
        assert {"default", "acceptEdits", "plan", "dontAsk"} <= set(ids)
        assert all(m.description for m in new.modes.available_modes)
        await conn.set_session_mode(session_id=sid, mode_id="acceptEdits")
        details = env.server.run_sync(
            lambda: env.server.services.interaction.mode(sid)  # type: ignore[union-attr]
        )
        assert details == "acceptEdits"
        # Another client (the web chat, tron) switches it: the editor is told.
        async with env.server.connect() as other:
            await other.call("session.setMode", {"sessionId": sid, "mode": "plan"})
        await editor.wait_for(
            lambda: (
                [u.current_mode_id for u in editor.of("current_mode_update", sid)][-1:] == ["plan"]
            )
        )
        with pytest.raises(RequestError) as bad:
            await conn.set_session_mode(session_id=sid, mode_id="nonsense")
        assert bad.value.code == -32602 and "nonsense" in str(bad.value)


async def test_model_config_option(env: AcpEnv) -> None:
    project = env.project("model")
    async with env.editor() as (conn, _editor, _process):
        new = await conn.new_session(cwd=str(project))
        [option] = new.config_options
        assert option.id == "model" and option.category == "model"
        assert option.current_value == "claude-sonnet-4-5"
        other = next(o.value for o in option.options if o.value != option.current_value)
        changed = await conn.set_config_option(
            config_id="model", session_id=new.session_id, value=other
        )
        assert changed.config_options[0].current_value == other
        assert env.store("get_session", new.session_id).model == other


async def test_prompt_content_blocks_become_tron_content(env: AcpEnv) -> None:
    project = env.project("content")
    (project / "src.py").write_text("print(1)\n")
    env.llm.add(Response([Text("Seen.")]))
    async with env.editor() as (conn, _editor, _process):
        sid = (await conn.new_session(cwd=str(project))).session_id
        uri = (project / "src.py").as_uri()
        await conn.prompt(session_id=sid, prompt=[
            text_block("look at"),
            resource_link_block("src.py", uri),
            resource_block(embedded_text_resource(uri, "print(1)\n", mime_type="text/x-python")),
            image_block(PNG, "image/png"),
        ])  # fmt: skip
    [user] = env.store("get_events", sid, types=["message.user"])
    content = user.payload["content"]
    assert content[0] == {
        "type": "text",
        "text": f'look at @{project / "src.py"} <context ref="{project / "src.py"}">\n'
        "print(1)\n\n</context>",
    }
    assert content[1]["type"] == "image" and content[1]["source"]["data"] == PNG


async def test_stop_reasons_are_mapped(env: AcpEnv) -> None:
    project = env.project("stops")
    env.llm.add(
        Response([Text("cut")], stop_reason="max_tokens"),
        Response([Text("no")], stop_reason="refusal"),
    )
    async with env.editor() as (conn, _editor, _process):
        sid = (await conn.new_session(cwd=str(project))).session_id
        one = await conn.prompt(session_id=sid, prompt=[text_block("long")])
        two = await conn.prompt(session_id=sid, prompt=[text_block("bad")])
        assert (one.stop_reason, two.stop_reason) == ("max_tokens", "refusal")


async def test_errors_are_acp_errors_with_messages(env: AcpEnv) -> None:
    project = env.project("errors")
    async with env.editor() as (conn, _editor, _process):
        with pytest.raises(RequestError) as unknown:
            await conn.load_session(cwd=str(project), session_id="sess_nope")
        assert unknown.value.code == -32002 and "sess_nope" in str(unknown.value)
        with pytest.raises(RequestError) as missing:
            await conn.new_session(cwd=str(project / "missing"))
        assert missing.value.code == -32602 and "workingDirectory" in str(missing.value)
        with pytest.raises(RequestError) as audio:
            sid = (await conn.new_session(cwd=str(project))).session_id
            from acp.helpers import audio_block

            await conn.prompt(session_id=sid, prompt=[audio_block("AAAA", "audio/wav")])
        assert audio.value.code == -32602 and "audio" in str(audio.value)
        # A failed turn: an error with the provider's message.
        from tests.support.scripted_llm import error_response

        env.llm.add(error_response(400, "invalid_request_error", "prompt is too long"))
        with pytest.raises(RequestError) as failed:
            await conn.prompt(session_id=sid, prompt=[text_block("too long")])
        assert "prompt is too long" in str(failed.value)


async def test_editor_buffers_serve_read_and_edit(env: AcpEnv) -> None:
    """fs capabilities: the agent reads the unsaved buffer and its Edit lands in it;
    the disk is untouched, the contents before and after are recorded."""
    project = env.project("buffers")
    path = project / "app.py"
    path.write_text("x = 1\n")  # on disk
    editor = Editor()
    editor.buffers[str(path)] = "x = 1\ny = 2  # unsaved\n"  # in the editor
    env.llm.add(
        Response([ToolUse("Read", {"file_path": "app.py"})]),
        Response([ToolUse("Edit", {"file_path": "app.py", "old_string": "y = 2",
                                   "new_string": "y = 3"})]),
        Response([Text("Changed y.")]),
    )  # fmt: skip
    async with env.editor(fs=True, editor=editor) as (conn, _, _process):
        sid = (await conn.new_session(cwd=str(project))).session_id
        editor.choices = ["allow"]
        answer = await conn.prompt(session_id=sid, prompt=[text_block("change y")])
        assert answer.stop_reason == "end_turn"
    assert editor.buffers[str(path)] == "x = 1\ny = 3  # unsaved\n"
    assert path.read_text() == "x = 1\n"
    assert editor.writes == [(str(path), "x = 1\ny = 3  # unsaved\n")]
    # The model read the buffer, not the disk.
    assert "unsaved" in json.dumps(env.llm.requests[-2]["messages"])
    [edit] = env.store("get_events", sid, types=["file.edit"])
    assert edit.payload["source"] == "editor"
    assert edit.payload["before"]["hash"] != edit.payload["after"]["hash"]
    [read] = env.store("get_events", sid, types=["file.read"])
    assert read.payload["source"] == "editor"


async def test_stdout_is_protocol_only_and_stdin_closing_ends_it(env: AcpEnv) -> None:
    """Raw: a line that is not JSON-RPC gets nothing on stdout, every stdout line is a
    JSON-RPC message, and closing stdin ends the process with status 0."""
    from tests.acp.conftest import zed_command

    command, args, extra = zed_command()
    process = await asyncio.create_subprocess_exec(
        command, *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env={**_environ(), **extra,
                                             "TRON_HOME": str(env.server.home)},
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": {}}}  # fmt: skip
    process.stdin.write(b"not json\n" + json.dumps(init).encode() + b"\n")
    unknown = {"jsonrpc": "2.0", "id": 2, "method": "session/teleport", "params": {}}
    process.stdin.write(json.dumps(unknown).encode() + b"\n")
    await process.stdin.drain()
    lines = [json.loads(await asyncio.wait_for(process.stdout.readline(), 60)) for _ in range(2)]
    by_id = {m["id"]: m for m in lines}
    assert by_id[1]["result"]["protocolVersion"] == 1
    assert by_id[2]["error"]["code"] == -32601
    process.stdin.close()
    assert await asyncio.wait_for(process.wait(), 60) == 0
    assert await process.stdout.read() == b""
    log = Path(env.server.home / "logs" / "acp.log").read_text()
    assert "stdin closed" in log


def _environ() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k not in ("TRON_DEBUG",)}


async def test_no_provider_key_offers_an_auth_method_that_says_what_to_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server with no provider configured: initialize offers one auth method naming the
    variables, and authenticate answers auth_required until one is set."""
    from tests.acp.conftest import AcpEnv as Env
    from tests.support.server import RunningServer
    from tron_server.server_record import new_record, write_server_record

    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    server = RunningServer(tmp_path / "home").start()
    try:
        import os

        write_server_record(server.home, new_record("127.0.0.1", server.port, pid=os.getpid()))
        bare = Env(server=server, llm=None, root=tmp_path)  # type: ignore[arg-type]
        async with bare.editor(initialize=False) as (conn, _editor, _process):
            answer = await conn.initialize(protocol_version=PROTOCOL_VERSION)
            [method] = answer.auth_methods
            assert "ANTHROPIC_API_KEY" in method.description
            assert "tron server restart" in method.description
            with pytest.raises(RequestError) as refused:
                await conn.authenticate(method_id=method.id)
            assert refused.value.code == -32000
            monkeypatch.setenv("ANTHROPIC_API_KEY", "now-set")  # the server's environment
            await conn.authenticate(method_id=method.id)
    finally:
        server.stop()


async def test_a_server_restart_is_survived(env: AcpEnv) -> None:
    """tron-server restarts while the editor keeps tron acp open: the next prompt attaches
    again, follows the session again and streams as before."""
    project = env.project("restart")
    async with env.editor() as (conn, editor, _process):
        sid = (await conn.new_session(cwd=str(project))).session_id
        await asyncio.to_thread(env.server.restart)
        env.llm.add(Response([Text("Still here.")]))
        answer = await conn.prompt(session_id=sid, prompt=[text_block("are you there?")])
        assert answer.stop_reason == "end_turn"
        assert texts(editor.of("agent_message_chunk", sid)) == "Still here."


async def connected(env: AcpEnv, sid: str, name: str, timeout: float = 120) -> None:
    """Wait until the session's MCP server ``name`` is connected (a cold node start on a
    loaded machine can take longer than a run waits for a server's tools)."""
    async with env.server.connect() as client, asyncio.timeout(timeout):
        while True:
            listed = await client.call("mcp.list", {"sessionId": sid})
            status = {s["name"]: s["status"] for s in listed["servers"]}
            if status.get(name) == "connected":
                return
            await asyncio.sleep(0.2)


async def test_an_editor_mcp_server_is_started_for_the_session(env: AcpEnv) -> None:
    """session/new's mcpServers: the editor's server (the protocol's reference server,
    server-everything, from npm) runs for that session, its tools reach the model and its
    calls ask like any tool; session/load gives a session its servers again."""
    from acp.schema import McpServerStdio

    from tests.mcp.servers import everything_entry

    entry = everything_entry()  # skips with the reason without npm
    project = env.project("mcp")
    server = McpServerStdio(name="everything", command="node", args=[str(entry), "stdio"], env=[])
    env.llm.add(
        Response([ToolUse("mcp__everything__get-sum", {"a": 2, "b": 3})]),
        Response([Text("Five.")]),
    )
    async with env.editor() as (conn, editor, _process):
        sid = (await conn.new_session(cwd=str(project), mcp_servers=[server])).session_id
        await connected(env, sid, "everything")
        editor.choices = ["allow"]
        answer = await conn.prompt(session_id=sid, prompt=[text_block("add 2 and 3")])
        assert answer.stop_reason == "end_turn"
        [start] = editor.of("tool_call", sid)
        assert start.title == "get-sum (everything)" and start.kind == "other"
        final = editor.of("tool_call_update", sid)[-1]
        assert final.status == "completed", final.raw_output
        assert final.content[0].content.text == "The sum of 2 and 3 is 5."
    offered = {t["name"] for t in env.llm.requests[-2].get("tools", [])}
    assert "mcp__everything__get-sum" in offered
    # Another session of the same folder does not have the editor's server.
    async with env.server.connect() as other:
        plain = await other.call("session.create", {"workingDirectory": str(project)})
        listed = await other.call("mcp.list", {"sessionId": plain["id"], "connect": False})
        assert "everything" not in {s["name"] for s in listed["servers"]}
    # Loaded in a new tron acp with the servers: the session has them again.
    env.llm.add(
        Response([ToolUse("mcp__everything__get-sum", {"a": 1, "b": 1})]),
        Response([Text("Two.")]),
    )
    async with env.editor() as (conn, editor, _process):
        await conn.load_session(cwd=str(project), session_id=sid, mcp_servers=[server])
        await connected(env, sid, "everything")
        editor.choices = ["allow"]
        await conn.prompt(session_id=sid, prompt=[text_block("add 1 and 1")])
        final = editor.of("tool_call_update", sid)[-1]
        assert final.content[0].content.text == "The sum of 1 and 1 is 2."


def test_a_file_for_stdout_and_no_server_is_a_useful_error(tmp_path: Path) -> None:
    """A script may redirect stdout to a file (not a pipe); with no server and --no-start,
    initialize answers an ACP error saying what to do; closing stdin ends the process."""
    import subprocess
    import time

    from tests.acp.conftest import zed_command

    command, args, extra = zed_command()
    answers = tmp_path / "out.jsonl"
    environment = {**_environ(), **extra, "TRON_HOME": str(tmp_path / "home"),
                   "TRON_PORT": "1"}  # fmt: skip
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    with answers.open("wb") as stdout:
        process = subprocess.Popen(
            [command, *args, "--no-start"],
            stdin=subprocess.PIPE,
            stdout=stdout,
            stderr=subprocess.PIPE,
            env=environment,
        )
        assert process.stdin is not None and process.stderr is not None
        process.stdin.write(json.dumps(request).encode() + b"\n")
        process.stdin.flush()
        deadline = time.monotonic() + 120
        while not answers.read_text().endswith("\n") and time.monotonic() < deadline:
            time.sleep(0.05)
        process.stdin.close()
        assert process.wait(60) == 0
        assert b"Traceback" not in process.stderr.read()
    [answer] = [json.loads(line) for line in answers.read_text().splitlines()]
    assert answer["id"] == 1 and answer["error"]["code"] == -32603
    assert "No tron-server answers" in answer["error"]["message"]
