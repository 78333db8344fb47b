"""A private, migrated PostgreSQL schema for the runtime concurrency and fault tests (imported by name).

The server comes from `INTERLOCK_TEST_PG_URL` (default: the local `test` database), as in
`tests/stores/conftest.py`.  Each caller gets its own schema (`il_rt_<random>`, dropped
afterwards), so parallel runs never see each other's rows.  When the server is unreachable
the caller is skipped, except under `CI=true`, where it fails.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from interlock.stores import upgrade
from interlock.stores.engine import normalise_url

DEFAULT_PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def base_url() -> str:
    return str(os.environ.get("INTERLOCK_TEST_PG_URL", DEFAULT_PG_URL))


def url_for(schema: str, *, application_name: str | None = None) -> str:
    """The base URL with every connection's search_path set to `schema` (and, if given, its application_name).

    `synchronous_commit=off`: a test database need not survive a server crash."""
    query = {"options": f"-csearch_path={schema} -csynchronous_commit=off"}
    if application_name:
        query["application_name"] = application_name
    return normalise_url(base_url()).update_query_dict(query).render_as_string(hide_password=False)


def admin_engine() -> sa.Engine:
    """An unpooled engine on the base URL; skips (or fails under CI=true) when the server is unreachable."""
    engine = sa.create_engine(normalise_url(base_url()), poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
    except sa.exc.OperationalError as exc:
        engine.dispose()
        where = make_url(normalise_url(base_url())).render_as_string(hide_password=True)
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL at {where} is unreachable and CI=true requires it: {exc.orig}")
        pytest.skip(f"PostgreSQL at {where} is unreachable (set INTERLOCK_TEST_PG_URL): {exc.orig}")
    return engine


@contextmanager
def private_schema() -> Iterator[str]:
    """A fresh schema migrated to head; yields its name (build URLs with `url_for`); dropped at the end."""
    admin = admin_engine()
    name = f"il_rt_{uuid.uuid4().hex[:12]}"
    try:
        with admin.begin() as conn:
            conn.exec_driver_sql(f'CREATE SCHEMA "{name}"')
        upgrade(url_for(name))
        yield name
    finally:
        with admin.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
        admin.dispose()


def terminate_backends(application_name: str) -> int:
    """Kill every server process serving `application_name` and wait until each is gone; return how many."""
    engine = sa.create_engine(normalise_url(base_url()), poolclass=sa.pool.NullPool)
    try:
        with engine.begin() as conn:
            killed = conn.execute(sa.text(
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name = :app"),
                {"app": application_name}).scalar_one()
        return int(killed)
    finally:
        engine.dispose()
