"""Store calls in, the same answers as the SQL store out, with all state in process memory (`MemoryStore`).

Not durable: everything is lost with the process.  For tests, simulation and hosts
that persist elsewhere.  It keeps the SQL store's semantics method for method (the
shared contract tests run against both): insert-if-absent answers, ledger ids that only
grow, entry records and markers that must name a ledger row, seats and decisions with
the same natural keys.

Thread-safe: one re-entrant lock guards everything, and a `unit()` holds it from start
to end, so other threads wait for the unit as they would for SQLite's write lock.  A
unit that raises is undone from an undo log (each write pushes its inverse), so a unit
costs nothing in proportion to the size of the store; a nested unit that raises is
undone back to where it started (a savepoint) and the outer unit goes on.  Ids are never
handed out twice, even when the unit that took them is undone.

The ledger and the entry records, the tables that grow with every arrival, are kept as rows of
plain values (tuples of strings, ints and None), the way a database keeps them, and the record
objects are built when they are read.  The garbage collector stops tracking such tuples after
their first collection, so a long-running host's collections do not grow with the ledger
(ADR 0035).

This module keeps the tables, the lock and the undo log, plan revisions and owners; the tables' methods live in
parts it takes in as base classes, one module per concern, each naming the store through the `MemoryHost` protocol
(`stores/memory_host.py`): tasks and the ledger (`stores/memory_ledger.py`), entry records and markers
(`stores/memory_entries.py`), operation claims and marks (`stores/memory_operations.py`), runs, seats and decisions
(`stores/memory_seats.py`); due rows and incidents are a component (`stores/memory_due.py`).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, TypeVar

from interlock.runtime.history import TaskHistory
from interlock.runtime.store import Decision, Marker, OwnerRow, Participant, QueuedRun, TaskState
from interlock.runtime.store_due import DueRow, Incident, IncidentState, TimerArm

from .memory_due import MemoryDue
from .memory_entries import MemoryEntries
from .memory_history import read_history
from .memory_host import DeciderKey, Operation, Row, SeatKey
from .memory_ledger import MemoryLedger, clean_task
from .memory_operations import MemoryOperations
from .memory_prune import MemoryPruning
from .memory_runs import MemoryRunQueue
from .memory_seats import MemorySeats

__all__ = ["MemoryStore"]

K = TypeVar("K")
V = TypeVar("V")
_MISSING: Any = object()


class MemoryStore(MemoryLedger, MemoryEntries, MemoryOperations, MemorySeats, MemoryRunQueue, MemoryPruning):
    """The `interlock.runtime.store.Store` protocol in process memory (non-durable)."""

    durable: bool = False

    def __init__(self, *, clock: Callable[[], float] | None = None) -> None:
        """`clock`: the store's clock (epoch seconds; default `time.time`), which leases and due times are judged by:
        a test passes its own to move time."""
        self.clock: Callable[[], float] = clock if clock is not None else time.time
        self._lock = threading.RLock()
        self._undo: list[Callable[[], object]] | None = None  # set while a unit is open
        # One id sequence per table; never rolled back, so no id is handed out twice.
        self._ledger_ids = itertools.count(1)
        self._seat_ids = itertools.count(1)
        self._decision_ids = itertools.count(1)
        self._tasks: dict[str, TaskState] = {}
        self._ledger: dict[int, Row] = {}  # LedgerRow's fields, in order
        self._ledger_by_task: dict[str, list[Row]] = {}
        self._entries: dict[int, Row] = {}  # EntryRecord's fields, in order
        self._markers: dict[int, dict[int, Marker]] = {}
        self._unrecorded: dict[int, None] = {}  # ledger ids with a destination and no entry record, oldest first
        self._entry_owners: dict[int, str] = {}  # ledger id -> the owner dispatching its entry
        self._operations: dict[str, Operation] = {}  # operation id -> (state, claim token, owner, task, trigger)
        self._plans: dict[str, str] = {}
        self._owners: dict[str, OwnerRow] = {}
        self._evaluated: dict[int, bool] = {}  # every decision id: whether its re-evaluation is done
        self._runs: dict[str, QueuedRun] = {}
        self._runs_by_task: dict[str, list[QueuedRun]] = {}
        self._seats: dict[SeatKey, Participant] = {}
        self._seats_by_task: dict[str, dict[SeatKey, Participant]] = {}
        self._active: dict[DeciderKey, Decision] = {}
        self._active_by_step: dict[tuple[str, str], dict[int, Decision]] = {}
        self._due = MemoryDue(self)  # timers, retries, incidents: their tables, on this lock, clock and undo log
        # what `task_history` reads besides the tables above (stores/memory_history.py): when rows were written, by
        # ("l", ledger id), ("o", operation id), ("d", decision id), ("s", superseded decision id), ("r", run key),
        # as (the clock, a counter), and every decision ever recorded (superseded ones leave `_active`)
        self._stamps: dict[tuple[str, Any], tuple[float, int]] = {}
        self._stamp_seq = itertools.count(1)
        self._decision_log: dict[int, Decision] = {}

    # ---- transactions ---------------------------------------------------------------------------
    @contextmanager
    def unit(self) -> Iterator[MemoryStore]:
        """Calls on the yielded store (this store) commit together or not at all."""
        with self._lock:
            outer = self._undo is None
            if self._undo is None:
                self._undo = []
            mark = len(self._undo)
            try:
                yield self
            except BaseException:
                self._rollback(mark)
                raise
            finally:
                if outer:
                    self._undo = None

    def _rollback(self, mark: int) -> None:
        undo = self._undo
        assert undo is not None
        while len(undo) > mark:
            undo.pop()()

    def _push(self, inverse: Callable[[], object]) -> None:
        if self._undo is not None:
            self._undo.append(inverse)

    def _put(self, table: dict[K, V], key: K, value: V) -> None:
        if self._undo is None:  # outside a unit: nothing to undo, no closure to build
            table[key] = value
            return
        old = table.get(key, _MISSING)
        table[key] = value
        self._undo.append(lambda: _restore(table, key, old))

    def _pop(self, table: dict[K, V], key: K) -> None:
        old = table.pop(key, _MISSING)
        if old is not _MISSING:
            self._push(lambda: _restore(table, key, old))

    def _append(self, index: dict[K, list[V]], key: K, value: V) -> None:
        rows = index.get(key)
        if rows is None:
            rows = index[key] = []
        rows.append(value)
        self._push(rows.pop)

    def now(self) -> float:
        """The store's clock (the one given, or `time.time`)."""
        return float(self.clock())

    # ---- plan revisions and owners ---------------------------------------------------------------
    def save_plan(self, digest: str, text: str) -> bool:
        with self._lock:
            if digest in self._plans:
                return False
            self._put(self._plans, digest, text)
            return True

    def plan_text(self, digest: str) -> str | None:
        with self._lock:
            return self._plans.get(digest)

    def register_owner(self, owner_id: str, *, host: str, pid: int, plan: str | None, lease: float) -> None:
        now = self.now()
        with self._lock:
            self._put(self._owners, owner_id, OwnerRow(owner_id, host, pid, plan, now, now, float(lease)))

    def heartbeat(self, owner_id: str) -> bool:
        now = self.now()
        with self._lock:
            row = self._owners.get(owner_id)
            if row is None or row.stopped:
                return False
            self._put(self._owners, owner_id, replace(row, heartbeat_at=max(now, row.heartbeat_at)))
            return True

    def stop_owner(self, owner_id: str) -> None:
        with self._lock:
            row = self._owners.get(owner_id)
            if row is not None:
                self._put(self._owners, owner_id, replace(row, stopped=True))

    def owners(self) -> list[OwnerRow]:
        now = self.now()
        with self._lock:
            return [replace(row, alive=self._alive(row, now)) for row in self._owners.values()]

    @staticmethod
    def _alive(row: OwnerRow | None, now: float) -> bool:
        return row is not None and not row.stopped and row.heartbeat_at + row.lease >= now

    def _owner_alive(self, owner_id: str | None, now: float) -> bool:
        return owner_id is not None and self._alive(self._owners.get(owner_id), now)

    # ---- tasks and the ledger -------------------------------------------------------------------
    def get_task(self, task_id: str) -> TaskState | None:
        with self._lock:
            return self._tasks.get(task_id)

    def put_task(self, task: TaskState) -> None:
        """Insert or replace a task as pre-existing state: no ledger row, no arrival."""
        with self._lock:
            self._put(self._tasks, task.id, clean_task(task))

    def task_history(self, task_id: str) -> TaskHistory | None:
        """Every row about `task_id` (stores/memory_history.py); None when the store knows no such task."""
        with self._lock:
            return read_history(self, task_id)

    # ---- due rows and incidents (stores/memory_due.py) ---------------------------------------------
    def arm_timers(self, task_id: str, entry_id: int, workflow_id: str, step_id: str, plan: str | None,
                   timers: Sequence[TimerArm]) -> None:
        self._due.arm_timers(task_id, entry_id, workflow_id, step_id, plan, timers)

    def schedule_retry(self, row: DueRow) -> bool:
        return self._due.schedule_retry(row)

    def disarm(self, task_id: str, keep_entry: int | None) -> list[DueRow]:
        return self._due.disarm(task_id, keep_entry)

    def due(self, limit: int = 1000) -> list[DueRow]:
        return self._due.due(limit)

    def next_due(self) -> float | None:
        return self._due.next_due()

    def due_rows(self, task_id: str) -> list[DueRow]:
        return self._due.due_rows(task_id)

    def advance_due(self, row_id: int, slot: int, next_slot: int, due_at: float) -> bool:
        return self._due.advance_due(row_id, slot, next_slot, due_at)

    def drop_due(self, row_id: int, slot: int) -> bool:
        return self._due.drop_due(row_id, slot)

    def open_incident(self, incident: Incident) -> Incident:
        return self._due.open_incident(incident)

    def incident(self, incident_id: int) -> Incident | None:
        return self._due.incident(incident_id)

    def incidents(self, task_id: str | None = None, *, state: IncidentState | None = "open",
                  limit: int = 1000) -> list[Incident]:
        return self._due.incidents(task_id, state=state, limit=limit)

    def claim_incident(self, incident_id: int, owner_id: str) -> Incident | None:
        return self._due.claim_incident(incident_id, owner_id)

    def settle_incident(self, incident_id: int, *, owner_id: str | None, state: IncidentState,
                        resolution: str | None = None, note: str | None = None, error: str | None = None,
                        attempts: int | None = None,
                        failures: tuple[tuple[int, str, str], ...] | None = None) -> bool:
        return self._due.settle_incident(incident_id, owner_id=owner_id, state=state, resolution=resolution,
                                         note=note, error=error, attempts=attempts, failures=failures)

    def close(self) -> None:
        """Nothing to release (for symmetry with `SqlStore.close`)."""


def _restore(table: dict[K, V], key: K, old: V) -> None:
    if old is _MISSING:
        table.pop(key, None)
    else:
        table[key] = old
