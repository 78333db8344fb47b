"""The MemoryStore's growing tables stay out of the garbage collector's way (ADR 0035).

A host that keeps a MemoryStore for hours accumulates a ledger row and an entry record per
arrival.  Kept as record objects, each would stay tracked by the collector, and every full
collection would walk all of them; kept as rows of plain values, the collector stops tracking
them once they survive a collection.  The records handed out are built on read and equal what
was written.
"""

from __future__ import annotations

import gc

from interlock.runtime.store import EntryRecord, LedgerRow, TaskState
from interlock.stores import MemoryStore


def _arrivals(store: MemoryStore, n: int) -> None:
    for i in range(n):
        moved = store.move_task("T", "w", "b" if i % 2 == 0 else "a", route="manual_move")
        row = moved.ledger
        assert row is not None and row.to_step_id is not None
        assert store.record_entry(EntryRecord(row.id, "T", "w", row.to_step_id, ("queue_run",),
                                              (("notify", "boom"),)))


def _tracked() -> int:
    gc.collect()
    return len(gc.get_objects())


def test_ledger_rows_and_entry_records_are_not_tracked_by_the_collector() -> None:
    store = MemoryStore()
    store.put_task(TaskState("T", "w", "a"))
    _arrivals(store, 200)  # warm: the dicts and lists that hold the rows exist
    before = _tracked()
    _arrivals(store, 5_000)
    grown = _tracked() - before
    # two records per arrival: as tracked objects they would add 10,000
    assert grown < 100, f"{grown} more objects tracked after 5,000 arrivals"
    assert len(store.ledger("T")) == 5_200


def test_records_read_back_are_the_records_written() -> None:
    store = MemoryStore()
    store.put_task(TaskState("T", "w", "a"))
    moved = store.move_task("T", "w", "b", route="manual_move", actor_kind="agent", actor_id="A", session_id="S")
    row = moved.ledger
    assert row == LedgerRow(row.id, "T", "w", "a", "w", "b", "manual_move", "agent", "A", "S")
    assert store.ledger_row(row.id) == row and store.ledger("T") == [row] and store.ledger() == [row]
    assert store.unrecorded_arrivals() == [row]
    record = EntryRecord(row.id, "T", "w", "b", ("queue_run", "notify"), (("notify", "no executor"),))
    assert store.record_entry(record)
    assert store.entry_record(row.id) == record and store.unrecorded_arrivals() == []
    assert type(store.entry_record(row.id)) is EntryRecord and type(store.ledger_row(row.id)) is LedgerRow
