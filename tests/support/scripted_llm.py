"""A scripted LLM: a small ASGI app speaking the Anthropic Messages SSE wire format.

It replays a script — a list of responses, one per request, in order — so the
real ``tron_llm`` Anthropic adapter, the agent runtime and the server are
exercised end to end without a network. Every request body is recorded, so a
test can check the history the runtime sent (``llm.violations(i)``).

    script = [
        Response([Text("Let me look."), ToolUse("Read", {"file_path": "a.txt"})]),
        Response([Text("Done.")]),
    ]
    async with scripted_llm(script) as llm:
        provider = AnthropicProvider(api_key="test", base_url=llm.base_url)
        ...
        assert llm.violations(1) == []

For synchronous tests (Playwright, a server in another process) use
``with scripted_llm_thread(script) as llm:`` — the same object, served from a
thread with its own event loop.

Response options:

* ``blocks``: ``Text``, ``Thinking`` (with a signature) and ``ToolUse`` blocks,
  streamed as ``content_block_start`` / ``content_block_delta`` / ``content_block_stop``
  (text in word chunks, tool input as ``input_json_delta`` fragments, the first one
  ``""`` as the real API does);
* ``stop_reason`` (default ``tool_use`` when a ``ToolUse`` block is present, else
  ``end_turn``) and ``usage`` (``message_start`` carries the input side, the
  ``message_delta`` usage is cumulative);
* ``delay``: seconds to sleep before each chunk (a slow stream);
* ``hang``: after the blocks, keep the stream open until the client disconnects
  (``llm.disconnects`` counts the disconnects seen; ``llm.disconnected`` is an
  ``anyio.Event`` set at the first one);
* ``status`` (+ ``error_type``, ``message``, ``headers``): an HTTP error response
  instead of a stream; ``repeat`` serves the same response that many times (retries);
* ``error_event``: after the blocks, an in-stream ``event: error`` (e.g.
  ``"overloaded_error"``) and the end of the stream.

A request past the end of the script gets an HTTP 400 ``invalid_request_error``
saying so (and is recorded), so a runaway loop fails loudly.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import socket
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, MutableMapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import uvicorn

from tron_events.messages import Message
from tron_events.validate import Violation, validate_history

__all__ = [
    "Response",
    "ScriptedLLM",
    "Text",
    "Thinking",
    "ToolUse",
    "Usage",
    "error_response",
    "scripted_llm",
    "scripted_llm_thread",
]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

_ids = itertools.count(1)


@dataclass(frozen=True)
class Text:
    """A text block, streamed in word-sized ``text_delta`` chunks."""

    text: str


@dataclass(frozen=True)
class Thinking:
    """A thinking block: ``thinking_delta`` chunks, then one ``signature_delta``."""

    thinking: str
    signature: str = "sig-scripted"


@dataclass(frozen=True)
class ToolUse:
    """A tool call; ``input`` streams as ``input_json_delta`` fragments."""

    name: str
    input: dict[str, Any] = field(default_factory=dict)
    id: str | None = None
    """Defaults to a fresh ``toolu_scripted_<n>``."""


Block = Text | Thinking | ToolUse


@dataclass(frozen=True)
class Usage:
    """Token counts in Anthropic's terms (``input_tokens`` excludes the cache)."""

    input_tokens: int = 10
    output_tokens: int = 5
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0


@dataclass
class Response:
    """One scripted reply (see the module docstring for the options)."""

    blocks: list[Block] = field(default_factory=list)
    stop_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    model: str | None = None
    """Echoed in ``message_start``; defaults to the request's model."""
    delay: float = 0.0
    hang: bool = False
    status: int | None = None
    error_type: str = "overloaded_error"
    message: str = "Overloaded"
    headers: dict[str, str] = field(default_factory=dict)
    error_event: str | None = None
    repeat: int = 1
    ping: bool = True
    """Send a ``ping`` event after ``message_start`` (the real API does)."""

    def effective_stop_reason(self) -> str:
        if self.stop_reason is not None:
            return self.stop_reason
        return "tool_use" if any(isinstance(b, ToolUse) for b in self.blocks) else "end_turn"


