"""A database URL or engine in, the interlock tables at alembic head out (`upgrade`); or a `StoreError` if not (`check_schema`).

The migrations ship inside the package (`interlock/stores/migrations`) and run without
an `alembic.ini`: the alembic `Config` is built here.  Each upgrade runs in one
transaction (DDL included, on SQLite too) and is replayable: upgrading a fresh database
and re-running the upgrade on an up-to-date one both succeed (ADR-0027).
"""

from __future__ import annotations

import functools
import os
import threading
from contextlib import nullcontext
from importlib import resources
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError
from sqlalchemy import Connection, Engine
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError

from interlock.runtime.store import StoreError

from .engine import BEGIN_OPTION, display_url, make_engine, memory_lock, store_error, upgrade_hint
from .schema import VERSION_TABLE

__all__ = [
    "upgrade", "upgrade_engine", "current_revision", "head_revision", "check_schema", "alembic_config",
    "include_name",
]


_ALEMBIC_LOCK = threading.Lock()
"""Alembic keeps the running migration's context in a module global (`alembic.context`), so two
upgrades in one process must not overlap; across processes the database's locks order them."""


def _script_location() -> str:
    location = resources.files("interlock.stores") / "migrations"
    if not isinstance(location, Path):  # pragma: no cover - zipped installs are not supported by alembic
        raise StoreError("interlock's migrations must be installed as files (not inside a zip)")
    return str(location)


def alembic_config(url: str | URL | None = None) -> Config:
    """An alembic `Config` for interlock's migrations (no ini file); `url` only for offline (`--sql`) runs."""
    config = Config()
    config.set_main_option("script_location", _script_location())
    if url is not None:
        config.attributes["url"] = url
    return config


def include_name(name: str | None, type_: str, parent_names: object) -> bool:
    """Autogenerate filter: only interlock's own tables (a host's tables may share the database)."""
    if type_ != "table":
        return True
    return name is not None and name.startswith("interlock_") and name != VERSION_TABLE


@functools.cache
def head_revision() -> str:
    """The newest migration this interlock ships."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None, "interlock ships at least one migration"
    return head


def upgrade(url: str | URL) -> str:
    """Bring the database at `url` to the newest revision; return that revision."""
    engine = make_engine(url)
    try:
        return upgrade_engine(engine)
    finally:
        engine.dispose()


def upgrade_engine(engine: Engine) -> str:
    """`upgrade` on an engine made by `interlock.stores.engine.make_engine` (an in-memory database keeps its data)."""
    config = alembic_config()
    try:
        # one upgrade at a time in this process, the look at the revision included: the first connection to a new
        # SQLite file switches it to WAL, which two threads doing at once makes fail at once as "locked"
        with memory_lock(engine) or nullcontext(), _ALEMBIC_LOCK:
            with engine.connect() as conn:
                if _revision(conn) == head_revision():  # up to date: no write lock taken, alembic not run (ADR 0059)
                    return head_revision()
            with engine.connect() as conn:
                conn.execution_options(**{BEGIN_OPTION: "IMMEDIATE"})
                with conn.begin():
                    current = _revision(conn)
                    if current is not None and not _known(current):  # never hand alembic a revision it cannot find
                        raise _newer(current, engine)
                    config.attributes["connection"] = conn
                    command.upgrade(config, "head")
                    revision = _revision(conn)
    except DBAPIError as exc:
        raise store_error(exc, engine.url, "upgrading the interlock schema") from exc
    except CommandError as exc:
        raise StoreError(f"upgrading the interlock schema of {display_url(engine.url)}: {exc}") from exc
    if revision is None:  # pragma: no cover - alembic stamps the head it reached
        raise StoreError(f"upgrading {display_url(engine.url)} left no interlock revision")
    return revision


def current_revision(url: str | URL | Engine) -> str | None:
    """The database's interlock revision; None when it has none (empty, never upgraded, or a SQLite file that does
    not exist: reading it does not create it)."""
    if not isinstance(url, Engine):
        parsed = make_url(url) if isinstance(url, str) else url
        database = parsed.database
        if parsed.get_backend_name() == "sqlite" and database not in (None, "", ":memory:") \
                and not database.startswith("file:") and not os.path.exists(database):
            return None
    engine = url if isinstance(url, Engine) else make_engine(url)
    try:
        with memory_lock(engine) or nullcontext(), engine.connect() as conn:
            return _revision(conn)
    except DBAPIError as exc:
        raise store_error(exc, engine.url, "reading the interlock schema revision") from exc
    finally:
        if engine is not url:
            engine.dispose()


def _revision(conn: Connection) -> str | None:
    context = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
    return context.get_current_revision()


def check_schema(engine: Engine) -> None:
    """Raise `StoreError` unless the database is at this interlock's head revision."""
    current = current_revision(engine)
    head = head_revision()
    if current == head:
        return
    if current is not None and not _known(current):
        raise _newer(current, engine)
    raise StoreError(f"database schema is at revision {current or 'none'}, this interlock needs {head}: "
                     f"{upgrade_hint(engine.url)}")


def _newer(current: str, engine: Engine) -> StoreError:
    return StoreError(f"database schema is at revision {current}, which this interlock (head {head_revision()}) "
                      f"does not know: {display_url(engine.url)} was upgraded by a newer interlock; upgrade interlock")


def _known(revision: str) -> bool:
    try:
        return ScriptDirectory.from_config(alembic_config()).get_revision(revision) is not None
    except CommandError:
        return False
