"""Tron's ASGI server: JSON-RPC 2.0 over WebSocket (``/rpc``), the agent turn loop,
live notifications, and a small web chat.

Start it with the ``tron-server`` command (or ``python -m tron_server``); drive
it from Python with :class:`tron_server.client.TronClient`; embed it with
:func:`tron_server.app.create_app`. The protocol is in ``docs/protocol.md``.
"""

from __future__ import annotations

__all__: list[str] = []
