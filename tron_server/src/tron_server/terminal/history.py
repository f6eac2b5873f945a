"""The input history: what the user sent, kept in the home across runs (↑/↓ walk it)."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

HISTORY_FILE = "terminal-history.jsonl"
HISTORY_KEEP = 500


def load_history(home: Path) -> list[str]:
    """The last inputs (the file is cut back to them when it has grown to twice as many)."""
    path = home / HISTORY_FILE
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    if len(lines) > 2 * HISTORY_KEEP:
        with contextlib.suppress(OSError):
            tmp = path.with_name(f".{path.name}.{os.getpid()}")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write("\n".join(lines[-HISTORY_KEEP:]) + "\n")
            os.replace(tmp, path)
    out: list[str] = []
    for line in lines[-HISTORY_KEEP:]:
        with contextlib.suppress(ValueError):
            value = json.loads(line)
            if isinstance(value, str):
                out.append(value)
    return out


def save_history(home: Path, text: str) -> None:
    """Append to the input history (user-only: prompts can hold secrets)."""
    with contextlib.suppress(OSError):
        fd = os.open(home / HISTORY_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a") as f:
            f.write(json.dumps(text) + "\n")


__all__ = ["HISTORY_FILE", "HISTORY_KEEP", "load_history", "save_history"]
