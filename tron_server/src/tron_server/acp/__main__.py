"""``python -m tron_server.acp`` — the same as ``tron acp``."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())
