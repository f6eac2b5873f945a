"""``python -m tron_server`` — the same as the ``tron-server`` command."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())
