"""``@<server>:<uri>`` in a message, and the servers' listing for people.

A mention (at the message's start or after a space) includes that resource of that server,
as ``@path`` includes a file: the mention stays in the text and the resource's contents
follow as blocks of the same message, so the history holds exactly what the model was
sent. A name that is no usable server here leaves the text as written; a resource that
cannot be read is an error (nothing is sent).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..errors import InvalidParams
from .connection import ServerError
from .manager import McpManager
from .results import resource_blocks

__all__ = ["expand_mentions", "format_listing"]

_MENTION = re.compile(r"(?:(?<=\s)|^)@([A-Za-z0-9_.\-]{1,64}):([^\s`'\"<>]+)", re.MULTILINE)
_TRAILING = ".,;!?)]}"


async def expand_mentions(
    mcp: McpManager | None,
    session_id: str,
    working_directory: Path,
    content: str | list[dict[str, Any]],
) -> str | list[dict[str, Any]]:
    """``content`` with each ``@server:uri`` of a usable server followed by the resource.
    Raises :class:`~tron_server.errors.InvalidParams` for a resource that cannot be read."""
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
