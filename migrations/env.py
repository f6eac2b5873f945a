"""Alembic environment of the tron_events schema.

Runs with a connection handed in by ``tron_events.migrate`` (``config.attributes
["connection"]``) or, when alembic is driven directly, one made from
``sqlalchemy.url``. No alembic.ini is needed.
"""

from __future__ import annotations

from typing import Any

from alembic import context
from sqlalchemy import create_engine

from tron_events.schema import metadata

# Backend-specific search objects (FTS5 and its shadow tables; the PostgreSQL
# search table) are created by the revisions and not declared in the model.
SEARCH_TABLE_PREFIXES = ("events_fts", "events_search")


def include_name(name: str | None, type_: str, parent_names: Any) -> bool:
    if type_ == "table" and name is not None:
        return not name.startswith(SEARCH_TABLE_PREFIXES)
    return True


def _run(connection: Any) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        include_name=include_name,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = create_engine(context.config.get_main_option("sqlalchemy.url") or "")
    with engine.connect() as conn:
        _run(conn)
    engine.dispose()


if context.is_offline_mode():
    raise SystemExit("tron-db does not generate offline SQL; run against a database")
run_migrations_online()
