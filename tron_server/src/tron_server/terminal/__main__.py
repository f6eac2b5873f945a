"""``python -m tron_server.terminal`` — the same as the ``tron`` command."""

from __future__ import annotations

import sys

from .launch import prestart

# `tron -p` with no server: start one before loading the client (see .launch).
_prestarted = prestart(sys.argv[1:])

from .cli import main  # noqa: E402 - loaded while the server starts

sys.exit(main(prestarted=_prestarted))
