"""Folder trust in ``tron``: the question on first open, the print-mode notice, ``--trust``.

A folder's own configuration (hooks, allow rules, modes, shell in command files, agents,
MCP servers) does nothing until its user trusts the folder (``trust.get`` / ``trust.set``
on the server). ``tron`` asks when it opens an untrusted folder that defines any of it,
listing what it defines; ``tron -p`` never trusts implicitly: it says in one line on
stderr that the folder's configuration was not used; ``tron --trust`` records trust for
the folder first, in any mode. The question itself is :mod:`.trust_prompt` (Textual,
imported only when asked).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..client import TronClient
from .capabilities import Capabilities
from .errors import EXIT_USAGE, TerminalError

__all__ = ["check_trust", "defined_items", "notice", "trust_folder"]


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def defined_items(defines: dict[str, Any]) -> list[str]:
    """What a folder defines (``trust.get``'s ``defines``), as short phrases."""
    items: list[str] = []
    hooks = int(defines.get("hooks") or 0)
    if hooks:
        items.append(_count(hooks, "hook", "hooks") + " (commands run on events)")
    allow = int(defines.get("allowRules") or 0)
    if allow:
        items.append(_count(allow, "allow rule", "allow rules"))
    mode = defines.get("defaultMode")
    if mode:
        items.append(f"defaultMode {mode}")
    shell = int(defines.get("shellCommands") or 0)
    if shell:
        items.append(_count(shell, "command that runs", "commands that run") + " shell (!`…`)")
    agents = int(defines.get("agents") or 0)
    if agents:
        items.append(_count(agents, "agent definition", "agent definitions"))
    servers = int(defines.get("mcpServers") or 0)
    if servers:
        items.append(_count(servers, "MCP server", "MCP servers"))
    return items


def notice(folder: str, defines: dict[str, Any]) -> str:
    """``tron -p``'s one line about an untrusted folder's configuration."""
    return (
        f"{folder} is not trusted, so its own configuration was not used "
        f"({', '.join(defined_items(defines))}); `tron --trust` trusts it"
    )


async def trust_folder(client: TronClient, caps: Capabilities, folder: Path) -> dict[str, Any]:
    """``--trust``: record trust for ``folder`` (raises when the server cannot)."""
    if not caps.has("trust.set"):
        raise TerminalError(
            "this tron-server cannot record folder trust (it has no trust.set): drop "
            "--trust, or update tron-server.",
            EXIT_USAGE,
        )
    answer: dict[str, Any] = await client.call("trust.set", {"path": str(folder), "trusted": True})
    return answer


async def check_trust(client: TronClient, caps: Capabilities, folder: str) -> dict[str, Any] | None:
    """``trust.get`` of ``folder`` when it is untrusted and defines something (what to
    ask or tell about), else None (also from a server without folder trust)."""
    if not caps.has("trust.get"):
        return None
    answer: dict[str, Any] = await client.call("trust.get", {"path": folder})
    if answer.get("trusted") or not defined_items(answer.get("defines") or {}):
        return None
    return answer
