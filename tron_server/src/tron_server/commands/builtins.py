"""The built-in slash commands.

Each works through the same code as the RPC method behind it (``/fork`` is
``session.fork``, ``/rewind`` ``session.rewind``, ``/model`` ``model.switch``, ``/compact``
``context.compact``, ``/mode`` ``session.setMode`` …), so a command and a client calling
the method get the same result and record the same events. A command's text output is the
``output`` of ``agent.message``'s result and of the ``agent.command_output`` notification.

============================  ===================================================================
``/help``                     the commands, with their descriptions
``/clear``                    a fresh conversation: records ``context.cleared`` (the events stay)
``/compact [instructions]``   summarize the history now (the instructions guide the summary)
``/model [name]``             switch the model; without a name, the current one and the list
``/fork``                     a new session continuing from the head (``session``: the new one)
``/rewind [N | eventId]``     back to before the N-th last message (default 1), or to an event;
                              ``… files [force]``: the files go back too (a rewind with files)
``/cost``                     tokens and cost of the session (and its sub-agents)
``/context``                  how full the context window is
``/agents``                   the sub-agents the Task tool can start
``/permissions``              the mode and every permission rule, with where it comes from
``/mode [name]``              switch the permission mode; without a name, the current and all
``/mcp [approve|deny name]``  the MCP servers (``mcp.list``); approve or refuse a project server
``/ledger``                   the folder's ledger (``.tron/ledger.md``) and the user's
``/handoff``                  make a handoff of the session now (``memory.handoff``)
``/recall QUERY``             search the past sessions of this folder (``memory.search``)
``/end [reason]``             end the session (``session.end``): its handoff and ledger are made
============================  ===================================================================
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from tron_events import Session

from ..agent.compaction import compact_session
from ..agent.subagents import discover_agents
from ..errors import InvalidOperationError, InvalidParams, ManagerUnavailableError
from ..mcp import format_listing
from ..memory import HANDOFF_TYPE

if TYPE_CHECKING:
    from ..rpc import RpcContext

__all__ = ["BUILTINS", "Builtin", "CommandContext"]


@dataclass(frozen=True)
class CommandContext:
    """The call a command runs in, and the session it is for."""

    rpc: RpcContext
    session: Session

    @property
    def session_id(self) -> str:
        return self.session.id

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        """Run a registered RPC method as if the client had called it."""
        registry = self.rpc.registry
        if registry is None:
            raise ManagerUnavailableError(f"this server has no {method} method")
        return await registry.call(self.rpc, method, params)


Run = Callable[[CommandContext, str], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Builtin:
    name: str
    description: str
    run: Run
    argument_hint: str = ""


async def _mcp(cx: CommandContext, args: str) -> dict[str, Any]:
    """``/mcp``, ``/mcp approve <server>``, ``/mcp deny <server>``."""
    words = args.split()
    folder = cx.session.working_directory
    if words and words[0] in ("approve", "deny", "enable", "disable"):
        if len(words) != 2:
            raise InvalidParams(f"usage: /mcp {words[0]} <server>")
        approved = words[0] in ("approve", "enable")
        answer = await cx.call("mcp.approve", {"workingDirectory": folder, "server": words[1],
                                               "approved": approved})  # fmt: skip
        status = answer["server"]["status"]
        if status == "needs-approval" and answer["server"].get("error"):
            status += f": {answer['server']['error']}"  # e.g. the folder is not trusted yet
        return {"output": f"MCP server {words[1]}: {'approved' if approved else 'refused'} "
                          f"for {folder} (now {status}).", "server": answer["server"]}  # fmt: skip
    if words:
        raise InvalidParams("usage: /mcp, /mcp approve <server> or /mcp deny <server>")
    listing = await cx.call("mcp.list", {"sessionId": cx.session_id})
    return {"output": format_listing(listing), "mcp": listing}


def _money(value: Any) -> str:
    return f"${value:.4f}" if isinstance(value, int | float) else "unknown"


async def _help(cx: CommandContext, args: str) -> dict[str, Any]:
    # command.list as a client would call it (the router, which lists, runs this module)
    listed = await cx.call("command.list", {"sessionId": cx.session_id})
    lines = ["Commands:"]
    for entry in listed["commands"]:
        hint = f" {entry['argumentHint']}" if entry["argumentHint"] else ""
        lines.append(f"  /{entry['name']}{hint} — {entry['description']}")
    return {"output": "\n".join(lines)}


async def _clear(cx: CommandContext, args: str) -> dict[str, Any]:
    cx.rpc.services.runtime.ensure_idle(cx.session_id, "clear")
    orchestrator = cx.rpc.services.orchestrator
    assert orchestrator is not None
    await orchestrator.record_event(cx.session_id, "context.cleared", {"reason": "/clear"})
    await orchestrator.context_reset(cx.session_id, "clear")  # SessionStart hooks, again
    return {
        "output": "Context cleared: the next message starts a fresh conversation "
        "(the earlier events stay in the session's tree)."
    }


async def _compact(cx: CommandContext, args: str) -> dict[str, Any]:
    cx.rpc.services.runtime.ensure_idle(cx.session_id, "compact")
    orchestrator = cx.rpc.services.orchestrator
    assert orchestrator is not None
    result = await compact_session(
        orchestrator, cx.session_id, record=True, instructions=args or None
    )
    data = result.to_json()
    return {
        "output": f"Compacted: {data.get('tokensBefore')} → {data.get('tokensAfter')} tokens.",
        "compaction": data,
    }


async def _model(cx: CommandContext, args: str) -> dict[str, Any]:
    if args:
        switched = await cx.call("model.switch", {"sessionId": cx.session_id, "model": args})
        return {
            "output": f"Model: {switched['previousModel']} → {switched['newModel']} "
            f"({switched['provider']}).",
            "model": switched,
        }
    store = cx.rpc.services.store
    assert store is not None
    state = await store.get_state_at_head(cx.session_id)
    listed = await cx.call("model.list", {})
    lines = [f"Current model: {state.model} ({state.provider}). Known models:"]
    lines += [f"  {m['id']} ({m['provider']})" for m in listed.get("models") or []]
    return {"output": "\n".join(lines)}


async def _fork(cx: CommandContext, args: str) -> dict[str, Any]:
    result = await cx.call("session.fork", {"eventId": cx.session.head_event_id})
    session = result["session"]
    return {
        "output": f"Forked: the new session {session['id']} continues from here.",
        "session": session,
        "forkEventId": result["forkEventId"],
    }


async def _rewind(cx: CommandContext, args: str) -> dict[str, Any]:
    store = cx.rpc.services.store
    assert store is not None
    words = args.split()
    # "files": the files the agent changed go back too; "force": over outside edits.
    files, force = "files" in words, "force" in words
    if force and not files:
        raise InvalidParams("/rewind … force goes with files: /rewind [N | eventId] files force")
    target = " ".join(w for w in words if w not in ("files", "force"))
    if target.startswith("evt_"):
        event_id = target
    else:
        if target and not re.fullmatch(r"\d+", target):
            raise InvalidParams("/rewind takes a number of messages (default 1) or an event id")
        back = int(target or "1")
        if back < 1:
            raise InvalidParams("/rewind takes a number of messages of at least 1")
        path = await store.get_ancestors(cx.session.head_event_id)
        prompts = [e for e in path if e.type == "message.user"]
        if len(prompts) < back:
            raise InvalidOperationError(
                f"the session has {len(prompts)} message(s) to rewind past, not {back}"
            )
        message = prompts[-back]
        if message.parent_id is None:
            raise InvalidOperationError("nothing to rewind to before that message")
        event_id = message.parent_id
    params: dict[str, Any] = {"sessionId": cx.session_id, "eventId": event_id}
    if files:
        params.update(restoreFiles=True, force=force)
    session = await cx.call("session.rewind", params)
    output = f"Rewound to {event_id}: later events stay in the tree (fork from them)."
    restore = session.pop("restore", None) if isinstance(session, dict) else None
    if restore is not None:
        output += f" {len(restore['files'])} file(s) restored"
        if restore["forced"]:
            output += f", {len(restore['forced'])} over changes made outside the agent"
        if restore["skipped"]:
            output += (
                f", {len(restore['skipped'])} left as they are (too large to have been recorded)"
            )
        output += "."
    answer = {"output": output, "session": session}
    if restore is not None:
        answer["restore"] = restore
    return answer


async def _cost(cx: CommandContext, args: str) -> dict[str, Any]:
    s = await cx.call("session.get", {"sessionId": cx.session_id})
    total = s.get("totalWithChildren") or {}
    lines = [
        f"Cost {_money(s.get('cost'))} · input {s.get('inputTokens')} · output "
        f"{s.get('outputTokens')} · cache read {s.get('cacheReadTokens')} · cache write "
        f"{s.get('cacheCreationTokens')} tokens · {s.get('turnCount')} turns",
    ]
    if total.get("sessions", 1) > 1:
        lines.append(
            f"With its {total['sessions'] - 1} sub-agent session(s): {_money(total.get('cost'))}, "
            f"input {total.get('inputTokens')} · output {total.get('outputTokens')} tokens"
        )
    keys = ("cost", "inputTokens", "outputTokens", "cacheReadTokens", "cacheCreationTokens")
    return {"output": "\n".join(lines), "usage": {k: s.get(k) for k in keys}}


async def _context(cx: CommandContext, args: str) -> dict[str, Any]:
    c = await cx.call("context.get", {"sessionId": cx.session_id})
    return {
        "output": f"Model {c['model']}: {c['usedTokens']} of {c['contextWindow']} tokens "
        f"in use ({c['percent']:.1f}%).",
        "context": c,
    }


async def _agents(cx: CommandContext, args: str) -> dict[str, Any]:
    home = cx.rpc.services.home
    found = await anyio.to_thread.run_sync(
        discover_agents, home, Path(cx.session.working_directory)
    )
    lines = ["Sub-agents the Task tool can start:"]
    for agent in found.values():
        where = f" [{agent.source}]" if agent.source else " [built-in]"
        lines.append(f"  {agent.name} — {agent.description}{where}")
    return {"output": "\n".join(lines), "agents": sorted(found)}


async def _permissions(cx: CommandContext, args: str) -> dict[str, Any]:
    data = await cx.call("permissions.get", {"sessionId": cx.session_id})
    lines = [f"Mode: {data['mode']}"]
    if data.get("error"):
        lines.append(f"Settings error: {data['error']}")
    if data.get("trusted") is False:
        lines.append(
            "This folder is not trusted: its own allow rules, defaultMode and "
            "additionalDirectories are ignored (`tron --trust` trusts it)."
        )
    for behavior in ("deny", "ask", "allow"):
        rules = [r for r in data["rules"] if r["behavior"] == behavior]
        if rules:
            lines.append(f"{behavior.capitalize()}:")
            lines += [f"  {r['rule']}  ({r['source']})" for r in rules]
    if not data["rules"]:
        lines.append("No rules (settings files: permissions.allow / ask / deny).")
    return {"output": "\n".join(lines), "permissions": data}


async def _mode(cx: CommandContext, args: str) -> dict[str, Any]:
    if args:
        changed = await cx.call("session.setMode", {"sessionId": cx.session_id, "mode": args})
        return {"output": f"Mode: {changed['previousMode']} → {changed['mode']}.", **changed}
    interaction = cx.rpc.services.interaction
    if interaction is None:
        raise ManagerUnavailableError("permission modes are not available in this server")
    current = await interaction.mode(cx.session_id)
    lines = [f"Mode: {current}. Modes:"]
    for m in interaction.modes():
        if m["available"]:
            lines.append(f"  {m['id']} — {m['description']}")
    return {"output": "\n".join(lines), "mode": current}


async def _ledger(cx: CommandContext, args: str) -> dict[str, Any]:
    data = await cx.call("memory.get", {"workingDirectory": cx.session.working_directory})
    parts: list[str] = []
    for key, label in (("ledger", "Ledger"), ("userLedger", "Your ledger")):
        ledger = data[key]
        if ledger["exists"]:
            parts.append(f"{label} ({ledger['path']}):\n{ledger['content'].rstrip()}")
        elif key == "ledger":
            parts.append(
                f"No ledger yet: {ledger['path']} is written at the next compaction or session "
                "end, or write it yourself (sections: Goal, Current state, Decisions, Next steps)."
            )
    if not data["settings"]["ledger"]:
        parts.append('The ledger is switched off here ("memory" in settings.json).')
    return {"output": "\n\n".join(parts), "ledger": data["ledger"],
            "userLedger": data["userLedger"]}  # fmt: skip


async def _handoff(cx: CommandContext, args: str) -> dict[str, Any]:
    made = await cx.call("memory.handoff", {"sessionId": cx.session_id})
    handoff = made["handoff"]
    lines = [f"Handoff {handoff['eventId']}: {handoff['summary']}"]
    if handoff.get("nextSteps"):
        lines.append("Next steps: " + "; ".join(handoff["nextSteps"]))
    if not handoff.get("complete", True):
        lines.append(f"(summary only: {handoff.get('fallbackReason')})")
    return {"output": "\n".join(lines), "handoff": handoff}


async def _recall(cx: CommandContext, args: str) -> dict[str, Any]:
    if not args.strip():
        raise InvalidParams("/recall needs words to search for: /recall QUERY")
    found = await cx.call(
        "memory.search",
        {"query": args, "workingDirectory": cx.session.working_directory, "limit": 10},
    )
    hits = found["hits"]
    if not hits:
        return {"output": f"Nothing in this folder's past sessions matches {args!r}.", "hits": []}
    lines = [f"{len(hits)} hit(s) for {args!r}:"]
    for n, h in enumerate(hits, 1):
        snippet = " ".join(str(h["snippet"]).split())
        lines.append(f"{n}. {h['sessionId']} · {h['eventId']} · {h['type']}\n   {snippet}")
    return {"output": "\n".join(lines), "hits": hits}


async def _end(cx: CommandContext, args: str) -> dict[str, Any]:
    # The one place a user ends a session on purpose: session.end makes the handoff and
    # brings the ledger up to date when anything was said since the last handoff.
    ended = await cx.call(
        "session.end", {"sessionId": cx.session_id, "reason": args.strip() or "completed"}
    )
    store = cx.rpc.services.store
    assert store is not None
    # The session's own handoffs, not the workspace's memory.get: the newest is the one
    # session.end just made (or the last one, when nothing was said since).
    mine = await store.get_events(cx.session_id, types=[HANDOFF_TYPE])
    lines = ["Session ended: it takes no more messages (fork it to continue)."]
    if mine:
        lines.append(f"Handoff {mine[-1].id}: {mine[-1].payload.get('summary', '')}")
    return {"output": "\n".join(lines), "session": ended}


BUILTINS: dict[str, Builtin] = {
    b.name: b
    for b in (
        Builtin("help", "List the commands", _help),
        Builtin("clear", "Start a fresh conversation (the history stays in the tree)", _clear),
        Builtin("compact", "Summarize the history now", _compact, "[instructions]"),
        Builtin("model", "Switch the model, or list them", _model, "[name]"),
        Builtin("fork", "Continue in a new session forked at the head", _fork),
        Builtin(
            "rewind",
            "Go back to before the last message (or N, or an event); files: the files too",
            _rewind,
            "[N | eventId] [files [force]]",
        ),
        Builtin("cost", "Tokens and cost of this session", _cost),
        Builtin("context", "How much of the context window is in use", _context),
        Builtin("agents", "The sub-agents the Task tool can start", _agents),
        Builtin("permissions", "The permission mode and rules", _permissions),
        Builtin("mode", "Switch the permission mode, or list them", _mode, "[mode]"),
        Builtin(
            "mcp",
            "MCP servers: status, tools, prompts; approve a project's servers",
            _mcp,
            "[approve|deny <server>]",
        ),
        Builtin("ledger", "Show the ledger of this folder (working memory)", _ledger),
        Builtin("handoff", "Make a handoff of this session now (episodic memory)", _handoff),
        Builtin("recall", "Search the past sessions of this folder", _recall, "QUERY"),
        Builtin("end", "End this session (its handoff and ledger are made)", _end, "[reason]"),
    )
}
