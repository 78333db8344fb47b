"""A task id in, every row the `MemoryStore` keeps about that task out (`read_history`: its `HistoryReader` side,
for `inspect`; ADR 0046).  The caller holds the store's lock; nothing is written.

The store stamps the rows a timeline orders (ledger rows, applied operations, decisions and their supersession,
queued runs) with its clock and a counter when it writes them (`MemoryStore._stamps`): `at` is the clock's
reading, `seq` the counter, so rows written at one reading of a test clock keep the order they were written in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from interlock.runtime.history import ArrivalRow, DecisionRow, OperationRow, RunRow, TaskHistory
from interlock.runtime.store import EntryRecord, LedgerRow, Participant

if TYPE_CHECKING:
    from .memory import MemoryStore

__all__ = ["read_history"]

_NEVER = (None, float("inf"))


def _stamp(store: MemoryStore, key: tuple[str, Any]) -> tuple[float | None, float]:
    found = store._stamps.get(key)
    return _NEVER if found is None else (found[0], float(found[1]))


def read_history(store: MemoryStore, task_id: str) -> TaskHistory | None:
    """Every row about `task_id`; None when the store knows no such task (no task, no ledger row)."""
    task = store._tasks.get(task_id)
    ledger = [LedgerRow(*values) for values in store._ledger_by_task.get(task_id, ())]
    if task is None and not ledger:
        return None
    arrivals = []
    for row in ledger:
        values = store._entries.get(row.id)
        entry = None if values is None else EntryRecord(*values)
        markers = tuple(m for _, m in sorted(store._markers.get(row.id, {}).items()))
        at, seq = _stamp(store, ("l", row.id))
        arrivals.append(ArrivalRow(row, entry, markers, at, seq))
    operations = []
    for op, (state, _token, _owner, op_task, trigger) in store._operations.items():
        if op_task == task_id:
            at, seq = _stamp(store, ("o", op)) if state == "applied" else _NEVER
            operations.append(OperationRow(op, trigger, state, at, seq))
    operations.sort(key=lambda o: o.seq)
    active = {d.id for d in store._active.values() if d.task_id == task_id}
    decisions = []
    for d in sorted((d for d in store._decision_log.values() if d.task_id == task_id), key=lambda d: d.id):
        at, seq = _stamp(store, ("d", d.id))
        decisions.append(DecisionRow(d, d.id not in active, at, seq))
    runs = []
    for run in store._runs_by_task.get(task_id, ()):
        at, seq = _stamp(store, ("r", run.key))
        runs.append(RunRow(run, at, seq))
    steps = {a.ledger.to_step_id for a in arrivals if a.ledger.to_step_id}
    if task is not None and task.step_id:
        steps.add(task.step_id)
    seats: list[Participant] = sorted(store._seats_by_task.get(task_id, {}).values(), key=lambda p: p.id)
    seats += sorted((p for p in store._seats_by_task.get("", {}).values() if p.step_id in steps), key=lambda p: p.id)
    due = tuple(store._due.due_rows(task_id))
    incidents = tuple(store._due.incidents(task_id, state=None, limit=1 << 30))
    plans = {a.ledger.plan: store._plans[a.ledger.plan] for a in arrivals
             if a.ledger.plan is not None and a.ledger.plan in store._plans}
    return TaskHistory(task_id, task, tuple(arrivals), tuple(operations), tuple(decisions), tuple(runs),
                       tuple(seats), due, incidents, plans, store.now())
