"""The Gemini adapter on recorded-shape SSE: parts, signatures, ids, usage, errors."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import anyio
import genai_prices
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.llm._events import last_done
from tests.llm._serve import mock_client, serve_asgi
from tron_events.messages import Message, NativeBlock, TextBlock, ThinkingBlock, ToolUseBlock
from tron_llm import (
    AuthenticationError,
    ContextLengthExceededError,
    Done,
    ErrorEvent,
    LLMError,
    LLMRequest,
    OverloadedError,
    RateLimitError,
    RetryPolicy,
    SSEDecoder,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallEnd,
    ToolCallStart,
)
from tron_llm.gemini import GeminiProvider, GeminiStreamParser, build_body, is_synthesized_id

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).parent / "fixtures" / "gemini"
SSE_FILES = sorted(p.name for p in FIXTURES.glob("*.sse"))
KEY = "gk-test-secret-0123456789"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def request(model: str = "gemini-2.5-flash", **kw: Any) -> LLMRequest:
    return LLMRequest(
        model=model, messages=[Message(role="user", content=[TextBlock(text="hi")])], **kw
    )


async def collect(provider: GeminiProvider, req: LLMRequest | None = None) -> list[StreamEvent]:
    return [e async for e in provider.stream(req or request())]


async def run_fixture(
    name: str, capture: list[httpx.Request] | None = None, **kw: Any
) -> list[StreamEvent]:
    body = fixture(name)
    # Cut the body into a few network reads (mid-line, mid-CRLF).
    chunks = [body[i : i + 37] for i in range(0, len(body), 37)]
    provider = GeminiProvider(api_key=KEY, client=mock_client(chunks, capture=capture))
    return await collect(provider, request(**kw))


def parse_offline(body: bytes, req: LLMRequest | None = None) -> list[Any]:
    """Decoder + parser without HTTP: the events, then the Done (or the error)."""
    decoder = SSEDecoder()
    parser = GeminiStreamParser(req or request())
    out: list[Any] = []
    try:
        for sse in [*decoder.feed(body), *decoder.flush()]:
            out.extend(parser.feed(sse))
        out.append(parser.finish())
    except Exception as exc:  # an error chunk: compare its type and text
        out.append((type(exc).__name__, str(exc)))
    return out


# --- one fixture at a time ------------------------------------------------------------


async def test_text_is_one_block_with_its_deltas_and_last_usage() -> None:
    events = await run_fixture("text.sse")
    done = last_done(events)
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert [d.text for d in deltas] == ["Hello", " from Gémini", " — done. ✓"]
    assert {d.index for d in deltas} == {0}
    assert done.message.content == [TextBlock(text="Hello from Gémini — done. ✓")]
    assert done.stop_reason == "end_turn"
    assert done.model == "gemini-2.5-flash"
    assert done.response_id == "resp-text-1"
    # Cumulative snapshots: the last one (8 in, 9 out), never their sum.
    assert (done.usage.input_tokens, done.usage.output_tokens) == (8, 9)
    assert done.usage.cost_usd is not None and done.usage.cost_usd > 0


async def test_thinking_then_signed_text_keeps_the_signature_on_its_part() -> None:
    events = await run_fixture("thinking.sse", model="gemini-2.5-pro")
    done = last_done(events)
    thinking = [e for e in events if isinstance(e, ThinkingDelta)]
    assert [t.index for t in thinking] == [0, 0]
    blocks = done.message.content
    assert blocks[0] == ThinkingBlock(
        thinking="**Adding numbers**\n\nThe user asks 2+2. It is simple arithmetic.",
        provider="google",
    )
    # The signed part is a block of its own; the unsigned part after it is not merged in.
    assert blocks[1] == TextBlock(
        text="The answer",
        signature="DddTIiU21awiwt42+69FkZ3sgZsRfBPlbCQhNKh8jDnfcwKvPfMwgdPNFA+5BOs=",
    )
    assert blocks[2] == TextBlock(text=" is 4.")
    usage = done.usage
    assert usage.input_tokens == 12 and usage.cache_read_tokens == 4
    assert usage.output_tokens == 6 + 85 and usage.reasoning_tokens == 85


async def test_signed_function_call_without_id_gets_a_synthesized_id() -> None:
    events = await run_fixture("function_call_signed.sse")
    done = last_done(events)
    assert done.stop_reason == "tool_use"
    thought, call = done.message.content
    assert isinstance(thought, ThinkingBlock) and thought.signature and thought.provider == "google"
    assert isinstance(call, ToolUseBlock)
    assert call.name == "read_file" and call.input == {"path": "src/main.py", "limit": 200}
    assert call.signature == "lHzF2U5ycEvYk+4F7dsAh8WpUFFqedLYsSqPJ49jMiHFyfw1klnEuwo9vdjFJxQ="
    assert is_synthesized_id(call.id)
    starts = [e for e in events if isinstance(e, ToolCallStart)]
    ends = [e for e in events if isinstance(e, ToolCallEnd)]
    assert [(s.id, s.index) for s in starts] == [(call.id, 1)]
    assert ends[0].input == call.input and ends[0].id == call.id
    # The same bytes give the same id (a replayed session sends what it stored).
    again = last_done(await run_fixture("function_call_signed.sse"))
    assert again.message.content[1] == call


async def test_two_calls_without_ids_get_distinct_ids_and_no_args_is_empty() -> None:
    done = last_done(await run_fixture("two_calls.sse"))
    text, first, second = done.message.content
    assert text == TextBlock(text="Let me look around.")
    assert isinstance(first, ToolUseBlock) and isinstance(second, ToolUseBlock)
    assert first.signature is not None and second.signature is None
    assert second.input == {}
    assert first.id != second.id
    assert is_synthesized_id(first.id) and is_synthesized_id(second.id)
    # Another response's calls never reuse these ids (history ids must be unique).
    other = last_done(await run_fixture("function_call_signed.sse"))
    assert isinstance(other.message.content[1], ToolUseBlock)
    assert other.message.content[1].id not in {first.id, second.id}
    # Cached and tool-use prompt tokens: input includes both, cache read is apart.
    usage = done.usage
    assert usage.input_tokens == 340 and usage.cache_read_tokens == 256
    assert usage.output_tokens == 84 and usage.reasoning_tokens == 64


async def test_gemini3_call_ids_are_kept() -> None:
    done = last_done(await run_fixture("gemini3_calls.sse", model="gemini-3-pro-preview"))
    calls = [b for b in done.message.content if isinstance(b, ToolUseBlock)]
    assert [c.id for c in calls] == ["x7k2p9qa", "m3n8r1zt"]
    assert calls[0].signature is not None and calls[1].signature is None
    assert done.stop_reason == "tool_use"


async def test_trailing_empty_signed_text_part_is_kept() -> None:
    done = last_done(await run_fixture("empty_signed_text.sse", model="gemini-3-flash-preview"))
    assert done.message.content == [
        TextBlock(text="Here is the summary you asked for."),
        TextBlock(
            text="", signature="53Bhs9wjyI1eBwPIjRW9Lq+tsPMDy/drOF5wQg7Tk4Thwh49GjHsBszgY3ALxbE="
        ),
    ]


@pytest.mark.parametrize(
    ("name", "stop", "text"),
    [
        ("max_tokens.sse", "max_tokens", "This answer is cut"),
        ("safety.sse", "refusal", "I"),
        ("prompt_blocked.sse", "refusal", ""),
        ("malformed_call.sse", "error", ""),
    ],
)
async def test_finish_reasons(name: str, stop: str, text: str) -> None:
    done = last_done(await run_fixture(name))
    assert done.stop_reason == stop
    assert "".join(b.text for b in done.message.content if isinstance(b, TextBlock)) == text


async def test_error_chunk_mid_stream_is_a_typed_error_with_the_partial_message() -> None:
    events = await run_fixture("error_503_midstream.sse")
    assert [type(e).__name__ for e in events] == ["TextDelta", "ErrorEvent"]
    error = events[-1]
    assert isinstance(error, ErrorEvent)
    assert isinstance(error.error, OverloadedError)
    assert error.error.status_code == 503 and error.error.error_type == "UNAVAILABLE"
    assert error.error.retryable
    assert error.message == Message(role="assistant", content=[TextBlock(text="Partial answer")])
    assert error.usage.input_tokens == 10


async def test_stream_cut_before_finish_is_a_network_error() -> None:
    body = fixture("text.sse")
    cut = body[: body.rindex(b"data:")]  # the last chunk (with finishReason) never came
    provider = GeminiProvider(
        api_key=KEY, client=mock_client(cut), retry=RetryPolicy(max_retries=0)
    )
    events = await collect(provider)
    error = events[-1]
    assert isinstance(error, ErrorEvent) and isinstance(error.error, LLMError)
    assert error.error.category == "network"
    assert error.message is not None
    assert error.message.content == [TextBlock(text="Hello from Gémini")]


# --- HTTP errors, retries, the key -----------------------------------------------------


def sequence_client(
    responses: list[tuple[int, bytes, dict[str, str]]], seen: list[httpx.Request]
) -> httpx.AsyncClient:
    """Answers the n-th request with the n-th response."""

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append(req)
        status, body, headers = responses[min(len(seen), len(responses)) - 1]
        return httpx.Response(status, content=body, headers=headers)

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


async def test_http_429_is_a_rate_limit_with_googles_retry_delay_then_retried() -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    seen: list[httpx.Request] = []
    client = sequence_client(
        [
            (429, fixture("error_429.json"), {"content-type": "application/json"}),
            (200, fixture("text.sse"), {"content-type": "text/event-stream"}),
        ],
        seen,
    )
    provider = GeminiProvider(api_key=KEY, client=client, retry=RetryPolicy(sleep=sleep))
    done = last_done(await collect(provider))
    assert slept == [37.0]  # RetryInfo.retryDelay in the error details
    assert len(seen) == 2
    assert done.message.content == [TextBlock(text="Hello from Gémini — done. ✓")]


async def test_http_429_when_retries_run_out() -> None:
    client = mock_client(fixture("error_429.json"), status=429)
    provider = GeminiProvider(api_key=KEY, client=client, retry=RetryPolicy(max_retries=0))
    events = await collect(provider)
    assert len(events) == 1 and isinstance(events[0], ErrorEvent)
    error = events[0].error
    assert isinstance(error, RateLimitError)
    assert error.retry_after == 37.0 and error.error_type == "RESOURCE_EXHAUSTED"
    assert "exceeded your current quota" in error.message


async def test_invalid_key_400_is_an_authentication_error() -> None:
    body = json.dumps(
        [
            {
                "error": {
                    "code": 400,
                    "message": "API key not valid. Please pass a valid API key.",
                    "status": "INVALID_ARGUMENT",
                    "details": [
                        {
                            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                            "reason": "API_KEY_INVALID",
                            "domain": "googleapis.com",
                        }
                    ],
                }
            }
        ]
    ).encode()
    provider = GeminiProvider(api_key=KEY, client=mock_client(body, status=400))
    events = await collect(provider)
    assert isinstance(events[0], ErrorEvent)
    assert isinstance(events[0].error, AuthenticationError)
    assert not events[0].error.retryable


async def test_context_too_long_400_is_typed() -> None:
    body = json.dumps(
        {
            "error": {
                "code": 400,
                "message": "The input token count (1200000) exceeds the maximum number of "
                "tokens allowed (1048576).",
                "status": "INVALID_ARGUMENT",
            }
        }
    ).encode()
    provider = GeminiProvider(api_key=KEY, client=mock_client(body, status=400))
    events = await collect(provider)
    assert isinstance(events[0], ErrorEvent)
    assert isinstance(events[0].error, ContextLengthExceededError)


async def test_key_goes_in_the_header_never_the_url() -> None:
    seen: list[httpx.Request] = []
    await run_fixture("text.sse", capture=seen)
    (req,) = seen
    assert req.method == "POST"
    assert req.url.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    assert dict(req.url.params) == {"alt": "sse"}
    assert req.headers["x-goog-api-key"] == KEY
    assert KEY not in str(req.url)


async def test_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", "from-google-env")
    seen: list[httpx.Request] = []
    provider = GeminiProvider(client=mock_client(fixture("text.sse"), capture=seen))
    await collect(provider)
    monkeypatch.setenv("GEMINI_API_KEY", "from-gemini-env")
    provider = GeminiProvider(client=mock_client(fixture("text.sse"), capture=seen))
    await collect(provider)
    assert [r.headers["x-goog-api-key"] for r in seen] == ["from-google-env", "from-gemini-env"]
    assert "from-gemini-env" not in repr(provider)


async def test_no_key_says_which_variables_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    provider = GeminiProvider(client=mock_client(fixture("text.sse")))
    events = await collect(provider)
    assert isinstance(events[0], ErrorEvent)
    assert isinstance(events[0].error, AuthenticationError)
    assert "GEMINI_API_KEY" in events[0].error.message
    assert "GOOGLE_API_KEY" in events[0].error.message


# --- framing --------------------------------------------------------------------------


def reframe(body: bytes, newline: bytes) -> bytes:
    return body.replace(b"\r\n", newline)


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(SSE_FILES),
    newline=st.sampled_from([b"\r\n", b"\n", b"\r"]),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
)
def test_any_chunking_and_line_ending_gives_the_same_events(
    name: str, newline: bytes, cuts: list[int]
) -> None:
    body = fixture(name)
    expected = parse_offline(body)
    framed = reframe(body, newline)
    points = sorted({c % (len(framed) + 1) for c in cuts})
    pieces = [framed[a:b] for a, b in zip([0, *points], [*points, len(framed)], strict=True)]
    decoder = SSEDecoder()
    parser = GeminiStreamParser(request())
    got: list[Any] = []
    try:
        for piece in pieces:  # cuts land inside UTF-8 characters and CRLF pairs too
            for sse in decoder.feed(piece):
                got.extend(parser.feed(sse))
        for sse in decoder.flush():
            got.extend(parser.feed(sse))
        got.append(parser.finish())
    except Exception as exc:
        got.append((type(exc).__name__, str(exc)))
    assert got == expected


def test_fixtures_are_crlf_framed() -> None:
    for name in SSE_FILES:
        body = fixture(name)
        assert body.endswith(b"\r\n\r\n"), name
        assert b"\n" not in body.replace(b"\r\n", b""), name


# --- usage against genai-prices --------------------------------------------------------


@pytest.mark.parametrize("name", [n for n in SSE_FILES if "error" not in n])
def test_usage_matches_genai_prices_extract_usage(name: str) -> None:
    body = fixture(name)
    last = [json.loads(line[6:]) for line in body.split(b"\r\n") if line.startswith(b"data: ")][-1]
    oracle = genai_prices.extract_usage(last, provider_id="google").usage
    done = parse_offline(body)[-1]
    assert isinstance(done, Done)
    assert done.usage.input_tokens == (oracle.input_tokens or 0)
    assert done.usage.cache_read_tokens == (oracle.cache_read_tokens or 0)
    assert done.usage.output_tokens == (oracle.output_tokens or 0)


# --- a real socket ---------------------------------------------------------------------

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def gemini_app(body: bytes, seen: list[dict[str, Any]]) -> Any:
    """A minimal ASGI Gemini: checks the key, streams ``body`` in pieces."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        assert scope["type"] == "http"
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        seen.append(
            {
                "path": scope["path"],
                "query": scope["query_string"].decode(),
                "key": headers.get("x-goog-api-key"),
                "body": json.loads(raw),
            }
        )
        if headers.get("x-goog-api-key") != KEY:
            await send({"type": "http.response.start", "status": 403, "headers": []})
            await send({"type": "http.response.body", "body": b'{"error": {"code": 403}}'})
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        for start in range(0, len(body), 50):
            await send(
                {"type": "http.response.body", "body": body[start : start + 50], "more_body": True}
            )
        await send({"type": "http.response.body", "body": b""})

    return app


