"""A real tron-server for the browser tests: uvicorn in a thread, restartable on the same port.

Each start is a new launch (a new token, as ``tron-server`` does) over the same
home directory and SQLite database, so a restart looks to the page exactly
like a user restarting the server.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from tron_server.app import create_app, uvicorn_options
from tron_server.settings import Settings


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class WebServer:
    """tron-server on ``127.0.0.1:<port>`` with ``home`` as its data directory."""

    def __init__(self, home: Path, llm_base_url: str, *, port: int | None = None) -> None:
        self.home = home
        self.port = port or free_port()
        self.llm_base_url = llm_base_url
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._failure: list[BaseException] = []
        self.app: Any = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def token(self) -> str:
        return (self.home / "server-token").read_text().strip()

    @property
    def login_url(self) -> str:
        """The one-time URL tron-server prints at start."""
        return f"{self.base_url}/login?token={self.token}"

    def settings(self) -> Settings:
        return Settings(
            home=self.home,
            port=self.port,
            anthropic_base_url=self.llm_base_url,
            default_provider="anthropic",
            default_model="claude-sonnet-4-5",
            log_level="warning",
        )

    def start(self, timeout: float = 20.0) -> None:
        settings = self.settings()
        self.app = create_app(settings)
        options = uvicorn_options(settings)
        options["log_level"] = "warning"
        config = uvicorn.Config(self.app, **options)
        server = uvicorn.Server(config)
        # With proto 0 asyncio never sets TCP_NODELAY: ~40 ms stalls per response.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        self._failure.clear()

        def run() -> None:
            try:
                server.run(sockets=[sock])
            except BaseException as exc:  # reported by start()
                self._failure.append(exc)
            finally:
                sock.close()

        self._server = server
        self._thread = threading.Thread(target=run, name=f"tron-server:{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._failure:
                raise RuntimeError(f"tron-server failed to start: {self._failure[0]!r}")
            if server.started:
                self._wait_healthy(deadline)
                return
            time.sleep(0.02)
        raise TimeoutError(f"tron-server did not start on port {self.port} in {timeout} s")

    def _wait_healthy(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.base_url}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise TimeoutError("tron-server started but /health does not answer")

    def stop(self, timeout: float = 20.0) -> None:
        if self._server is None or self._thread is None:
            return
        self._server.should_exit = True
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._server.force_exit = True
            self._thread.join(5)
        self._server = None
        self._thread = None

    def restart(self) -> None:
        """Stop, then start again on the same port, home and database (with a new token)."""
        self.stop()
        self.start()
