"""`record_in_unit` (ADR 0057) is a hint, never a change of meaning: a row written for a record that comes in its unit
is recorded once, and one whose record does not come (the unit commits without it, the record is rolled back to a
savepoint, another entry is recorded first) commits and reads as an arrival without a record, which `recover` finds.
Every backend (the in-memory store ignores the hint)."""

from __future__ import annotations

import pytest

from interlock.runtime.store import EntryRecord, Store, StoreError, TaskState


def _moved(store: Store, task_id: str = "T", to: str = "b") -> int:
    result = store.move_task(task_id, "w", to, route="manual_move", entry_owner="o", record_in_unit=True)
    assert result.status == "moved" and result.ledger is not None
    return result.ledger.id


def _record(entry_id: int, task_id: str = "T", step: str = "b") -> EntryRecord:
    return EntryRecord(entry_id, task_id, "w", step, ("queue_run",), ())


def _unrecorded(store: Store) -> list[int]:
    return [r.id for r in store.unrecorded_arrivals(owner_id="o")]


def test_the_record_that_comes_in_the_unit_is_written_once(store: Store) -> None:
    store.put_task(TaskState("T", "w", "a"))
    with store.unit() as tx:
        row = _moved(tx)
        assert tx.record_entry(_record(row))
        assert not tx.record_entry(_record(row))  # recorded already: nothing changed
        assert tx.entry_record(row) == _record(row)
    assert store.entry_record(row) == _record(row)
    assert _unrecorded(store) == []


def test_a_unit_that_commits_without_the_record_leaves_the_row_unrecorded(store: Store) -> None:
    store.put_task(TaskState("T", "w", "a"))
    with store.unit() as tx:
        row = _moved(tx)
    assert store.entry_record(row) is None
    assert _unrecorded(store) == [row]
    assert store.record_entry(_record(row))  # recorded later, as any other row
    assert _unrecorded(store) == []


def test_a_read_in_the_unit_sees_the_row_unrecorded(store: Store) -> None:
    store.put_task(TaskState("T", "w", "a"))
    with store.unit() as tx:
        row = _moved(tx)
        assert tx.entry_record(row) is None
        assert tx.unrecorded_arrivals(owner_id="o")[0].id == row
        assert tx.record_entry(_record(row))
    assert store.entry_record(row) == _record(row)


def test_a_record_rolled_back_to_its_savepoint_leaves_the_row_unrecorded(store: Store) -> None:
    store.put_task(TaskState("T", "w", "a"))
    with store.unit() as tx:
        row = _moved(tx)
        with pytest.raises(RuntimeError), tx.unit() as sp:
            assert sp.record_entry(_record(row))
            raise RuntimeError("undo")
    assert store.entry_record(row) is None
    assert _unrecorded(store) == [row]


def test_a_row_rolled_back_to_its_savepoint_is_gone(store: Store) -> None:
    store.put_task(TaskState("T", "w", "a"))
    with store.unit() as tx:
        with pytest.raises(RuntimeError), tx.unit() as sp:
            _moved(sp)
            raise RuntimeError("undo")
        row = _moved(tx, to="c")
        assert tx.record_entry(_record(row, step="c"))
    assert [r.to_step_id for r in store.ledger("T")] == ["c"]
    assert store.entry_record(row) == _record(row, step="c")


def test_a_record_naming_another_destination_is_refused(store: Store) -> None:
    store.put_task(TaskState("T", "w", "a"))
    with store.unit() as tx:
        row = _moved(tx)
        with pytest.raises(StoreError):
            tx.record_entry(_record(row, step="elsewhere"))
    assert store.entry_record(row) is None
    assert _unrecorded(store) == [row]


def test_two_rows_in_one_unit(store: Store) -> None:
    store.put_task(TaskState("T", "w", "a"))
    store.put_task(TaskState("U", "w", "a"))
    with store.unit() as tx:
        first = _moved(tx)
        second = _moved(tx, "U")
        assert tx.record_entry(_record(second, "U"))
    assert store.entry_record(first) is None and store.entry_record(second) == _record(second, "U")
    assert _unrecorded(store) == [first]


def test_outside_a_unit_the_hint_changes_nothing(store: Store) -> None:
    store.put_task(TaskState("T", "w", "a"))
    row = _moved(store)
    assert _unrecorded(store) == [row]
    assert store.record_entry(_record(row))
    assert store.entry_record(row) == _record(row)


def test_a_creation_with_the_hint(store: Store) -> None:
    with store.unit() as tx:
        created = tx.create_task(TaskState("T", "w", "a"), entry_owner="o", record_in_unit=True)
        assert created.ledger is not None
        row = created.ledger.id
    assert _unrecorded(store) == [row]
    with store.unit() as tx:
        created = tx.create_task(TaskState("U", "w", "a"), entry_owner="o", record_in_unit=True)
        assert created.ledger is not None
        assert tx.record_entry(_record(created.ledger.id, "U", "a"))
    assert _unrecorded(store) == [row]
