"""Tron's ASGI server: JSON-RPC over WebSocket and the agent turn loop. Not built yet."""

__all__: list[str] = []
