"""The ``tron`` command: ``tron acp …`` is the ACP agent for editors
(:mod:`tron_server.acp`), anything else the terminal client (:mod:`tron_server.terminal`).

Both are entry points of their own (DESIGN §9); this picks one, above both, so that
``tron acp`` shares the terminal's way of finding the server without the terminal
importing the ACP agent.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """``tron``; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["acp"]:
        # Imported here so that `tron` alone does not load the ACP SDK (its schema models).
        from .acp.cli import main as acp_main

        return acp_main(args[1:])
    # `tron -p` with no server: start one before loading the client, which then loads
    # while the server starts (terminal.launch).
    from .terminal.launch import prestart

    prestarted = prestart(args)
    from .terminal.cli import main as terminal_main

    return terminal_main(args, prestarted=prestarted)


__all__ = ["main"]
