"""Real MCP servers no one here wrote, installed by the tests into the user's cache.

- ``@modelcontextprotocol/server-everything`` (npm, the protocol's reference server: tools,
  prompts, resources, progress, elicitation, sampling, list changes) into
  ``~/.cache/tron-tests/npm``; run over stdio, Streamable HTTP or SSE;
- ``mcp-server-time`` (PyPI, the reference time server, a Python one) into a virtual
  environment ``~/.cache/tron-tests/py-mcp-server-time``.

- ``marker_server.py`` (ours, on the official SDK): a stdio server that marks each start,
  for the tests of what may start a server at all (folder trust).

Each installs once (a lock file keeps two test processes from installing at once) and is
skipped with the reason when it cannot be had (no npm, no network, a failed install).
``TRON_TESTS_CACHE`` moves the cache.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

EVERYTHING = "@modelcontextprotocol/server-everything"
TIME = "mcp-server-time"
INSTALL_TIMEOUT = 300


def cache_root() -> Path:
    base = os.environ.get("TRON_TESTS_CACHE")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "tron-tests"


@contextlib.contextmanager
def _locked(name: str) -> Iterator[Path]:
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield root


def everything_entry() -> Path:
    """``dist/index.js`` of server-everything (installed if needed) or a skip."""
    npm = shutil.which("npm")
    node = shutil.which("node")
    if npm is None or node is None:
        pytest.skip(f"{EVERYTHING} needs node and npm, which are not installed")
    with _locked("npm") as root:
        folder = root / "npm"
        entry = folder / "node_modules" / EVERYTHING / "dist" / "index.js"
        if not entry.exists():
            folder.mkdir(parents=True, exist_ok=True)
            try:
                done = subprocess.run(
                    [npm, "install", "--no-audit", "--no-fund", "--prefix", str(folder),
                     EVERYTHING],
                    capture_output=True, text=True, timeout=INSTALL_TIMEOUT,
                )  # fmt: skip
            except subprocess.TimeoutExpired:
                pytest.skip(f"npm install {EVERYTHING} took over {INSTALL_TIMEOUT} s")
            if done.returncode != 0 or not entry.exists():
                tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
                pytest.skip(f"npm install {EVERYTHING} failed: {' '.join(tail)}")
        return entry


def time_server() -> Path:
    """The ``mcp-server-time`` program (installed in a cache venv if needed) or a skip."""
    with _locked("pypi") as root:
        venv = root / "py-mcp-server-time"
        program = venv / "bin" / "mcp-server-time"
        if program.exists():
            return program
        uv = os.environ.get("UV") or shutil.which("uv")
        try:
            if uv:
                steps = [[uv, "venv", "-q", "--python", sys.executable, str(venv)],
                         [uv, "pip", "install", "-q", "--python", str(venv / "bin" / "python"),
                          TIME]]  # fmt: skip
            else:
                pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", TIME]
                steps = [[sys.executable, "-m", "venv", str(venv)], pip]
            for step in steps:
                done = subprocess.run(step, capture_output=True, text=True,
                                      timeout=INSTALL_TIMEOUT)  # fmt: skip
                if done.returncode != 0:
                    tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
                    shutil.rmtree(venv, ignore_errors=True)
                    pytest.skip(f"installing {TIME} failed: {' '.join(tail)}")
        except subprocess.TimeoutExpired:
            shutil.rmtree(venv, ignore_errors=True)
            pytest.skip(f"installing {TIME} took over {INSTALL_TIMEOUT} s")
        if not program.exists():
            pytest.skip(f"{TIME} installed no mcp-server-time program")
        return program


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class HttpServer:
    """server-everything over HTTP (``streamableHttp`` or ``sse``) on a free port."""

    def __init__(self, entry: Path, mode: str) -> None:
        self.port = free_port()
        env = {**os.environ, "PORT": str(self.port)}
        self.process = subprocess.Popen(
            ["node", str(entry), mode], env=env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        seen = ""
        assert self.process.stdout is not None
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            seen += line
            if re.search(r"listening|running on port", line, re.IGNORECASE):
                return
        self.stop()
        raise RuntimeError(f"server-everything {mode} did not start: {seen[-500:]}")

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, 15)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)
                self.process.wait(10)
        if self.process.stdout is not None:
            self.process.stdout.close()


MARKER_SCRIPT = Path(__file__).with_name("marker_server.py")


def marker_server(marker: Path) -> dict[str, Any]:
    """A ``.mcp.json`` entry for :mod:`tests.mcp.marker_server`, which appends its process
    id to ``marker`` when it starts."""
    return {"command": sys.executable, "args": [str(MARKER_SCRIPT), str(marker)]}


def started(marker: Path) -> list[int]:
    """Process ids of every start of a marker server (none: it never started)."""
    return [int(line) for line in marker.read_text().split()] if marker.exists() else []


def stdio(entry: Path, *args: str, **extra: Any) -> dict[str, Any]:
    """A ``.mcp.json`` entry running server-everything (or a node script) over stdio."""
    return {"command": "node", "args": [str(entry), *args], **extra}


def write_mcp_json(folder: Path, servers: dict[str, Any]) -> Path:
    """``folder/.mcp.json`` declaring ``servers``."""
    path = folder / ".mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}, indent=2))
    return path
