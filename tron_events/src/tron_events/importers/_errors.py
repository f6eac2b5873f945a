"""The importers' error: the input is not the format it was given as."""

from __future__ import annotations

from pathlib import Path

from ..errors import TronEventsError

__all__ = ["ImportFormatError", "LineTooLongError"]


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


class LineTooLongError(ImportFormatError):
    """A line of the file is longer than the importers read (``limit`` bytes).

    Raised before anything of the file's session is yielded, so nothing of it is
    stored; in a folder, that file is skipped with a notice and the others imported.
    """

    def __init__(self, path: Path | str, line: int, limit: int) -> None:
        mib = f" ({limit >> 20} MiB)" if limit % (1 << 20) == 0 else ""
        super().__init__(
            path,
            f"the line is longer than {limit:,} bytes{mib}, the limit of one record: "
            "the session in this file is not imported",
            line=line,
        )
        self.limit = limit
