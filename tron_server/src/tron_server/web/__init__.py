"""The web chat: static files (plain ES modules, no build step) served by tron-server at ``/``.

``STATIC_DIR`` is the directory the app mounts; everything in it ships inside the wheel.
"""

from __future__ import annotations

from pathlib import Path

STATIC_DIR = Path(__file__).parent / "static"

__all__ = ["STATIC_DIR"]
