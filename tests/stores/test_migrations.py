"""Migrations: replayable upgrades on SQLite and PostgreSQL, the schema check, and `open_store`'s choices."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from support.migrations import alembic

from interlock.runtime.store import StoreError, TaskState
from interlock.stores import SqlStore, check_schema, current_revision, head_revision, open_store, upgrade
from interlock.stores.engine import SQLITE_WAL_AUTOCHECKPOINT, is_memory_url, make_engine, normalise_url
from interlock.stores.migrate import alembic_config, include_name
from interlock.stores.schema import TABLE_NAMES, VERSION_TABLE, metadata

EXPECTED_TABLES = {*TABLE_NAMES, VERSION_TABLE}


def _tables(url: str) -> set[str]:
    engine = sa.create_engine(normalise_url(url), poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            return set(sa.inspect(conn).get_table_names())
    finally:
        engine.dispose()


def test_head_is_0008_on_top_of_0007_0006_0005_0004_0003_0002_and_0001() -> None:
    from alembic.script import ScriptDirectory

    assert head_revision() == "0008"
    script = ScriptDirectory.from_config(alembic_config())
    assert [r.revision for r in script.walk_revisions()] == ["0008", "0007", "0006", "0005", "0004", "0003", "0002", "0001"]


def test_upgrade_fresh_then_again(empty_url: str) -> None:
    assert current_revision(empty_url) is None
    assert upgrade(empty_url) == head_revision()
    assert _tables(empty_url) == EXPECTED_TABLES
    assert upgrade(empty_url) == head_revision()  # replay on an up-to-date database
    assert current_revision(empty_url) == head_revision()
    store = open_store(empty_url, create=False)
    try:
        assert store.create_task(TaskState("T1", "wf", "a")).status == "moved"
    finally:
        store.close()  # type: ignore[attr-defined]


def test_upgrade_over_tables_without_a_version_row(empty_url: str) -> None:
    """ADR-0027: the initial migration adopts tables that exist already (e.g. made by `create_all`)."""
    engine = make_engine(empty_url)
    metadata.create_all(engine)
    engine.dispose()
    assert current_revision(empty_url) is None
    assert upgrade(empty_url) == head_revision()
    assert _tables(empty_url) == EXPECTED_TABLES


def test_downgrade_then_upgrade(empty_url: str) -> None:
    upgrade(empty_url)
    engine = make_engine(empty_url)
    try:
        with engine.connect() as conn, conn.begin():
            config = alembic_config()
            config.attributes["connection"] = conn
            command.downgrade(config, "base")
    finally:
        engine.dispose()
    assert _tables(empty_url) == {VERSION_TABLE}
    assert upgrade(empty_url) == head_revision()
    assert _tables(empty_url) == EXPECTED_TABLES


def test_migration_matches_the_schema_module(empty_url: str) -> None:
    """`schema.py` (what the code uses) and `0001_initial.py` (what creates it) do not drift apart.

    A host table in the same database is not interlock's business (no diff for it)."""
    upgrade(empty_url)
    engine = make_engine(empty_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE host_tasks (id TEXT PRIMARY KEY)")
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True, "include_name": include_name})
            diff = compare_metadata(context, metadata)
    finally:
        engine.dispose()
    assert diff == []


def test_concurrent_upgrades_both_succeed(empty_url: str) -> None:
    results: list[str] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(3)

    def run() -> None:
        barrier.wait()
        try:
            results.append(upgrade(empty_url))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and results == [head_revision()] * 3
    assert _tables(empty_url) == EXPECTED_TABLES


# ---- the schema check -------------------------------------------------------------------------------------


def test_check_schema_on_an_empty_database_names_the_upgrade_command(empty_url: str) -> None:
    engine = make_engine(empty_url)
    try:
        with pytest.raises(StoreError) as info:
            check_schema(engine)
    finally:
        engine.dispose()
    message = str(info.value)
    assert f"database schema is at revision none, this interlock needs {head_revision()}" in message
    assert "run `interlock db upgrade --url " in message
    with pytest.raises(StoreError, match="interlock db upgrade"):
        SqlStore(empty_url)
    with pytest.raises(StoreError, match="interlock db upgrade"):
        open_store(empty_url, create=False)
    assert _tables(empty_url) == set()  # neither the check nor create=False wrote anything


def test_check_schema_on_a_newer_database(empty_url: str) -> None:
    upgrade(empty_url)
    engine = make_engine(empty_url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text(f"UPDATE {VERSION_TABLE} SET version_num = 'ffff9999'"))
        with pytest.raises(StoreError, match=r"revision ffff9999, which this interlock .* does not know"):
            check_schema(engine)
    finally:
        engine.dispose()


def test_a_missing_table_is_reported_with_the_upgrade_command(empty_url: str) -> None:
    store = SqlStore(empty_url, check=False)
    try:
        with pytest.raises(StoreError, match=r"interlock tables are missing .*interlock db upgrade --url"):
            store.get_task("T1")
    finally:
        store.close()


