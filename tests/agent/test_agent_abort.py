"""Abort, busy/queue, provider failures, conflicts and shutdown of the agent runtime."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.agent.harness import Harness, assert_event_order
from tests.support.scripted_llm import (
    Response,
    ScriptedLLM,
    Text,
    Thinking,
    ToolUse,
    error_response,
)
from tests.support.server import RunningServer
from tests.tools.proctree_script import (
    KILL_DEADLINE,
    complete,
    survivors,
    tree_pids,
    write_tree_script,
)
from tron_server.agent.turn import ABORTED_RESULT
from tron_server.errors import AgentBusyError, SessionNotActiveError, SessionNotFoundError
from tron_server.hooks.base import HookContext, HookDecision

pytestmark = pytest.mark.anyio


async def wait_text(h: Harness, session_id: str, needle: str, timeout: float = 10.0) -> None:
    with anyio.fail_after(timeout):
        while needle not in "".join(d["delta"] for d in h.of(session_id, "agent.text_delta")):
            await anyio.sleep(0.01)


async def test_abort_mid_stream_records_the_partial_message_and_the_next_turn_is_valid(
    h: Harness,
) -> None:
    h.llm.add(
        Response(
            [Thinking("pondering the question"), Text("The answer starts like this")],
            hang=True,
        )
    )
    s = await h.session()
    await h.orch.send_message(s.id, "question")
    await wait_text(h, s.id, "like this")
    state = h.orch.get_state(s.id)
    assert state["busy"] is True and state["turn"] == 1
    assert state["text"] == "The answer starts like this"
    assert state["thinking"] == "pondering the question"

    started = time.monotonic()
    assert await h.orch.abort(s.id) is True
    with anyio.fail_after(1):  # the stream is cut within a second
        await h.llm.disconnected.wait()
    assert time.monotonic() - started < 5
    done = (await h.wait_for(s.id, "agent.complete"))[-1]
    assert done["stopReason"] == "aborted"
    assert not h.orch.is_running(s.id)

    path = await h.path(s.id)
    assert [e.type for e in path][1:] == [
        "message.user", "stream.turn_start", "message.assistant",
        "notification.interrupted", "stream.turn_end",
    ]  # fmt: skip
    assistant = path[3].payload
    assert assistant["interrupted"] is True and assistant["stopReason"] == "aborted"
    assert assistant["content"] == [{"type": "text", "text": "The answer starts like this"}]
    assert assistant["partialThinking"] == "pondering the question"
    assert path[-1].payload["stopReason"] == "aborted"
    assert h.of(s.id, "agent.turn_end")[-1]["stopReason"] == "aborted"

    h.llm.add(Response([Text("Continuing.")]))
    await h.run(s.id, "go on")
    assert h.llm.violations(-1) == []
    roles = [m.role for m in h.llm.messages(-1)]
    assert roles == ["user", "assistant", "user"]
    assert await h.orch.abort(s.id) is False  # idle now


async def test_abort_after_a_complete_tool_call_streamed(h: Harness) -> None:
    h.llm.add(
        Response(
            [ToolUse("Echo", {"text": "never"}, id="toolu_done"), Text("and now some text")],
            hang=True,
        )
    )
    s = await h.session()
    await h.orch.send_message(s.id, "go")
    await wait_text(h, s.id, "some text")
    await h.orch.abort(s.id)
    path = await h.path(s.id)
    assert_event_order(path)
    types = [e.type for e in path][1:]
    assert types == [
        "message.user", "stream.turn_start", "message.assistant", "tool.call", "tool.result",
        "notification.interrupted", "stream.turn_end",
    ]  # fmt: skip
    assistant = path[3].payload
    assert [b["type"] for b in assistant["content"]] == ["tool_use", "text"]
    result = path[5].payload
    assert result["toolCallId"] == "toolu_done" and result["isError"] is True
    assert result["content"] == ABORTED_RESULT
    assert h.echo.calls == []  # never ran

    h.llm.add(Response([Text("ok")]))
    await h.run(s.id, "next")
    assert h.llm.violations(-1) == []
    sent = h.llm.messages(-1)
    assert sent[1].tool_use_ids() == ["toolu_done"]
    assert sent[2].tool_result_ids() == ["toolu_done"]


async def test_abort_in_the_middle_of_a_slow_tool(h: Harness) -> None:
    h.llm.add(
        Response([Text("Waiting."), ToolUse("Slow", {"seconds": 60}, id="toolu_slow"),
                  ToolUse("Echo", {"text": "after"}, id="toolu_after")]),
    )  # fmt: skip
    s = await h.session()
    await h.orch.send_message(s.id, "wait")
    with anyio.fail_after(10):
        await h.slow.started.wait()
    state = h.orch.get_state(s.id)
    calls = {c["toolCallId"]: c for c in state["toolCalls"]}
    assert calls["toolu_slow"]["status"] == "running"
    assert calls["toolu_slow"]["output"] == "working...\n"
    assert h.of(s.id, "agent.tool_output") == [
        {"turn": 1, "toolCallId": "toolu_slow", "chunk": "working...\n"}
    ]
    with anyio.fail_after(1):  # the tool is cancelled and the run records it within 1 s
        assert await h.orch.abort(s.id) is True
    assert h.slow.cancelled
    assert h.echo.calls == []
    path = await h.path(s.id)
    assert_event_order(path)
    results = [e.payload for e in path if e.type == "tool.result"]
    # The running tool keeps what it printed, marked interrupted; the next one never ran.
    kept = f"working...\n\n[{ABORTED_RESULT}]"
    assert [(r["toolCallId"], r["isError"], r["content"], r["interrupted"]) for r in results] == [
        ("toolu_slow", True, kept, True),
        ("toolu_after", True, ABORTED_RESULT, True),
    ]
    [end] = h.of(s.id, "agent.tool_end")  # the live card of the cut call, never of toolu_after
    assert end["toolCallId"] == "toolu_slow" and end["isError"] is True
    assert end["content"] == kept and end["interrupted"] is True
    assert path[-1].type == "stream.turn_end" and path[-1].payload["stopReason"] == "aborted"
    assert (await h.wait_for(s.id, "agent.complete"))[-1]["stopReason"] == "aborted"

    h.llm.add(Response([Text("fine")]))
    await h.run(s.id, "next")
    assert h.llm.violations(-1) == []


async def test_busy_sessions_refuse_or_queue(h: Harness) -> None:
    words = " ".join(f"w{i}" for i in range(30))
    h.llm.add(Response([Text(words)], delay=0.01), Response([Text("second reply")]))
    s = await h.session()
    await h.orch.send_message(s.id, "first")
    with pytest.raises(AgentBusyError) as info:
        await h.orch.send_message(s.id, "too soon")
    assert info.value.code == -32003 and info.value.retryable
    queued = await h.orch.send_message(s.id, "second", queue=True)
    assert queued["queued"] is True
    assert h.orch.get_state(s.id)["queued"] == 1
    completes = await h.wait_for(s.id, "agent.complete", 2)
    assert [c["stopReason"] for c in completes] == ["end_turn", "end_turn"]
    assert h.llm.violations(1) == []
    second = h.llm.messages(1)
    assert [m.role for m in second] == ["user", "assistant", "user"]
    user_turns = [e.payload["turn"] for e in await h.path(s.id) if e.type == "message.user"]
    assert user_turns == [1, 2]


async def test_messages_to_missing_or_ended_sessions_are_refused(h: Harness) -> None:
    with pytest.raises(SessionNotFoundError):
        await h.orch.send_message("sess_nope", "hi")
    s = await h.session()
    await h.store.end_session(s.id)
    with pytest.raises(SessionNotActiveError):
        await h.orch.send_message(s.id, "hi")


async def test_overloaded_after_retries_is_recorded_and_notified(h: Harness) -> None:
    # max_retries=2 in the harness: three 529s exhaust it.
    h.llm.add(error_response(529, repeat=3))
    s = await h.session()
    done = await h.run(s.id, "hello?")
    assert done["stopReason"] == "error"
    assert len(h.llm.requests) == 3
    path = await h.path(s.id)
    assert [e.type for e in path][1:] == [
        "message.user", "stream.turn_start", "error.provider", "turn.failed", "stream.turn_end",
    ]  # fmt: skip
    error = path[3].payload
    assert error["category"] == "overloaded" and error["retryable"] is True
    assert error["statusCode"] == 529 and "Overloaded" in error["message"]
    assert path[4].payload["recoverable"] is True
    [note] = h.of(s.id, "agent.error")
    assert note["category"] == "overloaded" and note["retryable"] is True

    h.llm.add(Response([Text("back")]))
    await h.run(s.id, "retry")
    assert h.llm.violations(-1) == []
    assert [m.role for m in h.llm.messages(-1)] == ["user"]  # both prompts, merged


async def test_a_mid_stream_error_event_keeps_the_partial_text(h: Harness) -> None:
    h.llm.add(
        Response(
            [Text("Half an"), ToolUse("Echo", {"text": "z"}, id="toolu_z"), Text("answer")],
            error_event="overloaded_error",
        )
    )
    s = await h.session()
    done = await h.run(s.id, "go")
    assert done["stopReason"] == "error"
    assert len(h.llm.requests) == 1  # streamed output is never retried
    path = await h.path(s.id)
    types = [e.type for e in path][1:]
    assert types == [
        "message.user", "stream.turn_start", "message.assistant", "tool.call", "tool.result",
        "error.provider", "turn.failed", "stream.turn_end",
    ]  # fmt: skip
    assistant = path[3].payload
    assert assistant["interrupted"] is True and assistant["stopReason"] == "error"
    assert assistant["content"][0] == {"type": "text", "text": "Half an"}
    assert h.echo.calls == []
    assert h.of(s.id, "agent.error")[0]["category"] == "overloaded"
    h.llm.add(Response([Text("ok")]))
    await h.run(s.id, "again")
    assert h.llm.violations(-1) == []


async def test_an_unknown_provider_fails_the_turn_clearly(h: Harness) -> None:
    s = await h.session(provider="nonexistent")

    def factory(provider: str, model: str) -> Any:
        raise ValueError(f"unknown provider {provider!r}")

    h.orch.providers = factory
    h.orch._deps.providers = factory
    done = await h.run(s.id, "hi")
    assert done["stopReason"] == "error"
    [note] = h.of(s.id, "agent.error")
    assert "unknown provider" in note["message"]
    assert "error.provider" in await h.types(s.id)


async def test_a_head_moved_by_someone_else_stops_the_turn(h: Harness) -> None:
    h.llm.add(Response([ToolUse("Slow", {"seconds": 60}, id="toolu_s")]))
    s = await h.session()
    await h.orch.send_message(s.id, "wait")
    with anyio.fail_after(10):
        await h.slow.started.wait()
    # Another writer (bypassing the runtime) moves the head under the running turn.
    await h.store.append(s.id, "metadata.tag", {"tag": "intruder"})
    await h.orch.abort(s.id)
    done = (await h.wait_for(s.id, "agent.complete"))[-1]
    assert done["stopReason"] == "error"
    assert any(n["category"] == "conflict" for n in h.of(s.id, "agent.error"))
    # Nothing was written after the intruder's event.
    assert (await h.path(s.id))[-1].type == "metadata.tag"


async def test_hooks_block_or_modify_tool_calls_and_are_recorded(h: Harness) -> None:
    hooks = h.orch.hooks
    assert hooks is not None

    async def guard(ctx: HookContext) -> HookDecision:
        assert ctx.tool_input is not None
        if ctx.tool_input.get("text") == "forbidden":
            return HookDecision(action="block", reason="not allowed here")
        return HookDecision(action="modify", tool_input={"text": ctx.tool_input["text"].upper()})

    hooks.register("guard", "PreToolUse", guard, matcher="Echo")
    h.llm.add(
        Response([ToolUse("Echo", {"text": "forbidden"}, id="t1"),
                  ToolUse("Echo", {"text": "quiet"}, id="t2")]),
        Response([Text("ok")]),
    )  # fmt: skip
    s = await h.session()
    await h.run(s.id, "try")
    assert h.echo.calls == ["QUIET"]
    path = await h.path(s.id)
    assert_event_order(path)
    results = {e.payload["toolCallId"]: e.payload for e in path if e.type == "tool.result"}
    assert results["t1"]["isError"] is True and "not allowed here" in results["t1"]["content"]
    assert results["t2"]["content"] == "echo: QUIET"
    # The model's own arguments stay in tool.call (reconstruction restores from them).
    calls = {e.payload["toolCallId"]: e.payload for e in path if e.type == "tool.call"}
    assert calls["t2"]["arguments"] == {"text": "quiet"}
    types = [e.type for e in path]
    assert types.count("hook.triggered") == 2 and types.count("hook.completed") == 2
    assert h.llm.violations(1) == []


async def test_shutdown_aborts_running_turns(h: Harness) -> None:
    h.llm.add(Response([Text("forever and")], hang=True))
    s = await h.session()
    await h.orch.send_message(s.id, "go")
    await wait_text(h, s.id, "forever")
    with anyio.fail_after(5):
        await h.orch.shutdown()
    assert not h.orch.is_running(s.id)
    assert (await h.path(s.id))[-1].payload["stopReason"] == "aborted"
    with pytest.raises(Exception, match="shutting down"):
        await h.orch.send_message(s.id, "more")


async def test_a_nul_byte_in_a_tool_path_fails_the_call_not_the_turn(h: Harness) -> None:
    h.llm.add(
        Response([ToolUse("Read", {"file_path": "notes\x00.txt"}, id="toolu_nul")]),
        Response([Text("That path was invalid.")]),
    )
    s = await h.session()
    done = await h.run(s.id, "read it")
    assert done["stopReason"] == "end_turn"
    [result] = [e.payload for e in await h.path(s.id) if e.type == "tool.result"]
    assert result["isError"] is True and "NUL byte" in result["content"]
    assert h.llm.violations(-1) == []


# -- through the real server, with the real Bash tool ----------------------------------


async def test_abort_over_the_server_keeps_bash_output_and_ends_its_process_tree(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    script = write_tree_script(tmp_path)
    command = f"echo 'building the tree'; bash {script}"
    llm.add(
        Response([Text("Running it."), ToolUse("Bash", {"command": command}, id="toolu_bash")]),
        Response([Text("Stopped, then continued.")]),
    )
    async with server.connect() as client:
        session = await client.call(
            "session.create", {"workingDirectory": str(tmp_path), "provider": "anthropic"}
        )
        sid = session["id"]
        stream = client.notifications(session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "prompt": "build the tree"})
        printed = ""
        with anyio.fail_after(20):
            while not complete(printed):
                note = await stream.next()
                if note.method == "agent.tool_output":
                    printed += note.data["chunk"]
        pids = tree_pids(printed)
        assert survivors(pids) == pids

        started = time.monotonic()
        await client.call("agent.abort", {"sessionId": sid})
        elapsed = time.monotonic() - started
        assert survivors(pids) == {}  # every process the command started is gone
        assert elapsed < KILL_DEADLINE, f"abort took {elapsed:.2f} s"

        notes = []
        with anyio.fail_after(10):
            while not notes or notes[-1].method != "agent.complete":
                notes.append(await stream.next())
        assert notes[-1].data["stopReason"] == "aborted"
        [end] = [n.data for n in notes if n.method == "agent.tool_end"]
        content = end["content"]
        # The card keeps what the command printed, then says it was interrupted.
        assert content.startswith("building the tree\n") and "root " in content
        assert content.endswith(f"\n\n[{ABORTED_RESULT}]")
        assert end["interrupted"] is True and end["isError"] is True

        events = await client.sync(sid)
        [result] = [e["payload"] for e in events if e["type"] == "tool.result"]
        assert result["content"] == content and result["interrupted"] is True
        assert result["isError"] is True

        # The history stays valid: the next turn sends the kept output to the model.
        await client.call("agent.message", {"sessionId": sid, "prompt": "go on"})
        with anyio.fail_after(20):
            while (await stream.next()).method != "agent.complete":
                pass
        assert llm.violations(-1) == []
        assert "building the tree" in str(llm.requests[-1]["messages"])


@pytest.mark.parametrize("step", ["session_start", "on_stop"])
async def test_abort_cancels_a_hanging_session_start_or_stop_step(h: Harness, step: str) -> None:
    # The SessionStart and Stop hook steps run under the run's abort scope: an abort
    # ends them (and the run), a later message runs as usual.
    entered = anyio.Event()
    cancelled: list[bool] = []

    async def hang(*_args: Any) -> None:
        entered.set()
        try:
            await anyio.sleep_forever()
        except BaseException:
            cancelled.append(True)
            raise

    setattr(h.orch._deps, step, hang)
    h.llm.add(Response([Text("done")]))
    s = await h.session()
    await h.orch.send_message(s.id, "go")
    with anyio.fail_after(5):
        await entered.wait()
    assert await h.orch.abort(s.id) is True
    with anyio.fail_after(5):
        while h.orch.is_running(s.id):
            await anyio.sleep(0.01)
    assert cancelled == [True]
    setattr(h.orch._deps, step, None)
    h.llm.add(Response([Text("again")]))
    await h.run(s.id, "once more")
    assert h.of(s.id, "agent.complete")
