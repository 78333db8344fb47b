"""Migration 0007 on a 0006 database holding data (ADR 0047): the runs queued before it count as consumed (a
consumer started after the upgrade hands none of them out again), the rows stay, the indexes exist, a second
upgrade changes nothing, and the downgrade goes back to 0006."""

from __future__ import annotations

import pytest
from support.migrations import alembic, indexes

from interlock.runtime.store import QueuedRun
from interlock.stores import open_store, upgrade
from interlock.stores._common import operation_key
from interlock.stores.engine import make_engine

INDEXES = {("interlock_runs", "ix_interlock_runs_unacked"), ("interlock_operations", "ix_interlock_operations_task"),
           ("interlock_tasks", "ix_interlock_tasks_workflow_step")}


@pytest.fixture()
def url(empty_url: str) -> str:
    """An empty database of each backend (tests/conftest.py)."""
    return empty_url


def _rows(url: str, sql: str) -> list[tuple[object, ...]]:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.exec_driver_sql(sql)]
    finally:
        engine.dispose()


def test_a_0006_database_with_runs_upgrades(url: str) -> None:
    alembic(url, "upgrade", "0006")
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            for i in range(3):
                conn.exec_driver_sql(
                    "INSERT INTO interlock_runs (idempotency_key, task_id, step_id, agent, reason, payload, created_at) "
                    f"VALUES ('k{i}', 'T1', 'work', 'a', 'r', '{{}}', CURRENT_TIMESTAMP)")
            conn.exec_driver_sql("INSERT INTO interlock_operations (op_key, operation_id, task_id, state) "
                                 f"VALUES ('{operation_key('op-1')}', 'op-1', 'T1', 'applied')")
    finally:
        engine.dispose()
    assert not INDEXES & indexes(url, "interlock_runs", "interlock_operations", "interlock_tasks")
    alembic(url, "upgrade", "0007")
    alembic(url, "upgrade", "0007")  # replayable
    assert _rows(url, "SELECT idempotency_key, consumer, claims, acked_at IS NOT NULL FROM interlock_runs "
                      "ORDER BY id") == [(f"k{i}", "(before 0007)", 0, True) for i in range(3)]
    assert indexes(url, "interlock_runs", "interlock_operations", "interlock_tasks") >= INDEXES
    assert upgrade(url) == "0008"  # the head: 0008 drops the tasks' place index again (ADR 0057)
    assert indexes(url, "interlock_runs", "interlock_operations", "interlock_tasks") >= INDEXES - {("interlock_tasks", "ix_interlock_tasks_workflow_step")}
    alembic(url, "downgrade", "0007")
    assert indexes(url, "interlock_runs", "interlock_operations", "interlock_tasks") >= INDEXES
    alembic(url, "upgrade", "0008")
    store = open_store(url, create=False)
    try:
        assert len(store.runs()) == 3  # every run stays readable
        assert store.claim_runs("host") == [] and store.queued_runs() == []  # none is handed out again
        assert store.enqueue_run(QueuedRun("k-new", "T1", "work", "a", "r"))
        assert [p.run.key for p in store.claim_runs("host")] == ["k-new"]
        assert store.operation_applied("op-1")
    finally:
        store.close()  # type: ignore[attr-defined]
    alembic(url, "downgrade", "0006")
    assert not INDEXES & indexes(url, "interlock_runs", "interlock_operations", "interlock_tasks")
    assert [r[0] for r in _rows(url, "SELECT idempotency_key FROM interlock_runs ORDER BY id")] == \
        ["k0", "k1", "k2", "k-new"]
