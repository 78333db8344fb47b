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
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, TypeVar

from interlock.runtime.frozen import builder
from interlock.runtime.history import TaskHistory
from interlock.runtime.store import (
    Claim,
    Decision,
    EntryClaim,
    EntryRecord,
    LedgerRow,
    Marker,
    MarkerState,
    MoveResult,
    OwnerRow,
    Participant,
    QueuedRun,
    TaskState,
)
from interlock.runtime.store_due import DueRow, Incident, IncidentState, TimerArm

from ._common import (
    attempted_text,
    attempted_value,
    check_arrival_options,
    check_decider,
    check_route,
    check_seat_task,
    check_state,
    clean_id,
    exists_error,
    failed_text,
    failed_value,
    foreign_entry_error,
    no_destination_error,
    no_ledger_row_error,
    payload_text,
    payload_value,
    steps_tuple,
    stored_shape,
)
from .memory_due import MemoryDue
from .memory_history import read_history
from .memory_prune import MemoryPruning
from .memory_runs import MemoryRunQueue

_task_state = builder(TaskState)  # the hot paths' constructors (interlock.runtime.frozen.builder)
_ledger_row = builder(LedgerRow)
_move_result = builder(MoveResult)
_entry_record = builder(EntryRecord)

_Row = tuple[Any, ...]
"""A stored ledger row or entry record: the record's fields in order, plain values only."""
_TO_WORKFLOW, _TO_STEP, _PLAN = 4, 5, 10  # where a ledger row's destination and revision sit in its values

__all__ = ["MemoryStore"]

K = TypeVar("K")
V = TypeVar("V")
_MISSING: Any = object()

SeatKey = tuple[str, str, str, str]  # (task_id, step_id, role, agent)
DeciderKey = tuple[str, str, str, str, str]  # (task_id, step_id, decider_type, decider_id, role)


