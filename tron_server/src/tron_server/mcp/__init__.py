"""The MCP client: the user's Model Context Protocol servers, as Claude Code runs them.

- :mod:`.config` — the servers a folder has (``.mcp.json``, ``~/.claude.json``, Tron's
  ``settings.json``, a session's own), with ``${VAR}`` expansion;
- :mod:`.approvals` — folder trust and the user's approval of project servers;
- :mod:`.connection` — one server through the official SDK: started when needed, restarted
  with backoff after a failure, its lists kept fresh;
- :mod:`.results`, :mod:`.names` — ``mcp__<server>__<tool>`` names and how results become
  Tron's content blocks (the runtime's tool adapter is ``agent/mcp_tools.py``);
- :mod:`.mentions` — ``@server:uri`` in a message, and the listing for people;
- :mod:`.elicit` — a server's questions through Tron's question flow;
- :mod:`.manager` — :class:`McpManager`, the server's one instance of all this.

See ``docs/mcp.md``.
"""

from __future__ import annotations

from .approvals import Approvals, folder_trusted
from .config import ConfigError, ServerConfig, default_claude_json, load_servers, parse_server
from .connection import Call, Connection, McpOptions, ServerError
from .manager import McpManager, ServerView, Usable
from .mentions import expand_mentions, format_listing
from .names import mcp_allowed, mcp_name, split_name
from .results import McpResult, content_blocks, tool_result

__all__ = [
    "Approvals",
    "Call",
    "ConfigError",
    "Connection",
    "McpManager",
    "McpOptions",
    "McpResult",
    "ServerConfig",
    "ServerError",
    "ServerView",
    "Usable",
    "content_blocks",
    "default_claude_json",
    "expand_mentions",
    "folder_trusted",
    "format_listing",
    "load_servers",
    "mcp_allowed",
    "mcp_name",
    "parse_server",
    "split_name",
    "tool_result",
]
