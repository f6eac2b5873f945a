"""The command an editor's terminal runs to show a Bash call of ``tron acp``
(:mod:`.terminals`): ``python -m tron_server.acp.viewer SOCKET TOKEN``.

It prints the call's output as ``tron acp`` relays it and exits with the command's exit
status. It runs nothing itself: the command ran in tron-server. Only the standard
library is imported, so it starts at once.
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Show one call's output; its exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print("usage: python -m tron_server.acp.viewer SOCKET TOKEN", file=sys.stderr)
        return 2
    path, token = args
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(path)
            conn.sendall(token.encode() + b"\n")
            with conn.makefile("r", encoding="utf-8") as frames:
                for line in frames:
                    frame = json.loads(line)
                    if "out" in frame:
                        sys.stdout.write(frame["out"])
                        sys.stdout.flush()
                    if "error" in frame:
                        print(f"tron: {frame['error']}", file=sys.stderr)
                    if "exit" in frame:
                        return int(frame["exit"])
    except (OSError, ValueError) as exc:
        print(f"tron: the output of this command is no longer available ({exc})", file=sys.stderr)
        return 1
    print("tron: tron acp stopped before the command ended", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