async def test_served_over_a_real_socket() -> None:
    seen: list[dict[str, Any]] = []
    body = fixture("two_calls.sse")
    async with serve_asgi(gemini_app(body, seen)) as base_url:
        provider = GeminiProvider(api_key=KEY, base_url=base_url + "/v1beta")
        try:
            events = await collect(provider)
        finally:
            await provider.aclose()
    assert seen[0]["path"] == "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    assert seen[0]["query"] == "alt=sse" and seen[0]["key"] == KEY
    assert seen[0]["body"]["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]
    assert last_done(events) == parse_offline(body)[-1]


async def test_cancelling_the_caller_closes_the_stream_at_once() -> None:
    disconnected = anyio.Event()
    first = fixture("text.sse").split(b"\r\n\r\n")[0] + b"\r\n\r\n"

    async def hanging(scope: Scope, receive: Receive, send: Send) -> None:
        while (await receive()).get("more_body"):
            pass
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        await send({"type": "http.response.body", "body": first, "more_body": True})
        # Gemini goes quiet (long thinking); only the client's disconnect ends this.
        while (await receive())["type"] != "http.disconnect":
            pass
        disconnected.set()

    async with serve_asgi(hanging) as base_url:
        provider = GeminiProvider(api_key=KEY, base_url=base_url)
        try:
            seen: list[StreamEvent] = []
            with anyio.move_on_after(30) as scope:
                async for event in provider.stream(request()):
                    seen.append(event)
                    scope.cancel()  # the user pressed stop after the first delta
            assert [type(e).__name__ for e in seen] == ["TextDelta"]
            with anyio.fail_after(5):
                await disconnected.wait()
        finally:
            await provider.aclose()


# --- what the recorded streams taught (tests/llm/test_recorded_streams.py) --------------

CONTENT_KEYS = ["executableCode", "codeExecutionResult", "toolCall", "toolResponse", "inlineData"]
json_leaf = st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=6)
part_values = st.dictionaries(st.text(min_size=1, max_size=5), json_leaf, min_size=1, max_size=3)


