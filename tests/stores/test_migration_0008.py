"""Migration 0008 on a 0007 database holding data (ADR 0057): the tasks' place index goes, the rows stay and the
store works on them, a second upgrade changes nothing, and the downgrade puts the index back."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from support.migrations import alembic

from interlock.runtime.store import TaskState
from interlock.stores import open_store, upgrade
from interlock.stores.engine import make_engine

INDEX = "ix_interlock_tasks_workflow_step"


@pytest.fixture()
def url(empty_url: str) -> str:
    """An empty database of each backend (tests/conftest.py)."""
    return empty_url


def _task_indexes(url: str) -> set[str]:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return {str(i["name"]) for i in sa.inspect(conn).get_indexes("interlock_tasks")}
    finally:
        engine.dispose()


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
    assert INDEX in _task_indexes(url)
    assert upgrade(url) == "0008"
    assert upgrade(url) == "0008"  # replayable
    assert INDEX not in _task_indexes(url)
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
    assert INDEX in _task_indexes(url)
    alembic(url, "upgrade", "0008")
    assert INDEX not in _task_indexes(url)
