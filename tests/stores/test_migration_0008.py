"""Migration 0008 on a 0007 database holding data (ADR 0057): the tasks' place index goes, the rows stay and the
store works on them, a second upgrade changes nothing, and the downgrade puts the index back."""

from __future__ import annotations

import pytest
from support.migrations import alembic, indexes

from interlock.runtime.store import TaskState
from interlock.stores import open_store, upgrade
from interlock.stores.engine import make_engine

INDEX = ("interlock_tasks", "ix_interlock_tasks_workflow_step")


@pytest.fixture()
def url(empty_url: str) -> str:
    """An empty database of each backend (tests/conftest.py)."""
    return empty_url


def test_a_0007_database_with_tasks_upgrades(url: str) -> None:
    alembic(url, "upgrade", "0007")
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            for i in range(3):
                conn.exec_driver_sql(
                    "INSERT INTO interlock_tasks (id, workflow_id, step_id, created_at, updated_at) "
                    f"VALUES ('T{i}', 'w', 'a', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)")
    finally:
        engine.dispose()
    assert INDEX in indexes(url, "interlock_tasks")
    assert upgrade(url) == "0008"
    assert upgrade(url) == "0008"  # replayable
    assert INDEX not in indexes(url, "interlock_tasks")
    opened = open_store(url, create=False)
    try:
        assert [opened.get_task(f"T{i}") is not None for i in range(3)] == [True] * 3
        moved = opened.move_task("T1", "w", "b", route="manual_move")
        assert moved.status == "moved" and moved.task is not None and moved.task.step_id == "b"
        opened.put_task(TaskState("T9", "w", "a"))
        assert opened.get_task("T9") is not None
    finally:
        opened.close()  # type: ignore[attr-defined]
    alembic(url, "downgrade", "0007")
    assert INDEX in indexes(url, "interlock_tasks")
    alembic(url, "upgrade", "0008")
    assert INDEX not in indexes(url, "interlock_tasks")
