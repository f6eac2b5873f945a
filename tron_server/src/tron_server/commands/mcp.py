"""MCP in the conversation: prompts as ``/mcp__<server>__<prompt>``, ``@<server>:<uri>``
mentions, and the ``/mcp`` command.

- A server's prompt is the command ``/mcp__<server>__<prompt> args``: the arguments (shell
  quoting groups words) fill the prompt's arguments in order, the last one taking the rest;
  a missing required one is an error naming it. The prompt's messages become the user's
  message (text, images, embedded resources as :mod:`tron_server.mcp.results` maps them),
  recorded after ``command.invoked`` (``source: "mcp"``, the server and prompt).
- ``@<server>:<uri>`` in a message (at its start or after a space) includes that resource of
  that server, as ``@path`` includes a file: the mention stays in the text and the
  resource's contents follow as blocks of the same message (so the history holds exactly
  what the model was sent). A server name that is no usable server here leaves the text as
  written; a resource that cannot be read is an error and nothing is sent.
- ``/mcp`` lists the servers as ``mcp.list`` does; ``/mcp approve <server>`` and ``/mcp
  deny <server>`` answer ``mcp.approve`` for the session's folder.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidParams
from ..mcp import McpManager, ServerError, content_blocks
from ..mcp.results import resource_blocks
from .expand import split_arguments

if TYPE_CHECKING:
    from ..mcp import Connection
    from ..rpc import RpcContext
    from .builtins import CommandContext

__all__ = ["expand_mentions", "format_listing", "mcp_command", "prompt_entries", "run_prompt"]

_MENTION = re.compile(r"(?:(?<=\s)|^)@([A-Za-z0-9_.\-]{1,64}):([^\s`'\"<>]+)", re.MULTILINE)
_TRAILING = ".,;!?)]}"


def _hint(prompt: dict[str, Any]) -> str:
    parts = []
    for argument in prompt.get("arguments") or []:
        name = str(argument.get("name"))
        parts.append(f"<{name}>" if argument.get("required") else f"[{name}]")
    return " ".join(parts)


def prompt_entries(
    mcp: McpManager | None, working_directory: Path | None, session_id: str | None
) -> list[dict[str, Any]]:
    """``command.list`` entries of the usable servers' prompts (known ones: listed by a
    connection or cached); servers never listed are started in the background, so a later
    listing has theirs."""
    if mcp is None or working_directory is None:
        return []
    out = []
    for name, connection, prompt in mcp.prompts(working_directory, session_id):
        description = str(prompt.get("description") or prompt.get("title") or "")
        out.append({"name": name, "description": f"{description} (MCP {connection.name})".strip(),
                    "argumentHint": _hint(prompt), "source": "mcp",
                    "server": connection.name, "prompt": prompt.get("name")})  # fmt: skip
    return out


async def find_prompt(
    mcp: McpManager, working_directory: Path, session_id: str, name: str
) -> tuple[Connection, dict[str, Any]] | None:
    """The prompt behind ``/name``; servers whose prompts are unknown are started first."""
    for known, connection, prompt in mcp.prompts(working_directory, session_id):
        if known == name:
            return connection, prompt
    await mcp.describe(working_directory, session_id, connect=True)
    for known, connection, prompt in mcp.prompts(working_directory, session_id):
        if known == name:
            return connection, prompt
    return None


def prompt_arguments(prompt: dict[str, Any], text: str) -> dict[str, str]:
    """The words of ``text`` as the prompt's arguments, in order (the last takes the rest)."""
    names = [str(a.get("name")) for a in prompt.get("arguments") or []]
    words = split_arguments(text)
    values: dict[str, str] = {}
    for index, name in enumerate(names):
        if index >= len(words):
            break
        values[name] = " ".join(words[index:]) if index == len(names) - 1 else words[index]
    missing = [str(a.get("name")) for a in prompt.get("arguments") or []
               if a.get("required") and str(a.get("name")) not in values]  # fmt: skip
    if missing:
        raise InvalidParams(
            f"/{prompt.get('name')} needs {', '.join(missing)}: give them in order "
            f"({_hint(prompt)})",
            {"missing": missing},
        )
    return values