def test_messages_hide_the_password() -> None:
    url = "postgresql://someone:s3cret@127.0.0.1:1/none"
    with pytest.raises(StoreError) as info:
        open_store(url)
    assert "s3cret" not in str(info.value)
    assert "could not open the connection" in str(info.value) or "lost" in str(info.value)


# ---- open_store ----------------------------------------------------------------------------------------------


def test_open_store_in_memory_migrates_and_shares_one_database() -> None:
    store = open_store("sqlite://")
    seen: list[TaskState | None] = []
    created = store.create_task(TaskState("T1", "wf", "a")).task
    thread = threading.Thread(target=lambda: seen.append(store.get_task("T1")))
    thread.start()
    thread.join()
    assert created is not None and seen == [created]
    store.close()  # type: ignore[attr-defined]


def test_open_store_file_create_true_upgrades(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'new.db'}"
    store = open_store(url)
    assert store.durable
    assert current_revision(url) == head_revision()
    store.close()  # type: ignore[attr-defined]


@pytest.mark.parametrize(("given", "driver"), [
    ("postgresql://u@h/db", "postgresql+psycopg"),
    ("postgres://u@h/db", "postgresql+psycopg"),
    ("postgresql+psycopg://u@h/db", "postgresql+psycopg"),
    ("sqlite:///x.db", "sqlite"),
])
def test_postgresql_urls_mean_psycopg(given: str, driver: str) -> None:
    assert normalise_url(given).drivername == driver


@pytest.mark.parametrize(("url", "memory"), [
    ("sqlite://", True), ("sqlite:///:memory:", True), ("sqlite:///file:x?mode=memory&uri=true", True),
    ("sqlite:///x.db", False), ("postgresql://u@h/db", False),
])
def test_in_memory_urls(url: str, memory: bool) -> None:
    assert is_memory_url(url) is memory


def test_sqlite_file_settings(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'x.db'}")
    try:
        with engine.connect() as conn:
            def pragma(name: str) -> object:
                return conn.exec_driver_sql(f"PRAGMA {name}").scalar()
            assert pragma("journal_mode") == "wal"
            assert pragma("foreign_keys") == 1
            assert pragma("busy_timeout") == 30000
            assert pragma("wal_autocheckpoint") == SQLITE_WAL_AUTOCHECKPOINT != 1000  # ADR 0052: not the default
    finally:
        engine.dispose()


def test_a_new_sqlite_file_gets_the_store_page_size_and_an_existing_one_keeps_its_own(tmp_path: Path) -> None:
    import sqlite3

    from interlock.stores.engine import SQLITE_PAGE_SIZE

    upgrade(f"sqlite:///{tmp_path / 'new.db'}")
    with sqlite3.connect(tmp_path / "new.db") as conn:
        assert conn.execute("PRAGMA page_size").fetchone()[0] == SQLITE_PAGE_SIZE != 4096
    host = tmp_path / "host.db"  # a host's database with content: its page size is not ours to change
    with sqlite3.connect(host) as conn:
        conn.execute("PRAGMA page_size = 4096")
        conn.execute("CREATE TABLE host_rows (id INTEGER PRIMARY KEY)")
    store = open_store(f"sqlite:///{host}")
    try:
        created = store.create_task(TaskState("T1", "w", "a")).task
        assert store.get_task("T1") == created
    finally:
        store.close()  # type: ignore[attr-defined]
    with sqlite3.connect(host) as conn:
        assert conn.execute("PRAGMA page_size").fetchone()[0] == 4096
        assert conn.execute("SELECT count(*) FROM host_rows").fetchone()[0] == 0