def error_response(
    status: int = 529,
    error_type: str = "overloaded_error",
    message: str = "Overloaded",
    *,
    repeat: int = 1,
    headers: dict[str, str] | None = None,
) -> Response:
    """An HTTP error reply (``repeat`` times, e.g. once per retry)."""
    return Response(
        status=status, error_type=error_type, message=message, repeat=repeat,
        headers=dict(headers or {}),
    )  # fmt: skip


ScriptItem = Response | Callable[[dict[str, Any]], Response]


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _words(text: str) -> list[str]:
    """Word-sized chunks whose concatenation is ``text`` (at least one chunk)."""
    return re.findall(r"\s*\S+\s*|\s+", text) or [""]


def _json_fragments(value: dict[str, Any], size: int = 12) -> list[str]:
    """``value`` as JSON text in small fragments, the first one empty (as the API does)."""
    text = json.dumps(value, separators=(",", ":")) if value else ""
    return [""] + [text[i : i + size] for i in range(0, len(text), size)]


class ScriptedLLM:
    """The ASGI app. ``base_url`` is set once it is served (``scripted_llm*``)."""

    def __init__(self, script: list[ScriptItem] | None = None) -> None:
        self.script: list[ScriptItem] = list(script or [])
        self.requests: list[dict[str, Any]] = []
        """Every request body received (parsed JSON), in order."""
        self.request_headers: list[dict[str, str]] = []
        self.disconnects = 0
        self.base_url = ""
        self.served = 0
        """How many responses (including errors and script-exhausted replies) went out."""
        self._position = 0
        self._served_of_current = 0
        self._closing: anyio.Event | None = None
        self._disconnected: anyio.Event | None = None
        self._lock = threading.Lock()

    # -- script handling ------------------------------------------------------------

    def add(self, *responses: ScriptItem) -> None:
        """Append responses to the script (also while serving)."""
        with self._lock:
            self.script.extend(responses)

    def drop_remaining(self) -> None:
        """Serve none of the responses not served yet (an earlier test's leftovers)."""
        with self._lock:
            self._position, self._served_of_current = len(self.script), 0

    @property
    def remaining(self) -> int:
        """Scripted responses not served yet."""
        return len(self.script) - self._position

    def _next(self, body: dict[str, Any]) -> Response | None:
        with self._lock:
            if self._position >= len(self.script):
                return None
            item = self.script[self._position]
            response = item(body) if callable(item) else item
            self._served_of_current += 1
            if self._served_of_current >= response.repeat:
                self._position += 1
                self._served_of_current = 0
            return response

    @property
    def disconnected(self) -> anyio.Event:
        """Set when a client disconnects from a hanging (or slow) stream."""
        if self._disconnected is None:
            self._disconnected = anyio.Event()
        return self._disconnected

    # -- inspecting what was sent ---------------------------------------------------

    def messages(self, index: int = -1) -> list[Message]:
        """The ``messages`` of request ``index`` as our message model."""
        raw = self.requests[index].get("messages", [])
        return [Message.model_validate(_wire_to_model(m)) for m in raw]

    def violations(self, index: int = -1) -> list[Violation]:
        """Provider rules the history of request ``index`` breaks (empty: valid)."""
        return validate_history(self.messages(index))

    # -- ASGI -----------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":  # pragma: no cover - served with lifespan off
            return
        if scope["type"] != "http":
            return
        chunks = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        raw = b"".join(chunks)
        if scope["method"] != "POST" or not scope["path"].endswith("/messages"):
            await _json(send, 404, {"type": "error", "error": {
                "type": "not_found_error", "message": f"no route {scope['path']}"}})  # fmt: skip
            return
        try:
            body: dict[str, Any] = json.loads(raw)
        except ValueError:
            await _json(send, 400, _error_body("invalid_request_error", "body is not JSON"))
            return
        self.requests.append(body)
        self.request_headers.append(
            {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        )
        response = self._next(body)
        self.served += 1
        if response is None:
            await _json(
                send,
                400,
                _error_body(
                    "invalid_request_error",
                    f"scripted LLM: no scripted response left for request {len(self.requests)}",
                ),
            )
            return
        if response.status is not None:
            await _json(
                send,
                response.status,
                _error_body(response.error_type, response.message),
                response.headers,
            )
            return
        model = response.model or str(body.get("model", "scripted-model"))
        if not body.get("stream"):
            await _json(send, 200, _full_message(response, model))
            return
        await self._stream(response, model, receive, send)

    async def _stream(self, response: Response, model: str, receive: Receive, send: Send) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream; charset=utf-8"),
                    (b"cache-control", b"no-cache"),
                    (b"request-id", f"req_scripted_{next(_ids)}".encode()),
                ],
            }
        )
        finished = False
        closing = self._closing
        async with anyio.create_task_group() as tg:

            async def watch_disconnect() -> None:
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        if not finished:
                            self._saw_disconnect()
                        tg.cancel_scope.cancel()
                        return

            async def release_on_close() -> None:
                if closing is not None:
                    await closing.wait()
                    tg.cancel_scope.cancel()

            tg.start_soon(watch_disconnect)
            tg.start_soon(release_on_close)
            try:
                for chunk in _events(response, model):
                    if response.delay:
                        await anyio.sleep(response.delay)
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                if response.hang:
                    await anyio.sleep_forever()
                finished = True
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            except OSError:
                # The client went away mid-stream (uvicorn may raise on send then).
                if not finished:
                    self._saw_disconnect()
            tg.cancel_scope.cancel()

    def _saw_disconnect(self) -> None:
        self.disconnects += 1
        self.disconnected.set()


