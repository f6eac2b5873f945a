"""One MCP server, connected through the official SDK (``mcp``), started when first needed.

:class:`Connection` owns a server's life:

- **start** (:meth:`Connection.ensure`): the SDK is imported (in a worker thread, the first
  time: it costs ~1 s) and a task of the connection's own enters ``mcp.Client`` over the
  server's transport — stdio (a child in its own process group: the SDK starts it in a new
  session and kills the group when the connection closes), Streamable HTTP, or the legacy
  SSE transport. The handshake and the first listings (tools, prompts, resources) must end
  within ``startup_timeout``.
- **failure**: a server that cannot start, crashes (its stderr closes, or a request finds
  the connection closed) or does not answer in time is ``failed``, with the error and the
  tail of its stderr. Nothing waits on it. The next use starts it again, unless the last
  failure is more recent than its backoff (1 s, doubling to 60 s), in which case the use
  fails at once saying when it will be retried.
- **lists**: tools, prompts and resources are fetched once per connection, kept, and fetched
  again on ``notifications/{tools,prompts,resources}/list_changed``; each fetch is also
  written to the :class:`~.cache.ListCache` so the next process knows them without starting
  the server.
- **calls** run in the caller's task: cancelling it (an abort) makes the SDK send
  ``notifications/cancelled``. Progress notifications reach the caller's ``on_progress``;
  an elicitation the server asks during a call goes to that call's ``elicit``; sampling is
  refused unless enabled.
"""

from __future__ import annotations

import contextvars
import importlib
import logging
import math
import os
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio

from .cache import ListCache, Lists
from .config import ServerConfig
from .stderr import StderrTail

__all__ = ["Call", "Connection", "McpOptions", "ServerError", "Status"]

log = logging.getLogger("tron_server.mcp")

Status = Literal["idle", "connecting", "connected", "failed"]

#: Backoff before a failed server is started again: 1 s, doubling, at most this.
MAX_BACKOFF = 60.0

ElicitFn = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
"""An elicitation request's params (wire form) → the result (``{action, content?}``)."""
ProgressFn = Callable[[float, float | None, str | None], None]
SampleFn = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
"""A sampling request's params (wire form) → a ``CreateMessageResult`` (wire form)."""


class ServerError(Exception):
    """The server cannot be used now (not started, failed, crashed, timed out); the message
    says why, with its stderr's last lines when it wrote any."""


@dataclass
class McpOptions:
    """How connections behave (``MCP_TIMEOUT`` and ``MCP_TOOL_TIMEOUT``, in milliseconds,
    set the two timeouts as they do in Claude Code)."""

    startup_timeout: float = 30.0
    tool_timeout: float | None = None
    #: Let servers ask the session's model (sampling/createMessage); off: refused.
    sampling: bool = False
    client_name: str = "tron"
    client_version: str = "0.0.0"

    @classmethod
    def from_environment(cls, **overrides: Any) -> McpOptions:
        options = cls(**overrides)
        startup = _millis(os.environ.get("MCP_TIMEOUT"))
        if startup is not None:
            options.startup_timeout = startup
        tool = _millis(os.environ.get("MCP_TOOL_TIMEOUT"))
        if tool is not None:
            options.tool_timeout = tool
        return options


def _millis(value: str | None) -> float | None:
    try:
        return int(value) / 1000 if value and int(value) > 0 else None
    except ValueError:
        return None


@dataclass
class Call:
    """Who is calling: an elicitation or progress during the call goes to them."""

    session_id: str
    elicit: ElicitFn | None = None
    on_progress: ProgressFn | None = None


_current_call: contextvars.ContextVar[Call | None] = contextvars.ContextVar(
    "mcp_call", default=None
)


def _import_sdk() -> None:
    for module in ("mcp", "mcp.client.stdio", "mcp.client.sse", "mcp.client.streamable_http"):
        importlib.import_module(module)


def _dump(model: Any) -> dict[str, Any]:
    data: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return data


