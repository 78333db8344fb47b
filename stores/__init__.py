"""A database URL in, a `Store` for the runtime out: SQLAlchemy tables, the ledger writer and alembic migrations.

- `open_store(url)` — `sqlite:///path.db`, `sqlite://` (in memory) or
  `postgresql://…` (psycopg 3); the schema is upgraded to head, or only checked with
  `create=False`.
- `MemoryStore` — the same protocol in process memory, not durable.
- `SqlStore` — the protocol on SQLite or PostgreSQL, durable: SQLAlchemy for engines, pools, the schema and
  migrations; the hot statements run on the driver (DBAPI) directly, compiled once per dialect.
- `LedgerWriter` — writes ledger rows inside a host's own transaction.
- `upgrade(url)` — run the migrations (what `interlock db upgrade --url URL` does).
- `prune(store, older_than=…)` — delete the finished history of quiet tasks (what `interlock db prune` does).

Importing this package is cheap: SQLAlchemy and alembic load only when a SQL name is
first used, so `MemoryStore` works without them.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .memory import MemoryStore

if TYPE_CHECKING:
    from interlock.runtime.store import Store

    from .ledger import LedgerWriter
    from .migrate import check_schema, current_revision, head_revision, upgrade
    from .pruning import PruneReport, prune
    from .sql import SqlStore

__all__ = [
    "open_store", "MemoryStore", "SqlStore", "LedgerWriter", "upgrade", "current_revision", "head_revision",
    "check_schema", "prune", "PruneReport",
]

_LAZY = {
    "SqlStore": ".sql",
    "LedgerWriter": ".ledger",
    "upgrade": ".migrate",
    "current_revision": ".migrate",
    "head_revision": ".migrate",
    "check_schema": ".migrate",
    "prune": ".pruning",
    "PruneReport": ".pruning",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def open_store(url: str, *, create: bool = True, clock: Callable[[], float] | None = None) -> Store:
    """Open the store at `url`.

    In-memory SQLite (`sqlite://`) is always migrated (it starts empty).  For a file or
    PostgreSQL database, `create=True` upgrades the schema to head first (replayable:
    nothing happens when it is current); `create=False` only checks it and raises
    `StoreError` naming `interlock db upgrade` when it is behind.  `postgresql://` means
    psycopg 3 (`postgresql+psycopg://`).

    `clock` (epoch seconds): a test clock for due rows, incidents and `now()` instead of the database's (see
    `SqlStore`); owner heartbeats and leases keep the database's."""
    from .engine import display_url, is_memory_url, make_engine
    from .migrate import upgrade_engine
    from .sql import SqlStore

    engine = make_engine(url)
    database = engine.url.database
    if (not create and engine.url.get_backend_name() == "sqlite" and database and not is_memory_url(engine.url)
            and not os.path.exists(database)):
        engine.dispose()
        from interlock.runtime.store import StoreError

        raise StoreError(f"no SQLite database at {database}: create it with "
                         f"`interlock db upgrade --url {display_url(url)}` (or open it with create=True)")
    try:
        upgraded = create or is_memory_url(engine.url)
        if upgraded:
            upgrade_engine(engine)
        return SqlStore(engine, check=not upgraded, owns_engine=True, clock=clock)
    except BaseException:
        engine.dispose()
        raise
