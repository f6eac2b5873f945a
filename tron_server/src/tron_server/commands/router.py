"""Routing a ``/command`` message: a built-in runs here, a command file is expanded and sent.

``agent.message`` hands every text message starting with ``/`` to
:func:`run_command_message`. ``/name args``: ``name`` is a built-in (:mod:`.builtins`) or a
command file (:mod:`.files`; ``/short`` finds ``ns:short`` when only one command ends so).
A text that only looks like a command — ``/usr/bin/env …``, ``//`` — is sent as a message.
An unknown name is an error (-32602) whose ``data`` has ``command`` and ``suggestions``
(the nearest names).

A file command records ``command.invoked`` (its name, arguments, file, and the files and
commands it included) in the same commit as, and just before, the ``message.user`` holding
the expanded text, so the history shows both what the user typed and what the model got.
Its ``allowed-tools`` are allow rules for that run; its ``model`` is that run's model.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from ..agent.subagents import resolve_model
from ..errors import InvalidParams
from ..hooks.base import HookContext
from ..hooks.guardrails import path_policy
from ..interaction import CallFacts, RuleSet, Verdict, decide, parse_rule
from ..interaction.rules import RuleSyntaxError
from ..interaction.settings import load_permission_settings
from ..mcp import expand_mentions
from ..protocol import AGENT_COMMAND_OUTPUT
from ..tools.base import ToolContext

# The built-ins, command files, expansion and MCP prompts (~5 ms of imports) load at the
# first command, not at the server's start: a message that is not a command needs none.
if TYPE_CHECKING:
    from tron_events import Session

    from ..rpc import RpcContext
    from .builtins import Builtin
    from .expand import ExpandEnv
    from .files import CommandFile

__all__ = ["command_list", "parse_command", "resolve", "run_command_message"]

#: How long a ``!`command` `` may run.
BANG_TIMEOUT = 60.0


def parse_command(text: str) -> tuple[str, str] | None:
    """``("review", "the api")`` for ``/review the api``; None when ``text`` is not a
    command (no leading ``/``, ``//…``, or a path like ``/usr/bin/env``)."""
    stripped = text.strip()
    if not stripped.startswith("/") or stripped.startswith("//"):
        return None
    head, _, rest = stripped[1:].partition(" ")
    name, newline, more = head.partition("\n")
    if not name or "/" in name:
        return None
    if newline:
        rest = more + (" " + rest if rest else "")
    return name, rest.strip()


def _builtins(rpc: RpcContext) -> dict[str, Builtin]:
    from .builtins import BUILTINS

    orchestrator = rpc.services.orchestrator
    subagents = getattr(orchestrator, "subagents", None)
    if subagents is not None and not subagents.enabled:
        return {k: v for k, v in BUILTINS.items() if k != "agents"}
    return BUILTINS


def _files(rpc: RpcContext, working_directory: Path | None) -> dict[str, CommandFile]:
    from .files import discover_commands

    home = rpc.services.home
    if working_directory is None:
        # No project: only the home folder's commands.
        return discover_commands(home, home / ".no-project")
    return discover_commands(home, working_directory)


def command_list(
    rpc: RpcContext, working_directory: Path | None, session_id: str | None = None
) -> list[dict[str, Any]]:
    """``command.list``'s entries: built-ins first, then command files, by name, then the
    MCP servers' prompts (``/mcp__<server>__<prompt>``)."""
    from .builtins import BUILTINS
    from .mcp import prompt_entries

    out: list[dict[str, Any]] = [
        {
            "name": b.name,
            "description": b.description,
            "argumentHint": b.argument_hint,
            "source": "builtin",
        }
        for b in _builtins(rpc).values()
    ]
    for command in _files(rpc, working_directory).values():
        if command.name in BUILTINS:
            continue  # built-ins keep their names
        out.append(
            {
                "name": command.name,
                "description": f"{command.description} {command.label}".strip(),
                "argumentHint": command.argument_hint,
                "source": command.scope,
                "path": str(command.path),
                **({"refused": command.refusal} if command.refusal else {}),
            }
        )
    mcp = rpc.services.mcp
    if mcp is not None and working_directory is not None:
        out += prompt_entries(mcp, working_directory, session_id)
        mcp.warm(working_directory, session_id)  # servers never listed: theirs come next time
    return out


def resolve(name: str, files: dict[str, CommandFile]) -> CommandFile | None:
    """The command file for ``name`` (namespaced, or its last part when unambiguous)."""
    if name in files:
        return files[name]
    matches = [c for c in files.values() if c.short_name == name]
    return matches[0] if len(matches) == 1 else None


def _unknown(name: str, names: list[str]) -> InvalidParams:
    near = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    near += [n for n in names if n.startswith(name) and n not in near][: 3 - len(near)]
    hint = f" Did you mean {', '.join('/' + n for n in near)}?" if near else ""
    return InvalidParams(
        f"unknown command /{name}.{hint} /help lists the commands.",
        {"command": name, "suggestions": near},
    )


async def run_command_message(
    rpc: RpcContext,
    session_id: str,
    content: str,
    queue: bool,
    reasoning_level: str | None,
) -> dict[str, Any]:
    """``agent.message`` for a text starting with ``/`` (see the module docstring)."""
    runtime = rpc.services.runtime
    parsed = parse_command(content)
    if parsed is None:
        return await runtime.send(session_id, content, queue=queue, reasoning_level=reasoning_level)
    from .builtins import CommandContext
    from .expand import ExpansionError, expand_body
    from .mcp import find_prompt, run_prompt

    name, arguments = parsed
    store = rpc.services.store
    assert store is not None
    session = await store.get_session(session_id)
    builtin = _builtins(rpc).get(name)
    if builtin is not None:
        result = await builtin.run(CommandContext(rpc, session), arguments)
        output = str(result.get("output") or "")
        rpc.services.hub.publish(
            session_id,
            AGENT_COMMAND_OUTPUT,
            {"name": name, "arguments": arguments, "output": output},
        )
        return {"accepted": True, "turn": None, "queued": False, "runId": None,
                "command": name, "builtin": True, **result}  # fmt: skip
    files = _files(rpc, Path(session.working_directory))
    command = resolve(name, files)
    mcp = rpc.services.mcp
    if command is None and name.startswith("mcp__") and mcp is not None:
        found = await find_prompt(mcp, Path(session.working_directory), session_id, name)
        if found is not None:
            message, prompt_invoked = await run_prompt(*found, name, arguments)
            result = await runtime.send(session_id, message, queue=queue,
                                        reasoning_level=reasoning_level,
                                        before=(("command.invoked", prompt_invoked),))  # fmt: skip
            return {**result, "command": name, "builtin": False}
    if command is None:
        names = [*_builtins(rpc), *files]
        if mcp is not None:
            names += [n for n, _c, _p in mcp.prompts(Path(session.working_directory), session_id)]
        raise _unknown(name, names)
    try:
        expansion = await expand_body(
            command.body, arguments, _env(rpc, session, command),
            shell_refused=command.shell_refused,
        )  # fmt: skip
    except ExpansionError as exc:
        raise InvalidParams(f"/{command.name}: {exc}", {"command": command.name}) from None
    invoked: dict[str, Any] = {
        "name": command.name,
        "arguments": arguments,
        "source": command.scope,
        "path": str(command.path),
    }
    if command.allowed_tools:
        invoked["allowedTools"] = list(command.allowed_tools)
    options: dict[str, Any] = {"allowed_tools": command.allowed_tools}
    if command.model:
        state = await store.get_state_at_head(session_id)
        choice = resolve_model(command.model, provider=state.provider, model=state.model)
        options |= {"model": choice.model, "provider": choice.provider}
        invoked["model"] = choice.model
    if expansion.files:
        invoked["files"] = expansion.files
    if expansion.commands:
        invoked["commands"] = expansion.commands
    wd = Path(session.working_directory)
    text = await expand_mentions(mcp, session_id, wd, expansion.text)
    result = await runtime.send(
        session_id, text, queue=queue, reasoning_level=reasoning_level,
        before=(("command.invoked", invoked),), **options,
    )  # fmt: skip
    return {**result, "command": command.name, "builtin": False}


def _env(rpc: RpcContext, session: Session, command: CommandFile) -> ExpandEnv:
    """Bash and file access for a command's expansion, with the session's guardrails,
    hooks and permissions (the file's ``allowed-tools`` as allow rules)."""
    from .expand import ExpandEnv, ExpansionError

    services = rpc.services
    wd = Path(session.working_directory)
    orchestrator = services.orchestrator
    hooks = orchestrator.hooks_for(wd) if orchestrator is not None else None
    paths = path_policy(hooks, wd)
    real_wd = Path(os.path.realpath(wd))

    async def verdict(
        tool: str,
        tool_input: dict[str, Any],
        found: tuple[tuple[Path, bool], ...],
        named: tuple[tuple[Path, bool], ...] = (),
    ) -> Verdict:
        settings = await anyio.to_thread.run_sync(load_permission_settings, wd, services.home)
        try:
            extra = [
                parse_rule(t, "allow", source=str(command.path)) for t in command.allowed_tools
            ]
        except RuleSyntaxError as exc:
            raise ExpansionError(f"allowed-tools of {command.path}: {exc}") from None
        interaction = services.interaction
        mode = await interaction.mode(session.id) if interaction is not None else "default"
        return decide(
            CallFacts(tool, tool_input, real_wd, found, named=named),
            mode=mode,
            rules=RuleSet(settings.rules).plus(extra),
            edit_roots=settings.additional_directories,
        )

    async def check_bash(command_line: str) -> str | None:
        tool_input = {"command": command_line}
        if hooks is not None:
            decision = await hooks.run_blocking(
                HookContext(event="PreToolUse", session_id=session.id, working_directory=wd,
                            tool_name="Bash", tool_input=tool_input)
            )  # fmt: skip
            if decision.action == "block":
                return decision.reason or "blocked by a PreToolUse hook"
            if decision.action == "ask":
                return f"{decision.reason or 'a hook asks for approval'}; nobody is asked " \
                    "while a command expands"  # fmt: skip
        found = await verdict("Bash", tool_input, ())
        if found.behavior == "deny":
            return found.reason
        if found.behavior == "ask":
            return (
                f"it needs approval ({found.reason}); allow it in the command's "
                "allowed-tools or in permissions.allow"
            )
        return None

    async def run_bash(command_line: str) -> tuple[str, int | None]:
        tools = services.tools
        if tools is None or "Bash" not in tools:
            raise ExpansionError("this server has no Bash tool")
        ctx = ToolContext(session_id=session.id, working_directory=wd,
                          tool_call_id="command", paths=paths)  # fmt: skip
        result = await tools.execute(
            "Bash", {"command": command_line, "timeout": BANG_TIMEOUT}, ctx
        )
        text = result.content if isinstance(result.content, str) else str(result.content)
        code: int | None = 0
        if result.is_error:
            code = None
        elif "[exit code: " in text:
            tail = text.rsplit("[exit code: ", 1)[1].split("]", 1)[0]
            code = int(tail) if tail.lstrip("-").isdigit() else None
        return text, code

    async def check_read(path: Path, is_dir: bool, named: Path) -> str | None:
        found = await verdict(
            "Read", {"file_path": str(path)}, ((path, is_dir),), ((named, is_dir),)
        )
        return found.reason if found.behavior == "deny" else None

    return ExpandEnv(paths=paths, check_bash=check_bash, run_bash=run_bash, check_read=check_read)
