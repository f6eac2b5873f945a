"""``tron acp``: Tron in editors, through the Agent Client Protocol (ACP) over stdio.

Built on the official Python SDK (``agent-client-protocol``): the SDK speaks ACP with
the editor; :class:`~tron_server.acp.agent.TronAgent` answers each method with
tron-server calls, as a client of the server like ``tron`` and the web chat (it reaches
the runtime only through JSON-RPC). Entry point: :func:`tron_server.acp.cli.main`;
editor configurations in ``docs/editors.md``.
"""
