"""The ledger: working memory in Markdown, the original Tron's ``ledger.md``.

Two files, both plain Markdown the user and the agent edit with ordinary tools:

- the project's ``<working directory>/.tron/ledger.md``;
- the user's own ``<home>/ledger.md`` (``~/.tron/ledger.md``), read in every folder.

Sections (:data:`TEMPLATE`): Goal, Current state, Decisions, Next steps. A ledger is
created on first use: the first time Tron brings it up to date (at compaction or session
end) the project's file is written from what the model returns, the template's sections
first if it had none. Tron never writes the user's file; the agent may, like any file.

A project ledger is context, read as the rules files are: a file that is not a regular
file, or that resolves (symlinks followed) outside the working directory, is not read.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "LEDGER_FILE",
    "SECTIONS",
    "TEMPLATE",
    "LedgerFile",
    "LedgerScope",
    "cut_text",
    "project_ledger_path",
    "read_ledger",
    "read_ledgers",
    "user_ledger_path",
]

LedgerScope = Literal["project", "user"]
LEDGER_FILE = "ledger.md"
SECTIONS = ("Goal", "Current state", "Decisions", "Next steps")
TEMPLATE = "# Ledger\n\n" + "".join(f"## {name}\n\n" for name in SECTIONS)
#: Larger files are read up to this much (the budget cuts further).
MAX_READ_BYTES = 1_000_000


@dataclass(frozen=True)
class LedgerFile:
    """A ledger as read: its text (whole, decoded), ``revision`` (SHA-256 of the bytes)
    and ``size`` in bytes."""

    path: Path
    scope: LedgerScope
    text: str
    revision: str
    size: int

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "scope": self.scope,
            "content": self.text,
            "revision": self.revision,
            "bytes": self.size,
            "exists": True,
        }


def project_ledger_path(working_directory: Path) -> Path:
    """``<working directory>/.tron/ledger.md``."""
    return working_directory / ".tron" / LEDGER_FILE


def user_ledger_path(home: Path) -> Path:
    """``<home>/ledger.md`` (``~/.tron/ledger.md``)."""
    return home.expanduser() / LEDGER_FILE


def _inside(path: Path, folder: Path) -> bool:
    real = Path(os.path.realpath(path))
    root = Path(os.path.realpath(folder))
    return real == root or real.is_relative_to(root)


def read_ledger(path: Path, scope: LedgerScope, *, within: Path | None = None) -> LedgerFile | None:
    """The ledger at ``path``; None when absent, not a regular file, empty, unreadable,
    or (``within``) resolving outside that folder."""
    try:
        if within is not None and not _inside(path, within):
            return None
        if not path.is_file():
            return None
        with path.open("rb") as handle:
            raw = handle.read(MAX_READ_BYTES + 1)
    except (OSError, ValueError):
        return None
    if not raw.strip():
        return None
    size = os.path.getsize(path) if len(raw) > MAX_READ_BYTES else len(raw)
    text = raw[:MAX_READ_BYTES].decode("utf-8", errors="replace")
    return LedgerFile(path, scope, text, hashlib.sha256(raw).hexdigest(), size)


def read_ledgers(working_directory: Path, home: Path) -> list[LedgerFile]:
    """The user's ledger, then the project's (most general first, as rules files go)."""
    found = [
        read_ledger(user_ledger_path(home), "user"),
        read_ledger(project_ledger_path(working_directory), "project", within=working_directory),
    ]
    return [f for f in found if f is not None]


def cut_text(text: str, max_chars: int, where: str) -> tuple[str, bool]:
    """``text`` within ``max_chars`` (cut at a line end where one is near), with a marker
    saying how much was left out and where to read it; whether it was cut."""
    if len(text) <= max_chars:
        return text, False
    head = text[:max_chars]
    newline = head.rfind("\n")
    if newline > max_chars * 3 // 4:
        head = head[:newline]
    left = len(text) - len(head)
    return f"{head.rstrip()}\n[truncated: {left} more characters in {where}]", True