def _wire_to_model(message: dict[str, Any]) -> dict[str, Any]:
    """A wire message as our model takes it (string content as one text block)."""
    content = message.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    return {"role": message.get("role"), "content": _strip_cache_control(content)}


def _strip_cache_control(value: Any) -> Any:
    """The wire message without ``cache_control`` markers (not part of our model)."""
    if isinstance(value, dict):
        return {k: _strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip_cache_control(v) for v in value]
    return value


def _error_body(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}}


async def _json(
    send: Send, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
) -> None:
    data = json.dumps(body).encode()
    raw_headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
    ]
    raw_headers += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": data})


def _usage_start(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "output_tokens": 1,
    }


def _block_ids(response: Response) -> list[str]:
    return [
        (b.id or f"toolu_scripted_{next(_ids)}") if isinstance(b, ToolUse) else ""
        for b in response.blocks
    ]


def _events(response: Response, model: str) -> Iterator[bytes]:
    """The SSE byte chunks of ``response``, one event per chunk."""
    message_id = f"msg_scripted_{next(_ids)}"
    yield _sse(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": message_id, "type": "message", "role": "assistant", "model": model,
                "content": [], "stop_reason": None, "stop_sequence": None,
                "usage": _usage_start(response.usage),
            },
        },
    )  # fmt: skip
    if response.ping:
        yield _sse("ping", {"type": "ping"})
    for index, (block, tool_id) in enumerate(
        zip(response.blocks, _block_ids(response), strict=True)
    ):
        yield from _block_events(index, block, tool_id)
    if response.error_event is not None:
        yield _sse("error", _error_body(response.error_event, response.message))
        return
    if response.hang:
        return
    yield _sse(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": response.effective_stop_reason(), "stop_sequence": None},
            "usage": {"output_tokens": response.usage.output_tokens},
        },
    )
    yield _sse("message_stop", {"type": "message_stop"})


def _block_events(index: int, block: Block, tool_id: str) -> Iterator[bytes]:
    def delta(d: dict[str, Any]) -> bytes:
        return _sse(
            "content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}
        )

    def start(b: dict[str, Any]) -> bytes:
        return _sse(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": b},
        )

    if isinstance(block, Text):
        yield start({"type": "text", "text": ""})
        for word in _words(block.text):
            yield delta({"type": "text_delta", "text": word})
    elif isinstance(block, Thinking):
        yield start({"type": "thinking", "thinking": "", "signature": ""})
        for word in _words(block.thinking):
            yield delta({"type": "thinking_delta", "thinking": word})
        yield delta({"type": "signature_delta", "signature": block.signature})
    else:
        yield start({"type": "tool_use", "id": tool_id, "name": block.name, "input": {}})
        for fragment in _json_fragments(block.input):
            yield delta({"type": "input_json_delta", "partial_json": fragment})
    yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})