def test_0002_moves_entry_records_into_their_ledger_rows_and_back(empty_url: str) -> None:
    """A database at 0001 with entry records: after the upgrade each row carries its record (and the rows without
    one are still unrecorded); the downgrade puts the records back into `interlock_entries`."""
    alembic(empty_url, "upgrade", "0001")
    engine = make_engine(empty_url)
    now = "2026-11-30 10:00:00.000000"
    try:
        with engine.begin() as conn:
            for i, (task, to) in enumerate([("T1", "work"), ("T1", "review"), ("T2", "work")], start=1):
                conn.execute(sa.text(
                    "INSERT INTO interlock_step_transitions (id, task_id, from_workflow_id, from_step_id, "
                    "to_workflow_id, to_step_id, route, actor_kind, occurred_at) VALUES (:id, :task, NULL, NULL, "
                    "'w', :to, 'creation', 'system', :now)"), {"id": i, "task": task, "to": to, "now": now})
            for i, attempted, failed in [(1, '["queue_run"]', "[]"), (2, '["clear_decisions"]',
                                                                     '[["clear_decisions", "boom"]]')]:
                conn.execute(sa.text(
                    "INSERT INTO interlock_entries (entry_id, task_id, workflow_id, step_id, attempted, failed, "
                    "recorded_at) SELECT id, task_id, to_workflow_id, to_step_id, :a, :f, :now "
                    "FROM interlock_step_transitions WHERE id = :id"), {"id": i, "a": attempted, "f": failed,
                                                                         "now": now})
    finally:
        engine.dispose()
    assert upgrade(empty_url) == head_revision()
    assert "interlock_entries" not in _tables(empty_url)
    store = open_store(empty_url, create=False)
    try:
        first, second = store.entry_record(1), store.entry_record(2)
        assert first is not None and (first.task_id, first.workflow_id, first.step_id, first.attempted,
                                      first.failed) == ("T1", "w", "work", ("queue_run",), ())
        assert second is not None and second.failed == (("clear_decisions", "boom"),)
        assert store.entry_record(3) is None and [r.id for r in store.unrecorded_arrivals()] == [3]
        assert [r.id for r in store.ledger("T1")] == [1, 2]
    finally:
        store.close()  # type: ignore[attr-defined]
    alembic(empty_url, "downgrade", "0001")
    engine = make_engine(empty_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT entry_id, step_id, attempted, failed FROM interlock_entries "
                                        "ORDER BY entry_id")).all()
            columns = {c["name"] for c in sa.inspect(conn).get_columns("interlock_step_transitions")}
            index = {ix["name"]: ix["column_names"] for ix in sa.inspect(conn).get_indexes(
                "interlock_step_transitions")}
    finally:
        engine.dispose()
    assert [tuple(r) for r in rows] == [(1, "work", '["queue_run"]', "[]"),
                                        (2, "review", '["clear_decisions"]', '[["clear_decisions", "boom"]]')]
    assert not {"entry_attempted", "entry_failed", "entry_recorded_at"} & columns
    assert index["ix_interlock_step_transitions_task"] == ["task_id", "occurred_at", "id"]
    assert upgrade(empty_url) == head_revision()


def test_0002_refuses_records_foreign_to_their_row_and_changes_nothing(empty_url: str) -> None:
    """Records the runtime never writes, but a host could before 0002: a record naming another step than its row's
    destination, and one on a row with no destination.  The upgrade names them and changes nothing."""
    alembic(empty_url, "upgrade", "0001")
    engine = make_engine(empty_url)
    now = "2026-11-30 10:00:00.000000"
    try:
        with engine.begin() as conn:
            for i, to in [(1, "work"), (2, "review"), (3, None)]:
                conn.execute(sa.text(
                    "INSERT INTO interlock_step_transitions (id, task_id, to_workflow_id, to_step_id, route, "
                    "actor_kind, occurred_at) VALUES (:id, 'T1', :wf, :to, 'manual_move', 'system', :now)"),
                    {"id": i, "wf": "w" if to else None, "to": to, "now": now})
            for i, step in [(1, "work"), (2, "elsewhere"), (3, "gone")]:
                conn.execute(sa.text(
                    "INSERT INTO interlock_entries (entry_id, task_id, workflow_id, step_id, attempted, failed, "
                    "recorded_at) VALUES (:id, 'T1', 'w', :step, '[]', '[]', :now)"), {"id": i, "step": step,
                                                                                      "now": now})
    finally:
        engine.dispose()
    with pytest.raises(StoreError, match=r"entry records 2, 3 name another task or destination .* nothing was "
                                         r"changed"):
        upgrade(empty_url)
    assert current_revision(empty_url) == "0001" and "interlock_entries" in _tables(empty_url)
    engine = make_engine(empty_url)
    try:
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM interlock_entries")).scalar_one() == 3
            columns = {c["name"] for c in sa.inspect(conn).get_columns("interlock_step_transitions")}
        with engine.begin() as conn:  # the operator deletes the two, and the upgrade goes through
            conn.execute(sa.text("DELETE FROM interlock_entries WHERE entry_id IN (2, 3)"))
    finally:
        engine.dispose()
    assert "entry_recorded_at" not in columns
    assert upgrade(empty_url) == head_revision()


def test_reading_the_revision_of_a_missing_sqlite_file_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    assert current_revision(f"sqlite:///{missing}") is None
    assert not missing.exists()


def test_opening_an_up_to_date_store_takes_no_write_lock(tmp_path: Path) -> None:
    """A host opening its store (`create=True`, the default) while another process is inside a write transaction
    opens it at once when the schema is current: only a database that needs an upgrade waits for the write lock
    (before, every open queued behind the writer for up to the 30 s busy timeout, then failed)."""
    path = tmp_path / "busy.db"
    url = f"sqlite:///{path}"
    upgrade(url)
    writer = sqlite3.connect(path, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")  # another writer holds the lock throughout
        writer.execute("UPDATE interlock_alembic_version SET version_num = version_num")
        store = open_store(url)
        try:
            assert store.get_task("nobody") is None
        finally:
            store.close()  # type: ignore[attr-defined]
        writer.execute("ROLLBACK")
    finally:
        writer.close()
