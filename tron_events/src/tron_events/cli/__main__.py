"""``python -m tron_events.cli``."""

from __future__ import annotations

from ._main import main

raise SystemExit(main())
