"""Keep ``import httpx`` from importing httpx's command line.

httpx's package imports ``httpx._main`` to export ``httpx.main`` (its CLI), and that
module imports click, rich and pygments: about 70 % of httpx's import time, paid by every
process that starts a model request, none of which uses the CLI. A stand-in module with
a ``main`` that loads the real one when called keeps ``httpx.main`` working.
"""

from __future__ import annotations

import sys
import types
from typing import Any

__all__: list[str] = []


def _main(*args: Any, **kwargs: Any) -> Any:
    sys.modules.pop("httpx._main", None)
    from httpx._main import main

    return main(*args, **kwargs)


if "httpx" not in sys.modules and "httpx._main" not in sys.modules:
    _stand_in = types.ModuleType("httpx._main")
    _stand_in.main = _main  # type: ignore[attr-defined]
    sys.modules["httpx._main"] = _stand_in
