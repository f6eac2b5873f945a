"""MCP in the conversation: prompts as ``/mcp__<server>__<prompt>``, ``@<server>:<uri>``
mentions, and the ``/mcp`` command.

- A server's prompt is the command ``/mcp__<server>__<prompt> args``: the arguments (shell
  quoting groups words) fill the prompt's arguments in order, the last one taking the rest;
  a missing required one is an error naming it. The prompt's messages become the user's
  message (text, images, embedded resources as :mod:`tron_server.mcp.results` maps them),
  recorded after ``command.invoked`` (``source: "mcp"``, the server and prompt).
- ``@<server>:<uri>`` mentions are :mod:`tron_server.mcp.mentions`'.
- ``/mcp`` (a built-in, :mod:`.builtins`) lists the servers as ``mcp.list`` does.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidParams
from ..mcp import McpManager, ServerError, content_blocks
from .expand import split_arguments

if TYPE_CHECKING:
    from ..mcp import Connection

__all__ = ["find_prompt", "prompt_entries", "run_prompt"]


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
