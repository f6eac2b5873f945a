"""Drive ``tron`` in a real terminal: tmux runs it, ``send-keys`` types,
``capture-pane`` reads the screen.

Each test module gets its own tmux server (a private socket), each terminal its
own tmux session; everything is killed at the end (only what we started).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.terminal.conftest import TRON

#: How long a screen may take to show what a test waits for (generous: CI is loaded).
WAIT = 30.0


def tmux_missing() -> str | None:
    if shutil.which("tmux") is None:
        return "tmux is not installed (Debian's `tmux` package; .ci/run installs it)"
    return None


def require_tmux() -> None:
    reason = tmux_missing()
    if reason is None:
        return
    if os.environ.get("TRON_REQUIRE_TMUX"):
        pytest.fail(f"TRON_REQUIRE_TMUX is set but {reason}", pytrace=False)
    pytest.skip(reason)


class Tmux:
    """A private tmux server (its own socket)."""

    def __init__(self, socket: Path) -> None:
        self.socket = socket
        self._count = 0
        # tmux exits with its last session: one idle session keeps it up between tests.
        self.run("new-session", "-d", "-s", "keep", "sleep 3600")

    def run(self, *args: str, check: bool = True) -> str:
        proc = subprocess.run(
            ["tmux", "-S", str(self.socket), *args],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
        if check and proc.returncode != 0:
            raise RuntimeError(f"tmux {args[0]} failed: {proc.stderr.strip()}")
        return proc.stdout

    def terminal(
        self,
        args: list[str],
        *,
        cwd: Path,
        env: dict[str, str] | None = None,
        width: int = 100,
        height: int = 34,
    ) -> Terminal:
        self._count += 1
        name = f"t{self._count}"
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in (env or {}).items())
        command = " ".join(shlex.quote(a) for a in [*TRON, *args])
        # After tron exits, keep the pane (and what tron printed) to read it.
        # COLUMNS/LINES (set by some test runners) would override the pane's real size.
        shell = (
            f"cd {shlex.quote(str(cwd))} && env -u COLUMNS -u LINES {exports} {command}; "
            "echo TRON-EXIT=$?; sleep 600"
        )
        self.run("new-session", "-d", "-s", name, "-x", str(width), "-y", str(height), shell)
        return Terminal(self, name)

    def kill(self) -> None:
        self.run("kill-server", check=False)


class Terminal:
    """One tmux session running ``tron``."""

    def __init__(self, tmux: Tmux, name: str) -> None:
        self.tmux = tmux
        self.name = name

    def screen(self) -> str:
        return self.tmux.run("capture-pane", "-p", "-t", self.name)

    def send(self, *keys: str) -> None:
        self.tmux.run("send-keys", "-t", self.name, *keys)

    def type(self, text: str) -> None:
        self.tmux.run("send-keys", "-t", self.name, "-l", text)

    def wait(self, check: str | Callable[[str], bool], timeout: float = WAIT) -> str:
        """Wait until the screen shows ``check`` (a substring or a predicate); the screen."""
        predicate = (lambda s: check in s) if isinstance(check, str) else check
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if predicate(screen):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"the screen never showed {check!r}; it shows:\n{screen}")

    def ready(self) -> str:
        """Wait for the app to be up (its status line)."""
        return self.wait(lambda s: bool(re.search(r"· (ready|● working)", s)))

    def kill(self) -> None:
        self.tmux.run("kill-session", "-t", self.name, check=False)