def _full_message(response: Response, model: str) -> dict[str, Any]:
    """The non-streaming reply (``"stream": false``)."""
    content: list[dict[str, Any]] = []
    for block, tool_id in zip(response.blocks, _block_ids(response), strict=True):
        if isinstance(block, Text):
            content.append({"type": "text", "text": block.text})
        elif isinstance(block, Thinking):
            content.append(
                {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
            )
        else:
            content.append(
                {"type": "tool_use", "id": tool_id, "name": block.name, "input": block.input}
            )
    usage = _usage_start(response.usage) | {"output_tokens": response.usage.output_tokens}
    return {
        "id": f"msg_scripted_{next(_ids)}", "type": "message", "role": "assistant",
        "model": model, "content": content, "stop_reason": response.effective_stop_reason(),
        "stop_sequence": None, "usage": usage,
    }  # fmt: skip


# -- serving --------------------------------------------------------------------------


class _QuietServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # Ctrl-C belongs to pytest, not to a server inside one test.
        yield


def _bound_socket() -> socket.socket:
    # With proto 0 asyncio never sets TCP_NODELAY: ~40 ms stalls per response.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


def _server(llm: ScriptedLLM) -> _QuietServer:
    config = uvicorn.Config(
        llm, log_level="warning", lifespan="off", timeout_graceful_shutdown=1, access_log=False
    )
    return _QuietServer(config)


@asynccontextmanager
async def scripted_llm(
    script: list[ScriptItem] | None = None, *, timeout: float = 10.0
) -> AsyncIterator[ScriptedLLM]:
    """Serve a :class:`ScriptedLLM` on 127.0.0.1 (a free port) in this event loop."""
    llm = ScriptedLLM(script)
    llm._closing = anyio.Event()
    sock = _bound_socket()
    llm.base_url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = _server(llm)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])
            with anyio.fail_after(timeout):
                while not server.started:
                    await anyio.sleep(0.01)
            try:
                yield llm
            finally:
                llm._closing.set()  # release hanging streams so shutdown is quick
                server.should_exit = True
    finally:
        sock.close()


@contextlib.contextmanager
def scripted_llm_thread(
    script: list[ScriptItem] | None = None, *, timeout: float = 10.0
) -> Iterator[ScriptedLLM]:
    """Serve a :class:`ScriptedLLM` from a background thread (for synchronous tests).

    ``llm.add(...)`` may extend the script while it runs. ``llm.disconnected`` belongs
    to the server thread's loop: poll ``llm.disconnects`` from the caller instead.
    """
    llm = ScriptedLLM(script)
    sock = _bound_socket()
    llm.base_url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = _server(llm)
    failure: list[BaseException] = []

    async def main() -> None:
        llm._closing = anyio.Event()
        llm._disconnected = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])

            async def watch_exit() -> None:
                while not server.should_exit:
                    await anyio.sleep(0.02)
                assert llm._closing is not None
                llm._closing.set()

            tg.start_soon(watch_exit)

    def run() -> None:
        try:
            anyio.run(main)
        except BaseException as exc:  # pragma: no cover - reported to the caller
            failure.append(exc)

    thread = threading.Thread(target=run, name="scripted-llm", daemon=True)
    thread.start()
    try:
        deadline = threading.Event()
        for _ in range(int(timeout / 0.01)):
            if server.started or failure:
                break
            deadline.wait(0.01)
        if failure:
            raise RuntimeError(f"scripted LLM failed to start: {failure[0]!r}")
        if not server.started:
            raise TimeoutError("scripted LLM did not start")
        yield llm
    finally:
        server.should_exit = True
        thread.join(timeout)
        sock.close()
