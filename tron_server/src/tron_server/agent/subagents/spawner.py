"""What a Task call does: start (or continue) a child session and turn its run into a result.

One :class:`Spawner` serves the Task tool of one parent run. For each call it

1. picks the agent definition (``subagent_type``, default ``general-purpose``) and the model;
2. creates the child session in the parent's working directory — ``parent_session_id`` set,
   its ``session.start`` recording the parent's tool call, the ``tool.call`` event that spawned
   it, the agent type and its tool allow-list — or, with ``session_id``, checks that it names
   an earlier child of this parent;
3. records ``subagent.spawned`` in the parent and runs the child's message through the
   orchestrator (its own writer, history, system prompt and tools);
4. records ``subagent.completed`` or ``subagent.failed`` in the parent and returns the child's
   final reply with its session id, turns, tokens and cost (``is_error`` when the child failed).

An abort of the parent cancels the call while it waits: the child is aborted through its own
run's abort (its stream or tool is cut, its processes killed, the interruption recorded) before
the cancellation goes on. Creating the child with its ``subagent.spawned`` record, and
recording a finished child's outcome, are shielded from the abort, so the parent's history
always names the children it made and how each one ended.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.lowlevel

from tron_events import AsyncEventStore, Session, SessionNotActive, SessionNotFound, TronEventsError

from ...errors import AgentBusyError, ManagerUnavailableError
from ...protocol import AGENT_ERROR, AGENT_TOOL_END, AGENT_TOOL_START, SESSION_CREATED
from ...tools.base import ToolContext, ToolRegistry, ToolResult
from .definitions import GENERAL_PURPOSE, AgentDefinition
from .models import resolve_model
from .profile import ParentLink, SessionProfile
from .task_params import TaskParams

if TYPE_CHECKING:
    from ..turn import AgentRun, RunResult

__all__ = ["SpawnHost", "Spawner", "final_text", "usage_between"]

log = logging.getLogger("tron_server.agent.subagents")

OK_STOPS = frozenset({"end_turn", "stop_sequence", "max_tokens", "max_turns", "tool_use"})


@dataclass(frozen=True)
class _Target:
    session: Session
    definition_name: str
    resumed: bool
    model_note: str | None = None


def usage_between(before: Session | None, after: Session) -> dict[str, Any]:
    """Tokens and cost a session added between two reads of its row."""

    def delta(field: str) -> Any:
        now = getattr(after, field)
        return now - (getattr(before, field) if before is not None else 0)

    return {
        "inputTokens": delta("input_tokens"),
        "outputTokens": delta("output_tokens"),
        "cacheReadTokens": delta("cache_read_tokens"),
        "cacheCreationTokens": delta("cache_creation_tokens"),
        "cost": round(float(delta("cost")), 8),
    }


def final_text(messages: list[Any]) -> str:
    """The text of the last assistant message of a history (empty when there is none)."""
    for message in reversed(messages):
        if message.role != "assistant":
            continue
        text = "\n\n".join(
            b.text for b in message.content if getattr(b, "type", "") == "text" and b.text.strip()
        )
        return text.strip()
    return ""


def _summary(arguments: Any) -> str:
    if not isinstance(arguments, dict):
        return ""
    for key in ("command", "file_path", "path", "pattern", "description", "query", "name"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            line = value.splitlines()[0] if value.strip() else value
            return line if len(line) <= 100 else line[:99] + "…"
    return ""


class SpawnHost(Protocol):
    """What the spawner uses of the orchestrator (which satisfies it): it runs the
    children like any session and announces the ones it creates."""

    @property
    def store(self) -> AsyncEventStore: ...

    @property
    def tools(self) -> ToolRegistry: ...

    async def run_child(self, session_id: str, content: str, link: ParentLink) -> RunResult: ...

    def announce_session(self, method: str, session: Session) -> None: ...

    async def profile(self, session_id: str) -> SessionProfile: ...


class Spawner:
    """Runs the Task calls of one parent run (see the module docstring)."""

    def __init__(
        self,
        host: SpawnHost,
        parent: AgentRun,
        profile: SessionProfile,
        agents: dict[str, AgentDefinition],
    ) -> None:
        self.host = host
        self.parent = parent
        self.profile = profile
        self.agents = agents

    # -- the call ---------------------------------------------------------------------

    async def run_task(self, params: TaskParams, ctx: ToolContext) -> ToolResult:
        started = time.monotonic()
        # Creating the child and recording it in the parent are not cut by an abort:
        # a child the parent's history does not name would be lost to it.
        with anyio.CancelScope(shield=True):
            try:
                target = await self._target(params, ctx)
            except _Refused as refused:
                await self._record_failed(ctx, None, params.subagent_type, str(refused), started)
                return ToolResult(content=str(refused), is_error=True)
            await self._record_spawned(params, ctx, target)
        child = target.session
        kind = target.definition_name
        before = child if target.resumed else None
        link = ParentLink(self.parent.session_id, ctx.tool_call_id, self._relay(ctx))
        try:
            # An abort that came while the child was being created stops here, before
            # its run starts; run_child itself aborts the child's run and waits for it.
            await anyio.lowlevel.checkpoint_if_cancelled()
            result = await self.host.run_child(child.id, params.prompt, link)
        except (AgentBusyError, ManagerUnavailableError) as exc:
            await self._record_failed(ctx, child.id, kind, str(exc), started)
            return ToolResult(content=f"Sub-agent not run: {exc}", is_error=True)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._record_failed(
                    ctx, child.id, kind, "interrupted: the parent's turn was aborted",
                    started, interrupted=True,
                )  # fmt: skip
            raise
        # The child has finished: its outcome is recorded whole even if the parent is
        # aborted now (the abort then takes effect after this call).
        with anyio.CancelScope(shield=True):
            outcome = await self._outcome(ctx, target, result, before, started)
        return outcome

    async def _record_spawned(self, params: TaskParams, ctx: ToolContext, target: _Target) -> None:
        child = target.session
        ctx.on_output(
            f"{'Continuing' if target.resumed else 'Started'} sub-agent "
            f"{target.definition_name} in session {child.id}\n"
        )
        await ctx.record(
            "subagent.spawned",
            {
                "childSessionId": child.id,
                "toolCallId": ctx.tool_call_id,
                "subagentType": target.definition_name,
                "description": params.description,
                "model": child.model,
                "provider": child.provider,
                "resumed": target.resumed,
                "depth": self.profile.depth + 1,
                "spawnedByEventId": self.parent.tool_call_events.get(ctx.tool_call_id),
            },
        )

    def _relay(self, ctx: ToolContext) -> Any:
        """The child's activity as lines of the Task call's streamed output."""

        def on_event(method: str, data: dict[str, Any]) -> None:
            if method == AGENT_TOOL_START:
                name = data.get("name", "tool")
                ctx.on_output(f"→ {name} {_summary(data.get('arguments'))}".rstrip() + "\n")
            elif method == AGENT_TOOL_END and data.get("isError"):
                ctx.on_output(f"  {data.get('name', 'tool')} failed\n")
            elif method == AGENT_ERROR:
                ctx.on_output(f"error: {data.get('message', '')}\n")

        return on_event

    # -- choosing the child -----------------------------------------------------------

    def _definition(self, name: str | None) -> AgentDefinition:
        wanted = (name or GENERAL_PURPOSE.name).strip()
        allowed = self.profile.task_agents
        definition = self.agents.get(wanted)
        if definition is None:
            lowered = {k.lower(): v for k, v in self.agents.items()}
            definition = lowered.get(wanted.lower())
        if definition is None or (allowed is not None and definition.name not in allowed):
            names = [n for n in self.agents if allowed is None or n in allowed]
            raise _Refused(
                f"Unknown subagent_type {wanted!r}. Available agents: {', '.join(names) or 'none'}."
            )
        return definition

    async def _target(self, params: TaskParams, ctx: ToolContext) -> _Target:
        store = self.host.store
        if params.session_id:
            return await self._continue(params.session_id)
        definition = self._definition(params.subagent_type)
        parent = await store.get_session(self.parent.session_id)
        choice = resolve_model(
            params.model or definition.model, provider=parent.provider, model=parent.model
        )
        if choice.note:
            ctx.on_output(f"note: {choice.note}\n")
        tools: list[str] | None = None  # None: every tool
        if definition.tools is not None or definition.disallowed_tools:
            # The parent run's tools (its MCP tools too), so ``tools: mcp__x__y`` can name one.
            available = list(dict.fromkeys([*self.parent.tools.names(), "Task"]))
            tools = definition.allowed_tools(available)
        spawn: dict[str, Any] = {
            "parentToolCallId": ctx.tool_call_id,
            "spawnedByEventId": self.parent.tool_call_events.get(ctx.tool_call_id),
            "subagentType": definition.name,
        }
        if tools is not None:
            spawn["tools"] = tools
        if definition.task_agents is not None:
            spawn["taskAgents"] = list(definition.task_agents)
        if definition.max_turns is not None:
            spawn["maxTurns"] = definition.max_turns
        child = await store.create_session(
            working_directory=str(self.parent.working_directory),
            model=choice.model,
            provider=choice.provider,
            title=params.description,
            system_prompt=definition.prompt,
            parent_session_id=parent.id,
            spawn={k: v for k, v in spawn.items() if v is not None},
        )
        self.host.announce_session(SESSION_CREATED, child)
        return _Target(child, definition.name, False, choice.note)

    async def _continue(self, session_id: str) -> _Target:
        store = self.host.store
        try:
            child = await store.get_session(session_id)
        except SessionNotFound:
            raise _Refused(f"No session {session_id!r}: session_id must be a sub-agent session "
                           "id from an earlier Task result of this session.") from None  # fmt: skip
        if child.parent_session_id != self.parent.session_id or child.fork_from_event_id:
            raise _Refused(
                f"Session {session_id!r} is not a sub-agent of this session: only children "
                "this session started with Task can be continued."
            )
        if child.status != "active":
            raise _Refused(f"Sub-agent session {session_id!r} has ended and takes no messages.")
        profile = await self.host.profile(child.id)
        return _Target(child, profile.subagent_type or GENERAL_PURPOSE.name, True)

    # -- the result -------------------------------------------------------------------

    async def _outcome(
        self,
        ctx: ToolContext,
        target: _Target,
        result: RunResult,
        before: Session | None,
        started: float,
    ) -> ToolResult:
        store = self.host.store
        child = target.session
        kind = target.definition_name
        after = await store.get_session(child.id)
        usage = usage_between(before, after)
        duration = round((time.monotonic() - started) * 1000, 1)
        details: dict[str, Any] = {
            "sessionId": child.id,
            "subagentType": kind,
            "turns": result.turns,
            "stopReason": result.stop_reason,
            "usage": usage,
            "cost": usage["cost"],
            "durationMs": duration,
            "resumed": target.resumed,
        }
        footer = (
            f"[sub-agent {kind} · session {child.id} · {result.turns} "
            f"turn{'s' if result.turns != 1 else ''} · {usage['inputTokens']:,} tokens in, "
            f"{usage['outputTokens']:,} out · ${usage['cost']:.4f}. To send it a follow-up, "
            f'call Task with session_id "{child.id}".]'
        )
        if result.stop_reason not in OK_STOPS:
            why = result.error or {
                "aborted": "it was aborted",
                "blocked": "its prompt was blocked by a hook",
            }.get(result.stop_reason, f"it stopped ({result.stop_reason})")
            message = f"Sub-agent {kind} failed: {why}"
            await self._record_failed(
                ctx, child.id, kind, why, started, result=result, usage=usage,
                interrupted=result.stop_reason == "aborted",
            )  # fmt: skip
            return ToolResult(content=f"{message}\n\n{footer}", is_error=True, details=details)
        try:
            state = await store.get_state_at_head(child.id)
            reply = final_text(state.messages)
        except TronEventsError as exc:  # the child's history cannot be read: say so
            reply = f"(the sub-agent's reply could not be read: {exc})"
        if not reply:
            reply = "(the sub-agent finished without a final text reply)"
        if result.stop_reason == "max_turns":
            reply += f"\n\n(The sub-agent stopped at its limit of {result.turns} turns.)"
        await ctx.record(
            "subagent.completed",
            {
                "childSessionId": child.id,
                "toolCallId": ctx.tool_call_id,
                "subagentType": kind,
                "stopReason": result.stop_reason,
                "turns": result.turns,
                "durationMs": duration,
                "usage": usage,
                "resultChars": len(reply),
            },
        )
        note = f"\n(note: {target.model_note})" if target.model_note else ""
        return ToolResult(content=f"{reply}\n\n{footer}{note}", details=details)

    async def _record_failed(
        self,
        ctx: ToolContext,
        child_id: str | None,
        kind: str | None,
        error: str,
        started: float,
        *,
        result: RunResult | None = None,
        usage: dict[str, Any] | None = None,
        interrupted: bool = False,
    ) -> None:
        payload: dict[str, Any] = {
            "toolCallId": ctx.tool_call_id,
            "error": error,
            "durationMs": round((time.monotonic() - started) * 1000, 1),
            "interrupted": interrupted,
        }
        if child_id is not None:
            payload["childSessionId"] = child_id
        if kind is not None:
            payload["subagentType"] = kind
        if result is not None:
            payload["stopReason"] = result.stop_reason
            payload["turns"] = result.turns
        if usage is not None:
            payload["usage"] = usage
        try:
            await ctx.record("subagent.failed", payload)
        except (SessionNotActive, TronEventsError) as exc:
            log.warning("could not record subagent.failed: %s", exc)


class _Refused(Exception):
    """The Task call cannot start a child; the message is the error result."""
