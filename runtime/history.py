"""The store's read side for `inspect`: a task id in, every row the store keeps about that task out (`TaskHistory`).

What the rows are is the store's business (runtime/store.py, runtime/store_due.py); this module only names
the read and the plain values it returns, so the timeline (runtime/timeline/) is built from the store
alone.  `at` is the store's clock (epoch seconds) when the row was written, None when the store keeps no
time (the `MemoryStore` keeps its clock's reading); `seq` orders rows of different tables written by
one store: the same as `at` on a SQL store, a counter on the `MemoryStore`.  The read changes nothing
(the SQL store reads in one read-only transaction: one snapshot, ADR 0046).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from .store import Decision, EntryRecord, LedgerRow, Marker, Participant, QueuedRun, TaskState
from .store_due import DueRow, Incident

__all__ = ["ArrivalRow", "OperationRow", "DecisionRow", "RunRow", "TaskHistory", "HistoryReader"]


@dataclass(frozen=True)
class ArrivalRow:
    """A ledger row with its entry record (None: not recorded yet) and its markers, by position."""

    ledger: LedgerRow
    entry: EntryRecord | None
    markers: tuple[Marker, ...]
    at: float | None
    seq: float


@dataclass(frozen=True)
class OperationRow:
    """An operation of the task: `claimed` (a delivery is running it) or `applied` (it took effect)."""

    operation_id: str
    trigger: str | None
    state: str
    at: float | None  # when it was applied (None while claimed)
    seq: float


@dataclass(frozen=True)
class DecisionRow:
    """A decision, active or superseded (by a later one of the same decider, or by `clear_decisions`)."""

    decision: Decision
    superseded: bool
    at: float | None
    seq: float


@dataclass(frozen=True)
class RunRow:
    """A queued run."""

    run: QueuedRun
    at: float | None
    seq: float


@dataclass(frozen=True)
class TaskHistory:
    """Every row the store keeps about one task.  `task` is None for a task only the ledger knows (a host that keeps
    its own tasks table); `seats`: its per-task seats and the template seats of the steps it stood on; `due`: its
    timers and retries; `incidents`: every incident, resolved ones too; `plans`: the JSON of every plan revision its
    ledger rows name that the store keeps; `now`: the store's clock at the read."""

    task_id: str
    task: TaskState | None
    arrivals: tuple[ArrivalRow, ...]
    operations: tuple[OperationRow, ...]
    decisions: tuple[DecisionRow, ...]
    runs: tuple[RunRow, ...]
    seats: tuple[Participant, ...]
    due: tuple[DueRow, ...]
    incidents: tuple[Incident, ...]
    plans: dict[str, str]
    now: float


@runtime_checkable
class HistoryReader(Protocol):
    """A store that can read a task's history (both shipped stores can)."""

    def task_history(self, task_id: str) -> TaskHistory | None:
        """Every row about `task_id`, read without writing anything; None when the store knows no such task (no
        task row and no ledger row)."""
        ...
