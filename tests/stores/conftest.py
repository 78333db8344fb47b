"""Fixtures for the store tests: the three backends, a migrated SQLite template and a private PostgreSQL schema.

PostgreSQL comes from `INTERLOCK_TEST_PG_URL` (default: the local `test` database).  Each
test session works in its own schema (`il_test_<random>`, dropped at the end), so
parallel runs never see each other's rows; between tests its tables are emptied.
When the server is unreachable the PostgreSQL cases are skipped, except under `CI=true`,
where they fail.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from interlock.runtime.store import Store
from interlock.stores import MemoryStore, SqlStore, upgrade
from interlock.stores.engine import make_engine, normalise_url
from interlock.stores.schema import metadata

DEFAULT_PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
BACKENDS = ["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


def _pg_base_url() -> str:
    return os.environ.get("INTERLOCK_TEST_PG_URL", DEFAULT_PG_URL)


def with_search_path(url: str, schema: str) -> str:
    """`url` with every connection's search_path set to `schema` (libpq `options`).

    Commits are not flushed to disk before they return (`synchronous_commit=off`): a test
    database need not survive a server crash, and the suite runs several times faster."""
    u = normalise_url(url)
    options = f"-csearch_path={schema} -csynchronous_commit=off"
    return u.update_query_dict({"options": options}).render_as_string(hide_password=False)


class PgServer:
    """A reachable PostgreSQL server: makes private schemas and URLs that use them."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.admin = sa.create_engine(normalise_url(url), poolclass=sa.pool.NullPool)
        self.schemas: list[str] = []

    def new_schema(self) -> str:
        """A fresh empty schema; its URL is `self.url_for(name)`."""
        name = f"il_test_{uuid.uuid4().hex[:12]}"
        with self.admin.begin() as conn:
            conn.exec_driver_sql(f'CREATE SCHEMA "{name}"')
        self.schemas.append(name)
        return name

    def url_for(self, schema: str) -> str:
        return with_search_path(self.url, schema)

    def drop_all(self) -> None:
        with self.admin.begin() as conn:
            for name in self.schemas:
                conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
        self.admin.dispose()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    url = _pg_base_url()
    server = PgServer(url)
    try:
        with server.admin.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
    except sa.exc.OperationalError as exc:
        server.admin.dispose()
        where = make_url(normalise_url(url)).render_as_string(hide_password=True)
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL at {where} is unreachable and CI=true requires it: {exc.orig}")
        pytest.skip(f"PostgreSQL at {where} is unreachable (set INTERLOCK_TEST_PG_URL): {exc.orig}")
    yield server
    server.drop_all()


@pytest.fixture(scope="session")
def pg_url(pg_server: PgServer) -> str:
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
