"""A stdio pass-through that logs what a client and an MCP server say to each other.

    python tee.py LOG -- node server-everything/dist/index.js stdio

Every line from the client (stdin) is written to the server and to LOG as ``> line``;
every line from the server to stdout and to LOG as ``< line``; the server's stderr is
passed through. It exits with the server (and ends the server when the client closes
stdin), so a test can read on the wire what Tron sent (``notifications/cancelled``).
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading


def main() -> int:
    log_path, sep, *command = sys.argv[1:]
    if sep != "--" or not command:
        print("usage: tee.py LOG -- command [args...]", file=sys.stderr)
        return 2
    log = open(log_path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115
    lock = threading.Lock()
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, bufsize=1)  # fmt: skip
    assert child.stdin is not None and child.stdout is not None

    def write(prefix: str, line: str) -> None:
        with lock:
            log.write(f"{prefix} {line.rstrip()}\n")

    def up() -> None:
        assert child.stdin is not None
        for line in sys.stdin:
            write(">", line)
            try:
                child.stdin.write(line)
                child.stdin.flush()
            except BrokenPipeError:
                break
        with contextlib.suppress(BrokenPipeError):
            child.stdin.close()

    threading.Thread(target=up, daemon=True).start()
    for line in child.stdout:
        write("<", line)
        sys.stdout.write(line)
        sys.stdout.flush()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
