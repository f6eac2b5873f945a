"""Structured logs: one JSON object per line on stderr.

Records may carry ``extra={"fields": {...}}``; those keys are merged into the
line. Secrets never go into log fields (the token is only in its file and in
the login URL the CLI prints).
"""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime
from typing import Any

import orjson

LEVELS = ("critical", "error", "warning", "info", "debug")


class JsonFormatter(logging.Formatter):
    """``{"time", "level", "logger", "message", ...fields, "exc"?}`` per record."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line.update(fields)
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


def configure_logging(level: str = "info") -> None:
    """Send tron_server and uvicorn logs to stderr as JSON lines at ``level``."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    numeric = logging.getLevelName(level.upper())
    for name in ("tron_server", "uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(numeric)
        logger.propagate = False


__all__ = ["LEVELS", "JsonFormatter", "configure_logging"]
