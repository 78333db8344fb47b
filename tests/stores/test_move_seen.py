"""PostgreSQL: a move of a task read earlier in its unit is one statement, a compare-and-swap on the row read (ADR
0057).  When another transaction changed the task in between, nothing is written by it and the move reads the task
locked and goes on from where the task stands, as a move always did: the ledger's chain stays unbroken."""

from __future__ import annotations

from itertools import pairwise

import pytest
import sqlalchemy as sa

from interlock.runtime.store import TaskState
from interlock.stores import SqlStore

pytestmark = pytest.mark.postgres


@pytest.fixture()
def stores(pg_clean_engine: sa.Engine) -> tuple[SqlStore, SqlStore]:
    return SqlStore(pg_clean_engine), SqlStore(pg_clean_engine)


def test_a_task_read_in_the_unit_moves_in_one_statement(stores: tuple[SqlStore, SqlStore]) -> None:
    store, _ = stores
    store.put_task(TaskState("T", "w", "a", description="d"))
    with store.unit() as tx:
        seen = tx.get_task("T")
        assert seen is not None
        moved = tx.move_task("T", "w", "b", route="manual_move", entry_owner="o")
    assert moved.status == "moved" and moved.ledger is not None and moved.task is not None
    assert moved.task == TaskState("T", "w", "b", description="d", entry_id=moved.ledger.id)
    assert store.get_task("T") == moved.task
    assert [(r.id, r.from_step_id, r.to_step_id) for r in store.ledger("T")] == [(moved.ledger.id, "a", "b")]


@pytest.mark.parametrize("change", ["step", "description"])
def test_a_task_changed_after_the_read_moves_from_where_it_stands(stores: tuple[SqlStore, SqlStore],
                                                                  change: str) -> None:
    store, other = stores
    store.put_task(TaskState("T", "w", "a"))
    with store.unit() as tx:
        assert tx.get_task("T") is not None
        if change == "step":  # another process moves it (commits) before this unit writes
            other.move_task("T", "w", "c", route="manual_move")
        else:
            other.put_task(TaskState("T", "w", "a", description="new"))
        moved = tx.move_task("T", "w", "b", route="manual_move", entry_owner="o")
    assert moved.status == "moved" and moved.ledger is not None and moved.task is not None
    expected_from = "c" if change == "step" else "a"
    assert moved.ledger.from_step_id == expected_from
    assert moved.task.description == ("new" if change == "description" else "")
    assert store.get_task("T") == moved.task
    rows = store.ledger("T")
    assert [r.to_step_id for r in rows][-1] == "b"
    assert all(a.to_step_id == b.from_step_id for a, b in pairwise(rows))


def test_a_compare_and_swap_of_the_caller_is_judged_on_the_locked_row(stores: tuple[SqlStore, SqlStore]) -> None:
    store, other = stores
    store.put_task(TaskState("T", "w", "a"))
    with store.unit() as tx:
        assert tx.get_task("T") is not None
        other.move_task("T", "w", "c", route="manual_move")
        lost = tx.move_task("T", "w", "b", route="manual_move", expected_step_id="a")
    assert lost.status == "cas_lost" and lost.task is not None and lost.task.step_id == "c"
    assert [r.to_step_id for r in store.ledger("T")] == ["c"]
