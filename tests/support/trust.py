"""Trusting a folder as the user does, for tests whose folder's own settings must act."""

from __future__ import annotations

from pathlib import Path


def trust_folder(home: Path, folder: Path) -> None:
    """Record that the user trusts ``folder`` in ``home`` (its own configuration acts)."""
    from tron_server.trust import TrustStore

    TrustStore(home).trust(folder)
