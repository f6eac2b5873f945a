"""``python -m tron_server.terminal`` — the same as the ``tron`` command."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())
