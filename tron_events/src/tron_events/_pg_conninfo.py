"""libpq connection strings from the store's SQLAlchemy URLs.

Its own module so that both the PostgreSQL recorder and the preflight (which
opens no pool and loads no recorder) can use it without importing each other.
Needs the ``postgres`` extra (psycopg).
"""

from __future__ import annotations

from typing import Any

from psycopg.conninfo import make_conninfo
from sqlalchemy.engine import make_url


def conninfo_from_url(url: str) -> str:
    """libpq conninfo for a SQLAlchemy URL (``postgresql+psycopg://u:p@h:5432/db?…``).

    Query parameters (``sslmode``, ``application_name``, ``host`` for a socket
    directory …) are passed through as libpq parameters.
    """
    u = make_url(url)
    if not u.drivername.startswith("postgresql"):
        raise ValueError(f"not a PostgreSQL URL: {url!r}")
    params: dict[str, Any] = {}
    if u.host:
        params["host"] = u.host
    if u.port:
        params["port"] = u.port
    if u.username:
        params["user"] = u.username
    if u.password is not None:
        params["password"] = u.password
    if u.database:
        params["dbname"] = u.database
    for key, value in u.query.items():
        params[key] = value if isinstance(value, str) else ",".join(value)
    params.setdefault("application_name", "tron-events")
    return make_conninfo("", **params)