async def run_prompt(
    connection: Connection, prompt: dict[str, Any], command: str, text: str
) -> tuple[str | list[dict[str, Any]], dict[str, Any]]:
    """The message a prompt makes, and its ``command.invoked`` payload."""
    arguments = prompt_arguments(prompt, text)
    try:
        result = await connection.get_prompt(str(prompt.get("name")), arguments)
    except ServerError as exc:
        raise InvalidParams(f"/{command}: {exc}", {"command": command}) from None
    except Exception as exc:
        if type(exc).__name__ != "MCPError":
            raise
        raise InvalidParams(f"/{command}: the server refused the prompt: {exc}",
                            {"command": command}) from None  # fmt: skip
    blocks: list[dict[str, Any]] = []
    for message in result.get("messages") or []:
        content = message.get("content")
        blocks.extend(content_blocks(content if isinstance(content, list) else [content]))
    if not blocks:
        raise InvalidParams(f"/{command}: the prompt is empty", {"command": command})
    made: str | list[dict[str, Any]] = blocks
    if all(b["type"] == "text" for b in blocks):
        made = "\n\n".join(b["text"] for b in blocks)
    invoked = {"name": command, "arguments": text, "source": "mcp",
               "server": connection.name, "prompt": prompt.get("name"),
               "promptArguments": arguments}  # fmt: skip
    return made, invoked


async def expand_mentions(
    rpc: RpcContext, session_id: str, working_directory: Path, content: str | list[dict[str, Any]]
) -> str | list[dict[str, Any]]:
    """``content`` with each ``@server:uri`` of a usable server followed by the resource."""
    mcp = rpc.services.mcp
    text = content if isinstance(content, str) else None
    if mcp is None or text is None or "@" not in text:
        return content
    views, _ = mcp.view(working_directory, session_id)
    usable = {v.config.name: v.connection for v in views if v.connection is not None}
    found: list[tuple[str, str]] = []
    for match in _MENTION.finditer(text):
        server, uri = match.group(1), match.group(2).rstrip(_TRAILING)
        if server in usable and (server, uri) not in found:
            found.append((server, uri))
    if not found:
        return content
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
    for server, uri in found:
        connection = usable[server]
        assert connection is not None
        try:
            result = await connection.read_resource(uri)
        except ServerError as exc:
            raise InvalidParams(f"@{server}:{uri} was not included: {exc}") from None
        except Exception as exc:
            if type(exc).__name__ != "MCPError":
                raise
            raise InvalidParams(f"@{server}:{uri} was not included: {exc}") from None
        for item in result.get("contents") or []:
            blocks.extend(resource_blocks(item))
    return blocks


def format_listing(listing: dict[str, Any]) -> str:
    """``mcp.list``'s answer for people (``/mcp``, ``tron mcp list``)."""
    servers = listing.get("servers") or []
    lines = [f"MCP servers of {listing.get('workingDirectory')}:"] if servers else [
        "No MCP servers are configured here (.mcp.json, ~/.claude.json, ~/.tron/settings.json)."
    ]  # fmt: skip
    for server in servers:
        lines.append(
            f"  {server['name']}  {server['status']}  ({server['scope']}, {server['transport']}: "
            f"{server['target']})"
        )
        if server.get("error"):
            lines.append(f"      {server['error']}")
        if server.get("stderrTail") and server["status"] == "failed":
            lines += [f"      | {line}" for line in str(server["stderrTail"]).splitlines()[-5:]]
        tools = [t["name"] for t in server.get("tools") or []]
        if tools:
            lines.append(f"      tools: {', '.join(tools)}")
        prompts = [p["command"] for p in server.get("prompts") or []]
        if prompts:
            lines.append(f"      prompts: {', '.join(prompts)}")
        resources = [r["mention"] for r in server.get("resources") or []]
        if resources:
            more = f" (+{len(resources) - 5} more)" if len(resources) > 5 else ""
            lines.append(f"      resources: {', '.join(resources[:5])}{more}")
    for error in listing.get("errors") or []:
        lines.append(f"  ! {error}")
    if any(s["status"] == "needs-approval" for s in servers):
        lines.append("Approve a project server with /mcp approve <name> (/mcp deny <name>).")
    return "\n".join(lines)


async def mcp_command(cx: CommandContext, args: str) -> dict[str, Any]:
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
        return {"output": f"MCP server {words[1]}: {'approved' if approved else 'refused'} "
                          f"for {folder} (now {status}).", "server": answer["server"]}  # fmt: skip
    if words:
        raise InvalidParams("usage: /mcp, /mcp approve <server> or /mcp deny <server>")
    listing = await cx.call("mcp.list", {"sessionId": cx.session_id})
    return {"output": format_listing(listing), "mcp": listing}
