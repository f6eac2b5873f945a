"""AskUser over a real server: ask and answer, a second client, a restart while the
question waits, the timeout, an abort, a new message instead of an answer; Notify."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.rpc import complete, new_session, of_type, respond, types, wait_for
from tests.support.scripted_llm import Response, ScriptedLLM, Text, ToolUse
from tests.support.server import RunningServer
from tron_server.client import RpcCallError

pytestmark = pytest.mark.anyio

COLOR = ToolUse("AskUser", {"question": "Which colour?", "options": ["red", "blue"]})


async def test_ask_and_answer(server: RunningServer, llm: ScriptedLLM, tmp_path: Path) -> None:
    llm.add(Response([Text("Let me ask."), COLOR]), Response([Text("Blue it is.")]))
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        stream = client.notifications(session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "paint it"})
        asked = await wait_for(stream, "agent.question")
        assert asked.data["question"] == "Which colour?"
        assert asked.data["options"] == ["red", "blue"] and asked.data["multiSelect"] is False
        state = await client.call("agent.getState", {"sessionId": sid})
        [pending] = state["pendingRequests"]
        assert pending["requestId"] == asked.data["requestId"] and pending["waiting"] is True
        assert state["busy"] is True
        # An answer that does not fit is refused, and the question still waits.
        with pytest.raises(RpcCallError) as bad:
            await respond(client, sid, asked.data["requestId"], ["a", "b"])
        assert bad.value.code == -32602
        answered = await client.call(
            "agent.respond",
            {"sessionId": sid, "requestId": asked.data["requestId"], "answer": "blue"},
        )
        assert answered["accepted"] is True and answered["resumed"] is False
        resolved = await wait_for(stream, "agent.request_resolved")
        assert resolved.data["answer"] == "blue" and resolved.data["outcome"] == "answered"
        done = await complete(stream)
        assert done.data["stopReason"] == "end_turn"

        events = await client.sync(sid)
        kinds = types(events)
        assert kinds.index("interaction.requested") < kinds.index("interaction.resolved")
        [result] = of_type(events, "tool.result")
        assert result["content"] == "The user chose: blue" and result["isError"] is False
        assert of_type(events, "interaction.resolved")[0]["answer"] == "blue"
        assert llm.violations(1) == []
        assert "The user chose: blue" in str(llm.requests[1]["messages"][-1])
        after = await client.call("agent.getState", {"sessionId": sid})
        assert after["pendingRequests"] == []


async def test_a_second_client_answers_first_and_the_other_is_told(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    free = ToolUse("AskUser", {"question": "Name the release?"})
    llm.add(Response([free]), Response([Text("Done.")]))
    async with server.connect() as a, server.connect() as b:
        sid = await new_session(a, tmp_path)
        await b.subscribe(sid)
        stream_a = a.notifications(session_id=sid)
        stream_b = b.notifications(session_id=sid)
        await a.call("agent.message", {"sessionId": sid, "content": "release"})
        asked_a = await wait_for(stream_a, "agent.question")
        asked_b = await wait_for(stream_b, "agent.question")
        request = asked_b.data["requestId"]
        assert asked_a.data["requestId"] == request
        await respond(b, sid, request, "Heliotrope")
        told = await wait_for(stream_a, "agent.request_resolved", requestId=request)
        assert told.data["answer"] == "Heliotrope" and told.data["answeredBy"]
        with pytest.raises(RpcCallError) as late:
            await respond(a, sid, request, "Other")
        assert late.value.code == -32004 and "already answered" in late.value.message
        await complete(stream_a)
        [result] = of_type(await a.sync(sid), "tool.result")
        assert result["content"] == "The user answered: Heliotrope"


async def test_restart_while_a_question_waits_then_answer_it(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    """The question survives the restart; answering it records the answer, runs the calls
    the model made after it, closes the turn and calls the model again."""
    (tmp_path / "notes.txt").write_text("the word is heliotrope\n")
    llm.add(
        Response([Text("First a question."), COLOR, ToolUse("Read", {"file_path": "notes.txt"})]),
        Response([Text("Blue, and the word is heliotrope.")]),
    )
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        stream = client.notifications(session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "go"})
        asked = await wait_for(stream, "agent.question")
    server.restart()
    async with server.connect() as client:
        state = await client.call("agent.getState", {"sessionId": sid})
        assert state["busy"] is False
        [pending] = state["pendingRequests"]
        assert pending["requestId"] == asked.data["requestId"]
        assert pending["resumable"] is True and pending["question"] == "Which colour?"
        assert types(await client.sync(sid))[-1] == "interaction.requested"

        stream = client.notifications(session_id=sid)
        answered = await client.call(
            "agent.respond", {"sessionId": sid, "requestId": pending["requestId"], "answer": "red"}
        )
        assert answered["resumed"] is True
        done = await complete(stream)
        assert done.data["stopReason"] == "end_turn"
        # The same request cannot be answered twice.
        with pytest.raises(RpcCallError) as twice:
            await respond(client, sid, pending["requestId"], "blue")
        assert twice.value.code == -32004

        events = await client.sync(sid)
        results = of_type(events, "tool.result")
        assert results[0]["content"] == "The user chose: red"
        assert "heliotrope" in str(results[1]["content"])
        assert of_type(events, "interaction.resolved")[0]["resumed"] is True
        turn_ends = of_type(events, "stream.turn_end")
        assert [t["turn"] for t in turn_ends] == [1, 2]
        assert llm.violations(1) == []
        assert "heliotrope" in str(llm.requests[1]["messages"][-1])
        state = await client.call("agent.getState", {"sessionId": sid})
        assert state["pendingRequests"] == []


async def test_a_new_message_cancels_a_question_left_by_a_restart(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    llm.add(Response([COLOR]), Response([Text("Fine, something else then.")]))
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        stream = client.notifications(session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "go"})
        await wait_for(stream, "agent.question")
    server.restart()
    async with server.connect() as client:
        stream = client.notifications(session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "never mind"})
        await complete(stream)
        events = await client.sync(sid)
        assert of_type(events, "interaction.resolved")[0]["outcome"] == "cancelled"
        [result] = of_type(events, "tool.result")
        assert result["isError"] is True and "new message" in result["content"]
        assert llm.violations(1) == []
        assert "never mind" in str(llm.requests[1]["messages"][-1])
        assert (await client.call("agent.getState", {"sessionId": sid}))["pendingRequests"] == []


async def test_an_unanswered_question_times_out(
    make_server: Callable[..., RunningServer], llm: ScriptedLLM, tmp_path: Path
) -> None:
    server = make_server(ask_timeout=0.5)
    llm.add(Response([COLOR]), Response([Text("No answer; I will pick blue.")]))
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        stream = client.notifications(session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "go"})
        asked = await wait_for(stream, "agent.question")
        assert asked.data["timeoutSeconds"] == 0.5 and asked.data["expiresAt"]
        resolved = await wait_for(stream, "agent.request_resolved")
        assert resolved.data["outcome"] == "timeout"
        await complete(stream)
        [result] = of_type(await client.sync(sid), "tool.result")
        assert result["isError"] is True and "did not answer within 0.5 s" in result["content"]


async def test_abort_while_a_question_waits(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    llm.add(Response([COLOR]), Response([Text("OK, starting over.")]))
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        stream = client.notifications(session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "go"})
        asked = await wait_for(stream, "agent.question")
        assert (await client.call("agent.abort", {"sessionId": sid}))["aborted"] is True
        done = await complete(stream)
        assert done.data["stopReason"] == "aborted"
        events = await client.sync(sid)
        assert of_type(events, "interaction.resolved")[0]["outcome"] == "aborted"
        [result] = of_type(events, "tool.result")
        assert result["isError"] is True and result.get("interrupted") is True
        assert "Which colour?" in result["content"] and "aborted" in result["content"]
        with pytest.raises(RpcCallError):
            await respond(client, sid, asked.data["requestId"], "red")
        # The session goes on with a valid history.
        await client.call("agent.message", {"sessionId": sid, "content": "again"})
        await complete(stream)
        assert llm.violations(1) == []


async def test_notify_reaches_every_client_and_is_recorded(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    note = ToolUse("Notify", {"title": "Build finished", "body": "All green", "urgency": "high"})
    llm.add(Response([note]), Response([Text("Told you.")]))
    async with server.connect() as a, server.connect() as elsewhere:
        sid = await new_session(a, tmp_path)
        other = elsewhere.notifications(["session.notification"])  # not subscribed to sid
        stream = a.notifications(session_id=sid)
        await a.call("agent.message", {"sessionId": sid, "content": "build"})
        seen = await other.next(timeout=20)
        assert seen.session_id == sid
        assert seen.data["title"] == "Build finished" and seen.data["urgency"] == "high"
        await complete(stream)
        [recorded] = of_type(await a.sync(sid), "notification.user")
        assert recorded["body"] == "All green" and recorded["toolCallId"]


async def test_a_client_that_reconnects_finds_the_question_and_answers_it(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    """The asking client goes away while the turn waits (no restart); a new connection
    lists the request in agent.getState and answers it."""
    llm.add(Response([COLOR]), Response([Text("Red it is.")]))
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        stream = client.notifications(session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "paint"})
        asked = await wait_for(stream, "agent.question")
    async with server.connect() as client:
        state = await client.call("agent.getState", {"sessionId": sid})
        assert state["busy"] is True
        [pending] = state["pendingRequests"]
        assert pending["requestId"] == asked.data["requestId"] and pending["waiting"] is True
        await client.subscribe(sid)
        stream = client.notifications(session_id=sid)
        answered = await respond(client, sid, pending["requestId"], "red")
        assert answered["resumed"] is False
        await complete(stream)
        [result] = of_type(await client.sync(sid), "tool.result")
        assert result["content"] == "The user chose: red"


async def test_abort_ends_a_question_left_by_a_restart(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    """Nothing runs after the restart, yet agent.abort ends the pending question as it
    ends a live wait: aborted, an interrupted result, no model call; the session goes on."""
    llm.add(Response([COLOR, ToolUse("Read", {"file_path": "x"}, id="t_after")]))
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        stream = client.notifications(session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "go"})
        asked = await wait_for(stream, "agent.question")
    server.restart()
    async with server.connect() as client:
        await client.subscribe(sid)
        stream = client.notifications(session_id=sid)
        assert (await client.call("agent.abort", {"sessionId": sid}))["aborted"] is True
        resolved = await wait_for(stream, "agent.request_resolved")
        assert resolved.data["outcome"] == "aborted"
        assert (await complete(stream)).data["stopReason"] == "aborted"
        state = await client.call("agent.getState", {"sessionId": sid})
        assert state["pendingRequests"] == [] and state["busy"] is False
        events = await client.sync(sid)
        assert of_type(events, "interaction.resolved")[0]["outcome"] == "aborted"
        results = of_type(events, "tool.result")
        assert [r["toolCallId"] for r in results] == [asked.data["toolCallId"], "t_after"]
        assert all(r["isError"] and r.get("interrupted") for r in results)
        assert "aborted" in results[0]["content"]
        assert of_type(events, "notification.interrupted")
        assert len(llm.requests) == 1  # the model was not called again
        with pytest.raises(RpcCallError):
            await respond(client, sid, asked.data["requestId"], "red")
        assert (await client.call("agent.abort", {"sessionId": sid}))["aborted"] is False
        llm.add(Response([Text("Starting over.")]))
        await client.call("agent.message", {"sessionId": sid, "content": "again"})
        await complete(stream)
        assert llm.violations(1) == []
