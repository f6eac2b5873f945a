"""``tron-db``: create, upgrade, inspect and check a Tron event database, list
and show its sessions, export and import them, and adopt the original Tron's.

The package is split by concern (``_schema``, ``_transfer``, ``_browse``);
``_main`` parses and dispatches with the standard library only, so
``tron-db --help`` does not import SQLAlchemy, Alembic or pydantic.
"""

from __future__ import annotations

from ._main import build_parser, main

__all__ = ["build_parser", "main"]
