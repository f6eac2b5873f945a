"""A port for a server a test lets ``tron`` start later (``TRON_PORT``).

A port found free with ``bind(0)`` comes from the kernel's ephemeral range, from which
every other worker's servers and clients draw too: between the choice and the later
start, another test's server may take it, and ``tron`` then meets that server (which
refuses this home's token: seen in CI). A free port below the ephemeral range is never
handed out by ``bind(0)``; only another test choosing the same way can take it.
"""

from __future__ import annotations

import random
import socket


def _ephemeral_start() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def port_for_later() -> int:
    """A port free now, outside the ephemeral range where the system can give it away."""
    top = min(_ephemeral_start(), 65536)
    for _ in range(200):
        port = random.randrange(20000, top) if top > 20001 else random.randrange(1024, top)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port below the ephemeral range")
