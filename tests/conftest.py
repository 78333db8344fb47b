"""Shared pytest options and fixtures for the interlock test suite.

Hypothesis runs under one profile for the whole suite, chosen by `HYPOTHESIS_PROFILE`: `ci` (the default: 25
examples a property, no deadline, so a loaded machine cannot fail a test by its speed), `thorough` (200) and
`campaign` (5,000: `HYPOTHESIS_PROFILE=campaign pytest tests/property`).  A property names its own
`max_examples` only to run fewer than the profile's (an example that compiles several times): ADR 0054.

`sqlite_template` is the suite's one migrated SQLite file: tests that need a SQLite store copy it
(`sqlite_url`) instead of migrating a database of their own.  `pg_server` is the suite's one
PostgreSQL bootstrap for fixtures (`INTERLOCK_TEST_PG_URL`, default the local `test` database): it
makes private schemas, dropped at the end; an unreachable server skips the tests that need it,
except under `CI=true`, where they fail.  (Spawned worker processes, which cannot use fixtures,
import `support.conc_pg`, tests/support.)
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, settings
from sqlalchemy.engine import make_url

from interlock.stores import upgrade
from interlock.stores.engine import normalise_url

# ---- Hypothesis ----------------------------------------------------------------------------------------

_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]
PROFILES = {"ci": 25, "thorough": 200, "campaign": 5000}
"""Examples a property runs under each profile (ADR 0054)."""
for _name, _examples in PROFILES.items():
    # `ci` draws the same examples on every run (ADR 0056): a red run is a defect found, never a health check
    # or an example a luckier seed would not have drawn; `thorough` and `campaign` explore with fresh seeds.
    settings.register_profile(_name, max_examples=_examples, deadline=None, suppress_health_check=_SLOW_OK,
                              print_blob=True, derandomize=_name == "ci")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def parser_forbidden(monkeypatch: pytest.MonkeyPatch) -> None:
    """The grammar's parsers made to fail if used (after a warm-up that loads the prelude): a test that an input is
    refused by the prescan, in one linear pass over the text, before any parse (its cost is a benchmark's:
    benchmarks/scale.py)."""
    from interlock.compiler import compile_source
    from interlock.dsl import SourceFile
    from interlock.dsl import parser as parsing

    compile_source(SourceFile("warm-up.wf", "role warm_up\n"))

    def forbidden() -> None:
        raise AssertionError("the input was parsed: the prescan should have refused it")

    monkeypatch.setattr(parsing, "_parser", forbidden)
    monkeypatch.setattr(parsing, "_concrete_parser", forbidden)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files that hold `slow` tests first (in their order), then the rest: on two workers (`--dist loadfile`, ADR
    0054) the long files start at once and the short ones fill the other worker, instead of one long file running
    alone at the end of the run."""
    slow_files = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.nodeid.split("::")[0] not in slow_files)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than the cores (ADR 0060).  A fair share of the suite waits rather than computes
    (subprocesses sleeping on a lease or a cadence, PostgreSQL round trips, the example host's runs): a third
    worker on two cores fills those waits (on an idle 2-core machine 301 s against 361 s with two)."""
    return (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1) + 1


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the expected files of the golden tests instead of comparing against them")


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite file, copied for each test (cheaper than migrating each time); never written to."""
    path = tmp_path_factory.mktemp("template") / "template.db"
    upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture()
def sqlite_url(sqlite_template: Path, tmp_path: Path) -> str:
    """A fresh, migrated SQLite file of the test's own."""
    path = tmp_path / "store.db"
    shutil.copyfile(sqlite_template, path)
    return f"sqlite:///{path}"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty database of each backend (a new SQLite file, or a new PostgreSQL schema)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'fresh.db'}"
    server = request.getfixturevalue("pg_server")
    url: str = server.url_for(server.new_schema())
    return url


# ---- PostgreSQL ----------------------------------------------------------------------------------------

DEFAULT_PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


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
