"""``tron``: the terminal client of tron-server (interactive, and ``-p`` for scripts).

It speaks the JSON-RPC protocol like any other client (``docs/protocol.md``),
through :class:`tron_server.client.TronClient`: nothing here reaches into the
server's runtime. Entry point: :func:`tron_server.terminal.cli.main`.
"""
