"""Full agent turns through the real Anthropic adapter and the scripted LLM:
recorded event order (reference 004), notifications, tool calls, the history the
model receives on the next call, forks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.agent.harness import MODEL, Harness, assert_event_order
from tests.support.scripted_llm import Response, Text, Thinking, ToolUse, Usage
from tron_events.messages import ToolResultBlock, ToolUseBlock
from tron_server.agent import Orchestrator
from tron_server.hooks import build_hook_engine
from tron_server.tools.base import ToolRegistry

pytestmark = pytest.mark.anyio


async def test_a_text_turn_records_and_notifies_in_order(h: Harness) -> None:
    h.llm.add(Response([Thinking("hmm", signature="sig1"), Text("Hello there, friend.")],
                       usage=Usage(input_tokens=50, output_tokens=7)))  # fmt: skip
    s = await h.session()
    accepted = await h.orch.send_message(s.id, "hi")
    assert accepted["accepted"] is True and accepted["queued"] is False
    assert accepted["turn"] == 1
    done = (await h.wait_for(s.id, "agent.complete"))[-1]
    assert done["stopReason"] == "end_turn" and done["turns"] == 1

    assert await h.types(s.id) == [
        "session.start", "message.user", "stream.turn_start", "message.assistant",
        "stream.turn_end",
    ]  # fmt: skip
    path = await h.path(s.id)
    user, start, assistant, end = path[1:]
    assert user.payload == {"content": "hi", "turn": 1}
    assert start.payload == {"turn": 1}
    assert assistant.payload["turn"] == 1
    assert assistant.payload["content"] == [
        {"type": "thinking", "thinking": "hmm", "signature": "sig1", "provider": "anthropic"},
        {"type": "text", "text": "Hello there, friend."},
    ]
    assert assistant.payload["stopReason"] == "end_turn"
    assert assistant.payload["model"] == MODEL
    assert assistant.payload["tokenUsage"]["inputTokens"] == 50
    assert assistant.payload["tokenUsage"]["outputTokens"] == 7
    assert "interrupted" not in assistant.payload
    assert end.payload["turn"] == 1 and end.payload["stopReason"] == "end_turn"
    assert end.payload["tokenUsage"]["inputTokens"] == 50
    assert end.payload["cost"] is not None and end.payload["cost"] > 0

    methods = h.methods(s.id)
    assert methods[0] == "agent.turn_start" and methods[-2:] == ["agent.turn_end", "agent.complete"]
    deltas = "".join(d["delta"] for d in h.of(s.id, "agent.text_delta"))
    assert deltas == "Hello there, friend."
    assert "".join(d["delta"] for d in h.of(s.id, "agent.thinking_delta")) == "hmm"
    turn_end = h.of(s.id, "agent.turn_end")[0]
    assert turn_end["usage"]["inputTokens"] == 50 and turn_end["usage"]["totalTokens"] == 57
    assert turn_end["cost"] == end.payload["cost"]
    assert not h.orch.is_running(s.id)
    assert h.orch.get_state(s.id)["busy"] is False

    request = h.llm.requests[0]
    assert request["model"] == MODEL
    assert request["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    ] or (request["messages"][0]["role"] == "user")
    assert "Echo" in [t["name"] for t in request["tools"]]
    assert request["system"]


async def test_tool_turns_follow_the_004_order_and_the_next_call_is_valid(h: Harness) -> None:
    h.llm.add(
        Response([Text("Echoing twice."), ToolUse("Echo", {"text": "a"}, id="toolu_a"),
                  ToolUse("Echo", {"text": "b"}, id="toolu_b")]),
        Response([Text("Both echoed.")]),
    )  # fmt: skip
    s = await h.session()
    done = await h.run(s.id, "echo a and b")
    assert done == {"turns": 2, "stopReason": "end_turn", "runId": done["runId"]}
    assert h.echo.calls == ["a", "b"]

    path = await h.path(s.id)
    assert [e.type for e in path] == [
        "session.start", "message.user",
        "stream.turn_start", "message.assistant", "tool.call", "tool.call",
        "file.read", "tool.result", "file.read", "tool.result", "stream.turn_end",
        "stream.turn_start", "message.assistant", "stream.turn_end",
    ]  # fmt: skip
    assert_event_order(path)
    calls = [e.payload for e in path if e.type == "tool.call"]
    assert calls == [
        {"toolCallId": "toolu_a", "name": "Echo", "arguments": {"text": "a"}, "turn": 1},
        {"toolCallId": "toolu_b", "name": "Echo", "arguments": {"text": "b"}, "turn": 1},
    ]
    results = [e.payload for e in path if e.type == "tool.result"]
    assert [(r["toolCallId"], r["content"], r["isError"]) for r in results] == [
        ("toolu_a", "echo: a", False), ("toolu_b", "echo: b", False)
    ]  # fmt: skip
    assert all(r["duration"] >= 0 for r in results)
    assert [e.payload["turn"] for e in path if e.type == "message.assistant"] == [1, 2]

    # The second call carried the tool results, in a history the API accepts.
    assert h.llm.violations(1) == []
    second = h.llm.messages(1)
    assert [m.role for m in second] == ["user", "assistant", "user"]
    assert second[1].tool_use_ids() == ["toolu_a", "toolu_b"]
    assert second[2].tool_result_ids() == ["toolu_a", "toolu_b"]
    result_a = second[2].content[0]
    assert isinstance(result_a, ToolResultBlock) and result_a.content == "echo: a"

    # Notifications: tool start/end pairs with the arguments and results.
    starts = h.of(s.id, "agent.tool_start")
    ends = h.of(s.id, "agent.tool_end")
    assert [(d["toolCallId"], d["arguments"]) for d in starts] == [
        ("toolu_a", {"text": "a"}), ("toolu_b", {"text": "b"})
    ]  # fmt: skip
    assert [(d["toolCallId"], d["isError"], d["content"]) for d in ends] == [
        ("toolu_a", False, "echo: a"), ("toolu_b", False, "echo: b")
    ]  # fmt: skip
    assert [d["turn"] for d in h.of(s.id, "agent.turn_start")] == [1, 2]

    # A second message continues the numbering and sends the whole history.
    h.llm.add(Response([Text("Again.")]))
    await h.run(s.id, "once more")
    assert h.llm.violations(2) == []
    assert [m.role for m in h.llm.messages(2)] == ["user", "assistant", "user", "assistant", "user"]
    state = await h.store.get_state_at_head(s.id)
    assert state.turn_count == 3


async def test_unknown_tools_and_bad_arguments_become_error_results(h: Harness) -> None:
    h.llm.add(
        Response([ToolUse("Nope", {}, id="toolu_x"), ToolUse("Echo", {"txt": 1}, id="toolu_y")]),
        Response([Text("I see.")]),
    )
    s = await h.session()
    await h.run(s.id, "go")
    results = [e.payload for e in await h.path(s.id) if e.type == "tool.result"]
    assert [r["isError"] for r in results] == [True, True]
    assert "Unknown tool 'Nope'" in results[0]["content"]
    assert h.llm.violations(1) == []


async def test_max_turns_stops_the_loop_with_a_valid_history(h: Harness) -> None:
    h.orch.max_turns_per_message = 2
    h.orch._deps.max_turns = 2
    for i in range(2):
        h.llm.add(Response([ToolUse("Echo", {"text": str(i)})]))
    s = await h.session()
    done = await h.run(s.id, "loop")
    assert done["stopReason"] == "max_turns" and done["turns"] == 2
    assert_event_order(await h.path(s.id))
    h.llm.add(Response([Text("stopped")]))
    await h.run(s.id, "continue")
    assert h.llm.violations(-1) == []


async def test_a_fork_then_a_new_turn_on_the_fork(h: Harness) -> None:
    h.llm.add(
        Response([ToolUse("Echo", {"text": "x"}, id="toolu_f1")]),
        Response([Text("first answer")]),
    )
    s = await h.session()
    await h.run(s.id, "start")
    path = await h.path(s.id)
    # Fork right after the tool result (mid-loop): reconstruction must still be valid.
    result_event = next(e for e in path if e.type == "tool.result")
    fork = await h.store.fork(result_event.id, name="try again")
    h.llm.add(Response([Text("on the fork")]))
    done = await h.run(fork.session.id, "different question")
    assert done["stopReason"] == "end_turn"
    assert h.llm.violations(-1) == []
    sent = h.llm.messages(-1)
    assert sent[1].tool_use_ids() == ["toolu_f1"]
    assert sent[2].tool_result_ids() == ["toolu_f1"]
    assert any(getattr(b, "text", "") == "different question" for b in sent[2].content)
    fork_types = [e.type for e in await h.path(fork.session.id)]
    assert fork_types[-5:] == [
        "session.fork", "message.user", "stream.turn_start", "message.assistant",
        "stream.turn_end",
    ]  # fmt: skip
    # The source session is untouched.
    assert (await h.path(s.id))[-1].id == path[-1].id
    # Turn numbering on the fork continues from the inherited history.
    last = (await h.path(fork.session.id))[-1]
    assert last.payload["turn"] == 2


async def test_reasoning_level_is_recorded_and_sent(h: Harness) -> None:
    h.llm.add(Response([Thinking("deep", signature="s"), Text("ok")]))
    s = await h.session()
    await h.run(s.id, "think", reasoning_level="high")
    types = await h.types(s.id)
    assert types[1] == "config.reasoning_level"
    assert (await h.store.get_state_at_head(s.id)).reasoning_level == "high"
    assert h.llm.requests[0].get("thinking", {}).get("type") in ("enabled", "adaptive")


async def test_tool_use_blocks_survive_truncation_of_huge_inputs(h: Harness) -> None:
    big = "x" * 8000
    h.llm.add(Response([ToolUse("Echo", {"text": big}, id="toolu_big")]), Response([Text("ok")]))
    s = await h.session()
    await h.run(s.id, "big")
    sent = h.llm.messages(1)
    use = sent[1].content[0]
    assert isinstance(use, ToolUseBlock) and use.input == {"text": big}
    assert h.llm.violations(1) == []


async def test_rules_files_are_loaded_recorded_and_restored(h: Harness) -> None:
    sub = h.nested_rules()
    s = await h.session()
    await h.run(s.id, "read pkg/mod.py")
    assert "Always answer in French." in str(h.llm.requests[0]["system"])
    assert "never use tabs" not in str(h.llm.requests[0]["system"])
    assert "never use tabs" in str(h.llm.requests[1]["system"])
    path = await h.path(s.id)
    loaded = [e.payload["files"] for e in path if e.type == "rules.loaded"]
    assert [[f["path"] for f in files] for files in loaded] == [
        [str(h.tmp / "AGENTS.md")],
        [str(sub / "AGENTS.md")],
    ]
    assert path[1].type == "rules.loaded" and path[2].type == "message.user"
    assert_event_order(path)

    # A new orchestrator (a server restart) restores them without recording again.
    from tron_server.agent import Orchestrator
    from tron_server.tools.base import ToolRegistry

    provider = h.orch.providers("anthropic", MODEL)
    other = Orchestrator(
        h.store, lambda _p, _m: provider, ToolRegistry([]), None,
        lambda m, sid, d: h.notes.append((m, sid, d)), home=h.tmp / "home",
    )  # fmt: skip
    h.llm.add(Response([Text("Encore.")]))
    await other.send_message(s.id, "again")
    await h.wait_for(s.id, "agent.complete", 2)
    await other.shutdown()
    system = str(h.llm.requests[-1]["system"])
    assert "Always answer in French." in system and "never use tabs" in system
    assert [e.type for e in await h.path(s.id)].count("rules.loaded") == 2


async def test_a_rules_file_added_between_messages_comes_before_the_next_prompt(
    h: Harness,
) -> None:
    # From its second message on, a session's rules files and its prompt's commit go in
    # one worker-thread trip; a file found then is recorded first, on its own, as before.
    h.llm.add(Response([Text("One.")]), Response([Text("Two.")]), Response([Text("Three.")]))
    s = await h.session()
    await h.run(s.id, "first")
    await h.run(s.id, "second")
    (h.tmp / "AGENTS.md").write_text("Always answer in French.\n")
    await h.run(s.id, "third")
    systems = [str(r["system"]) for r in h.llm.requests]
    assert ["Always answer in French." in x for x in systems] == [False, False, True]
    types = [e.type for e in await h.path(s.id)]
    third = types.index(
        "message.user", types.index("message.user", types.index("message.user") + 1) + 1
    )
    assert types[third - 1 : third + 2] == ["rules.loaded", "message.user", "stream.turn_start"]
    assert types.count("rules.loaded") == 1
    assert_event_order(await h.path(s.id))
    for i in range(3):
        assert h.llm.violations(i) == []


async def test_the_provider_factory_uses_settings_and_caches_per_endpoint(tmp_path: Path) -> None:
    from tron_llm.anthropic import AnthropicProvider
    from tron_server.providers import ProviderFactory
    from tron_server.settings import Settings

    settings = Settings(
        home=tmp_path, anthropic_base_url="http://127.0.0.1:9/", openai_compatible_base_url=None
    )
    factory = ProviderFactory(settings, api_keys={"anthropic": "k"})
    a = factory("anthropic", "claude-sonnet-4-5")
    assert isinstance(a, AnthropicProvider) and a.base_url == "http://127.0.0.1:9"
    assert factory("anthropic", "claude-opus-4-1") is a
    with pytest.raises(ValueError, match="base_url"):
        factory("openai-compatible", "llama3")
    with pytest.raises(ValueError, match="unknown provider"):
        factory("nope", "m")
    await factory.aclose()


async def test_an_openai_compatible_server_gets_its_own_key_never_openais(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OpenRouter needs a key and Ollama none: TRON_OPENAI_COMPATIBLE_API_KEY is sent
    there when set, OPENAI_API_KEY (meant for api.openai.com) never."""
    from tests.llm._serve import serve_asgi
    from tron_events.messages import Message, TextBlock
    from tron_llm import Done, LLMRequest
    from tron_server.providers import ProviderFactory
    from tron_server.settings import Settings

    seen: list[dict[str, str]] = []
    chunk = (
        b'data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,'
        b'"delta":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}\n\n'
        b"data: [DONE]\n\n"
    )

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append({k.decode(): v.decode() for k, v in scope["headers"]})
        while (await receive()).get("more_body"):
            pass
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": chunk})

    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-must-not-leave")
    request = LLMRequest(model="m", messages=[Message(role="user", content=[TextBlock(text="x")])])
    async with serve_asgi(app) as base_url:
        for key in (None, "sk-or-router-key"):
            monkeypatch.delenv("TRON_OPENAI_COMPATIBLE_API_KEY", raising=False)
            if key is not None:
                monkeypatch.setenv("TRON_OPENAI_COMPATIBLE_API_KEY", key)
            settings = Settings(home=tmp_path, openai_compatible_base_url=f"{base_url}/v1")
            factory = ProviderFactory(settings)
            events = [e async for e in factory("openai-compatible", "m").stream(request)]
            assert isinstance(events[-1], Done), events[-1]
            await factory.aclose()
    assert "authorization" not in seen[0]
    assert seen[1]["authorization"] == "Bearer sk-or-router-key"
    assert all("sk-openai" not in str(headers) for headers in seen)


async def test_a_broken_hooks_settings_file_refuses_the_turn_and_says_why(
    h: Harness, tmp_path: Path
) -> None:
    project = tmp_path / "proj"
    (project / ".tron").mkdir(parents=True)
    (project / ".tron" / "settings.json").write_text("{not json")
    orch = Orchestrator(
        h.store,
        lambda _p, _m: pytest.fail("the LLM must not be called"),
        ToolRegistry([]),
        None,
        lambda method, sid, data: h.notes.append((method, sid, data)),
        home=tmp_path / "home",
        hooks_factory=lambda wd, record: build_hook_engine(wd, tmp_path / "home", record),
    )
    session = await h.session(working_directory=str(project))
    try:
        await orch.send_message(session.id, "hello")
        (error,) = await h.wait_for(session.id, "agent.error")
        assert error["category"] == "configuration"
        assert "settings.json" in error["message"]
        assert "message.user" not in await h.types(session.id)
    finally:
        await orch.shutdown(timeout=5)
