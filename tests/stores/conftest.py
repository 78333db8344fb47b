"""Fixtures for the store tests: the three backends, a migrated SQLite template and a private PostgreSQL schema.

PostgreSQL comes from `INTERLOCK_TEST_PG_URL` (default: the local `test` database).  Each
test session works in its own schema (`il_test_<random>`, dropped at the end), so
parallel runs never see each other's rows; between tests its tables are emptied.
When the server is unreachable the PostgreSQL cases are skipped, except under `CI=true`,
where they fail.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from interlock.runtime.store import Store
from interlock.stores import MemoryStore, SqlStore, upgrade
from interlock.stores.engine import make_engine
from interlock.stores.schema import metadata

BACKENDS = ["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@pytest.fixture(scope="session")
def pg_url(pg_server: Any) -> str:
    """A migrated schema shared by the session's PostgreSQL contract tests (emptied before each)."""
    url = pg_server.url_for(pg_server.new_schema())
    upgrade(url)
    return url


@pytest.fixture(scope="session")
def pg_engine(pg_url: str) -> Iterator[sa.Engine]:
    """One pooled engine on the session schema (connecting costs more than most tests)."""
    engine = make_engine(pg_url)
    yield engine
    engine.dispose()


@pytest.fixture()
def pg_clean_engine(pg_engine: sa.Engine) -> sa.Engine:
    # DELETE, not TRUNCATE: on tables this small it is twenty times faster (ids keep growing; no test
    # depends on their absolute values).
    with pg_engine.begin() as conn:
        for table in reversed(metadata.sorted_tables):
            conn.execute(table.delete())
    return pg_engine




@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    """A fresh, empty store of each backend."""
    if request.param == "memory":
        yield MemoryStore()
        return
    target = request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_clean_engine")
    sql = SqlStore(target)
    try:
        yield sql
    finally:
        sql.close()


@pytest.fixture(params=BACKENDS)
def clocked_store(request: pytest.FixtureRequest, clock: Any) -> Iterator[Store]:
    """A fresh, empty store of each backend on the requesting module's `clock` fixture (each module has its own)."""
    if request.param == "memory":
        yield MemoryStore(clock=clock)
        return
    target = request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_clean_engine")
    sql = SqlStore(target, clock=clock)
    try:
        yield sql
    finally:
        sql.close()
