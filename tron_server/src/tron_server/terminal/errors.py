"""The one error type the terminal client shows to its user.

Everything that can go wrong on the way to a session (no server, a refused
token, an unknown session, a flag the server does not support) becomes a
:class:`TerminalError`: a sentence saying what happened and what to do, and
the exit status. ``tron``'s entry point prints it; no traceback reaches the user.
"""

from __future__ import annotations

#: Exit statuses (documented in ``tron --help``).
EXIT_OK = 0
EXIT_TURN_FAILED = 1
EXIT_USAGE = 2
EXIT_NO_SERVER = 3
EXIT_NOT_FOUND = 4


class TerminalError(Exception):
    """A failure explained to the user: ``message`` and the process ``exit_code``."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


__all__ = [
    "EXIT_NOT_FOUND",
    "EXIT_NO_SERVER",
    "EXIT_OK",
    "EXIT_TURN_FAILED",
    "EXIT_USAGE",
    "TerminalError",
]