@given(
    parts=st.lists(
        st.tuples(
            st.sampled_from([*CONTENT_KEYS, "someFuturePart"]),
            part_values,
            st.none() | st.sampled_from(["c2lnMQ==", "c2lnMg=="]),
            st.booleans(),
        ),
        min_size=1,
        max_size=4,
    )
)
@settings(max_examples=50)
def test_parts_we_do_not_model_are_kept_whole_in_place(
    parts: list[tuple[str, dict[str, Any], str | None, bool]],
) -> None:
    # Code execution, a built-in tool's call and response, inline data, and parts yet
    # to come: the part whole (thought flag and signature included) between the text
    # around it, never merged into it, and sent back to Gemini as it came.
    chunks: list[dict[str, Any]] = []
    expected: list[Any] = [TextBlock(text="before")]
    for key, value, signature, thought in parts:
        part: dict[str, Any] = {key: value}
        if signature is not None:
            part["thoughtSignature"] = signature
        if thought:
            part["thought"] = True
        chunks.append({"candidates": [{"content": {"role": "model", "parts": [part]}}]})
        expected.append(NativeBlock(provider="google", data=part))
    first = {"candidates": [{"content": {"role": "model", "parts": [{"text": "before"}]}}]}
    last = {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "after"}]}, "finishReason": "STOP"}
        ],
        "responseId": "r1",
    }
    body = "".join(f"data: {json.dumps(c)}\r\n\r\n" for c in [first, *chunks, last]).encode()
    done = parse_offline(body)[-1]
    assert isinstance(done, Done)
    assert done.message.content == [*expected, TextBlock(text="after")]
    history = [
        *request().messages,
        done.message,
        Message(role="user", content=[TextBlock(text="more")]),
    ]
    sent = build_body(request().model_copy(update={"messages": history}))
    assert sent["contents"][1]["parts"] == [
        {"text": "before"},
        *(block.data for block in expected[1:]),
        {"text": "after"},
    ]


def test_another_providers_native_blocks_are_not_sent() -> None:
    foreign = NativeBlock(provider="anthropic", data={"executableCode": {"code": "x"}})
    history = [
        *request().messages,
        Message(role="assistant", content=[foreign, TextBlock(text="ok")]),
    ]
    sent = build_body(request().model_copy(update={"messages": history}))
    assert sent["contents"][1]["parts"] == [{"text": "ok"}]
