"""A real tron-server for the browser tests: the server tests' ``RunningServer``
(uvicorn in a thread, restartable on the same port) pointed at the scripted LLM.

Each start is a new launch (a new token, as ``tron-server`` does) over the same
home directory and SQLite database, so a restart looks to the page exactly
like a user restarting the server.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.server import RunningServer


class WebServer(RunningServer):
    """tron-server on ``127.0.0.1:<port>`` with ``home`` as its data directory."""

    def __init__(self, home: Path, llm_base_url: str) -> None:
        super().__init__(
            home,
            anthropic_base_url=llm_base_url,
            default_provider="anthropic",
            default_model="claude-sonnet-4-5",
        )

    @property
    def login_url(self) -> str:
        """The one-time URL tron-server prints at start."""
        return f"{self.base_url}/login?token={self.token}"