@dataclass
class _Attempt:
    """One start of the server: its task, the client once connected, its stderr."""

    done: anyio.Event = field(default_factory=anyio.Event)
    ready: anyio.Event = field(default_factory=anyio.Event)
    timed_out: bool = False
    client: Any = None
    stderr: StderrTail | None = None
    stop: anyio.Event = field(default_factory=anyio.Event)


class Connection:
    """A configured server and, while started, its connection (see the module docstring)."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        root: Path,
        options: McpOptions,
        cache: ListCache | None = None,
        sample: SampleFn | None = None,
    ) -> None:
        self.config = config
        self.root = root
        self.options = options
        self.cache = cache
        self.sample = sample
        self.status: Status = "idle"
        self.error: str | None = None
        self.stderr_tail = ""
        self.lists: Lists | None = cache.get(config) if cache is not None else None
        self.server_info: dict[str, Any] | None = None
        self.protocol_version: str | None = None
        self.instructions: str | None = None
        self._failures = 0
        self._retry_at = 0.0
        self._attempt: _Attempt | None = None
        self._tasks: anyio.abc.TaskGroup | None = None
        self._calls: list[Call] = []
        #: Bumped at each listing, so callers can tell the lists changed.
        self.generation = 0
        self._changed: list[Callable[[Connection], None]] = []

    # -- state ---------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.config.name

    def on_change(self, callback: Callable[[Connection], None]) -> None:
        """Call ``callback(self)`` when the lists change or the status does."""
        self._changed.append(callback)

    def _notify(self) -> None:
        for callback in list(self._changed):
            try:
                callback(self)
            except Exception:
                log.exception("mcp change callback failed")

    @property
    def connected(self) -> bool:
        return self.status == "connected"

    @property
    def failures(self) -> int:
        """Failures since it last connected (each a new one to tell about)."""
        return self._failures

    def retry_in(self) -> float:
        """Seconds until a failed server may be started again (0: now)."""
        return max(0.0, self._retry_at - time.monotonic())

    def describe_error(self) -> str:
        """The failure, with its stderr tail, for the user and the model."""
        text = f"MCP server {self.name!r} {self.error or 'is not connected'}"
        if self.stderr_tail:
            text += f"\n[stderr of {self.name}]\n{self.stderr_tail}"
        return text

    def _fail(self, error: str, attempt: _Attempt | None) -> None:
        if attempt is not None and attempt is not self._attempt:
            return  # an old attempt's late news
        self.status = "failed"
        self.error = error
        if attempt is not None and attempt.stderr is not None:
            self.stderr_tail = attempt.stderr.text()
        self._failures += 1
        self._retry_at = time.monotonic() + min(MAX_BACKOFF, 2.0 ** (self._failures - 1))
        if attempt is not None:
            attempt.stop.set()
        log.warning("%s", self.describe_error())
        self._notify()

    # -- starting --------------------------------------------------------------------------

    def bind(self, tasks: anyio.abc.TaskGroup) -> None:
        """The task group the connection's own tasks run in (the manager's)."""
        self._tasks = tasks

    async def ensure(self, wait: float | None = None) -> bool:
        """Start the server unless it runs or is starting (a failed one only once its backoff
        has passed); then wait up to ``wait`` seconds (None: until it is connected or has
        failed, which its startup timeout bounds) for it. True when connected."""
        if self.status == "connected":
            return True
        if self.status in ("idle", "failed") and not (
            self.status == "failed" and self.retry_in() > 0
        ):
            self._start()
        attempt = self._attempt
        if attempt is None or self.status == "failed":
            return False
        # None: until it connects or fails (its startup timeout bounds that).
        with anyio.move_on_after(math.inf if wait is None else wait):
            async with anyio.create_task_group() as tg:

                async def first(event: anyio.Event) -> None:
                    await event.wait()
                    tg.cancel_scope.cancel()

                tg.start_soon(first, attempt.ready)
                tg.start_soon(first, attempt.done)
        return self.connected

    def _start(self) -> None:
        if self._tasks is None:
            raise RuntimeError("Connection.bind() was not called")
        attempt = _Attempt()
        self._attempt = attempt
        self.status = "connecting"
        self.error = None
        self._tasks.start_soon(self._run, attempt, name=f"mcp:{self.name}")

    async def _run(self, attempt: _Attempt) -> None:
        try:
            await self._serve(attempt)
        except Exception as exc:  # the server's failure, never the manager's
            self._fail(_reason(exc, self.config), attempt)
        finally:
            attempt.done.set()
            if attempt.stderr is not None:
                attempt.stderr.close_writer()
            if self._attempt is attempt and self.status in ("connected", "connecting"):
                self.status = "idle"  # closed on purpose
                self._notify()

    async def _serve(self, attempt: _Attempt) -> None:
        await anyio.to_thread.run_sync(_import_sdk)
        from mcp import Client
        from mcp_types import Implementation

        # The client's own task group lives inside these scopes until the connection
        # closes, so the startup timeout is a watchdog cancelling them all, not a scope
        # around the handshake (which the client's task group would outlive).
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._watchdog, attempt, scope)
                async with AsyncExitStack() as stack:
                    transport = await self._transport(stack, attempt)
                    if attempt.stderr is not None:
                        tg.start_soon(attempt.stderr.pump)
                    client = Client(
                        transport,
                        read_timeout_seconds=None,
                        client_info=Implementation(
                            name=self.options.client_name, version=self.options.client_version
                        ),
                        elicitation_callback=self._on_elicit,
                        sampling_callback=self._on_sample,
                        list_roots_callback=self._on_roots,
                        message_handler=self._on_message,
                        cache=None,  # lists are ours to keep (and refresh on list_changed)
                    )
                    try:
                        async with client:
                            if attempt.stderr is not None:
                                attempt.stderr.close_writer()
                            attempt.client = client
                            self.protocol_version = client.protocol_version
                            info = client.server_info
                            self.server_info = _dump(info) if info is not None else None
                            self.instructions = client.instructions
                            await self._list(client, "all")
                            self.status = "connected"
                            self._failures = 0
                            attempt.ready.set()
                            self._notify()
                            if attempt.stderr is not None:
                                tg.start_soon(self._watch_exit, attempt)
                            await attempt.stop.wait()
                    finally:
                        if attempt.stderr is not None:
                            attempt.stderr.close_writer()
                tg.cancel_scope.cancel()
        if attempt.timed_out:
            raise TimeoutError("startup timed out")

    async def _watchdog(self, attempt: _Attempt, scope: anyio.CancelScope) -> None:
        with anyio.move_on_after(self.options.startup_timeout):
            await attempt.ready.wait()
        if not attempt.ready.is_set():
            attempt.timed_out = True
            scope.cancel()

    async def _watch_exit(self, attempt: _Attempt) -> None:
        assert attempt.stderr is not None
        await attempt.stderr.closed.wait()
        if self.status == "connected" and not attempt.stop.is_set():
            self._fail("exited (its stderr closed)", attempt)

    async def _transport(self, stack: AsyncExitStack, attempt: _Attempt) -> Any:
        config = self.config
        if config.transport == "stdio":
            from mcp.client.stdio import StdioServerParameters, stdio_client

            attempt.stderr = StderrTail(config.name)
            params = StdioServerParameters(
                command=config.command,
                args=list(config.args),
                env=dict(config.env) or None,
                cwd=str(self.root),
            )
            assert attempt.stderr.writer is not None
            return stdio_client(params, errlog=attempt.stderr.writer)
        import httpx2

        headers = dict(config.headers)
        if config.transport == "sse":
            from mcp.client.sse import sse_client

            return sse_client(config.url, headers=headers or None,
                              timeout=min(30.0, self.options.startup_timeout))  # fmt: skip
        from mcp.client.streamable_http import streamable_http_client

        http = await stack.enter_async_context(
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0))
        )
        return streamable_http_client(config.url, http_client=http)

    # -- lists ---------------------------------------------------------------------------

    async def _list(self, client: Any, which: str) -> None:
        caps = client.server_capabilities
        lists = self.lists if self.lists is not None and which != "all" else Lists()
        if which in ("all", "tools"):
            lists.tools = [_dump(t) for t in await _all_pages(client.list_tools)] if caps.tools \
                else []  # fmt: skip
        if which in ("all", "prompts"):
            lists.prompts = (
                [_dump(p) for p in await _all_pages(client.list_prompts, "prompts")]
                if caps.prompts else []
            )  # fmt: skip
        if which in ("all", "resources"):
            if caps.resources:
                lists.resources = [_dump(r) for r in await _all_pages(client.list_resources,
                                                                      "resources")]  # fmt: skip
                lists.templates = [
                    _dump(r)
                    for r in await _all_pages(client.list_resource_templates, "resource_templates")
                ]
            else:
                lists.resources, lists.templates = [], []
        self.lists = lists
        self.generation += 1
        if self.cache is not None:
            await anyio.to_thread.run_sync(self.cache.put, self.config, lists)
        if which != "all":
            self._notify()

    async def _on_message(self, message: Any) -> None:
        method = getattr(message, "method", None)
        kinds = {
            "notifications/tools/list_changed": "tools",
            "notifications/prompts/list_changed": "prompts",
            "notifications/resources/list_changed": "resources",
        }
        which = kinds.get(str(method))
        attempt = self._attempt
        if which is None or attempt is None or attempt.client is None or self._tasks is None:
            if isinstance(message, Exception):
                log.debug("mcp server %s: transport error %s", self.name, message)
            return

        async def refresh() -> None:
            try:
                await self._list(attempt.client, which)
            except Exception as exc:
                log.warning("mcp server %s: refreshing its %s failed: %s", self.name, which, exc)

        self._tasks.start_soon(refresh)

    # -- server → client requests -----------------------------------------------------------

    def _caller(self) -> Call | None:
        return _current_call.get() or (self._calls[-1] if self._calls else None)

    async def _on_elicit(self, context: Any, params: Any) -> Any:
        from mcp_types import ElicitResult, ErrorData

        call = self._caller()
        if call is None or call.elicit is None:
            return ErrorData(code=-32600, message="Tron asks the user only during a tool call "
                             "of a running turn; nothing is running now")  # fmt: skip
        try:
            answer = await call.elicit(_dump(params))
        except Exception as exc:
            log.exception("elicitation for %s failed", self.name)
            return ErrorData(code=-32603, message=f"asking the user failed: {exc}")
        return ElicitResult.model_validate(answer)

    async def _on_sample(self, context: Any, params: Any) -> Any:
        from mcp_types import CreateMessageResult, ErrorData

        if not self.options.sampling or self.sample is None:
            return ErrorData(
                code=-32600,
                message="sampling is disabled in Tron: the server may not ask the model "
                "(a user turns it on with TRON_MCP_SAMPLING=1)",
            )
        try:
            return CreateMessageResult.model_validate(await self.sample(_dump(params)))
        except Exception as exc:
            return ErrorData(code=-32603, message=f"sampling failed: {exc}")

    async def _on_roots(self, context: Any) -> Any:
        from mcp_types import ListRootsResult, Root

        return ListRootsResult(roots=[Root(uri=self.root.resolve().as_uri(), name=self.root.name)])

    # -- calls -----------------------------------------------------------------------------

    async def _client(self, wait: float | None = None) -> Any:
        if not await self.ensure(wait):
            if self.status == "failed":
                retry = self.retry_in()
                again = f" (it is started again on the next use in {math.ceil(retry)} s)"
                note = again if retry else ""
                raise ServerError(self.describe_error() + note)
            raise ServerError(f"MCP server {self.name!r} did not start within "
                              f"{self.options.startup_timeout:g} s")  # fmt: skip
        attempt = self._attempt
        assert attempt is not None and attempt.client is not None
        return attempt.client

    async def _request(self, call: Call | None, work: Callable[[Any], Awaitable[Any]]) -> Any:
        """Run ``work(client)`` for ``call``; a closed connection fails the server."""
        client = await self._client()
        attempt = self._attempt
        token = _current_call.set(call)
        if call is not None:
            self._calls.append(call)
        try:
            return await work(client)
        except Exception as exc:
            if _is_closed(exc):
                self._fail(f"crashed: {exc}", attempt)
                await anyio.sleep(0)  # let the stderr tail arrive
                raise ServerError(self.describe_error()) from None
            raise
        finally:
            if call is not None:
                self._calls.remove(call)
            _current_call.reset(token)

    async def call_tool(self, tool: str, arguments: dict[str, Any], call: Call) -> dict[str, Any]:
        """``tools/call``; the result in wire form. Raises :class:`ServerError` when the
        server is unavailable, ``TimeoutError`` past ``tool_timeout``, and the SDK's
        ``MCPError`` for a protocol error (an unknown tool)."""

        async def progress(value: float, total: float | None, message: str | None) -> None:
            if call.on_progress is not None:
                call.on_progress(value, total, message)

        async def work(client: Any) -> dict[str, Any]:
            result = await client.call_tool(
                tool, arguments, read_timeout_seconds=self.options.tool_timeout,
                progress_callback=progress,
            )  # fmt: skip
            return _dump(result)

        result: dict[str, Any] = await self._request(call, work)
        return result

    async def get_prompt(self, prompt: str, arguments: dict[str, str]) -> dict[str, Any]:
        async def work(client: Any) -> dict[str, Any]:
            return _dump(await client.get_prompt(prompt, arguments or None))

        result: dict[str, Any] = await self._request(None, work)
        return result

    async def read_resource(self, uri: str) -> dict[str, Any]:
        async def work(client: Any) -> dict[str, Any]:
            return _dump(await client.read_resource(uri))

        result: dict[str, Any] = await self._request(None, work)
        return result

    async def complete_resource(self, prefix: str) -> list[str]:
        """Resource URIs starting with ``prefix`` (the listed ones)."""
        lists = self.lists or Lists()
        return [
            str(r.get("uri")) for r in lists.resources if str(r.get("uri", "")).startswith(prefix)
        ]

    # -- stopping --------------------------------------------------------------------------

    async def close(self, timeout: float = 10.0) -> None:
        """Close the connection (the stdio child and its group are killed); idle after."""
        attempt = self._attempt
        if attempt is None:
            return
        attempt.stop.set()
        with anyio.move_on_after(timeout, shield=True):
            await attempt.done.wait()
        self._attempt = None
        if self.status != "failed":
            self.status = "idle"


async def _all_pages(method: Callable[..., Awaitable[Any]], key: str = "tools") -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(100):  # a server whose pages never end cannot hang a listing
        page = await method(cursor=cursor) if cursor else await method()
        items.extend(getattr(page, key))
        cursor = getattr(page, "next_cursor", None)
        if not cursor:
            break
    return items


def _is_closed(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "connection closed" in text or isinstance(
        exc, anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream
    )


def _reason(exc: BaseException, config: ServerConfig) -> str:
    """Why a start failed, in a sentence."""
    if isinstance(exc, TimeoutError):
        return "did not start in time (no answer to the handshake)"
    if isinstance(exc, FileNotFoundError | PermissionError):
        return f"could not be started: {config.command}: {exc.strerror or exc}"
    if isinstance(exc, BaseExceptionGroup):
        inner = exc.exceptions[0] if exc.exceptions else exc
        return _reason(inner, config)
    text = str(exc) or type(exc).__name__
    if _is_closed(exc):
        return f"exited during the handshake ({text})"
    return f"failed to start: {type(exc).__name__}: {text}"
