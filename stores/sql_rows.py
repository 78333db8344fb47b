"""A row of the SQL store's tables in, the runtime's value out: the constructors `SqlStore` and its history reader
(`stores/sql_history.py`) share, in a module of their own so that neither imports the other."""

from __future__ import annotations

from typing import Any

from interlock.runtime.frozen import builder
from interlock.runtime.store import LedgerRow, Participant, TaskState

__all__ = ["task_state", "ledger_row", "task", "ledger", "participant"]

task_state = builder(TaskState)  # the hot paths' constructors (interlock.runtime.frozen.builder)
ledger_row = builder(LedgerRow)


def task(row: tuple[Any, ...]) -> TaskState:
    return task_state(row[0], row[1], row[2], row[3], bool(row[4]), bool(row[5]), bool(row[6]),
                      None if row[7] is None else int(row[7]))


def ledger(row: tuple[Any, ...]) -> LedgerRow:
    return ledger_row(int(row[0]), row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8], row[9], row[10],
                      row[11])


def participant(row: tuple[Any, ...]) -> Participant:
    return Participant(id=int(row[0]), task_id=row[1], workflow_id=row[2], step_id=row[3], role=row[4],
                       agent=row[5], decision_required=bool(row[6]), position=int(row[7]))
