"""``tron mcp``: the MCP servers of a folder, for people and scripts.

    tron mcp list [--json] [--cwd DIR] [--no-connect]   # as mcp.list answers it
    tron mcp approve NAME [--cwd DIR]                   # mcp.approve (a project server)
    tron mcp deny NAME [--cwd DIR]

A client of tron-server like ``tron`` itself (it attaches, or starts one in the background).
``list`` exits 0 when every server is usable (connected or not started), 1 when one failed
or waits for approval — so a script can check a folder's servers.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..mcp import format_listing
from .attach import ServerAddress, attach
from .errors import EXIT_OK, EXIT_TURN_FAILED, EXIT_USAGE, TerminalError

__all__ = ["build_mcp_parser", "run_mcp"]


def build_mcp_parser(version: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tron mcp",
        description="The MCP servers of a folder (.mcp.json, ~/.claude.json, "
        "~/.tron/settings.json), as tron-server sees them.",
    )
    parser.add_argument("--version", action="version", version=f"tron {version}")
    sub = parser.add_subparsers(dest="action", required=True, metavar="{list,approve,deny}")
    listing = sub.add_parser("list", help="each server: scope, transport, status, tools")
    listing.add_argument("--json", action="store_true", help="mcp.list's answer as JSON")
    listing.add_argument(
        "--no-connect", action="store_true", help="do not start the servers to list them"
    )
    answers = (("approve", "approve a project server for the folder (remembered)"),
               ("deny", "refuse a project server (or switch a server off) here"))  # fmt: skip
    for name, text in answers:
        action = sub.add_parser(name, help=text)
        action.add_argument("server", help="the server's name")
    for action in sub.choices.values():
        action.add_argument("--cwd", type=Path, help="the folder (default: this one)")
        action.add_argument("--server", dest="url", metavar="URL", help="ws://HOST:PORT/rpc")
        action.add_argument("--home", type=Path, help="Tron's home (default ~/.tron)")
        action.add_argument("--no-start", action="store_true",
                            help="do not start tron-server when none answers")  # fmt: skip
    return parser


async def run_mcp(args: argparse.Namespace, home: Path, announce: Callable[[str], None]) -> int:
    folder = (args.cwd or Path.cwd()).expanduser().resolve()
    if not folder.is_dir():
        raise TerminalError(f"{folder} is not a folder", EXIT_USAGE)
    conn = await attach(ServerAddress(home, args.url), start=not args.no_start, announce=announce)
    try:
        client = conn.client
        methods = (await client.call("system.info", {})).get("methods") or []
        names = {m.get("name") if isinstance(m, dict) else m for m in methods}
        if "mcp.list" not in names:
            raise TerminalError("this tron-server has no MCP client (mcp.list): update it.",
                                EXIT_USAGE)  # fmt: skip
        if args.action == "list":
            listing: dict[str, Any] = await client.call(
                "mcp.list", {"workingDirectory": str(folder), "connect": not args.no_connect}
            )
            if args.json:
                print(json.dumps(listing, indent=2))
            else:
                print(format_listing(listing))
            bad = [s for s in listing["servers"] if s["status"] in ("failed", "needs-approval")]
            return EXIT_TURN_FAILED if bad else EXIT_OK
        params = {"workingDirectory": str(folder), "server": args.server,
                  "approved": args.action == "approve"}  # fmt: skip
        answer = await client.call("mcp.approve", params)
        server = answer["server"]
        print(f"{server['name']}: {server['status']}")
        return EXIT_OK
    finally:
        await conn.close()
