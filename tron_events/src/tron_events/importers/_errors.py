"""The importers' error: the input is not the format it was given as."""

from __future__ import annotations

from pathlib import Path

from ..errors import TronEventsError

__all__ = ["ImportFormatError"]


class ImportFormatError(TronEventsError):
    """A file is not a session of the format it was imported as (or cannot be read).

    ``path`` and ``line`` (1-based; None when the problem is the whole file) say
    where; the message says what was found and, where it can, which ``--from``
    to use instead. Nothing of that file has been yielded when this is raised.
    """

    def __init__(self, path: Path | str, message: str, *, line: int | None = None) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")
        self.path = str(path)
        self.line = line
        self.reason = message