class MemoryStore(MemoryRunQueue, MemoryPruning):
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
        self._ledger: dict[int, _Row] = {}  # LedgerRow's fields, in order
        self._ledger_by_task: dict[str, list[_Row]] = {}
        self._entries: dict[int, _Row] = {}  # EntryRecord's fields, in order
        self._markers: dict[int, dict[int, Marker]] = {}
        self._unrecorded: dict[int, None] = {}  # ledger ids with a destination and no entry record, oldest first
        self._entry_owners: dict[int, str] = {}  # ledger id -> the owner dispatching its entry
        # operation id -> (state, claim token, owner id, task id, trigger)
        self._operations: dict[str, tuple[str, str | None, str | None, str | None, str | None]] = {}
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
            self._put(self._tasks, task.id, _clean_task(task))

    def create_task(self, task: TaskState, *, actor_kind: str = "system", actor_id: str | None = None,
                    session_id: str | None = None, plan: str | None = None, entry_owner: str | None = None,
                    operation_id: str | None = None, arrival_options: str | None = None) -> MoveResult:
        """Insert a new task and write its genesis ledger row when it has a step (`StoreError` if it exists)."""
        task = _clean_task(task)
        check_arrival_options(arrival_options)
        with self._lock:
            if task.id in self._tasks:
                raise exists_error(task.id)
            row = None
            if task.step_id is not None:
                row = self._write_ledger(task.id, None, None, task.workflow_id, task.step_id, "creation",
                                         actor_kind, actor_id, session_id, plan, entry_owner, arrival_options)
                task = replace(task, entry_id=row.id)
            elif task.entry_id is not None:
                task = replace(task, entry_id=None)
            self._put(self._tasks, task.id, task)
            if operation_id is not None:
                self._mark(operation_id, task.id, "creation")
            return MoveResult("moved" if row is not None else "same_step", row, task)

    def move_task(self, task_id: str, to_workflow_id: str | None, to_step_id: str | None, *, route: str,
                  actor_kind: str = "system", actor_id: str | None = None, session_id: str | None = None,
                  expected_step_id: str | None = None, operation_id: str | None = None,
                  operation_trigger: str | None = None, decision_id: int | None = None,
                  expected_entry_id: int | None = None, plan: str | None = None,
                  entry_owner: str | None = None, arrival_options: str | None = None) -> MoveResult:
        """Change a task's step and write the ledger row in one step (see the protocol)."""
        if not route:
            check_route(route)
        check_arrival_options(arrival_options)
        to_wf, to_step = to_workflow_id or None, to_step_id or None  # clean_id: empty means none
        with self._lock:
            task = self._tasks.get(task_id)
            if task is None:
                return MoveResult("unknown_task")
            if ((expected_step_id is not None and task.step_id != expected_step_id)
                    or (expected_entry_id is not None and task.entry_id != expected_entry_id)):
                return MoveResult("cas_lost", None, task)
            row = None
            from_wf, from_step = task.workflow_id, task.step_id
            if from_wf != to_wf or from_step != to_step:
                if from_step is not None or to_step is not None:  # is_arrival, given that something changed
                    row = self._write_ledger(task_id, from_wf, from_step, to_wf, to_step, route,
                                             actor_kind, actor_id, session_id, plan, entry_owner, arrival_options)
                moved = _task_state(task_id, to_wf, to_step, task.description, task.is_from_office,
                                    task.is_ephemeral, task.archived, row.id if row is not None else task.entry_id)
                if self._undo is None:
                    self._tasks[task_id] = moved
                else:
                    self._put(self._tasks, task_id, moved)
                task = moved
            if operation_id is not None:
                self._mark(operation_id, task_id, operation_trigger)
            if decision_id is not None:
                self._mark_evaluated(decision_id)
            return _move_result("moved" if row is not None else "same_step", row, task)

    def _write_ledger(self, task_id: str, from_wf: str | None, from_step: str | None, to_wf: str | None,
                      to_step: str | None, route: str, actor_kind: str, actor_id: str | None,
                      session_id: str | None, plan: str | None = None, entry_owner: str | None = None,
                      arrival_options: str | None = None) -> LedgerRow:
        ledger_id = next(self._ledger_ids)
        self._stamps["l", ledger_id] = (self.clock(), next(self._stamp_seq))
        values = (ledger_id, task_id, from_wf, from_step, to_wf, to_step, route, actor_kind or "system",
                  actor_id, session_id, plan, arrival_options)
        rows = self._ledger_by_task.get(task_id)
        if rows is None:
            rows = self._ledger_by_task[task_id] = []
        entering = to_wf is not None and to_step is not None
        if self._undo is None:  # outside a unit: plain writes, nothing to undo
            self._ledger[ledger_id] = values
            rows.append(values)
            if entering:
                self._unrecorded[ledger_id] = None
                if entry_owner is not None:
                    self._entry_owners[ledger_id] = entry_owner
        else:
            self._put(self._ledger, ledger_id, values)
            rows.append(values)
            self._undo.append(rows.pop)
            if entering:
                self._put(self._unrecorded, ledger_id, None)
                if entry_owner is not None:
                    self._put(self._entry_owners, ledger_id, entry_owner)
        return _ledger_row(*values)

    def ledger_row(self, ledger_id: int) -> LedgerRow | None:
        with self._lock:
            values = self._ledger.get(ledger_id)
        return None if values is None else _ledger_row(*values)

    def ledger(self, task_id: str | None = None) -> list[LedgerRow]:
        """Ledger rows, oldest first (all tasks, or one)."""
        with self._lock:
            rows = list(self._ledger.values() if task_id is None  # only ever appended (or undone): in id order
                        else self._ledger_by_task.get(task_id, ()))
        return [_ledger_row(*values) for values in rows]

    def unrecorded_arrivals(self, limit: int = 1000, *, after_id: int = 0,
                            owner_id: str | None = None) -> list[LedgerRow]:
        """Ledger rows after `after_id` with a destination, no entry record and no live owner but `owner_id`,
        oldest first (an index of its own, as the SQL stores' partial index)."""
        out: list[LedgerRow] = []
        if limit <= 0:
            return out
        now = self.now()
        with self._lock:
            for ledger_id in sorted(self._unrecorded):  # a handful: undone units re-insert out of order
                if ledger_id <= after_id:
                    continue
                owner = self._entry_owners.get(ledger_id)
                if owner is not None and owner != owner_id and self._owner_alive(owner, now):
                    continue
                out.append(_ledger_row(*self._ledger[ledger_id]))
                if len(out) == limit:
                    break
        return out

    def claim_entry(self, entry_id: int, owner_id: str, plan: str | None) -> EntryClaim:
        """Claim the dispatch of a row's entry for `owner_id` (see the protocol)."""
        now = self.now()
        with self._lock:
            values = self._ledger.get(entry_id)
            if values is None:
                return EntryClaim("missing")
            if entry_id in self._entries:
                return EntryClaim("recorded", _ledger_row(*values))
            owner = self._entry_owners.get(entry_id)
            if owner is not None and owner != owner_id and self._owner_alive(owner, now):
                return EntryClaim("busy", _ledger_row(*values), owner)
            if values[_PLAN] is None and plan is not None:
                values = (*values[:_PLAN], plan, *values[_PLAN + 1:])
                self._put(self._ledger, entry_id, values)
            self._put(self._entry_owners, entry_id, owner_id)
            return EntryClaim("claimed" if owner in (None, owner_id) else "taken_over", _ledger_row(*values))

    # ---- step entry -------------------------------------------------------------------------------
    def entry_record(self, entry_id: int) -> EntryRecord | None:
        with self._lock:
            values = self._entries.get(entry_id)
        return None if values is None else _entry_record(*values)

    def record_entry(self, record: EntryRecord) -> bool:
        """Record the entry (see the protocol): False if the row has one already (nothing changed)."""
        attempted, failed = record.attempted, record.failed
        if type(attempted) is not tuple or type(failed) is not tuple or ((attempted or failed)
                                                                       and not stored_shape(record)):
            # kept as the SQL store hands it back: tuples of str (an empty entry's record is that already)
            attempted, failed = attempted_value(attempted_text(attempted)), failed_value(failed_text(failed))
        entry_id = record.entry_id
        values = (entry_id, record.task_id, record.workflow_id, record.step_id, attempted, failed)
        with self._lock:
            row = self._ledger.get(entry_id)
            if row is None:
                raise no_ledger_row_error(entry_id)
            if entry_id in self._entries:
                return False
            if row[_TO_WORKFLOW] is None or row[_TO_STEP] is None:
                raise no_destination_error(entry_id)
            if row[1] != values[1] or row[_TO_WORKFLOW] != values[2] or row[_TO_STEP] != values[3]:
                raise foreign_entry_error(entry_id, values[1:4], (row[1], row[_TO_WORKFLOW], row[_TO_STEP]))
            if self._undo is None:  # outside a unit: nothing to undo (`_put` without its call)
                self._entries[entry_id] = values
                self._unrecorded.pop(entry_id, None)
            else:
                self._put(self._entries, entry_id, values)
                self._pop(self._unrecorded, entry_id)
            return True

    def markers(self, entry_id: int) -> dict[int, Marker]:
        with self._lock:
            return dict(sorted(self._markers.get(entry_id, {}).items()))

    def claim_marker(self, entry_id: int, position: int, kind: str) -> bool:
        """Insert an `in_progress` marker; False if this position has a marker already."""
        with self._lock:
            if entry_id not in self._ledger:
                raise no_ledger_row_error(entry_id)
            markers = self._markers.get(entry_id)
            if markers is None:
                markers = {}
                self._put(self._markers, entry_id, markers)
            if position in markers:
                return False
            self._put(markers, position, Marker(entry_id, position, kind, "in_progress"))
            return True

    def start_marker(self, entry_id: int, position: int, kind: str) -> Marker:
        """Start a try of a position (see the protocol)."""
        with self._lock:
            if entry_id not in self._ledger:
                raise no_ledger_row_error(entry_id)
            markers = self._markers.get(entry_id)
            if markers is None:
                markers = {}
                self._put(self._markers, entry_id, markers)
            old = markers.get(position)
            if old is not None and old.state != "in_progress":
                return old
            marker = Marker(entry_id, position, kind, "in_progress", None, 1 if old is None else old.attempt + 1)
            self._put(markers, position, marker)
            return marker

    def finish_marker(self, entry_id: int, position: int, state: MarkerState, error: str | None = None) -> None:
        """Set a marker's state (and error); a position with no marker is left alone."""
        state = check_state(state)
        with self._lock:
            markers = self._markers.get(entry_id)
            old = markers.get(position) if markers is not None else None
            if markers is not None and old is not None:
                self._put(markers, position, replace(old, state=state, error=error))

    def rerun_marker(self, entry_id: int, position: int, kind: str) -> Marker | None:
        """Start a position of a recorded entry again (see the protocol): the next attempt, or attempt 2."""
        with self._lock:
            if entry_id not in self._ledger:
                raise no_ledger_row_error(entry_id)
            markers = self._markers.get(entry_id)
            if markers is None:
                markers = {}
                self._put(self._markers, entry_id, markers)
            old = markers.get(position)
            if old is not None and old.state == "done":
                return None
            marker = Marker(entry_id, position, kind, "in_progress", None, 2 if old is None else old.attempt + 1)
            self._put(markers, position, marker)
            return marker

    # ---- operations -------------------------------------------------------------------------------
    def operation_applied(self, operation_id: str) -> bool:
        with self._lock:
            found = self._operations.get(operation_id)
            return found is not None and found[0] == "applied"

    def claim_operation(self, operation_id: str, *, token: str, owner_id: str, task_id: str | None = None,
                        trigger: str | None = None) -> Claim:
        """Claim the operation for `token` (see the protocol)."""
        now = self.now()
        with self._lock:
            found = self._operations.get(operation_id)
            if found is None and (pruned := self._claim_pruned(operation_id)) is not None:
                return pruned
            if found is not None and found[0] == "applied":
                return "applied"
            if found is not None and self._owner_alive(found[2], now):
                return "busy"
            self._put(self._operations, operation_id, ("claimed", token, owner_id, task_id, trigger))
            return "claimed" if found is None else "taken_over"

    def release_operation(self, operation_id: str, token: str) -> bool:
        """Give up `token`'s claim; False if it holds none."""
        with self._lock:
            found = self._operations.get(operation_id)
            if found is None or found[0] != "claimed" or found[1] != token:
                return False
            self._pop(self._operations, operation_id)
            return True

    def claimed_operations(self, limit: int = 1000) -> list[tuple[str, str]]:
        """Every operation claimed and not applied: (operation id, claim token)."""
        with self._lock:
            claims = [(op, token) for op, (state, token, _, _, _) in self._operations.items()
                      if state == "claimed" and token is not None]
        return claims[:max(limit, 0)]

    def abandoned_claims(self, limit: int = 1000, *, owner_id: str | None = None) -> list[tuple[str, str]]:
        """Operations claimed and not applied whose owner is dead (or is `owner_id`): (operation id, claim token)."""
        now = self.now()
        with self._lock:
            claims = [(op, token) for op, (state, token, owner, _, _) in self._operations.items()
                      if state == "claimed" and token is not None
                      and (owner == owner_id or not self._owner_alive(owner, now))]
        return claims[:max(limit, 0)]

    def mark_operation(self, operation_id: str, *, task_id: str | None = None, trigger: str | None = None) -> bool:
        """Mark applied; False if it already was."""
        with self._lock:
            return self._mark(operation_id, task_id, trigger)

    def _mark(self, operation_id: str, task_id: str | None, trigger: str | None) -> bool:
        found = self._operations.get(operation_id)
        if found is not None and found[0] == "applied":
            return False
        self._put(self._operations, operation_id, ("applied", None, None, task_id, trigger))
        self._stamps["o", operation_id] = (self.clock(), next(self._stamp_seq))
        return True

    def decision_evaluated(self, decision_id: int) -> bool:
        with self._lock:
            return self._evaluated.get(decision_id, False)

    def mark_decision_evaluated(self, decision_id: int) -> bool:
        with self._lock:
            return self._mark_evaluated(decision_id)

    def _mark_evaluated(self, decision_id: int) -> bool:
        if self._evaluated.get(decision_id, True):  # done already, or no such decision
            return False
        self._put(self._evaluated, decision_id, True)
        return True

    # ---- runs, seats, decisions -------------------------------------------------------------------
    def enqueue_run(self, run: QueuedRun) -> bool:
        """Queue a run; False (and nothing written) if a run with this key exists."""
        stored = replace(run, payload=payload_value(payload_text(run.payload)))
        with self._lock:
            if run.key in self._runs:
                return False
            self._put(self._runs, run.key, stored)
            self._stamps["r", run.key] = (self.clock(), next(self._stamp_seq))
            self._append(self._runs_by_task, run.task_id, stored)
            return True

    def runs(self, task_id: str | None = None) -> list[QueuedRun]:
        """Queued runs in the order they were queued (all tasks, or one)."""
        with self._lock:
            if task_id is None:
                return list(self._runs.values())
            return list(self._runs_by_task.get(task_id, ()))

    def add_participant(self, participant: Participant) -> None:
        """Insert a seat, or update the one with the same (task, step, role, agent); the store assigns the id."""
        key = (participant.task_id, participant.step_id, participant.role, participant.agent)
        with self._lock:
            old = self._seats.get(key)
            seat_id = old.id if old is not None else next(self._seat_ids)
            self._write_seat(replace(participant, id=seat_id))

    def _write_seat(self, seat: Participant) -> None:
        key = (seat.task_id, seat.step_id, seat.role, seat.agent)
        self._put(self._seats, key, seat)
        by_task = self._seats_by_task.get(seat.task_id)
        if by_task is None:
            by_task = {}
            self._put(self._seats_by_task, seat.task_id, by_task)
        self._put(by_task, key, seat)

    def participants(self, task_id: str, workflow_steps: Iterator[str] | tuple[str, ...]) -> list[Participant]:
        """Per-task seats at any of `workflow_steps` plus template rows of those steps, by id."""
        steps = set(steps_tuple(workflow_steps))
        with self._lock:
            rows = [p for p in self._seats_by_task.get(task_id, {}).values() if p.step_id in steps]
            if task_id != "":
                rows.extend(p for p in self._seats_by_task.get("", {}).values() if p.step_id in steps)
            return sorted(rows, key=_by_id)

    def ensure_seat(self, task_id: str, step_id: str, role: str, agent: str,
                    workflow_steps: tuple[str, ...]) -> bool:
        """Write a per-task seat unless the task has a seat in `role` at any workflow step (or at `step_id`)."""
        check_seat_task(task_id)
        steps = {*steps_tuple(workflow_steps), step_id}
        with self._lock:
            for seat in self._seats_by_task.get(task_id, {}).values():
                if seat.role == role and seat.step_id in steps:
                    return False
            self._write_seat(Participant(task_id=task_id, step_id=step_id, role=role, agent=agent,
                                         decision_required=True, position=0, id=next(self._seat_ids)))
            return True

    def record_decision(self, decision: Decision) -> Decision:
        """Store a decision, superseding the same decider's active one in that role; return it with its id."""
        check_decider(decision)
        key = (decision.task_id, decision.step_id, decision.decider_type, decision.decider_id, decision.role)
        with self._lock:
            stored = replace(decision, id=next(self._decision_ids))
            active = self._active_by_step.get((decision.task_id, decision.step_id))
            if active is None:
                active = {}
                self._put(self._active_by_step, (decision.task_id, decision.step_id), active)
            old = self._active.get(key)
            if old is not None:
                self._pop(active, old.id)
                self._stamps["s", old.id] = (self.clock(), next(self._stamp_seq))
            self._put(self._active, key, stored)
            self._put(self._decision_log, stored.id, stored)
            self._stamps["d", stored.id] = (self.clock(), next(self._stamp_seq))
            self._put(active, stored.id, stored)
            self._put(self._evaluated, stored.id, False)
            return stored

    def decisions(self, task_id: str, step_id: str) -> list[Decision]:
        """Active decisions for a task at a step, oldest first."""
        with self._lock:
            return sorted(self._active_by_step.get((task_id, step_id), {}).values(), key=_by_id)

    def unevaluated_decisions(self, limit: int = 1000) -> list[Decision]:
        """Active decisions whose re-evaluation is not marked applied, oldest first."""
        with self._lock:
            pending = (d for d in self._active.values() if not self._evaluated.get(d.id, False))
            return heapq.nsmallest(max(limit, 0), pending, key=_by_id)

    def clear_decisions(self, task_id: str, step_id: str) -> int:
        """Supersede every active decision of the task at the step; return how many there were."""
        with self._lock:
            active = self._active_by_step.get((task_id, step_id))
            if not active:
                return 0
            cleared = list(active.values())
            for d in cleared:
                self._pop(active, d.id)
                self._pop(self._active, (d.task_id, d.step_id, d.decider_type, d.decider_id, d.role))
                self._stamps["s", d.id] = (self.clock(), next(self._stamp_seq))
            return len(cleared)

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


def _by_id(row: LedgerRow | Participant | Decision) -> int:
    return int(row.id)


def _clean_task(task: TaskState) -> TaskState:
    wf, step = clean_id(task.workflow_id), clean_id(task.step_id)
    if (wf, step) == (task.workflow_id, task.step_id):
        return task
    return replace(task, workflow_id=wf, step_id=step)
