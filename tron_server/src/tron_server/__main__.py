"""``python -m tron_server`` and the ``tron-server`` command: both start here."""

from __future__ import annotations

import gc
import sys


def main() -> int:
    """Start ``tron-server`` (:func:`tron_server.cli.main`) with the cyclic garbage
    collector paused until its runtime is loaded."""
    # A start allocates what stays (modules, classes, the runtime's tables): the
    # collections that allocation triggers free nothing and cost ~10% of the start.
    # cli.serve freezes what the start made and turns the collector on once it is ready.
    gc.disable()
    from .cli import main as serve

    return serve()


if __name__ == "__main__":
    sys.exit(main())
