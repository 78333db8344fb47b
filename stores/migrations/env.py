"""Alembic's environment for interlock: a connection (or URL) from `interlock.stores.migrate` in, migrations run on it.

The version table is `interlock_alembic_version`, so a host that keeps its own alembic
history in the same database is untouched.  On PostgreSQL the run holds a transaction
advisory lock, so two processes upgrading at once queue instead of racing the DDL; on
SQLite the run's transaction begins IMMEDIATE for the same reason.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, text
from sqlalchemy.pool import NullPool

from interlock.stores.engine import ADVISORY_NAMESPACE, BEGIN_OPTION, MIGRATION_LOCK_KEY, make_engine
from interlock.stores.migrate import include_name
from interlock.stores.schema import VERSION_TABLE, metadata


def _configure(connection: Connection) -> None:
    # The caller holds the transaction (alembic sees an external one and never commits):
    # the whole upgrade is one transaction on both dialects, DDL included.
    context.configure(connection=connection, target_metadata=metadata, version_table=VERSION_TABLE,
                      render_as_batch=connection.dialect.name == "sqlite", compare_type=True,
                      include_name=include_name)
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(CAST(:ns AS integer), CAST(:key AS integer))"),
                               {"ns": ADVISORY_NAMESPACE, "key": MIGRATION_LOCK_KEY})
        context.run_migrations()


def run() -> None:
    """Run the migrations alembic was asked for (offline: print the SQL for the URL's dialect)."""
    config = context.config
    url = config.attributes.get("url") or config.get_main_option("sqlalchemy.url")
    if context.is_offline_mode():
        context.configure(url=url, target_metadata=metadata, version_table=VERSION_TABLE, literal_binds=True,
                          dialect_opts={"paramstyle": "named"})
        with context.begin_transaction():
            context.run_migrations()
        return
    connection: Connection | None = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        return
    if not url:
        raise RuntimeError("interlock migrations need a connection or a URL (use interlock.stores.migrate)")
    engine = make_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn, conn.execution_options(**{BEGIN_OPTION: "IMMEDIATE"}).begin():
            _configure(conn)
    finally:
        engine.dispose()


if getattr(context, "_proxy", None) is not None:  # imported outside an alembic run (e.g. by a module walk)
    run()
