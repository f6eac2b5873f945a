"""A stdio MCP server (the official SDK's ``MCPServer``) that leaves a trace when it starts.

    python marker_server.py MARKER

Before it serves anything it appends its process id to MARKER, so a test can tell whether
a configured server was ever started, and which process to watch. One tool, ``ping``,
answers ``pong``.
"""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer


def main() -> None:
    with open(sys.argv[1], "a", encoding="utf-8") as marker:
        marker.write(f"{os.getpid()}\n")
    server = MCPServer("marker")

    @server.tool()
    def ping() -> str:
        """Answer pong."""
        return "pong"

    server.run("stdio")


if __name__ == "__main__":
    main()
