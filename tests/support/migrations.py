"""Alembic run by hand on a store's database: to a given revision, up or down (the migration tests' step)."""

from __future__ import annotations

from alembic import command

from interlock.stores.engine import make_engine
from interlock.stores.migrate import alembic_config


def alembic(url: str, verb: str, revision: str) -> None:
    """`alembic upgrade|downgrade REVISION` on the database at `url`, in one transaction."""
    engine = make_engine(url)
    try:
        with engine.connect() as conn, conn.begin():
            config = alembic_config()
            config.attributes["connection"] = conn
            getattr(command, verb)(config, revision)
    finally:
        engine.dispose()


def indexes(url: str, *tables: str) -> set[tuple[str, str]]:
    """(table, index name) of every index of `tables` in the database at `url`."""
    import sqlalchemy as sa

    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            inspector = sa.inspect(conn)
            return {(t, str(i["name"])) for t in tables for i in inspector.get_indexes(t)}
    finally:
        engine.dispose()
