"""Tasks and the ledger in process memory: the part of `MemoryStore` that creates and moves tasks, appends ledger
rows and claims entries (`MemoryLedger`), with the ledger's writer other parts share (`write_ledger`) and the
shape a task is kept in (`clean_task`).

`MemoryStore` (`stores/memory.py`) takes these methods in as a base class; they name the store through the
`MemoryHost` protocol (`stores/memory_host.py`) and write through its undo log, so a unit that raises undoes them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from interlock.runtime.frozen import builder
from interlock.runtime.store import EntryClaim, LedgerRow, MoveResult, TaskState

from ._common import check_arrival_options, check_route, clean_id, exists_error
from .memory_operations import mark, mark_evaluated

if TYPE_CHECKING:
    from .memory_host import MemoryHost

__all__ = ["MemoryLedger", "write_ledger", "clean_task", "PLAN", "TO_STEP", "TO_WORKFLOW"]

_task_state = builder(TaskState)  # the hot paths' constructors (interlock.runtime.frozen.builder)
_ledger_row = builder(LedgerRow)
_move_result = builder(MoveResult)

TO_WORKFLOW, TO_STEP, PLAN = 4, 5, 10  # where a ledger row's destination and revision sit in its values


def write_ledger(store: MemoryHost, task_id: str, from_wf: str | None, from_step: str | None, to_wf: str | None,
                 to_step: str | None, route: str, actor_kind: str, actor_id: str | None, session_id: str | None,
                 plan: str | None = None, entry_owner: str | None = None,
                 arrival_options: str | None = None) -> LedgerRow:
    """Append a ledger row (and, for an arrival, its place in the unrecorded index and its entry owner)."""
    ledger_id = next(store._ledger_ids)
    store._stamps["l", ledger_id] = (store.clock(), next(store._stamp_seq))
    values = (ledger_id, task_id, from_wf, from_step, to_wf, to_step, route, actor_kind or "system",
              actor_id, session_id, plan, arrival_options)
    rows = store._ledger_by_task.get(task_id)
    if rows is None:
        rows = store._ledger_by_task[task_id] = []
    entering = to_wf is not None and to_step is not None
    if store._undo is None:  # outside a unit: plain writes, nothing to undo
        store._ledger[ledger_id] = values
        rows.append(values)
        if entering:
            store._unrecorded[ledger_id] = None
            if entry_owner is not None:
                store._entry_owners[ledger_id] = entry_owner
    else:
        store._put(store._ledger, ledger_id, values)
        rows.append(values)
        store._undo.append(rows.pop)
        if entering:
            store._put(store._unrecorded, ledger_id, None)
            if entry_owner is not None:
                store._put(store._entry_owners, ledger_id, entry_owner)
    return _ledger_row(*values)



def clean_task(task: TaskState) -> TaskState:
    wf, step = clean_id(task.workflow_id), clean_id(task.step_id)
    if (wf, step) == (task.workflow_id, task.step_id):
        return task
    return replace(task, workflow_id=wf, step_id=step)


class MemoryLedger:
    """Tasks, the ledger and entry claims of `MemoryStore` (see the module's docstring)."""

    __slots__ = ()

    def create_task(self: MemoryHost, task: TaskState, *, actor_kind: str = "system", actor_id: str | None = None,
                    session_id: str | None = None, plan: str | None = None, entry_owner: str | None = None,
                    operation_id: str | None = None, arrival_options: str | None = None,
                    record_in_unit: bool = False) -> MoveResult:
        """Insert a new task and write its genesis ledger row when it has a step (`StoreError` if it exists)."""
        task = clean_task(task)
        check_arrival_options(arrival_options)
        with self._lock:
            if task.id in self._tasks:
                raise exists_error(task.id)
            row = None
            if task.step_id is not None:
                row = write_ledger(self, task.id, None, None, task.workflow_id, task.step_id, "creation",
                                         actor_kind, actor_id, session_id, plan, entry_owner, arrival_options)
                task = replace(task, entry_id=row.id)
            elif task.entry_id is not None:
                task = replace(task, entry_id=None)
            self._put(self._tasks, task.id, task)
            if operation_id is not None:
                mark(self, operation_id, task.id, "creation")
            return MoveResult("moved" if row is not None else "same_step", row, task)

    def move_task(self: MemoryHost, task_id: str, to_workflow_id: str | None, to_step_id: str | None, *, route: str,
                  actor_kind: str = "system", actor_id: str | None = None, session_id: str | None = None,
                  expected_step_id: str | None = None, operation_id: str | None = None,
                  operation_trigger: str | None = None, decision_id: int | None = None,
                  expected_entry_id: int | None = None, plan: str | None = None,
                  entry_owner: str | None = None, arrival_options: str | None = None,
                  record_in_unit: bool = False) -> MoveResult:
        """Change a task's step and write the ledger row in one step (see the protocol)."""
        if not route:
            check_route(route)
        if arrival_options is not None:  # None needs no check (a call saved on the hot path: ADR 0052)
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
                    row = write_ledger(self, task_id, from_wf, from_step, to_wf, to_step, route,
                                             actor_kind, actor_id, session_id, plan, entry_owner, arrival_options)
                moved = _task_state(task_id, to_wf, to_step, task.description, task.is_from_office,
                                    task.is_ephemeral, task.archived, row.id if row is not None else task.entry_id)
                if self._undo is None:
                    self._tasks[task_id] = moved
                else:
                    self._put(self._tasks, task_id, moved)
                task = moved
            if operation_id is not None:
                mark(self, operation_id, task_id, operation_trigger)
            if decision_id is not None:
                mark_evaluated(self, decision_id)
            return _move_result("moved" if row is not None else "same_step", row, task)

    def ledger_row(self: MemoryHost, ledger_id: int) -> LedgerRow | None:
        with self._lock:
            values = self._ledger.get(ledger_id)
        return None if values is None else _ledger_row(*values)

    def ledger(self: MemoryHost, task_id: str | None = None) -> list[LedgerRow]:
        """Ledger rows, oldest first (all tasks, or one)."""
        with self._lock:
            rows = list(self._ledger.values() if task_id is None  # only ever appended (or undone): in id order
                        else self._ledger_by_task.get(task_id, ()))
        return [_ledger_row(*values) for values in rows]

    def unrecorded_arrivals(self: MemoryHost, limit: int = 1000, *, after_id: int = 0,
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

    def claim_entry(self: MemoryHost, entry_id: int, owner_id: str, plan: str | None) -> EntryClaim:
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
            if values[PLAN] is None and plan is not None:
                values = (*values[:PLAN], plan, *values[PLAN + 1:])
                self._put(self._ledger, entry_id, values)
            self._put(self._entry_owners, entry_id, owner_id)
            return EntryClaim("claimed" if owner in (None, owner_id) else "taken_over", _ledger_row(*values))

