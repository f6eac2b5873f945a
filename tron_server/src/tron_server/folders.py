"""User-only folders for what Tron keeps in its home (the logs, the database, the start
lock): here, with nothing else imported, so that ``tron -p`` can start a server before
it loads anything (:mod:`tron_server.terminal.launch`)."""

from __future__ import annotations

from pathlib import Path


def private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) if needed; make it user-only (0700)."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if (path.stat().st_mode & 0o777) != 0o700:
        path.chmod(0o700)
    return path


__all__ = ["private_dir"]
