"""Several tron-servers on one PostgreSQL database (docs/deploy.md).

:class:`.node.ClusterNode` holds this server's run leases, forwards calls to a
session's owner and relays notifications between servers (imported only on
PostgreSQL: it needs psycopg); :mod:`.recovery` closes the turn of a server that died.
``open_services`` builds the node on a PostgreSQL database.
"""

from __future__ import annotations

from .errors import ForwardedError, OwnedElsewhere
from .recovery import TAKEOVER_REASON, TAKEOVER_RESULT, close_interrupted_turn

__all__ = [
    "TAKEOVER_REASON",
    "TAKEOVER_RESULT",
    "ForwardedError",
    "OwnedElsewhere",
    "close_interrupted_turn",
]
