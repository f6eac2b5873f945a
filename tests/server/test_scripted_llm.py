"""The scripted LLM speaks the Anthropic Messages wire format: the official SDK
(a test-only oracle) accepts its streams, errors and disconnects behave as the
real API's do."""

from __future__ import annotations

import json

import anyio
import httpx
import pytest

from tests.support.scripted_llm import (
    Response,
    Text,
    Thinking,
    ToolUse,
    Usage,
    error_response,
    scripted_llm,
    scripted_llm_thread,
)

pytestmark = pytest.mark.anyio

anthropic = pytest.importorskip("anthropic")


def sdk(base_url: str) -> object:
    return anthropic.AsyncAnthropic(api_key="test-key", base_url=base_url, max_retries=0)


async def test_the_official_sdk_accumulates_text_thinking_and_tool_use() -> None:
    script = [
        Response(
            [
                Thinking("Let me think about it.", signature="c2lnbmF0dXJl"),
                Text("I will read the file now."),
                ToolUse("Read", {"file_path": "notes/a.txt", "limit": 20}, id="toolu_01"),
                ToolUse("Glob", {}, id="toolu_02"),
            ],
            usage=Usage(input_tokens=120, output_tokens=42, cache_read_input_tokens=7),
        )
    ]
    async with scripted_llm(script) as llm:
        client = sdk(llm.base_url)
        async with client.messages.stream(  # type: ignore[attr-defined]
            model="claude-sonnet-4-6",
            max_tokens=100,
            messages=[{"role": "user", "content": "hi"}],
        ) as stream:
            message = await stream.get_final_message()
        await client.close()  # type: ignore[attr-defined]
    thinking, text, read, glob = message.content
    assert thinking.type == "thinking" and thinking.thinking == "Let me think about it."
    assert thinking.signature == "c2lnbmF0dXJl"
    assert text.text == "I will read the file now."
    assert (read.id, read.name, read.input) == (
        "toolu_01",
        "Read",
        {"file_path": "notes/a.txt", "limit": 20},
    )
    assert (glob.name, glob.input) == ("Glob", {})
    assert message.stop_reason == "tool_use"
    assert message.model == "claude-sonnet-4-6"
    assert message.usage.input_tokens == 120
    assert message.usage.output_tokens == 42
    assert message.usage.cache_read_input_tokens == 7
    assert llm.requests[0]["messages"] == [{"role": "user", "content": "hi"}]
    assert llm.requests[0]["stream"] is True


async def test_non_streaming_requests_get_a_full_message() -> None:
    async with scripted_llm([Response([Text("Summary text.")])]) as llm:
        client = sdk(llm.base_url)
        message = await client.messages.create(  # type: ignore[attr-defined]
            model="m", max_tokens=10, messages=[{"role": "user", "content": "sum up"}]
        )
        await client.close()  # type: ignore[attr-defined]
    assert message.content[0].text == "Summary text."
    assert message.stop_reason == "end_turn"


async def test_http_errors_are_the_apis_error_bodies_and_repeat() -> None:
    async with scripted_llm([error_response(529, repeat=2), Response([Text("ok")])]) as llm:
        client = sdk(llm.base_url)
        for _ in range(2):
            with pytest.raises(anthropic.APIStatusError) as info:
                await client.messages.create(  # type: ignore[attr-defined]
                    model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}]
                )
            assert info.value.status_code == 529
            assert info.value.body["error"]["type"] == "overloaded_error"
        ok = await client.messages.create(  # type: ignore[attr-defined]
            model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}]
        )
        assert ok.content[0].text == "ok"
        # Past the end of the script: a loud 400, recorded like every request.
        with pytest.raises(anthropic.BadRequestError, match="no scripted response left"):
            await client.messages.create(  # type: ignore[attr-defined]
                model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}]
            )
        await client.close()  # type: ignore[attr-defined]
    assert len(llm.requests) == 4


async def test_a_mid_stream_error_event_reaches_the_sdk() -> None:
    script = [Response([Text("partial answer")], error_event="overloaded_error")]
    async with scripted_llm(script) as llm:
        client = sdk(llm.base_url)
        seen = []
        with pytest.raises(anthropic.APIStatusError, match="Overloaded"):
            async with client.messages.stream(  # type: ignore[attr-defined]
                model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}]
            ) as stream:
                async for text in stream.text_stream:
                    seen.append(text)
        await client.close()  # type: ignore[attr-defined]
    assert "".join(seen) == "partial answer"


async def test_a_hanging_stream_records_the_client_disconnect() -> None:
    async with scripted_llm([Response([Text("streaming forever")], hang=True)]) as llm:
        async with httpx.AsyncClient() as client:
            body = b""
            async with client.stream(
                "POST", llm.base_url + "/v1/messages",
                json={"model": "m", "stream": True, "messages": []},
            ) as response:  # fmt: skip
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if b"forever" in body:
                        break
        with anyio.fail_after(5):
            await llm.disconnected.wait()
    assert llm.disconnects == 1
    assert b"message_stop" not in body


async def test_a_slow_stream_notices_the_disconnect_too() -> None:
    words = " ".join(f"w{i}" for i in range(100))
    async with scripted_llm([Response([Text(words)], delay=0.02)]) as llm:
        async with httpx.AsyncClient() as client, client.stream(
            "POST", llm.base_url + "/v1/messages",
            json={"model": "m", "stream": True, "messages": []},
        ) as response:  # fmt: skip
            async for chunk in response.aiter_bytes():
                if b"w3" in chunk:
                    break
        with anyio.fail_after(5):
            await llm.disconnected.wait()


async def test_recorded_histories_are_checked_against_the_provider_rules() -> None:
    script = [Response([Text("a")]), Response([Text("b")])]
    async with scripted_llm(script) as llm, httpx.AsyncClient() as client:
        good = [
            {"role": "user", "content": "read"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "x",
                 "cache_control": {"type": "ephemeral"}}]},
        ]  # fmt: skip
        bad = good[:2]
        for messages in (good, bad):
            await client.post(
                llm.base_url + "/v1/messages",
                json={"model": "m", "stream": True, "messages": messages},
            )
    assert llm.violations(0) == []
    assert [v.rule for v in llm.violations(1)] == ["unanswered_tool_use"]


def test_served_from_a_thread_for_synchronous_tests() -> None:
    with scripted_llm_thread([Response([Text("hello from a thread")])]) as llm:
        response = httpx.post(
            llm.base_url + "/v1/messages",
            json={"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]},
        )
        llm.add(Response([Text("added later")]))
        again = httpx.post(llm.base_url + "/v1/messages", json={"model": "m", "messages": []})
    events = [
        json.loads(line[len("data: ") :])
        for line in response.text.splitlines()
        if line.startswith("data: ")
    ]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert kinds.count("content_block_start") == kinds.count("content_block_stop") == 1
    text = "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta")
    assert text == "hello from a thread"
    assert again.json()["content"][0]["text"] == "added later"
