"""Folder trust through ACP: a session in an untrusted folder that defines configuration
asks, once, through ``session/request_permission`` before its first prompt runs."""

from __future__ import annotations

import pytest
from acp import text_block

from tests.acp.conftest import AcpEnv
from tests.support.scripted_llm import Response, Text
from tests.trust.hostile import DEFINES, Hostile, make_hostile
from tron_server.trust import TrustStore

pytestmark = pytest.mark.anyio


def hostile(env: AcpEnv, name: str) -> Hostile:
    base = env.root / name
    base.mkdir()
    return make_hostile(base)


async def test_an_untrusted_folder_is_asked_about_and_a_refusal_keeps_it_inert(
    env: AcpEnv,
) -> None:
    folder = hostile(env, "trust-refused")
    env.llm.add(Response([Text("Hello.")]), Response([Text("Again.")]))
    async with env.editor() as (conn, editor, _process):
        sid = (await conn.new_session(cwd=str(folder.root))).session_id
        assert editor.permissions == []  # nothing asked before the first prompt
        editor.choices = ["without"]
        answer = await conn.prompt(session_id=sid, prompt=[text_block("hi")])
        assert answer.stop_reason == "end_turn"
        [(asked_in, call, options)] = editor.permissions
        assert asked_in == sid
        assert call.title.startswith(f"Trust this folder? It defines: {DEFINES['hooks']} hooks")
        assert "1 MCP server" in call.title
        assert [(o.name, o.kind) for o in options] == [
            ("Trust this folder", "allow_once"),
            ("Continue without its settings", "reject_once"),
        ]
        [shown] = [u for u in editor.of("tool_call", sid) if u.tool_call_id == call.tool_call_id]
        assert shown.locations[0].path == str(folder.root)
        # Asked once: the next prompt, and another session in the folder, are not asked.
        await conn.prompt(session_id=sid, prompt=[text_block("again")])
        other = (await conn.new_session(cwd=str(folder.root))).session_id
        env.llm.add(Response([Text("Third.")]))
        await conn.prompt(session_id=other, prompt=[text_block("third")])
        assert len(editor.permissions) == 1
    # A new connection resuming the session asks again (the folder is still untrusted).
    env.llm.add(Response([Text("Resumed.")]))
    async with env.editor() as (conn, editor, _process):
        await conn.resume_session(session_id=sid, cwd=str(folder.root))
        editor.choices = ["without"]
        await conn.prompt(session_id=sid, prompt=[text_block("back")])
        assert len(editor.permissions) == 1
    assert folder.marked() == {}
    assert TrustStore(env.server.home).is_trusted(folder.root) is None


async def test_trusting_the_folder_records_it_and_its_configuration_acts(env: AcpEnv) -> None:
    folder = hostile(env, "trust-given")
    env.llm.add(Response([Text("Hello.")]))
    async with env.editor() as (conn, editor, _process):
        sid = (await conn.new_session(cwd=str(folder.root))).session_id
        editor.choices = ["trust"]
        answer = await conn.prompt(session_id=sid, prompt=[text_block("hi")])
        assert answer.stop_reason == "end_turn"
        assert len(editor.permissions) == 1
        ended = editor.of("tool_call_update", sid)[0]
        assert ended.status == "completed" and "Trusted" in ended.content[0].content.text
    assert TrustStore(env.server.home).is_trusted(folder.root) == folder.root
    # The turn after the answer ran the folder's hooks.
    marked = folder.marked()
    assert marked.get("UserPromptSubmit") == 2  # its .claude and .tron hooks
    # A trusted folder is never asked about again, in a new connection either.
    folder.clear()
    env.llm.add(Response([Text("Welcome back.")]))
    async with env.editor() as (conn, editor, _process):
        sid = (await conn.new_session(cwd=str(folder.root))).session_id
        await conn.prompt(session_id=sid, prompt=[text_block("hello again")])
        assert editor.permissions == []
    assert folder.marked().get("UserPromptSubmit") == 2


async def test_a_folder_without_configuration_is_not_asked_about(env: AcpEnv) -> None:
    project = env.project("plain")
    env.llm.add(Response([Text("Hi.")]))
    async with env.editor() as (conn, editor, _process):
        sid = (await conn.new_session(cwd=str(project))).session_id
        await conn.prompt(session_id=sid, prompt=[text_block("hi")])
        assert editor.permissions == []


async def test_a_cancelled_question_cancels_the_prompt_and_comes_again(env: AcpEnv) -> None:
    folder = hostile(env, "trust-cancelled")
    env.llm.add(Response([Text("Now.")]))
    async with env.editor() as (conn, editor, _process):
        sid = (await conn.new_session(cwd=str(folder.root))).session_id
        editor.choices = [None]  # the editor cancels (as it does when its prompt is cancelled)
        answer = await conn.prompt(session_id=sid, prompt=[text_block("hi")])
        assert answer.stop_reason == "cancelled"
        assert env.store("get_events", sid, types=["message.user"]) == []  # nothing was sent
        editor.choices = ["without"]
        answer = await conn.prompt(session_id=sid, prompt=[text_block("hi again")])
        assert answer.stop_reason == "end_turn"
        assert len(editor.permissions) == 2
    assert folder.marked() == {}
