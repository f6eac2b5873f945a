"""The installed tron-server version (what ``/health``, ``--version`` and ``system.info``
say), from the package metadata, read once."""

from __future__ import annotations

from functools import cache


@cache
def server_version() -> str:
    """The installed tron-server version."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tron-server")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0.0.0"


__all__ = ["server_version"]
